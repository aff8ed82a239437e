/* Particle <-> grid transfers (Klar et al. 2016 sections 5.1, 5.3, 5.4, 6.2).
 *
 * The generic bodies are written once for any (dim, order, dof) and forced
 * inline into specialised entry points, so the compiler sees constant trip
 * counts, unrolls the stencil loops and keeps the per-node vectors (dof
 * doubles, 32 bytes for 3D APIC) in SIMD registers.
 *
 * Hierarchical factoring of the stencil sums
 * ------------------------------------------
 * The weights are tensor products, w = wx wy wz, and so are the weight
 * gradient gw = (dwx wy wz, wx dwy wz, wx wy dwz) and the APIC moment
 * w (x_i - x_p) = (wx dx) wy wz, ...  Every per-node quantity of a transfer
 * is therefore a sum of a few terms fx(kx) fy(ky) fz(kz) V with a constant
 * vector V, and the sums over the stencil factor axis by axis:
 *   P2G: the node value is built from per-plane (kz) vectors, combined into
 *        per-row (ky, kz) vectors, so a node costs 3 vector FMAs;
 *   G2P: node values are summed along each row with 3 x-factors, the row
 *        sums along each plane, the plane sums along z.
 * This is the same arithmetic as the plain triple loop, only reassociated:
 * the results agree to roundoff.
 *
 * 3D APIC (dof = 4: mass and momentum, 32 bytes per node) is the hot case:
 * its bodies hold a node in one 4-wide vector (GCC/Clang vector extension,
 * one AVX register), which the compiler does not reliably find on its own.
 * 2D and FLIP use the same factoring on plain dof-loops. */
#include <mpm/kernels.h>
#include <mpm/transfer.h>
#include <string.h>
#if defined(__AVX__)
#include <immintrin.h>
#endif

#define ALWAYS_INLINE static inline __attribute__((always_inline))
#define MAX_DOF       (1 + 2 * MPM_MAX_DIM)

/* Per-axis factors of the stencil of one particle. */
typedef struct {
  int    base[3];
  double w[3][MPM_MAX_STENCIL];   /* B-spline weight */
  double dw[3][MPM_MAX_STENCIL];  /* its physical derivative d w / d x */
  double wdx[3][MPM_MAX_STENCIL]; /* w (x_i - x_p) along the axis */
} Stencil;

ALWAYS_INLINE void stencil_eval(const MPMGridBox *g, int dim, int order, const double *xp, Stencil *s)
{
  const double ih = 1.0 / g->h;
  for (int a = 0; a < dim; a++) {
    const double xr = mpm_grid_coord(g, a, xp[a]);
    mpm_bspline_weights(order, xr, &s->base[a], s->w[a], s->dw[a]);
    for (int k = 0; k <= order; k++) {
      s->dw[a][k] *= ih;
      s->wdx[a][k] = s->w[a][k] * ((s->base[a] + k - xr) * g->h);
    }
  }
  if (dim == 2) { /* a single "node" along z with unit weight */
    s->base[2]   = g->gs[2];
    s->w[2][0]   = 1.0;
    s->dw[2][0]  = 0.0;
    s->wdx[2][0] = 0.0;
  }
}

ALWAYS_INLINE long node_offset(const MPMGridBox *g, int i, int j, int k)
{
  return ((long)(k - g->gs[2]) * g->gn[1] + (j - g->gs[1])) * g->gn[0] + (i - g->gs[0]);
}

/* y += a x on dof-vectors (the loops the compiler turns into SIMD code). */
ALWAYS_INLINE void axpy(int n, double a, const double *restrict x, double *restrict y)
{
  for (int c = 0; c < n; c++) y[c] += a * x[c];
}

/* P2G (K7, K9, K23).  A node receives
 *   w m (v + C dx) - dt V0 tau gw  (momentum slots; FLIP keeps the force apart)
 *   w m                           (mass slot)
 * = w P0 + sum_b w dx_b P[b] - sum_b gw_b Q[b]
 * with dof-vectors P0 = (m, m v), P[b] = (0, m C[:, b]) and Q[b] = (0, dt V0 tau[:, b]). */
ALWAYS_INLINE void p2g_generic(const int dim, const int order, const int split, const MPMGridBox *g, const MPMParticleView *p, double dt,
                               double *restrict grid)
{
  const int     S = order + 1, Sz = dim == 3 ? S : 1, dof = 1 + (split ? 2 : 1) * dim;
  const int     fo = split ? 1 + dim : 1; /* first slot of the force term */
  const double *restrict X = p->x, *restrict V = p->v, *restrict Cp = p->C, *restrict T = p->tau, *restrict M = p->m, *restrict V0 = p->V0;
  const long    sy = (long)dof * g->gn[0], sz = sy * g->gn[1]; /* strides of a grid row and plane */

  for (int q = 0; q < p->n; q++) {
    Stencil      s;
    double       P0[MAX_DOF] = {0}, P[3][MAX_DOF] = {{0}}, Q[3][MAX_DOF] = {{0}};
    const double m = M[q], dvt = dt * V0[q];
    stencil_eval(g, dim, order, X + q * dim, &s);
    P0[0] = m;
    for (int a = 0; a < dim; a++) {
      P0[1 + a] = m * V[q * dim + a];
      for (int b = 0; b < dim; b++) {
        if (Cp) P[b][1 + a] = m * Cp[q * dim * dim + a * dim + b];
        Q[b][fo + a] = dvt * T[q * dim * dim + a * dim + b];
      }
    }
    double *restrict origin = grid + dof * node_offset(g, s.base[0], s.base[1], s.base[2]);
    for (int kz = 0; kz < Sz; kz++) {
      /* factors of the plane: Za multiplies wx wy, Zp1 wx (wy dy), Zq1 -wx dwy, Zb (wx dx) wy, Zc -dwx wy */
      double Za[MAX_DOF], Zp1[MAX_DOF], Zq1[MAX_DOF], Zb[MAX_DOF], Zc[MAX_DOF];
      const double wz = s.w[2][kz];
      for (int c = 0; c < dof; c++) {
        Za[c]  = wz * P0[c];
        Zp1[c] = wz * P[1][c];
        Zq1[c] = wz * Q[1][c];
        Zb[c]  = wz * P[0][c];
        Zc[c]  = wz * Q[0][c];
      }
      if (dim == 3)
        for (int c = 0; c < dof; c++) Za[c] += s.wdx[2][kz] * P[2][c] - s.dw[2][kz] * Q[2][c];
      for (int ky = 0; ky < S; ky++) {
        /* the row: node kx gets wx Ra + (wx dx) Rb - dwx Rc */
        double       Ra[MAX_DOF], Rb[MAX_DOF], Rc[MAX_DOF];
        const double wy = s.w[1][ky], wdy = s.wdx[1][ky], dwy = s.dw[1][ky];
        for (int c = 0; c < dof; c++) {
          Ra[c] = wy * Za[c] + wdy * Zp1[c] - dwy * Zq1[c];
          Rb[c] = wy * Zb[c];
          Rc[c] = wy * Zc[c];
        }
        double *restrict row = origin + kz * sz + ky * sy;
        for (int kx = 0; kx < S; kx++) {
          const double wx = s.w[0][kx], wdx = s.wdx[0][kx], dwx = s.dw[0][kx];
          double *restrict node = row + dof * kx;
          for (int c = 0; c < dof; c++) node[c] += wx * Ra[c] + wdx * Rb[c] - dwx * Rc[c];
        }
      }
    }
  }
}

/* G2P (K11-K15).  With the node vectors n_i (mass, velocity[, old velocity])
 *   v_p = sum w n_i,  B[:, b] = sum w dx_b n_i,  grad v[:, b] = sum gw_b n_i,
 * each summed row by row, plane by plane. */
ALWAYS_INLINE double g2p_generic(const int dim, const int order, const int split, const MPMGridBox *g, const double *restrict grid, double dt,
                                 double flip, double rest, MPMParticleView *p)
{
  const int    S = order + 1, Sz = dim == 3 ? S : 1, dof = 1 + (split ? 2 : 1) * dim;
  const double dinv = mpm_apic_dinv(order, g->h);
  const double rest2 = rest * rest * g->h * g->h; /* |v| dt <= rest h: at rest */
  const long   sy = (long)dof * g->gn[0], sz = sy * g->gn[1];
  double *restrict X = p->x, *restrict V = p->v, *restrict Cp = p->C, *restrict Fp = p->Fe;
  double       vmax2 = 0;

  for (int q = 0; q < p->n; q++) {
    Stencil s;
    /* totals: vp = sum w n, Bc[b] = sum w dx_b n, Gc[b] = sum gw_b n */
    double vp[MAX_DOF] = {0}, Bc[3][MAX_DOF] = {{0}}, Gc[3][MAX_DOF] = {{0}};
    double *restrict x = X + q * dim, *restrict v = V + q * dim, *restrict Fe = Fp + q * dim * dim;
    stencil_eval(g, dim, order, x, &s);
    const double *restrict origin = grid + dof * node_offset(g, s.base[0], s.base[1], s.base[2]);
    for (int kz = 0; kz < Sz; kz++) {
      /* plane sums: T0 = sum wy S0, T1 = sum wy S1, T2 = sum wy S2, T3 = sum (wy dy) S0, T4 = sum dwy S0 */
      double T0[MAX_DOF] = {0}, T1[MAX_DOF] = {0}, T2[MAX_DOF] = {0}, T3[MAX_DOF] = {0}, T4[MAX_DOF] = {0};
      for (int ky = 0; ky < S; ky++) {
        /* row sums: S0 = sum wx n, S1 = sum (wx dx) n, S2 = sum dwx n */
        double S0[MAX_DOF] = {0}, S1[MAX_DOF] = {0}, S2[MAX_DOF] = {0};
        const double *restrict row = origin + kz * sz + ky * sy;
        for (int kx = 0; kx < S; kx++) {
          const double *restrict node = row + dof * kx;
          axpy(dof, s.w[0][kx], node, S0);
          axpy(dof, s.wdx[0][kx], node, S1);
          axpy(dof, s.dw[0][kx], node, S2);
        }
        axpy(dof, s.w[1][ky], S0, T0);
        axpy(dof, s.w[1][ky], S1, T1);
        axpy(dof, s.w[1][ky], S2, T2);
        axpy(dof, s.wdx[1][ky], S0, T3);
        axpy(dof, s.dw[1][ky], S0, T4);
      }
      axpy(dof, s.w[2][kz], T0, vp);
      axpy(dof, s.w[2][kz], T1, Bc[0]);
      axpy(dof, s.w[2][kz], T3, Bc[1]);
      axpy(dof, s.w[2][kz], T2, Gc[0]);
      axpy(dof, s.w[2][kz], T4, Gc[1]);
      if (dim == 3) {
        axpy(dof, s.wdx[2][kz], T0, Bc[2]);
        axpy(dof, s.dw[2][kz], T0, Gc[2]);
      }
    }
    double sp2 = 0;
    for (int a = 0; a < dim; a++) {
      const double vg   = vp[1 + a];
      const double vnew = flip < 0 ? vg : flip * (v[a] + vg - vp[1 + dim + a]) + (1.0 - flip) * vg;
      x[a] += dt * vg; /* (K13): nodes move with the grid velocity */
      v[a] = vnew;
      sp2 += vnew * vnew;
    }
    if (sp2 > vmax2) vmax2 = sp2;
    if (Cp) {
      const double keep = vp[0] > 0 && sp2 * dt * dt <= rest2 ? 0.0 : dinv; /* at rest next to a held node (slot 0): drop C */
      for (int a = 0; a < dim; a++)
        for (int b = 0; b < dim; b++) Cp[q * dim * dim + a * dim + b] = Bc[b][1 + a] * keep; /* APIC, and affine FLIP */
    }
    /* (K14, K16): F_E <- (I + dt grad v) F_E */
    double Fn[9];
    for (int a = 0; a < dim; a++)
      for (int b = 0; b < dim; b++) {
        double t = Fe[a * dim + b];
        for (int c = 0; c < dim; c++) t += dt * Gc[c][1 + a] * Fe[c * dim + b];
        Fn[a * dim + b] = t;
      }
    for (int a = 0; a < dim * dim; a++) Fe[a] = Fn[a];
  }
  return vmax2;
}

/* ------------------------------------------------------------------------ */
/* 3D APIC: one node = one 4-wide vector (mass, momentum or velocity)        */
/* ------------------------------------------------------------------------ */
typedef double vec4 __attribute__((vector_size(4 * sizeof(double))));
#if defined(__GNUC__) && !defined(__AVX__)
/* Without AVX (-DMPM_NATIVE=OFF) GCC warns that passing a vec4 by value has
 * another ABI; the functions below are all inlined, no call passes one. */
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

ALWAYS_INLINE vec4 vec4_load(const double *p)
{
  vec4 v;
  memcpy(&v, p, sizeof v); /* unaligned: the Vec array is only 16-byte aligned */
  return v;
}
ALWAYS_INLINE void vec4_store(double *p, vec4 v) { memcpy(p, &v, sizeof v); }
ALWAYS_INLINE vec4 vec4_set1(double a) { return (vec4){a, a, a, a}; }

/* y + a x with a scalar a, fused on CPUs with FMA.  The build is ISO C
 * (-std=c11), under which GCC does not contract a*b + c by itself. */
ALWAYS_INLINE vec4 vec4_madd(double a, vec4 x, vec4 y)
{
#if defined(__FMA__)
  return _mm256_fmadd_pd(_mm256_set1_pd(a), x, y);
#else
  return vec4_set1(a) * x + y;
#endif
}

/* One particle's vectors of a 3D P2G: P0 = (m, m v), P[b] = (0, m C[:, b])
 * and Q[b] = dt V0 tau[:, b] in the momentum lanes 1..3 (APIC: the force is
 * fused in) or in lanes 0..2 of the node's second vector (split: FLIP). */
ALWAYS_INLINE void p2g_3d_particle(const MPMParticleView *p, int q, double dt, int split, vec4 *P0, vec4 *P, vec4 *Q)
{
  const double  m = p->m[q], dvt = dt * p->V0[q];
  const double *v = p->v + 3 * q, *tau = p->tau + 9 * q, *C = p->C;
  *P0             = (vec4){m, m * v[0], m * v[1], m * v[2]};
  for (int b = 0; b < 3; b++) {
    P[b] = C ? (vec4){0, m * C[9 * q + b], m * C[9 * q + 3 + b], m * C[9 * q + 6 + b]} : (vec4){0, 0, 0, 0};
    Q[b] = split ? (vec4){dvt * tau[b], dvt * tau[3 + b], dvt * tau[6 + b], 0} : (vec4){0, dvt * tau[b], dvt * tau[3 + b], dvt * tau[6 + b]};
  }
}

/* p2g_generic(3, order, 0, ...) with vec4 node values. */
ALWAYS_INLINE void p2g_3d_vec4(const int order, const MPMGridBox *g, const MPMParticleView *p, double dt, double *restrict grid)
{
  const int     S = order + 1;
  const double *restrict X = p->x;
  const long    sy = 4L * g->gn[0], sz = sy * g->gn[1];
  const vec4    zero = {0};

  for (int q = 0; q < p->n; q++) {
    Stencil s;
    vec4    P0, P[3], Q[3];
    p2g_3d_particle(p, q, dt, 0, &P0, P, Q);
    stencil_eval(g, 3, order, X + 3 * q, &s);
    double *restrict origin = grid + 4 * node_offset(g, s.base[0], s.base[1], s.base[2]);
    for (int kz = 0; kz < S; kz++) {
      const double wz = s.w[2][kz];
      const vec4   Za = vec4_madd(wz, P0, vec4_madd(s.wdx[2][kz], P[2], vec4_madd(-s.dw[2][kz], Q[2], zero)));
      const vec4   Zp1 = vec4_madd(wz, P[1], zero), Zq1 = vec4_madd(wz, Q[1], zero), Zb = vec4_madd(wz, P[0], zero), Zc = vec4_madd(wz, Q[0], zero);
      for (int ky = 0; ky < S; ky++) {
        const double wy = s.w[1][ky];
        const vec4   Ra = vec4_madd(wy, Za, vec4_madd(s.wdx[1][ky], Zp1, vec4_madd(-s.dw[1][ky], Zq1, zero)));
        const vec4   Rb = vec4_madd(wy, Zb, zero), Rc = vec4_madd(wy, Zc, zero);
        double *restrict row = origin + kz * sz + ky * sy;
        for (int kx = 0; kx < S; kx++) {
          double *restrict node = row + 4 * kx;
          vec4_store(node, vec4_madd(s.w[0][kx], Ra, vec4_madd(s.wdx[0][kx], Rb, vec4_madd(-s.dw[0][kx], Rc, vec4_load(node)))));
        }
      }
    }
  }
}

/* The end of a 3D G2P for one particle, from the sums B (affine moment)
 * and G (gradient) of the node vectors (slots 1..3): C = B D^-1, dropped
 * at rest next to a held node (flag = grid slot 0), for APIC and affine
 * FLIP; and (K14, K16) F_E <- (I + dt grad v) F_E. */
ALWAYS_INLINE void g2p_3d_finish(const vec4 *B, const vec4 *G, double flag, double sp2, double dt, double rest2, double dinv, double *C, double *Fe)
{
  if (C) {
    const double keep = flag > 0 && sp2 * dt * dt <= rest2 ? 0.0 : dinv;
    for (int a = 0; a < 3; a++)
      for (int b = 0; b < 3; b++) C[3 * a + b] = B[b][1 + a] * keep;
  }
  double Fn[9];
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++) {
      double t = Fe[3 * a + b];
      for (int c = 0; c < 3; c++) t += dt * G[c][1 + a] * Fe[3 * c + b];
      Fn[3 * a + b] = t;
    }
  for (int a = 0; a < 9; a++) Fe[a] = Fn[a];
}

/* g2p_generic(3, order, 0, ...) for APIC (flip < 0) with vec4 node values. */
ALWAYS_INLINE double g2p_3d_vec4(const int order, const MPMGridBox *g, const double *restrict grid, double dt, double rest, MPMParticleView *p)
{
  const int    S = order + 1;
  const double dinv = mpm_apic_dinv(order, g->h);
  const double rest2 = rest * rest * g->h * g->h; /* |v| dt <= rest h: at rest */
  const long   sy = 4L * g->gn[0], sz = sy * g->gn[1];
  double *restrict X = p->x, *restrict V = p->v, *restrict Cp = p->C, *restrict Fp = p->Fe;
  double       vmax2 = 0;

  for (int q = 0; q < p->n; q++) {
    Stencil s;
    double *restrict x = X + 3 * q, *restrict v = V + 3 * q, *restrict Fe = Fp + 9 * q;
    vec4 vp = {0}, B[3] = {{0}}, G[3] = {{0}};
    stencil_eval(g, 3, order, x, &s);
    const double *restrict origin = grid + 4 * node_offset(g, s.base[0], s.base[1], s.base[2]);
    for (int kz = 0; kz < S; kz++) {
      vec4 T0 = {0}, T1 = {0}, T2 = {0}, T3 = {0}, T4 = {0};
      for (int ky = 0; ky < S; ky++) {
        vec4 S0 = {0}, S1 = {0}, S2 = {0};
        const double *restrict row = origin + kz * sz + ky * sy;
        for (int kx = 0; kx < S; kx++) {
          const vec4 n = vec4_load(row + 4 * kx);
          S0           = vec4_madd(s.w[0][kx], n, S0);
          S1           = vec4_madd(s.wdx[0][kx], n, S1);
          S2           = vec4_madd(s.dw[0][kx], n, S2);
        }
        T0 = vec4_madd(s.w[1][ky], S0, T0);
        T1 = vec4_madd(s.w[1][ky], S1, T1);
        T2 = vec4_madd(s.w[1][ky], S2, T2);
        T3 = vec4_madd(s.wdx[1][ky], S0, T3);
        T4 = vec4_madd(s.dw[1][ky], S0, T4);
      }
      vp   = vec4_madd(s.w[2][kz], T0, vp);
      B[0] = vec4_madd(s.w[2][kz], T1, B[0]);
      B[1] = vec4_madd(s.w[2][kz], T3, B[1]);
      B[2] = vec4_madd(s.wdx[2][kz], T0, B[2]);
      G[0] = vec4_madd(s.w[2][kz], T2, G[0]);
      G[1] = vec4_madd(s.w[2][kz], T4, G[1]);
      G[2] = vec4_madd(s.dw[2][kz], T0, G[2]);
    }
    double sp2 = 0;
    for (int a = 0; a < 3; a++) {
      x[a] += dt * vp[1 + a]; /* (K13): nodes move with the grid velocity */
      v[a] = vp[1 + a];
      sp2 += vp[1 + a] * vp[1 + a];
    }
    if (sp2 > vmax2) vmax2 = sp2;
    g2p_3d_finish(B, G, vp[0], sp2, dt, rest2, dinv, Cp ? Cp + 9 * q : NULL, Fe);
  }
  return vmax2;
}

/* ------------------------------------------------------------------------ */
/* 3D PIC/FLIP: a node of 7 (or 8, padded) doubles as two vec4 (lo = mass   */
/* and momentum or velocity, hi = force or old velocity, fourth lane unused) */
/* ------------------------------------------------------------------------ */
/* The bodies of p2g_generic(3, order, 1, ...) and g2p_generic(3, order, 1,
 * ...) with the slots that are always zero left out (no force in lo, no
 * momentum in hi) and only the sums G2P uses (the gradient and the affine
 * moment of lo, the value of hi).  Plain vector products and sums in the
 * generic bodies' order, no fused multiply-add: the results are those of
 * the generic bodies bit for bit (the golden 3D FLIP case).  The explicit
 * integrator pads its FLIP nodes to 8 doubles (dof 8): hi is then a plain
 * vector load and store.  With 7, hi is a masked one, and a masked store
 * does not forward to the next particle's load of the same node (sorted
 * particles share nodes): the P2G of dof 7 runs at the generic body's
 * speed, that of dof 8 at ~2x. */
#if defined(__AVX__)
/* masked: the fourth lane is neither read nor written (it is the next
 * node's mass, or past the end of the grid), and a memcpy of 3 doubles
 * into a vector goes through the stack (a store-forwarding stall) */
ALWAYS_INLINE vec4 vec4_load3(const double *p) { return (vec4)_mm256_maskload_pd(p, _mm256_set_epi64x(0, -1, -1, -1)); }
ALWAYS_INLINE void vec4_store3(double *p, vec4 v) { _mm256_maskstore_pd(p, _mm256_set_epi64x(0, -1, -1, -1), (__m256d)v); }
#else
ALWAYS_INLINE vec4 vec4_load3(const double *p) { return (vec4){p[0], p[1], p[2], 0}; }
ALWAYS_INLINE void vec4_store3(double *p, vec4 v) { p[0] = v[0], p[1] = v[1], p[2] = v[2]; }
#endif

ALWAYS_INLINE vec4 hi_load(const int dof, const double *p) { return dof == 8 ? vec4_load(p) : vec4_load3(p); }
ALWAYS_INLINE void hi_store(const int dof, double *p, vec4 v)
{
  if (dof == 8) vec4_store(p, v);
  else vec4_store3(p, v);
}

ALWAYS_INLINE void p2g_3d_split(const int order, const int dof, const MPMGridBox *g, const MPMParticleView *p, double dt, double *restrict grid)
{
  const int     S = order + 1;
  const double *restrict X = p->x;
  const long    sy = (long)dof * g->gn[0], sz = sy * g->gn[1];

  for (int q = 0; q < p->n; q++) {
    Stencil s;
    vec4    P0, P[3], Q[3];
    p2g_3d_particle(p, q, dt, 1, &P0, P, Q);
    stencil_eval(g, 3, order, X + 3 * q, &s);
    double *restrict origin = grid + dof * node_offset(g, s.base[0], s.base[1], s.base[2]);
    for (int kz = 0; kz < S; kz++) {
      const vec4 wz = vec4_set1(s.w[2][kz]);
      const vec4 Za = wz * P0 + vec4_set1(s.wdx[2][kz]) * P[2], Zp1 = wz * P[1], Zb = wz * P[0];
      const vec4 Zh = -(vec4_set1(s.dw[2][kz]) * Q[2]), Zq1 = wz * Q[1], Zc = wz * Q[0];
      for (int ky = 0; ky < S; ky++) {
        const vec4 wy = vec4_set1(s.w[1][ky]);
        const vec4 Ra = wy * Za + vec4_set1(s.wdx[1][ky]) * Zp1, Rb = wy * Zb;
        const vec4 Rh = wy * Zh - vec4_set1(s.dw[1][ky]) * Zq1, Rc = wy * Zc;
        double *restrict row = origin + kz * sz + ky * sy;
        for (int kx = 0; kx < S; kx++) {
          double *restrict node = row + dof * kx;
          const vec4 wx = vec4_set1(s.w[0][kx]);
          vec4_store(node, vec4_load(node) + (wx * Ra + vec4_set1(s.wdx[0][kx]) * Rb));
          hi_store(dof, node + 4, hi_load(dof, node + 4) + (wx * Rh - vec4_set1(s.dw[0][kx]) * Rc));
        }
      }
    }
  }
}

ALWAYS_INLINE double g2p_3d_split(const int order, const int dof, const MPMGridBox *g, const double *restrict grid, double dt, double flip, double rest, MPMParticleView *p)
{
  const int    S = order + 1;
  const double dinv = mpm_apic_dinv(order, g->h);
  const double rest2 = rest * rest * g->h * g->h; /* |v| dt <= rest h: at rest */
  const long   sy = (long)dof * g->gn[0], sz = sy * g->gn[1];
  double *restrict X = p->x, *restrict V = p->v, *restrict Cp = p->C, *restrict Fp = p->Fe;
  double       vmax2 = 0;

  for (int q = 0; q < p->n; q++) {
    Stencil s;
    double *restrict x = X + 3 * q, *restrict v = V + 3 * q, *restrict Fe = Fp + 9 * q;
    vec4 vp = {0}, vo = {0}, B[3] = {{0}}, G[3] = {{0}};
    stencil_eval(g, 3, order, x, &s);
    const double *restrict origin = grid + dof * node_offset(g, s.base[0], s.base[1], s.base[2]);
    for (int kz = 0; kz < S; kz++) {
      vec4 T0 = {0}, T1 = {0}, T2 = {0}, T3 = {0}, T4 = {0}, To = {0};
      for (int ky = 0; ky < S; ky++) {
        vec4 S0 = {0}, S1 = {0}, S2 = {0}, So = {0};
        const double *restrict row = origin + kz * sz + ky * sy;
        for (int kx = 0; kx < S; kx++) {
          const vec4 n = vec4_load(row + dof * kx), o = hi_load(dof, row + dof * kx + 4), wx = vec4_set1(s.w[0][kx]);
          S0 += wx * n;
          S1 += vec4_set1(s.wdx[0][kx]) * n;
          S2 += vec4_set1(s.dw[0][kx]) * n;
          So += wx * o;
        }
        const vec4 wy = vec4_set1(s.w[1][ky]);
        T0 += wy * S0;
        T1 += wy * S1;
        T2 += wy * S2;
        T3 += vec4_set1(s.wdx[1][ky]) * S0;
        T4 += vec4_set1(s.dw[1][ky]) * S0;
        To += wy * So;
      }
      const vec4 wz = vec4_set1(s.w[2][kz]);
      vp += wz * T0;
      vo += wz * To;
      B[0] += wz * T1;
      B[1] += wz * T3;
      G[0] += wz * T2;
      G[1] += wz * T4;
      B[2] += vec4_set1(s.wdx[2][kz]) * T0;
      G[2] += vec4_set1(s.dw[2][kz]) * T0;
    }
    double sp2 = 0;
    for (int a = 0; a < 3; a++) {
      const double vg   = vp[1 + a];
      const double vnew = flip < 0 ? vg : flip * (v[a] + vg - vo[a]) + (1.0 - flip) * vg;
      x[a] += dt * vg; /* (K13): nodes move with the grid velocity */
      v[a] = vnew;
      sp2 += vnew * vnew;
    }
    if (sp2 > vmax2) vmax2 = sp2;
    g2p_3d_finish(B, G, vp[0], sp2, dt, rest2, dinv, Cp ? Cp + 9 * q : NULL, Fe);
  }
  return vmax2;
}

/* ------------------------------------------------------------------------ */
/* The implicit integrator's operators: gradients and divergences on a grid  */
/* of velocities, node by node (clarity first: they run a few times per      */
/* Newton step, not once per time step like P2G/G2P).                        */
/* ------------------------------------------------------------------------ */
/* The nodes of particle x's stencil (offsets into the grid, in doubles)
 * and the weight gradients there. */
typedef struct {
  int    n;
  long   at[MPM_MAX_STENCIL * MPM_MAX_STENCIL * MPM_MAX_STENCIL];
  double gw[MPM_MAX_STENCIL * MPM_MAX_STENCIL * MPM_MAX_STENCIL][3];
} StencilGrad;

static void stencil_grad(const MPMGridBox *g, const double *x, StencilGrad *sg)
{
  Stencil   s;
  const int S = g->order + 1, Sz = g->dim == 3 ? S : 1;
  stencil_eval(g, g->dim, g->order, x, &s);
  sg->n = 0;
  for (int kz = 0; kz < Sz; kz++)
    for (int ky = 0; ky < S; ky++)
      for (int kx = 0; kx < S; kx++) {
        const double w0 = s.w[0][kx], w1 = s.w[1][ky], w2 = s.w[2][kz];
        double      *gw = sg->gw[sg->n];
        gw[0]           = s.dw[0][kx] * w1 * w2;
        gw[1]           = w0 * s.dw[1][ky] * w2;
        gw[2]           = w0 * w1 * s.dw[2][kz];
        sg->at[sg->n++] = g->dof * node_offset(g, s.base[0] + kx, s.base[1] + ky, s.base[2] + kz);
      }
}

void mpm_p2g_scalar(const MPMGridBox *g, int n, const double *X, const double *s, double *grid, int off)
{
  const int S = g->order + 1, Sz = g->dim == 3 ? S : 1;
  for (int q = 0; q < n; q++) {
    Stencil st;
    stencil_eval(g, g->dim, g->order, X + q * g->dim, &st);
    for (int kz = 0; kz < Sz; kz++)
      for (int ky = 0; ky < S; ky++)
        for (int kx = 0; kx < S; kx++)
          grid[g->dof * node_offset(g, st.base[0] + kx, st.base[1] + ky, st.base[2] + kz) + off] += st.w[0][kx] * st.w[1][ky] * st.w[2][kz] * s[q];
  }
}

void mpm_g2p_scalar(const MPMGridBox *g, int n, const double *X, const double *grid, int off, double *s)
{
  const int S = g->order + 1, Sz = g->dim == 3 ? S : 1;
  for (int q = 0; q < n; q++) {
    Stencil st;
    double  t = 0;
    stencil_eval(g, g->dim, g->order, X + q * g->dim, &st);
    for (int kz = 0; kz < Sz; kz++)
      for (int ky = 0; ky < S; ky++)
        for (int kx = 0; kx < S; kx++) t += st.w[0][kx] * st.w[1][ky] * st.w[2][kz] * grid[g->dof * node_offset(g, st.base[0] + kx, st.base[1] + ky, st.base[2] + kz) + off];
    s[q] = t;
  }
}

static void grid_gradient_vec4(const MPMGridBox *g, int n, const double *X, const double *grid, double *G);
static void p2g_divergence_vec4(const MPMGridBox *g, int n, const double *X, const double *A, double *grid);

/* 3D grids of nodes of 4 doubles, read from slot 0, take the SIMD pass of
 * the semi-implicit operator (the same sums reassociated). */
void mpm_grid_gradient(const MPMGridBox *g, int n, const double *X, const double *grid, int off, double *G)
{
  const int   d = g->dim;
  StencilGrad sg;
  if (d == 3 && g->dof == 4 && off == 0) {
    grid_gradient_vec4(g, n, X, grid, G);
    return;
  }
  for (int q = 0; q < n; q++) {
    double *Gq = G + q * d * d;
    stencil_grad(g, X + q * d, &sg);
    for (int k = 0; k < d * d; k++) Gq[k] = 0;
    for (int k = 0; k < sg.n; k++)
      for (int a = 0; a < d; a++)
        for (int b = 0; b < d; b++) Gq[a * d + b] += grid[sg.at[k] + off + a] * sg.gw[k][b];
  }
}

void mpm_p2g_divergence(const MPMGridBox *g, int n, const double *X, const double *A, double *grid, int off)
{
  const int   d = g->dim;
  StencilGrad sg;
  if (d == 3 && g->dof == 4 && off == 0) {
    p2g_divergence_vec4(g, n, X, A, grid);
    return;
  }
  for (int q = 0; q < n; q++) {
    const double *Aq = A + q * d * d;
    stencil_grad(g, X + q * d, &sg);
    for (int k = 0; k < sg.n; k++)
      for (int a = 0; a < d; a++)
        for (int b = 0; b < d; b++) grid[sg.at[k] + off + a] += Aq[a * d + b] * sg.gw[k][b];
  }
}

void mpm_gradient_divergence(const MPMGridBox *g, int n, const double *X, const double *in, MPMPointOp op, void *ctx, double *out)
{
  const int   d = g->dim;
  StencilGrad sg;
  for (int q = 0; q < n; q++) {
    double G[9] = {0}, A[9];
    stencil_grad(g, X + q * d, &sg);
    for (int k = 0; k < sg.n; k++)
      for (int a = 0; a < d; a++)
        for (int b = 0; b < d; b++) G[a * d + b] += in[sg.at[k] + a] * sg.gw[k][b];
    op(q, G, A, ctx);
    for (int k = 0; k < sg.n; k++)
      for (int a = 0; a < d; a++)
        for (int b = 0; b < d; b++) out[sg.at[k] + a] += A[a * d + b] * sg.gw[k][b];
  }
}

void mpm_p2g_diagonal(const MPMGridBox *g, int n, const double *X, const double *F, const double *D, double *grid, int off)
{
  const int   d = g->dim;
  StencilGrad sg;
  for (int q = 0; q < n; q++) {
    const double *Fq = F + q * d * d, *Dq = D + q * d * d * d;
    stencil_grad(g, X + q * d, &sg);
    for (int k = 0; k < sg.n; k++) {
      double y[3] = {0, 0, 0}; /* y = F^T grad w */
      for (int c = 0; c < d; c++)
        for (int b = 0; b < d; b++) y[c] += Fq[b * d + c] * sg.gw[k][b];
      for (int a = 0; a < d; a++) {
        double t = 0;
        for (int c = 0; c < d; c++)
          for (int f = 0; f < d; f++) t += Dq[(a * d + c) * d + f] * y[c] * y[f];
        grid[sg.at[k] + off + a] += t;
      }
    }
  }
}

int mpm_stencil_y(const MPMGridBox *g, const double *x, const double *F, int *node, double *y)
{
  const int   d = g->dim;
  StencilGrad sg;
  stencil_grad(g, x, &sg);
  for (int k = 0; k < sg.n; k++) {
    node[k] = (int)(sg.at[k] / g->dof); /* stencil_grad's offsets are in doubles */
    for (int c = 0; c < d; c++) {
      double t = 0;
      for (int b = 0; b < d; b++) t += F[b * d + c] * sg.gw[k][b];
      y[k * d + c] = t;
    }
  }
  return sg.n;
}

/* ------------------------------------------------------------------------ */
/* The dispatch: (dim, order, FLIP split) become compile-time constants.     */
/* ------------------------------------------------------------------------ */
void mpm_p2g(const MPMGridBox *g, const MPMParticleView *p, double dt, double *grid)
{
  const int split = g->dof > 1 + g->dim;
  if (g->dim == 3 && !split) {
    if (g->order == 2) p2g_3d_vec4(2, g, p, dt, grid);
    else p2g_3d_vec4(3, g, p, dt, grid);
  } else if (g->dim == 3) {
    if (g->dof == 8) g->order == 2 ? p2g_3d_split(2, 8, g, p, dt, grid) : p2g_3d_split(3, 8, g, p, dt, grid);
    else g->order == 2 ? p2g_3d_split(2, 7, g, p, dt, grid) : p2g_3d_split(3, 7, g, p, dt, grid);
  } else if (g->order == 2) {
    if (split) p2g_generic(2, 2, 1, g, p, dt, grid);
    else p2g_generic(2, 2, 0, g, p, dt, grid);
  } else {
    if (split) p2g_generic(2, 3, 1, g, p, dt, grid);
    else p2g_generic(2, 3, 0, g, p, dt, grid);
  }
}

double mpm_g2p(const MPMGridBox *g, const double *grid, double dt, double flip, double rest, MPMParticleView *p)
{
  const int split = g->dof > 1 + g->dim;
  if (g->dim == 3 && !split && flip < 0) return g->order == 2 ? g2p_3d_vec4(2, g, grid, dt, rest, p) : g2p_3d_vec4(3, g, grid, dt, rest, p);
  if (g->dim == 3 && g->dof == 8) return g->order == 2 ? g2p_3d_split(2, 8, g, grid, dt, flip, rest, p) : g2p_3d_split(3, 8, g, grid, dt, flip, rest, p);
  if (g->dim == 3) return g->order == 2 ? g2p_3d_split(2, 7, g, grid, dt, flip, rest, p) : g2p_3d_split(3, 7, g, grid, dt, flip, rest, p);
  if (g->order == 2) return split ? g2p_generic(2, 2, 1, g, grid, dt, flip, rest, p) : g2p_generic(2, 2, 0, g, grid, dt, flip, rest, p);
  return split ? g2p_generic(2, 3, 1, g, grid, dt, flip, rest, p) : g2p_generic(2, 3, 0, g, grid, dt, flip, rest, p);
}

/* ------------------------------------------------------------------------ */
/* The semi-implicit stiffness action with per-particle symmetric maps        */
/* ------------------------------------------------------------------------ */
/* Index of entry (i, j), i <= j, of a symmetric nb x nb matrix stored as its
 * upper triangle row by row. */
ALWAYS_INLINE int sym_index(int nb, int i, int j)
{
  return i * nb - i * (i - 1) / 2 + (j - i);
}

/* A = S vec(G) for a packed symmetric S (dim^2 values per side), walking
 * the upper triangle once: each stored entry feeds A_i and A_j.  (Indexing
 * the full matrix through sym_index, with its branch, compiled to a loop
 * that took 50 ns of a 3D particle's 88; this one unrolls to 81 FMAs.) */
ALWAYS_INLINE void sym_apply(const int nb, const double *restrict Sq, const double *restrict gv, double *restrict A)
{
  double a[9];
  int    n = 0;
  for (int i = 0; i < nb; i++) a[i] = 0;
  _Pragma("GCC unroll 9") for (int i = 0; i < nb; i++)
  {
    a[i] += Sq[n++] * gv[i];
    _Pragma("GCC unroll 9") for (int j = i + 1; j < nb; j++, n++)
    {
      a[i] += Sq[n] * gv[j];
      a[j] += Sq[n] * gv[i];
    }
  }
  for (int i = 0; i < nb; i++) A[i] = a[i];
}

/* G = sum_i in_i grad w_i^T, A = S vec(G), out_i += A grad w_i, with the
 * tensor-product factoring of the file's header: the gradient's columns are
 * summed row by row (dwx and wx), then plane by plane, then along z; the
 * divergence builds per-plane and per-row vectors so a node costs 2 dim
 * FMAs.  vec(G)[a dim + b] = d in_a / d x_b. */
ALWAYS_INLINE void graddiv_sym(const int dim, const int order, const MPMGridBox *g, int n, const double *restrict X, const double *restrict S,
                               const double *restrict in, double *restrict out)
{
  const int  W = order + 1, Wz = dim == 3 ? W : 1, nb = dim * dim, ns = mpm_sym_map_size(dim), dof = g->dof;
  const long sy = (long)dof * g->gn[0], sz = sy * g->gn[1];

  for (int q = 0; q < n; q++) {
    Stencil       s;
    double        col[3][3] = {{0}}; /* col[b][a] = d in_a / d x_b */
    double        gv[9], A[9], Ac[3][3], Sx[45];
    const double *Sq = S + (size_t)q * ns;
    if (dim == 3) { /* the factors, expanded (this path serves nodes of 3 values, which only the tests use) */
      mpm_sym_factors_expand(Sq, Sx);
      Sq = Sx;
    }
    stencil_eval(g, dim, order, X + q * dim, &s);
    const long    o   = dof * node_offset(g, s.base[0], s.base[1], s.base[2]);
    const double *src = in + o;
    double       *dst = out + o;

    for (int kz = 0; kz < Wz; kz++) {
      double P0[3] = {0}, P1[3] = {0}, P2[3] = {0};
      for (int ky = 0; ky < W; ky++) {
        const double *row   = src + kz * sz + ky * sy;
        double        R0[3] = {0}, R1[3] = {0};
        for (int kx = 0; kx < W; kx++)
          for (int a = 0; a < dim; a++) {
            R0[a] += s.dw[0][kx] * row[kx * dof + a];
            R1[a] += s.w[0][kx] * row[kx * dof + a];
          }
        for (int a = 0; a < dim; a++) {
          P0[a] += s.w[1][ky] * R0[a];
          P1[a] += s.dw[1][ky] * R1[a];
          if (dim == 3) P2[a] += s.w[1][ky] * R1[a];
        }
      }
      for (int a = 0; a < dim; a++) {
        col[0][a] += s.w[2][kz] * P0[a];
        col[1][a] += s.w[2][kz] * P1[a];
        if (dim == 3) col[2][a] += s.dw[2][kz] * P2[a];
      }
    }
    for (int a = 0; a < dim; a++)
      for (int b = 0; b < dim; b++) gv[a * dim + b] = col[b][a];
    sym_apply(nb, Sq, gv, A);
    for (int a = 0; a < dim; a++)
      for (int b = 0; b < dim; b++) Ac[b][a] = A[a * dim + b];

    /* node (kx, ky, kz) += dwx (wy wz A_0) + wx (dwy wz A_1 + wy dwz A_2) */
    for (int kz = 0; kz < Wz; kz++) {
      double Z0[3], Z1[3], Z2[3];
      for (int a = 0; a < dim; a++) {
        Z0[a] = s.w[2][kz] * Ac[0][a];
        Z1[a] = s.w[2][kz] * Ac[1][a];
        Z2[a] = dim == 3 ? s.dw[2][kz] * Ac[2][a] : 0.0;
      }
      for (int ky = 0; ky < W; ky++) {
        double *row = dst + kz * sz + ky * sy, Ra[3], Rb[3];
        for (int a = 0; a < dim; a++) {
          Ra[a] = s.w[1][ky] * Z0[a];
          Rb[a] = s.dw[1][ky] * Z1[a] + (dim == 3 ? s.w[1][ky] * Z2[a] : 0.0);
        }
        for (int kx = 0; kx < W; kx++)
          for (int a = 0; a < dim; a++) row[kx * dof + a] += s.dw[0][kx] * Ra[a] + s.w[0][kx] * Rb[a];
      }
    }
  }
}

/* The gradient of a 3D grid of nodes of 4 doubles (3 components and a
 * padding slot) at one particle: c_b[a] = d in_a / d x_b, summed row by row
 * (dwx and wx), then plane by plane, then along z; a node is one vec4, so a
 * stencil node costs 2 vector FMAs. */
ALWAYS_INLINE void grad_3d_vec4(const int order, const Stencil *s, const double *restrict src, long sy, long sz, vec4 *c)
{
  const int  W    = order + 1;
  const vec4 zero = {0};
  vec4       c0 = zero, c1 = zero, c2 = zero;
  for (int kz = 0; kz < W; kz++) {
    vec4 P0 = zero, P1 = zero, P2 = zero;
    for (int ky = 0; ky < W; ky++) {
      const double *row = src + kz * sz + ky * sy;
      vec4          R0 = zero, R1 = zero;
      for (int kx = 0; kx < W; kx++) {
        const vec4 v = vec4_load(row + 4 * kx);
        R0           = vec4_madd(s->dw[0][kx], v, R0);
        R1           = vec4_madd(s->w[0][kx], v, R1);
      }
      P0 = vec4_madd(s->w[1][ky], R0, P0);
      P1 = vec4_madd(s->dw[1][ky], R1, P1);
      P2 = vec4_madd(s->w[1][ky], R1, P2);
    }
    c0 = vec4_madd(s->w[2][kz], P0, c0);
    c1 = vec4_madd(s->w[2][kz], P1, c1);
    c2 = vec4_madd(s->dw[2][kz], P2, c2);
  }
  c[0] = c0, c[1] = c1, c[2] = c2;
}

/* Its adjoint: node (kx, ky, kz) += A grad w = dwx (wy wz Ac_0) + wx (dwy wz
 * Ac_1 + wy dwz Ac_2), Ac_b[a] = A[a][b] (the padding lanes 0), from
 * per-plane and per-row vectors: 2 vector FMAs a node. */
ALWAYS_INLINE void div_3d_vec4_cols(const int order, const Stencil *s, double *restrict dst, long sy, long sz, vec4 A0, vec4 A1, vec4 A2)
{
  const int  W    = order + 1;
  const vec4 zero = {0};
  for (int kz = 0; kz < W; kz++) {
    const vec4 Z0 = vec4_madd(s->w[2][kz], A0, zero), Z1 = vec4_madd(s->w[2][kz], A1, zero), Z2 = vec4_madd(s->dw[2][kz], A2, zero);
    for (int ky = 0; ky < W; ky++) {
      double    *row = dst + kz * sz + ky * sy;
      const vec4 Ra = vec4_madd(s->w[1][ky], Z0, zero), Rb = vec4_madd(s->dw[1][ky], Z1, vec4_madd(s->w[1][ky], Z2, zero));
      for (int kx = 0; kx < W; kx++) vec4_store(row + 4 * kx, vec4_madd(s->dw[0][kx], Ra, vec4_madd(s->w[0][kx], Rb, vec4_load(row + 4 * kx))));
    }
  }
}

/* The same with A row by row (its columns gathered). */
ALWAYS_INLINE void div_3d_vec4(const int order, const Stencil *s, double *restrict dst, long sy, long sz, const double *A)
{
  div_3d_vec4_cols(order, s, dst, sy, sz, (vec4){A[0], A[3], A[6], 0}, (vec4){A[1], A[4], A[7], 0}, (vec4){A[2], A[5], A[8], 0});
}

/* A = S vec(G) from the map's principal-frame factors (mpm_iso_sym_factors)
 * on G's columns c[b] (lanes 0-2; c[b][a] = G_ab), into A's columns: m_l =
 * G u_l, Ghat_kl = u_k . m_l, the blocks, n_l = U Ahat e_l, A e_j = sum_l
 * n_l U_jl.  27 vector multiply-adds, 48 scalar products and 27 values
 * read, against 81 scalar multiply-adds and 45 values for the packed
 * matrix.  Lane 3 of the result is 0 (U's padding). */
ALWAYS_INLINE void sym_factors_apply(const double *restrict f, const vec4 *c, vec4 *a)
{
  const vec4 zero = {0};
  double     M[3][4], Gh[3][3], Ah[3][3];
  for (int l = 0; l < 3; l++) vec4_store(M[l], vec4_madd(f[4 * l + 2], c[2], vec4_madd(f[4 * l + 1], c[1], vec4_madd(f[4 * l], c[0], zero))));
  for (int k = 0; k < 3; k++)
    for (int l = 0; l < 3; l++) Gh[k][l] = f[4 * k] * M[l][0] + f[4 * k + 1] * M[l][1] + f[4 * k + 2] * M[l][2];
  Ah[0][0] = f[12] * Gh[0][0] + f[13] * Gh[1][1] + f[14] * Gh[2][2];
  Ah[1][1] = f[13] * Gh[0][0] + f[15] * Gh[1][1] + f[16] * Gh[2][2];
  Ah[2][2] = f[14] * Gh[0][0] + f[16] * Gh[1][1] + f[17] * Gh[2][2];
  for (int p = 0; p < 3; p++) {
    const int     k = p < 2 ? 0 : 1, l = p < 1 ? 1 : 2;
    const double *b = f + 18 + 3 * p;
    Ah[k][l]        = b[0] * Gh[k][l] + b[1] * Gh[l][k];
    Ah[l][k]        = b[1] * Gh[k][l] + b[2] * Gh[l][k];
  }
  const vec4 u0 = vec4_load(f), u1 = vec4_load(f + 4), u2 = vec4_load(f + 8);
  vec4       nl[3];
  for (int l = 0; l < 3; l++) nl[l] = vec4_madd(Ah[2][l], u2, vec4_madd(Ah[1][l], u1, vec4_madd(Ah[0][l], u0, zero)));
  for (int j = 0; j < 3; j++) a[j] = vec4_madd(f[8 + j], nl[2], vec4_madd(f[4 + j], nl[1], vec4_madd(f[j], nl[0], zero)));
}

/* graddiv_sym in 3D on nodes of 4 doubles. */
ALWAYS_INLINE void graddiv_sym_3d_vec4(const int order, const MPMGridBox *g, int n, const double *restrict X, const double *restrict S, const double *restrict in,
                                       double *restrict out)
{
  const long sy = 4L * g->gn[0], sz = sy * g->gn[1];
  for (int q = 0; q < n; q++) {
    Stencil s;
    vec4    c[3], A[3];
    stencil_eval(g, 3, order, X + 3 * q, &s);
    const long o = 4 * node_offset(g, s.base[0], s.base[1], s.base[2]);
    grad_3d_vec4(order, &s, in + o, sy, sz, c);
    sym_factors_apply(S + (size_t)q * 27, c, A);
    div_3d_vec4_cols(order, &s, out + o, sy, sz, A[0], A[1], A[2]);
  }
}

/* mpm_grid_gradient and mpm_p2g_divergence on such a grid (the
 * semi-implicit step's velocity field). */
ALWAYS_INLINE void grid_gradient_3d_vec4(const int order, const MPMGridBox *g, int n, const double *restrict X, const double *restrict in, double *restrict G)
{
  const long sy = 4L * g->gn[0], sz = sy * g->gn[1];
  for (int q = 0; q < n; q++) {
    Stencil s;
    vec4    c[3];
    stencil_eval(g, 3, order, X + 3 * q, &s);
    grad_3d_vec4(order, &s, in + 4 * node_offset(g, s.base[0], s.base[1], s.base[2]), sy, sz, c);
    for (int a = 0; a < 3; a++)
      for (int b = 0; b < 3; b++) G[9 * q + a * 3 + b] = c[b][a];
  }
}

ALWAYS_INLINE void p2g_divergence_3d_vec4(const int order, const MPMGridBox *g, int n, const double *restrict X, const double *restrict A, double *restrict out)
{
  const long sy = 4L * g->gn[0], sz = sy * g->gn[1];
  for (int q = 0; q < n; q++) {
    Stencil s;
    stencil_eval(g, 3, order, X + 3 * q, &s);
    div_3d_vec4(order, &s, out + 4 * node_offset(g, s.base[0], s.base[1], s.base[2]), sy, sz, A + 9 * q);
  }
}

static void grid_gradient_vec4(const MPMGridBox *g, int n, const double *X, const double *grid, double *G)
{
  g->order == 2 ? grid_gradient_3d_vec4(2, g, n, X, grid, G) : grid_gradient_3d_vec4(3, g, n, X, grid, G);
}

static void p2g_divergence_vec4(const MPMGridBox *g, int n, const double *X, const double *A, double *grid)
{
  g->order == 2 ? p2g_divergence_3d_vec4(2, g, n, X, A, grid) : p2g_divergence_3d_vec4(3, g, n, X, A, grid);
}

void mpm_gradient_divergence_sym(const MPMGridBox *g, int n, const double *X, const double *S, const double *in, double *out)
{
  if (g->dim == 3 && g->dof == 4) g->order == 2 ? graddiv_sym_3d_vec4(2, g, n, X, S, in, out) : graddiv_sym_3d_vec4(3, g, n, X, S, in, out);
  else if (g->dim == 3) g->order == 2 ? graddiv_sym(3, 2, g, n, X, S, in, out) : graddiv_sym(3, 3, g, n, X, S, in, out);
  else g->order == 2 ? graddiv_sym(2, 2, g, n, X, S, in, out) : graddiv_sym(2, 3, g, n, X, S, in, out);
}

/* The diagonal blocks D_a[b][c] = S[(a b), (a c)] of a map given by its
 * factors: with r = U's row a, D_a = U H U^T where H[l][n] = sum_km r_k r_m
 * Shat[(k l), (m n)] (the diagonal block r_l r_n D_ln, each pair's alpha,
 * beta, gamma on (l, l), (k, l) and (k, k)). */
ALWAYS_INLINE void sym_factors_blocks(const double *restrict f, double Da[3][3][3])
{
  const int dk[3][3] = {{12, 13, 14}, {13, 15, 16}, {14, 16, 17}};
  for (int a = 0; a < 3; a++) {
    const double r[3] = {f[a], f[4 + a], f[8 + a]};
    double       H[3][3], T[3][3];
    for (int l = 0; l < 3; l++)
      for (int m = 0; m < 3; m++) H[l][m] = r[l] * r[m] * f[dk[l][m]];
    for (int p = 0; p < 3; p++) {
      const int     k = p < 2 ? 0 : 1, l = p < 1 ? 1 : 2;
      const double *b = f + 18 + 3 * p;
      H[l][l] += r[k] * r[k] * b[0];
      H[k][k] += r[l] * r[l] * b[2];
      H[k][l] += r[k] * r[l] * b[1];
      H[l][k] += r[k] * r[l] * b[1];
    }
    for (int b = 0; b < 3; b++) /* T = U H, then D_a = T U^T (U_bl = f[4 l + b]) */
      for (int m = 0; m < 3; m++) T[b][m] = f[b] * H[0][m] + f[4 + b] * H[1][m] + f[8 + b] * H[2][m];
    for (int b = 0; b < 3; b++)
      for (int c = 0; c < 3; c++) Da[a][b][c] = T[b][0] * f[c] + T[b][1] * f[4 + c] + T[b][2] * f[8 + c];
  }
}

/* mpm_p2g_sym_diagonal in 3D on nodes of 4 doubles.  With D_a[b][c] =
 * S[(a b), (a c)] and gw = (X1 Y0 Z0, X0 Y1 Z0, X0 Y0 Z1) (X0 = wx, X1 =
 * dwx, ...), gw^T D_a gw groups by the x factor: X1^2 [D00 Y0^2 Z0^2] +
 * X0^2 [D11 Y1^2 Z0^2 + D22 Y0^2 Z1^2 + 2 D12 Y0 Y1 Z0 Z1] + X0 X1 [2 D01
 * Y0 Y1 Z0^2 + 2 D02 Y0^2 Z0 Z1]: per-plane and per-row vectors over a, 3
 * vector FMAs per node. */
ALWAYS_INLINE void sym_diagonal_3d_vec4(const int order, const MPMGridBox *g, int n, const double *restrict X, const double *restrict S, double scale,
                                        double *restrict grid)
{
  const int  W = order + 1, ns = 27;
  const long sy = 4L * g->gn[0], sz = sy * g->gn[1];
  const vec4 zero = {0};

  for (int q = 0; q < n; q++) {
    Stencil s;
    double  Da[3][3][3];
    vec4    E[3][3];
    stencil_eval(g, 3, order, X + 3 * q, &s);
    sym_factors_blocks(S + (size_t)q * ns, Da);
    for (int b = 0; b < 3; b++)
      for (int c = b; c < 3; c++) {
        const double f = (b == c ? 1.0 : 2.0) * scale;
        E[b][c] = (vec4){f * Da[0][b][c], f * Da[1][b][c], f * Da[2][b][c], 0};
      }
    double *origin = grid + 4 * node_offset(g, s.base[0], s.base[1], s.base[2]);
    for (int kz = 0; kz < W; kz++) {
      const double Z0 = s.w[2][kz], Z1 = s.dw[2][kz];
      const vec4   PA = vec4_madd(Z0 * Z0, E[0][0], zero), PB1 = vec4_madd(Z0 * Z0, E[1][1], zero), PB2 = vec4_madd(Z1 * Z1, E[2][2], zero),
                 PB3 = vec4_madd(Z0 * Z1, E[1][2], zero), PC1 = vec4_madd(Z0 * Z0, E[0][1], zero), PC2 = vec4_madd(Z0 * Z1, E[0][2], zero);
      for (int ky = 0; ky < W; ky++) {
        const double Y0 = s.w[1][ky], Y1 = s.dw[1][ky];
        const vec4   RA = vec4_madd(Y0 * Y0, PA, zero);
        const vec4   RB = vec4_madd(Y1 * Y1, PB1, vec4_madd(Y0 * Y0, PB2, vec4_madd(Y0 * Y1, PB3, zero)));
        const vec4   RC = vec4_madd(Y0 * Y1, PC1, vec4_madd(Y0 * Y0, PC2, zero));
        double      *row = origin + kz * sz + ky * sy;
        for (int kx = 0; kx < W; kx++) {
          const double X0 = s.w[0][kx], X1 = s.dw[0][kx];
          vec4_store(row + 4 * kx, vec4_madd(X1 * X1, RA, vec4_madd(X0 * X0, RB, vec4_madd(X0 * X1, RC, vec4_load(row + 4 * kx)))));
        }
      }
    }
  }
}

void mpm_p2g_sym_diagonal(const MPMGridBox *g, int n, const double *X, const double *S, double scale, double *grid)
{
  if (g->dim == 3 && g->dof == 4) {
    g->order == 2 ? sym_diagonal_3d_vec4(2, g, n, X, S, scale, grid) : sym_diagonal_3d_vec4(3, g, n, X, S, scale, grid);
    return;
  }
  const int   d = g->dim, nb = d * d, ns = mpm_sym_map_size(d);
  StencilGrad sg;
  for (int q = 0; q < n; q++) {
    const double *Sq = S + (size_t)q * ns;
    double        Sx[45];
    if (d == 3) { /* nodes of 3 values: the tests' path */
      mpm_sym_factors_expand(Sq, Sx);
      Sq = Sx;
    }
    stencil_grad(g, X + q * d, &sg);
    for (int k = 0; k < sg.n; k++)
      for (int a = 0; a < d; a++) {
        double t = 0;
        for (int b = 0; b < d; b++)
          for (int c = 0; c < d; c++) {
            const int i = a * d + b, j = a * d + c;
            t += Sq[i <= j ? sym_index(nb, i, j) : sym_index(nb, j, i)] * sg.gw[k][b] * sg.gw[k][c];
          }
        grid[sg.at[k] + a] += scale * t;
      }
  }
}
