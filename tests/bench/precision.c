/* Would single-precision particle storage make the explicit step faster?
 * (issue "Scale and speed": "a single-precision particle storage option if
 * it is faster").  Times the 3D APIC P2G and G2P of src/kernels/transfer.c
 * (quadratic B-splines, nodes of 4 doubles) on N particles, 8 a cell,
 * sorted by cell, with the particle state in double (the code's kernels,
 * called as the explicit step calls them) and in float (the same bodies
 * reading and writing float v, C, tau, F_E, m, V0; x stays double, the grid
 * stays double).  Prints ns per particle, the best of R passes.  A
 * benchmark, not a test: nothing is asserted.
 *
 *   build/bench_precision [cells per side, default 50: 1M particles] [R, default 8]
 *
 * Large arrays are on 2 MB pages, as granular-mpm's (src/core/memory.c). */
#define _GNU_SOURCE
#include "transfer.c" /* the kernels' static helpers (Stencil, vec4) */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

typedef struct {
  int     n;
  double *x;
  float  *v, *C, *Fe, *tau, *m, *V0;
} ViewF;

/* p2g_3d_vec4(2, ...) on float storage: the same vector operations. */
static __attribute__((noinline)) void p2g_float(const MPMGridBox *g, const ViewF *p, double dt, double *restrict grid)
{
  const long sy = 4L * g->gn[0], sz = sy * g->gn[1];
  const vec4 zero = {0};
  for (int q = 0; q < p->n; q++) {
    const double m = p->m[q], dvt = dt * p->V0[q];
    const float *v = p->v + 3 * q, *tau = p->tau + 9 * q, *C = p->C + 9 * q;
    const vec4   P0 = {m, m * v[0], m * v[1], m * v[2]};
    vec4         P[3], Q[3];
    Stencil      s;
    for (int b = 0; b < 3; b++) {
      P[b] = (vec4){0, m * C[b], m * C[3 + b], m * C[6 + b]};
      Q[b] = (vec4){0, dvt * tau[b], dvt * tau[3 + b], dvt * tau[6 + b]};
    }
    stencil_eval(g, 3, 2, p->x + 3 * q, &s);
    double *restrict origin = grid + 4 * node_offset(g, s.base[0], s.base[1], s.base[2]);
    for (int kz = 0; kz < 3; kz++) {
      const double wz = s.w[2][kz];
      const vec4   Za = vec4_madd(wz, P0, vec4_madd(s.wdx[2][kz], P[2], vec4_madd(-s.dw[2][kz], Q[2], zero)));
      const vec4   Zp1 = vec4_madd(wz, P[1], zero), Zq1 = vec4_madd(wz, Q[1], zero), Zb = vec4_madd(wz, P[0], zero), Zc = vec4_madd(wz, Q[0], zero);
      for (int ky = 0; ky < 3; ky++) {
        const double wy = s.w[1][ky];
        const vec4   Ra = vec4_madd(wy, Za, vec4_madd(s.wdx[1][ky], Zp1, vec4_madd(-s.dw[1][ky], Zq1, zero)));
        const vec4   Rb = vec4_madd(wy, Zb, zero), Rc = vec4_madd(wy, Zc, zero);
        double *restrict row = origin + kz * sz + ky * sy;
        for (int kx = 0; kx < 3; kx++) {
          double *restrict node = row + 4 * kx;
          vec4_store(node, vec4_madd(s.w[0][kx], Ra, vec4_madd(s.wdx[0][kx], Rb, vec4_madd(-s.dw[0][kx], Rc, vec4_load(node)))));
        }
      }
    }
  }
}

/* g2p_3d_vec4(2, ...) on float storage (no held nodes: C always kept). */
static __attribute__((noinline)) double g2p_float(const MPMGridBox *g, const double *restrict grid, double dt, ViewF *p)
{
  const double dinv = mpm_apic_dinv(2, g->h);
  const long   sy = 4L * g->gn[0], sz = sy * g->gn[1];
  double       vmax2 = 0;
  for (int q = 0; q < p->n; q++) {
    double *restrict x = p->x + 3 * q;
    float *restrict v = p->v + 3 * q, *restrict Fe = p->Fe + 9 * q, *restrict C = p->C + 9 * q;
    vec4    vp = {0}, B[3] = {{0}}, G[3] = {{0}};
    Stencil s;
    stencil_eval(g, 3, 2, x, &s);
    const double *restrict origin = grid + 4 * node_offset(g, s.base[0], s.base[1], s.base[2]);
    for (int kz = 0; kz < 3; kz++) {
      vec4 T0 = {0}, T1 = {0}, T2 = {0}, T3 = {0}, T4 = {0};
      for (int ky = 0; ky < 3; ky++) {
        vec4 S0 = {0}, S1 = {0}, S2 = {0};
        const double *restrict row = origin + kz * sz + ky * sy;
        for (int kx = 0; kx < 3; kx++) {
          const vec4 nd = vec4_load(row + 4 * kx);
          S0            = vec4_madd(s.w[0][kx], nd, S0);
          S1            = vec4_madd(s.wdx[0][kx], nd, S1);
          S2            = vec4_madd(s.dw[0][kx], nd, S2);
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
    double sp2 = 0, Fo[9];
    for (int a = 0; a < 3; a++) {
      x[a] += dt * vp[1 + a];
      v[a] = (float)vp[1 + a];
      sp2 += vp[1 + a] * vp[1 + a];
    }
    if (sp2 > vmax2) vmax2 = sp2;
    for (int a = 0; a < 9; a++) Fo[a] = Fe[a];
    for (int a = 0; a < 3; a++)
      for (int b = 0; b < 3; b++) {
        double t = Fo[3 * a + b];
        for (int c = 0; c < 3; c++) t += dt * G[c][1 + a] * Fo[3 * c + b];
        Fe[3 * a + b] = (float)t;
        C[3 * a + b]  = (float)(B[b][1 + a] * dinv);
      }
  }
  return vmax2;
}

static void *Huge(size_t bytes)
{
  const size_t al = (size_t)2 << 20, sz = (bytes + al - 1) / al * al;
  void        *p  = aligned_alloc(al, sz);
  if (!p) {
    fprintf(stderr, "bench_precision: out of memory (%zu bytes)\n", bytes);
    exit(1);
  }
  (void)madvise(p, sz, MADV_HUGEPAGE);
  memset(p, 0, sz);
  return p;
}

static double Now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double Rand(void) { return rand() / (double)RAND_MAX - 0.5; }

int main(int argc, char **argv)
{
  const int    nc = argc > 1 ? atoi(argv[1]) : 50, reps = argc > 2 ? atoi(argv[2]) : 8;
  const double h = 0.008, dt = 1e-6; /* the particles hardly move: the same cells every pass */
  if (nc < 1 || reps < 1) {
    fprintf(stderr, "usage: bench_precision [cells per side >= 1] [passes >= 1]\n");
    return 1;
  }
  MPMGridBox g = {.dim = 3, .order = 2, .dof = 4, .h = h, .gs = {-2, -2, -2}, .gn = {nc + 5, nc + 5, nc + 5}};
  const long nn = (long)g.gn[0] * g.gn[1] * g.gn[2], n = 8L * nc * nc * nc;
  double    *grid = Huge(4 * nn * sizeof(double));
  MPMParticleView pd = {.n = (int)n, .x = Huge(3 * n * 8), .v = Huge(3 * n * 8), .C = Huge(9 * n * 8), .Fe = Huge(9 * n * 8), .tau = Huge(9 * n * 8), .m = Huge(n * 8), .V0 = Huge(n * 8)};
  ViewF pf = {.n = (int)n, .x = Huge(3 * n * 8), .v = Huge(3 * n * 4), .C = Huge(9 * n * 4), .Fe = Huge(9 * n * 4), .tau = Huge(9 * n * 4), .m = Huge(n * 4), .V0 = Huge(n * 4)};
  long q = 0;
  srand(1);
  for (int k = 0; k < nc; k++) /* 2 x 2 x 2 a cell, in cell order */
    for (int j = 0; j < nc; j++)
      for (int i = 0; i < nc; i++)
        for (int c = 0; c < 8; c++, q++) {
          const double xq[3] = {(i + 0.25 + 0.5 * (c & 1)) * h, (j + 0.25 + 0.5 * ((c >> 1) & 1)) * h, (k + 0.25 + 0.5 * (c >> 2)) * h};
          for (int a = 0; a < 3; a++) pd.x[3 * q + a] = pf.x[3 * q + a] = xq[a], pd.v[3 * q + a] = pf.v[3 * q + a] = (float)(0.01 * Rand());
          for (int a = 0; a < 9; a++) {
            pd.C[9 * q + a] = pf.C[9 * q + a] = (float)(0.1 * Rand());
            pd.tau[9 * q + a] = pf.tau[9 * q + a] = (float)(1e3 * Rand());
            pd.Fe[9 * q + a] = pf.Fe[9 * q + a] = (float)((a % 4 == 0) + 1e-3 * Rand());
          }
          pd.m[q] = pf.m[q] = (float)(1600 * h * h * h / 8);
          pd.V0[q] = pf.V0[q] = (float)(h * h * h / 8);
        }
  double best[4] = {1e30, 1e30, 1e30, 1e30}, sink = 0, t;
  for (int r = 0; r < reps; r++) {
    memset(grid, 0, 4 * nn * sizeof(double)), t = Now(), mpm_p2g(&g, &pd, dt, grid), best[0] = fmin(best[0], Now() - t);
    t = Now(), sink += mpm_g2p(&g, grid, dt, -1, 0, &pd), best[1] = fmin(best[1], Now() - t);
    memset(grid, 0, 4 * nn * sizeof(double)), t = Now(), p2g_float(&g, &pf, dt, grid), best[2] = fmin(best[2], Now() - t);
    t = Now(), sink += g2p_float(&g, grid, dt, &pf), best[3] = fmin(best[3], Now() - t);
  }
  printf("%ld particles, 8 a cell, best of %d passes [ns per particle]\n", n, reps);
  printf("  P2G  double %6.1f   float %6.1f\n", 1e9 * best[0] / n, 1e9 * best[2] / n);
  printf("  G2P  double %6.1f   float %6.1f\n", 1e9 * best[1] / n, 1e9 * best[3] / n);
  /* P2G reads x v C tau m V0; G2P reads x F_E and writes x v C F_E */
  const long bd = 8 * (3 + 3 + 9 + 9 + 1 + 1) + 8 * (3 + 9) + 8 * (3 + 3 + 9 + 9);
  const long bf = 8 * 3 + 4 * (3 + 9 + 9 + 1 + 1) + 8 * 3 + 4 * 9 + 8 * 3 + 4 * (3 + 9 + 9);
  printf("  bytes the pair reads and writes a particle: double %ld, float %ld (checksum %.3e)\n", bd, bf, sink);
  return 0;
}
