/* Unit tests of the pure pointwise MPM kernels (include/mpm/kernels.h,
 * include/mpm/transfer.h).  No PETSc, no MPI: links only mpmkernels.
 *
 * Every check compares a computed value with an independently known one
 * (an identity, a conservation law, a closed form or a finite difference)
 * and prints
 *     name  value  expected  tol  ok|FAIL
 * The program returns nonzero if any check fails.  Equation numbers (Kx)
 * refer to Klar et al. 2016, "Drucker-Prager elastoplasticity for sand
 * animation".  Random inputs come from the counter-based mpm_uniform, so
 * every run sees the same numbers. */
#include <mpm/kernels.h>
#include <mpm/transfer.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* ------------------------------------------------------------------------ */
/* Check bookkeeping                                                          */
/* ------------------------------------------------------------------------ */
static int n_checks, n_failed;

static void check_impl(double value, double expected, double tol, const char *fmt, ...)
{
  char    name[160];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  const int ok = isfinite(value) && isfinite(expected) && fabs(value - expected) <= tol;
  n_checks++;
  if (!ok) n_failed++;
  printf("%-74s %+.12e %+.12e %.1e %s\n", name, value, expected, tol, ok ? "ok" : "FAIL");
}
/* CHECK(value, expected, absolute tolerance, printf-style name...) */
#define CHECK(value, expected, tol, ...) check_impl((double)(value), (double)(expected), (double)(tol), __VA_ARGS__)

static void section(const char *title) { printf("\n== %s\n", title); }

/* ------------------------------------------------------------------------ */
/* Deterministic random numbers and small dense helpers                      */
/* ------------------------------------------------------------------------ */
static uint64_t rng_key;
static double   urand(void) { return mpm_uniform(0x5eed2016ULL, rng_key++, 7); }
static double   urange(double a, double b) { return a + (b - a) * urand(); }

static double maxabs(int n, const double *a)
{
  double m = 0;
  for (int i = 0; i < n; i++) m = fmax(m, fabs(a[i]));
  return m;
}
static double maxdiff(int n, const double *a, const double *b)
{
  double m = 0;
  for (int i = 0; i < n; i++) m = fmax(m, fabs(a[i] - b[i]));
  return m;
}
static double speed(int dim, const double *v)
{
  double s = 0;
  for (int a = 0; a < dim; a++) s += v[a] * v[a];
  return sqrt(s);
}
static int cmp_double(const void *a, const void *b)
{
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
/* A speed between the two middle ones of np particles (np >= 2): half the
 * particles are slower, half faster, none within rounding of it. */
static double median_speed(int dim, int np, const double *v)
{
  double *s = malloc(sizeof(double) * (size_t)np), m;
  for (int q = 0; q < np; q++) s[q] = speed(dim, v + q * dim);
  qsort(s, (size_t)np, sizeof(double), cmp_double);
  m = 0.5 * (s[np / 2 - 1] + s[np / 2]);
  free(s);
  return m;
}
static double frob(int n, const double *a)
{
  double s = 0;
  for (int i = 0; i < n; i++) s += a[i] * a[i];
  return sqrt(s);
}
static void transpose(int d, const double *A, double *At)
{
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) At[j * d + i] = A[i * d + j];
}
static void identity(int d, double *A)
{
  for (int i = 0; i < d * d; i++) A[i] = 0;
  for (int i = 0; i < d; i++) A[i * d + i] = 1;
}
/* Random proper rotation: an angle in 2D, a normalized random quaternion in 3D. */
static void random_rotation(int d, double *R)
{
  if (d == 2) {
    const double t = urange(-M_PI, M_PI), c = cos(t), s = sin(t);
    R[0] = c, R[1] = -s, R[2] = s, R[3] = c;
    return;
  }
  double q[4], n = 0;
  for (int i = 0; i < 4; i++) {
    q[i] = urange(-1, 1);
    n += q[i] * q[i];
  }
  n = sqrt(n);
  const double w = q[0] / n, x = q[1] / n, y = q[2] / n, z = q[3] / n;
  const double M[9] = {1 - 2 * (y * y + z * z), 2 * (x * y - z * w),     2 * (x * z + y * w),
                       2 * (x * y + z * w),     1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
                       2 * (x * z - y * w),     2 * (y * z + x * w),     1 - 2 * (x * x + y * y)};
  memcpy(R, M, sizeof M);
}
/* M = R1 diag(s) R2^T */
static void rot_diag_rot(int d, const double *R1, const double *s, const double *R2, double *M)
{
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) {
      double t = 0;
      for (int k = 0; k < d; k++) t += R1[i * d + k] * s[k] * R2[j * d + k];
      M[i * d + j] = t;
    }
}
/* Frobenius norm of the deviator and the trace of a dim x dim matrix. */
static void dev_tr(int d, const double *T, double *ndev, double *tr)
{
  double t = 0, s = 0;
  for (int i = 0; i < d; i++) t += T[i * d + i];
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) {
      const double e = T[i * d + j] - (i == j ? t / d : 0.0);
      s += e * e;
    }
  *ndev = sqrt(s);
  *tr   = t;
}

/* ======================================================================== */
/* 1. B-spline weights (K5, K6)                                               */
/* ======================================================================== */
/* Weight and derivative of node `node` at xr (zero outside the stencil). */
static double node_weight(int order, double xr, int node, double *dwn)
{
  int    base;
  double w[4], dw[4];
  mpm_bspline_weights(order, xr, &base, w, dw);
  const int k = node - base;
  if (k < 0 || k > order) {
    if (dwn) *dwn = 0.0;
    return 0.0;
  }
  if (dwn) *dwn = dw[k];
  return w[k];
}

/* Guards: the interpolation kernel is a partition of unity (mass is neither
 * created nor lost in P2G), reproduces linear fields (momentum and the APIC
 * affine part are transferred exactly), has the second moment D/h^2 that
 * mpm_apic_dinv assumes (K8), its analytic gradient (used for forces and
 * grad v) is the derivative of the weights, and it stays C1 across knots
 * where the stencil base switches. */
static void test_bspline(void)
{
  section("1. B-spline weights: partition of unity, linear reproduction, gradients");
  for (int order = 2; order <= 3; order++) {
    const char  *nm   = order == 2 ? "quadratic" : "cubic";
    const double Dexp = 1.0 / mpm_apic_dinv(order, 1.0); /* 1/4 or 1/3 in grid units */
    double       e_sum = 0, e_dsum = 0, e_mom = 0, e_dmom = 0, e_var = 0, e_fd = 0, wmin = 1;
    int          nfd = 0;
    const int    N   = 4000;
    for (int s = 0; s < N; s++) {
      const double xr = urange(-6.0, 9.0);
      int          base;
      double       w[4], dw[4], sw = 0, sdw = 0, m1 = 0, dm1 = 0, m2 = 0;
      mpm_bspline_weights(order, xr, &base, w, dw);
      for (int k = 0; k <= order; k++) {
        const double xi = base + k;
        sw += w[k];
        sdw += dw[k];
        m1 += w[k] * xi;
        dm1 += dw[k] * xi;
        m2 += w[k] * (xi - xr) * (xi - xr);
        wmin = fmin(wmin, w[k]);
      }
      e_sum  = fmax(e_sum, fabs(sw - 1.0));
      e_dsum = fmax(e_dsum, fabs(sdw));
      e_mom  = fmax(e_mom, fabs(m1 - xr));
      e_dmom = fmax(e_dmom, fabs(dm1 - 1.0));
      e_var  = fmax(e_var, fabs(m2 - Dexp));
      /* Central differences, skipping points within 2 steps of a knot where
       * the second derivative jumps (half-integers for the quadratic spline,
       * integers for the cubic one). */
      const double hfd  = 1e-5;
      const double kpos = order == 2 ? xr - 0.5 : xr;
      if (fabs(kpos - floor(kpos + 0.5)) < 2 * hfd) continue;
      nfd++;
      for (int node = base - 1; node <= base + order + 1; node++) {
        double       dwa;
        const double wp = node_weight(order, xr + hfd, node, NULL), wm = node_weight(order, xr - hfd, node, NULL);
        node_weight(order, xr, node, &dwa);
        e_fd = fmax(e_fd, fabs((wp - wm) / (2 * hfd) - dwa));
      }
    }
    CHECK(e_sum, 0, 1e-12, "bspline %s max|sum w - 1| (%d samples)", nm, N);
    CHECK(e_dsum, 0, 1e-12, "bspline %s max|sum dw|", nm);
    CHECK(e_mom, 0, 1e-12, "bspline %s max|sum w x_i - xr| (first moment)", nm);
    CHECK(e_dmom, 0, 1e-12, "bspline %s max|sum dw x_i - 1|", nm);
    CHECK(e_var, 0, 1e-12, "bspline %s max|sum w (x_i-xr)^2 - 1/dinv| (APIC D)", nm);
    CHECK(wmin < 0 ? wmin : 0, 0, 0, "bspline %s min weight >= 0 (0 if none negative)", nm);
    CHECK(e_fd, 0, 1e-7, "bspline %s max|dw - central FD| (%d samples)", nm, nfd);

    /* Continuity of w and dw across every knot (C1), i.e. across the
     * switch of the stencil base, including negative coordinates. */
    double e_c0 = 0, e_c1 = 0;
    for (int kn = -4; kn <= 6; kn++) {
      const double K = order == 2 ? kn + 0.5 : (double)kn;
      const double xl = nextafter(K, -INFINITY), xh = nextafter(K, INFINITY);
      for (int node = kn - 4; node <= kn + 4; node++) {
        double       dl, dh;
        const double wl = node_weight(order, xl, node, &dl), wh = node_weight(order, xh, node, &dh);
        e_c0 = fmax(e_c0, fabs(wl - wh));
        e_c1 = fmax(e_c1, fabs(dl - dh));
      }
    }
    CHECK(e_c0, 0, 1e-12, "bspline %s weights continuous across knots", nm);
    CHECK(e_c1, 0, 1e-12, "bspline %s gradients continuous across knots", nm);
  }
  /* Closed-form values at a node: quadratic N(0) = 3/4, N(1) = 1/8;
   * cubic N(0) = 2/3, N(1) = 1/6. */
  CHECK(node_weight(2, 3.0, 3, NULL), 0.75, 1e-15, "bspline quadratic w(node at distance 0) = 3/4");
  CHECK(node_weight(2, 3.0, 4, NULL), 0.125, 1e-15, "bspline quadratic w(node at distance 1) = 1/8");
  CHECK(node_weight(3, 3.0, 3, NULL), 2.0 / 3.0, 1e-15, "bspline cubic w(node at distance 0) = 2/3");
  CHECK(node_weight(3, 3.0, 2, NULL), 1.0 / 6.0, 1e-15, "bspline cubic w(node at distance 1) = 1/6");
}

/* ======================================================================== */
/* 2./3. Transfers                                                            */
/* ======================================================================== */
typedef struct {
  MPMGridBox g;
  long       nn;
  double    *grid;
  double    *mass; /* node masses, kept by the grid update (slot 0 then holds the contact flag) */
} TestGrid;

/* A box of N nodes per axis with a non-zero first index (exercises the
 * ghost-box offsets) and a shifted origin, h = 0.1. */
static void grid_make(TestGrid *t, int dim, int order, int dof, int N)
{
  const int    gs[3] = {-3, 2, 1};
  const double o[3]  = {0.3, -0.2, 0.15};
  memset(t, 0, sizeof *t);
  t->g.dim   = dim;
  t->g.order = order;
  t->g.dof   = dof;
  t->g.h     = 0.1;
  for (int a = 0; a < 3; a++) {
    t->g.origin[a] = a < dim ? o[a] : 0.0;
    t->g.gs[a]     = a < dim ? gs[a] : 0;
    t->g.gn[a]     = a < dim ? N : 1;
  }
  t->nn   = (long)t->g.gn[0] * t->g.gn[1] * t->g.gn[2];
  t->grid = calloc((size_t)(t->nn * dof), sizeof(double));
  t->mass = calloc((size_t)t->nn, sizeof(double));
}
static void grid_clear(TestGrid *t) { memset(t->grid, 0, sizeof(double) * (size_t)(t->nn * t->g.dof)); }
static void grid_free(TestGrid *t) { free(t->grid), free(t->mass); }
static void node_pos(const TestGrid *t, long idx, double *x)
{
  const int i[3] = {t->g.gs[0] + (int)(idx % t->g.gn[0]), t->g.gs[1] + (int)((idx / t->g.gn[0]) % t->g.gn[1]),
                    t->g.gs[2] + (int)(idx / ((long)t->g.gn[0] * t->g.gn[1]))};
  for (int a = 0; a < t->g.dim; a++) x[a] = t->g.origin[a] + t->g.h * i[a];
}
/* Grid update with dt = 0, no forces and no contact: v_i = p_i / m_i where
 * m_i > 0; slot 0 becomes the contact flag G2P reads (0: no friction). */
static void grid_momentum_to_velocity(TestGrid *t)
{
  const int d = t->g.dim, dof = t->g.dof;
  for (long n = 0; n < t->nn; n++) {
    double *node = t->grid + n * dof;
    for (int a = 0; a < d; a++) node[1 + a] = node[0] > 0 ? node[1 + a] / node[0] : 0.0;
    t->mass[n] = node[0];
    node[0]    = 0;
  }
}

static void parts_alloc(MPMParticleView *p, int dim, int n)
{
  p->n   = n;
  p->x   = calloc((size_t)(n * dim), sizeof(double));
  p->v   = calloc((size_t)(n * dim), sizeof(double));
  p->C   = calloc((size_t)(n * dim * dim), sizeof(double));
  p->Fe  = calloc((size_t)(n * dim * dim), sizeof(double));
  p->tau = calloc((size_t)(n * dim * dim), sizeof(double));
  p->m   = calloc((size_t)n, sizeof(double));
  p->V0  = calloc((size_t)n, sizeof(double));
  for (int q = 0; q < n; q++) identity(dim, p->Fe + q * dim * dim);
}
static void parts_free(MPMParticleView *p)
{
  free(p->x), free(p->v), free(p->C), free(p->Fe), free(p->tau), free(p->m), free(p->V0);
}
/* Random position whose cubic and quadratic stencils lie inside the box. */
static void random_inside(const TestGrid *t, double *x)
{
  for (int a = 0; a < t->g.dim; a++)
    x[a] = t->g.origin[a] + t->g.h * (t->g.gs[a] + urange(2.0, t->g.gn[a] - 3.0));
}

/* Angular momentum about the origin: 1 component in 2D, 3 in 3D. */
static int cross(int d, const double *x, const double *v, double *L)
{
  if (d == 2) {
    L[0] = x[0] * v[1] - x[1] * v[0];
    return 1;
  }
  L[0] = x[1] * v[2] - x[2] * v[1];
  L[1] = x[2] * v[0] - x[0] * v[2];
  L[2] = x[0] * v[1] - x[1] * v[0];
  return 3;
}
/* Spin carried by the APIC affine matrix: eps_abc (C D)_cb, i.e. the
 * angular momentum of m (v + C dx) about x_p weighted by the kernel. */
static int apic_spin(int d, const double *C, double Dinertia, double *L)
{
  if (d == 2) {
    L[0] = Dinertia * (C[2] - C[1]);
    return 1;
  }
  L[0] = Dinertia * (C[7] - C[5]);
  L[1] = Dinertia * (C[2] - C[6]);
  L[2] = Dinertia * (C[3] - C[1]);
  return 3;
}

/* Particle totals: mass, linear momentum, angular momentum (APIC spin
 * included when with_C), and a magnitude scale for relative tolerances. */
static void particle_totals(const MPMGridBox *g, const MPMParticleView *p, int with_C, double *M, double *P, double *L, double *scale)
{
  const int    d = g->dim;
  const double D = 1.0 / mpm_apic_dinv(g->order, g->h);
  *M = 0, *scale = 0;
  for (int a = 0; a < 3; a++) P[a] = L[a] = 0;
  for (int q = 0; q < p->n; q++) {
    double       l[3], s[3];
    const double m = p->m[q];
    *M += m;
    for (int a = 0; a < d; a++) P[a] += m * p->v[q * d + a];
    const int nl = cross(d, p->x + q * d, p->v + q * d, l);
    for (int a = 0; a < nl; a++) L[a] += m * l[a];
    if (with_C) {
      apic_spin(d, p->C + q * d * d, D, s);
      for (int a = 0; a < nl; a++) L[a] += m * s[a];
    }
    *scale += m * (maxabs(d, p->v + q * d) * (1.0 + maxabs(d, p->x + q * d)) + (with_C ? g->h * maxabs(d * d, p->C + q * d * d) : 0.0));
  }
}
/* Grid totals of slots [1..dim] (momentum or m*velocity). */
static void grid_totals(const TestGrid *t, int velocity, double *M, double *P, double *L)
{
  const int d = t->g.dim, dof = t->g.dof;
  *M = 0;
  for (int a = 0; a < 3; a++) P[a] = L[a] = 0;
  for (long n = 0; n < t->nn; n++) {
    const double *node = t->grid + n * dof;
    double        x[3] = {0}, mom[3], l[3];
    node_pos(t, n, x);
    const double m = velocity ? t->mass[n] : node[0];
    for (int a = 0; a < d; a++) mom[a] = velocity ? m * node[1 + a] : node[1 + a];
    *M += m;
    for (int a = 0; a < d; a++) P[a] += mom[a];
    const int nl = cross(d, x, mom, l);
    for (int a = 0; a < nl; a++) L[a] += l[a];
  }
}

/* Guards: P2G conserves mass, linear and angular momentum (APIC spin
 * included, Jiang et al. 2015); G2P conserves sum m v = sum_i m_i v_i and
 * angular momentum; internal forces sum to zero, exert no net torque for a
 * symmetric stress, and do the discrete stress power -dt V0 tau : G on a
 * linear velocity field; the FLIP blend adds the grid velocity change. */
static void test_transfer_conservation(int dim, int order)
{
  const char *nm = order == 2 ? "quadratic" : "cubic";
  const int   N  = dim == 2 ? 12 : 9, np = dim == 2 ? 60 : 80, dd = dim * dim;
  TestGrid    t;
  grid_make(&t, dim, order, 1 + dim, N);
  MPMParticleView p;
  parts_alloc(&p, dim, np);
  for (int q = 0; q < np; q++) {
    random_inside(&t, p.x + q * dim);
    p.m[q]  = urange(0.5, 2.0);
    p.V0[q] = urange(0.5, 2.0) * pow(t.g.h, dim);
    for (int a = 0; a < dim; a++) p.v[q * dim + a] = urange(-1, 1);
    for (int a = 0; a < dd; a++) p.C[q * dd + a] = urange(-10, 10); /* C dx ~ v */
  }
  double Mp, Pp[3], Lp[3], sc, Mg, Pg[3], Lg[3];
  const int nl = dim == 2 ? 1 : 3;

  /* P2G, tau = 0: no force even with dt > 0. */
  particle_totals(&t.g, &p, 1, &Mp, Pp, Lp, &sc);
  mpm_p2g(&t.g, &p, 1e-3, t.grid);
  grid_totals(&t, 0, &Mg, Pg, Lg);
  CHECK(Mg, Mp, 1e-12 * Mp, "P2G %dD %s total grid mass = sum m_p", dim, nm);
  for (int a = 0; a < dim; a++) CHECK(Pg[a], Pp[a], 1e-12 * sc, "P2G %dD %s grid momentum[%d] = sum m_p v_p (C != 0)", dim, nm, a);
  for (int a = 0; a < nl; a++) CHECK(Lg[a], Lp[a], 1e-12 * sc, "P2G %dD %s grid ang. momentum[%d] = sum m(x x v) + APIC spin", dim, nm, a);

  /* Grid update with dt = 0, then G2P (APIC). */
  grid_momentum_to_velocity(&t);
  grid_totals(&t, 1, &Mg, Pg, Lg);
  double *x0 = malloc(sizeof(double) * (size_t)(np * dim)), *F0 = malloc(sizeof(double) * (size_t)(np * dd));
  memcpy(x0, p.x, sizeof(double) * (size_t)(np * dim));
  for (int q = 0; q < np; q++)
    for (int a = 0; a < dd; a++) F0[q * dd + a] = p.Fe[q * dd + a] = (a % (dim + 1) == 0 ? 1.0 : 0.0) + urange(-0.1, 0.1);
  const double vmax2 = mpm_g2p(&t.g, t.grid, 0.0, -1.0, 0.0, &p);
  double       Mp2, Pp2[3], Lp2[3], sc2, vm2 = 0;
  particle_totals(&t.g, &p, 1, &Mp2, Pp2, Lp2, &sc2);
  for (int a = 0; a < dim; a++) {
    CHECK(Pp2[a], Pg[a], 1e-12 * sc, "G2P %dD %s sum m_p v_p(new)[%d] = sum_i m_i v_i", dim, nm, a);
    CHECK(Pp2[a], Pp[a], 1e-12 * sc, "P2G+G2P %dD %s particle momentum[%d] conserved", dim, nm, a);
  }
  for (int a = 0; a < nl; a++) CHECK(Lp2[a], Lg[a], 1e-12 * sc, "G2P %dD %s ang. momentum[%d] (with APIC spin) = grid", dim, nm, a);
  for (int q = 0; q < np; q++) {
    double s = 0;
    for (int a = 0; a < dim; a++) s += p.v[q * dim + a] * p.v[q * dim + a];
    vm2 = fmax(vm2, s);
  }
  CHECK(vmax2, vm2, 0, "G2P %dD %s returns max |v_p|^2", dim, nm);
  CHECK(maxdiff(np * dim, p.x, x0), 0, 0, "G2P %dD %s dt = 0 leaves x unchanged", dim, nm);
  CHECK(maxdiff(np * dd, p.Fe, F0), 0, 0, "G2P %dD %s dt = 0 leaves F_E unchanged", dim, nm);
  free(x0), free(F0);

  /* Internal forces (K23) with a random symmetric Kirchhoff stress, FLIP
   * layout (force impulse in slots 1+dim..2dim). */
  grid_free(&t);
  grid_make(&t, dim, order, 1 + 2 * dim, N);
  const double dt = 1e-3;
  double       power = 0, fscale = 0;
  const double G[9] = {0.3, -1.1, 0.7, 0.4, -0.2, 0.9, -0.6, 0.5, 0.8}; /* linear field u = G x (dim x dim leading block) */
  for (int q = 0; q < np; q++) {
    double *tau = p.tau + q * dd;
    for (int a = 0; a < dim; a++)
      for (int b = a; b < dim; b++) tau[a * dim + b] = tau[b * dim + a] = urange(-1e5, 1e5);
    for (int a = 0; a < dim; a++)
      for (int b = 0; b < dim; b++) power += -dt * p.V0[q] * tau[a * dim + b] * G[a * 3 + b];
    fscale += dt * p.V0[q] * maxabs(dd, tau) / t.g.h;
  }
  particle_totals(&t.g, &p, 1, &Mp, Pp, Lp, &sc);
  mpm_p2g(&t.g, &p, dt, t.grid);
  double F[3] = {0}, T[3] = {0}, Pm[3] = {0}, W = 0;
  for (long n = 0; n < t.nn; n++) {
    const double *node = t.grid + n * t.g.dof;
    double        x[3] = {0}, l[3];
    node_pos(&t, n, x);
    for (int a = 0; a < dim; a++) {
      F[a] += node[1 + dim + a];
      Pm[a] += node[1 + a];
      double u = 0;
      for (int b = 0; b < dim; b++) u += G[a * 3 + b] * x[b];
      W += u * node[1 + dim + a];
    }
    cross(dim, x, node + 1 + dim, l);
    for (int a = 0; a < nl; a++) T[a] += l[a];
  }
  for (int a = 0; a < dim; a++) {
    CHECK(F[a], 0, 1e-12 * fscale, "P2G %dD %s net internal force[%d] = 0", dim, nm, a);
    CHECK(Pm[a], Pp[a], 1e-12 * sc, "P2G %dD %s FLIP layout momentum[%d] = sum m v", dim, nm, a);
  }
  for (int a = 0; a < nl; a++) CHECK(T[a], 0, 1e-12 * fscale, "P2G %dD %s net internal torque[%d] = 0 (tau symmetric)", dim, nm, a);
  CHECK(W, power, 1e-10 * fabs(power), "P2G %dD %s sum f_i.(G x_i) = -dt sum V0 tau:G", dim, nm);

  /* The stress-power identity holds for any tau: with a non-symmetric one
   * it also pins the index order f_a = -dt V0 tau_ab dw_b. */
  grid_clear(&t);
  power = 0;
  for (int q = 0; q < np; q++)
    for (int a = 0; a < dim; a++)
      for (int c = 0; c < dim; c++) {
        p.tau[q * dd + a * dim + c] = urange(-1e5, 1e5);
        power += -dt * p.V0[q] * p.tau[q * dd + a * dim + c] * G[a * 3 + c];
      }
  mpm_p2g(&t.g, &p, dt, t.grid);
  W = 0;
  for (long n = 0; n < t.nn; n++) {
    const double *node = t.grid + n * t.g.dof;
    double        x[3] = {0};
    node_pos(&t, n, x);
    for (int a = 0; a < dim; a++)
      for (int c = 0; c < dim; c++) W += G[a * 3 + c] * x[c] * node[1 + dim + a];
  }
  CHECK(W, power, 1e-10 * fabs(power), "P2G %dD %s non-symmetric tau: sum f_i.(G x_i) = -dt V0 tau:G", dim, nm);
  for (int q = 0; q < np; q++) /* back to symmetric */
    for (int a = 0; a < dim; a++)
      for (int c = 0; c < a; c++) p.tau[q * dd + a * dim + c] = p.tau[q * dd + c * dim + a];

  /* Same with the force folded into the momentum (APIC layout). */
  TestGrid t2;
  grid_make(&t2, dim, order, 1 + dim, N);
  mpm_p2g(&t2.g, &p, dt, t2.grid);
  grid_totals(&t2, 0, &Mg, Pg, Lg);
  for (int a = 0; a < dim; a++) CHECK(Pg[a], Pp[a], 1e-12 * (sc + fscale), "P2G %dD %s momentum[%d] with internal forces = sum m v", dim, nm, a);
  for (int a = 0; a < nl; a++) CHECK(Lg[a], Lp[a], 1e-12 * (sc + fscale), "P2G %dD %s ang. momentum[%d] with internal forces", dim, nm, a);
  grid_free(&t2);

  /* FLIP/PIC blend: grid velocity b + A x_i after, minus a uniform dv
   * before.  FLIP (flip = 1) adds exactly dv to each particle; a blend
   * mixes that with the interpolated (affine, hence exact) velocity.  With
   * C given (affine FLIP) C becomes A. */
  double b[3], A[9], dv[3];
  for (int a = 0; a < dim; a++) b[a] = urange(-1, 1), dv[a] = urange(-0.5, 0.5);
  for (int a = 0; a < dd; a++) A[a] = urange(-2, 2);
  for (long n = 0; n < t.nn; n++) {
    double *node = t.grid + n * t.g.dof, x[3] = {0};
    node_pos(&t, n, x);
    for (int a = 0; a < dim; a++) {
      double v = b[a];
      for (int c = 0; c < dim; c++) v += A[a * dim + c] * x[c];
      node[1 + a]       = v;
      node[1 + dim + a] = v - dv[a];
    }
    node[0] = 0; /* no contact */
  }
  const double flips[2] = {1.0, 0.95}, dtf = 0.01;
  for (int f = 0; f < 2; f++) {
    double *vold = malloc(sizeof(double) * (size_t)(np * dim)), *xold = malloc(sizeof(double) * (size_t)(np * dim)), err = 0, errx = 0;
    memcpy(vold, p.v, sizeof(double) * (size_t)(np * dim));
    memcpy(xold, p.x, sizeof(double) * (size_t)(np * dim));
    for (int a = 0; a < np * dd; a++) p.C[a] = 1.0;
    mpm_g2p(&t.g, t.grid, dtf, flips[f], 0.0, &p);
    for (int q = 0; q < np; q++)
      for (int a = 0; a < dim; a++) {
        double vg = b[a];
        for (int c = 0; c < dim; c++) vg += A[a * dim + c] * xold[q * dim + c];
        const double expect = flips[f] * (vold[q * dim + a] + dv[a]) + (1.0 - flips[f]) * vg;
        err                 = fmax(err, fabs(p.v[q * dim + a] - expect));
        errx                = fmax(errx, fabs(p.x[q * dim + a] - (xold[q * dim + a] + dtf * vg)));
      }
    CHECK(err, 0, 1e-12, "G2P %dD %s FLIP %.2f: v = flip (v + dv) + (1-flip) v_grid", dim, nm, flips[f]);
    CHECK(errx, 0, 1e-12, "G2P %dD %s FLIP %.2f: x += dt v_grid (K13), not the FLIP v", dim, nm, flips[f]);
    double errC = 0; /* with C given this is affine FLIP: C = B D^-1, exact (= A) for an affine grid velocity */
    for (int q = 0; q < np; q++)
      for (int a = 0; a < dd; a++) errC = fmax(errC, fabs(p.C[q * dd + a] - A[a]));
    CHECK(errC, 0, 1e-11, "G2P %dD %s affine FLIP %.2f: C = B D^-1 recovers the affine grid velocity gradient", dim, nm, flips[f]);
    free(vold), free(xold);
  }
  grid_free(&t);
  parts_free(&p);
}

/* Guards: APIC transfers an affine velocity field v = b + A x exactly in
 * both directions (v_i = b + A x_i on every node with mass; G2P returns
 * v_p and C_p = A), and G2P's velocity gradient is A (x += dt v,
 * F_E <- (I + dt A) F_E).  Holds for any particle set, so it is checked
 * on a dense filling and on three isolated particles. */
static void test_transfer_affine(int dim, int order, int dense)
{
  const char *nm = order == 2 ? "quadratic" : "cubic", *set = dense ? "dense" : "sparse(3)";
  const int   N = dim == 2 ? 12 : 9, dd = dim * dim;
  TestGrid    t;
  grid_make(&t, dim, order, 1 + dim, N);
  /* dense: 3 particles per cell per axis, jittered, over cells 2..N-4 */
  const int ppc = 3, ncell = N - 5;
  int       np  = 3;
  if (dense) {
    np = 1;
    for (int a = 0; a < dim; a++) np *= ppc * ncell;
  }
  MPMParticleView p;
  parts_alloc(&p, dim, np);
  double b[3], A[9];
  for (int a = 0; a < dim; a++) b[a] = urange(-1, 1);
  for (int a = 0; a < dd; a++) A[a] = urange(-2, 2);
  for (int q = 0; q < np; q++) {
    double *x = p.x + q * dim;
    if (dense) {
      int r = q;
      for (int a = 0; a < dim; a++) {
        const int c = r % (ppc * ncell);
        r /= ppc * ncell;
        x[a] = t.g.origin[a] + t.g.h * (t.g.gs[a] + 2 + (c + 0.5 + urange(-0.3, 0.3)) / ppc);
      }
    } else random_inside(&t, x);
    p.m[q]  = urange(0.5, 2.0);
    p.V0[q] = 1.0;
    for (int a = 0; a < dim; a++) {
      double v = b[a];
      for (int c = 0; c < dim; c++) v += A[a * dim + c] * x[c];
      p.v[q * dim + a] = v;
    }
    memcpy(p.C + q * dd, A, sizeof(double) * (size_t)dd);
    for (int a = 0; a < dd; a++) p.Fe[q * dd + a] = (a % (dim + 1) == 0 ? 1.0 : 0.0) + urange(-0.1, 0.1);
  }
  double *v0 = malloc(sizeof(double) * (size_t)(np * dim)), *x0 = malloc(sizeof(double) * (size_t)(np * dim));
  double *F0 = malloc(sizeof(double) * (size_t)(np * dd));
  memcpy(v0, p.v, sizeof(double) * (size_t)(np * dim));
  memcpy(x0, p.x, sizeof(double) * (size_t)(np * dim));
  memcpy(F0, p.Fe, sizeof(double) * (size_t)(np * dd));

  /* dt = 0 round trip */
  mpm_p2g(&t.g, &p, 0.0, t.grid);
  grid_momentum_to_velocity(&t);
  double egrid = 0;
  long   nmass = 0;
  for (long n = 0; n < t.nn; n++) {
    const double *node = t.grid + n * t.g.dof;
    double        x[3] = {0};
    if (!(t.mass[n] > 0)) continue;
    nmass++;
    node_pos(&t, n, x);
    for (int a = 0; a < dim; a++) {
      double v = b[a];
      for (int c = 0; c < dim; c++) v += A[a * dim + c] * x[c];
      egrid = fmax(egrid, fabs(node[1 + a] - v));
    }
  }
  CHECK(egrid, 0, 1e-12, "APIC %dD %s %s: P2G v_i = b + A x_i on %ld nodes", dim, nm, set, nmass);
  mpm_g2p(&t.g, t.grid, 0.0, -1.0, 0.0, &p);
  double ev = maxdiff(np * dim, p.v, v0), eC = 0;
  for (int q = 0; q < np; q++) eC = fmax(eC, maxdiff(dd, p.C + q * dd, A));
  CHECK(ev, 0, 1e-12, "APIC %dD %s %s: G2P v_p unchanged (%d particles)", dim, nm, set, np);
  CHECK(eC, 0, 1e-12, "APIC %dD %s %s: G2P C_p = A", dim, nm, set);

  /* A node flagged as held by friction (slot 0 > 0 after the grid update):
   * particles at rest (|v| dt <= rest h) whose stencil reaches it lose the
   * affine part (C = 0); moving ones and those out of its reach keep C = A;
   * velocities are unchanged either way.  "At rest" is set at the median
   * speed, so both kinds are near the node. */
  const long   mid = t.g.gn[0] / 2, flagged = (dim == 3 ? mid * t.g.gn[1] * t.g.gn[0] : 0) + mid * t.g.gn[0] + mid; /* the middle node */
  const double dth = 1e-3, vrest = median_speed(dim, np, v0);
  double       fx[3] = {0};
  int          nzero = 0, nkept = 0, nmoving = 0, wrong = 0;
  node_pos(&t, flagged, fx);
  t.grid[flagged * t.g.dof] = 1.0;
  memcpy(p.v, v0, sizeof(double) * (size_t)(np * dim));
  mpm_g2p(&t.g, t.grid, dth, -1.0, vrest * dth / t.g.h, &p);
  for (int q = 0; q < np; q++) {
    int reach = 1; /* the quadratic/cubic stencil reaches nodes closer than (order + 1)/2 cells on every axis */
    for (int a = 0; a < dim; a++) reach = reach && fabs(x0[q * dim + a] - fx[a]) < 0.5 * (order + 1) * t.g.h;
    const int    rest = speed(dim, v0 + q * dim) <= vrest;
    const double c    = maxdiff(dd, p.C + q * dd, reach && rest ? (const double[9]){0} : A);
    if (c > 1e-12) wrong++;
    if (reach && rest) nzero++;
    else nkept++;
    if (reach && !rest) nmoving++;
  }
  if (dense) CHECK(nzero > 0 && nmoving > 0, 1, 0, "APIC %dD %s %s: the held node reaches particles at rest and moving ones", dim, nm, set);
  CHECK((double)wrong, 0, 0, "APIC %dD %s %s: held node drops C of the %d particles at rest it reaches, keeps it for %d (%d moving in reach)", dim, nm, set, nzero,
        nkept, nmoving);
  CHECK(maxdiff(np * dim, p.v, v0), 0, 1e-12, "APIC %dD %s %s: held node leaves v_p unchanged", dim, nm, set);
  memcpy(p.x, x0, sizeof(double) * (size_t)(np * dim));
  memcpy(p.Fe, F0, sizeof(double) * (size_t)(np * dd));
  t.grid[flagged * t.g.dof] = 0.0;

  /* dt > 0: positions advect with the affine field, F_E <- (I + dt A) F_E */
  const double dt = 0.01;
  grid_clear(&t);
  memcpy(p.v, v0, sizeof(double) * (size_t)(np * dim));
  for (int q = 0; q < np; q++) memcpy(p.C + q * dd, A, sizeof(double) * (size_t)dd);
  mpm_p2g(&t.g, &p, dt, t.grid); /* tau = 0 */
  grid_momentum_to_velocity(&t);
  mpm_g2p(&t.g, t.grid, dt, -1.0, 0.0, &p);
  double ex = 0, eF = 0;
  for (int q = 0; q < np; q++) {
    for (int a = 0; a < dim; a++) {
      double v = b[a];
      for (int c = 0; c < dim; c++) v += A[a * dim + c] * x0[q * dim + c];
      ex = fmax(ex, fabs(p.x[q * dim + a] - (x0[q * dim + a] + dt * v)));
    }
    double IA[9], Fn[9];
    for (int a = 0; a < dd; a++) IA[a] = dt * A[a] + (a % (dim + 1) == 0 ? 1.0 : 0.0);
    mpm_matmul(dim, IA, F0 + q * dd, Fn);
    eF = fmax(eF, maxdiff(dd, p.Fe + q * dd, Fn));
  }
  CHECK(ex, 0, 1e-12, "APIC %dD %s %s: x_new = x + dt (b + A x)", dim, nm, set);
  CHECK(eF, 0, 1e-12, "APIC %dD %s %s: F_E,new = (I + dt A) F_E (grad v = A)", dim, nm, set);
  free(v0), free(x0), free(F0);
  grid_free(&t);
  parts_free(&p);
}

/* ======================================================================== */
/* 4. Drucker-Prager return mapping (K27-K31)                                 */
/* ======================================================================== */
static const double E_SAND = 3.537e7, NU_SAND = 0.3; /* Klar et al. Table 3 */

static MPMDruckerPragerParams dp_params(int dim, int cone, double phi_deg, double cohesion)
{
  MPMDruckerPragerParams p;
  memset(&p, 0, sizeof p);
  p.dim = dim;
  mpm_lame(E_SAND, NU_SAND, &p.mu, &p.lambda);
  p.h0       = phi_deg * M_PI / 180.0;
  p.cohesion = cohesion;
  p.cone     = cone;
  mpm_dp_setup(&p);
  return p;
}
/* Independent cone coefficient: (K31) or the plane-strain match. */
static double alpha_ref(int dim, int cone, double phi)
{
  const double s = sin(phi), t = tan(phi);
  if (cone == MPM_CONE_COMPRESSION) return sqrt(2.0 / 3.0) * 2.0 * s / (3.0 - s);
  return dim == 2 ? s / sqrt(2.0) : sqrt(2.0) * t / sqrt(9.0 + 12.0 * t * t);
}
/* Yield function f(tau) = ||dev tau||_F + alpha (tr tau - d c cot phi), from the full matrix. */
static double yield_fn(int d, const double *tau, double alpha, double ccot)
{
  double nd, tr;
  dev_tr(d, tau, &nd, &tr);
  return nd + alpha * (tr - d * ccot);
}
/* Kirchhoff stress of principal Hencky strains e in the frame R (K26 F^T). */
static void hencky_tau_ref(int d, double mu, double lambda, const double *R, const double *e, double *tau)
{
  double tr = 0, s[3];
  for (int k = 0; k < d; k++) tr += e[k];
  for (int k = 0; k < d; k++) s[k] = 2 * mu * e[k] + lambda * tr;
  rot_diag_rot(d, R, s, R, tau);
}
static void F_from_strain(int d, const double *R1, const double *e, const double *R2, double *F)
{
  double s[3];
  for (int k = 0; k < d; k++) s[k] = exp(e[k]);
  rot_diag_rot(d, R1, s, R2, F);
}
/* Independent outcome of the return mapping for principal strains e:
 * the expected case, projected strains H and hardening increment dq. */
static MPMPlasticCase dp_reference(int d, double mu, double lambda, double alpha, double ccot, const double *e, double *H, double *dq, double *f_trial)
{
  double tr = 0, hat[3], nh = 0, tau[9], I[9];
  identity(d, I);
  hencky_tau_ref(d, mu, lambda, I, e, tau);
  const double f        = yield_fn(d, tau, alpha, ccot);
  const double tr_apex  = d * ccot / (d * lambda + 2 * mu); /* tr eps where tau = c cot(phi) I */
  for (int k = 0; k < d; k++) tr += e[k];
  for (int k = 0; k < d; k++) {
    hat[k] = e[k] - tr / d;
    nh += hat[k] * hat[k];
  }
  nh       = sqrt(nh);
  *f_trial = f;
  if (f <= 0) {
    for (int k = 0; k < d; k++) H[k] = e[k];
    *dq = 0;
    return MPM_CASE_ELASTIC;
  }
  if (tr > tr_apex) {
    double n2 = 0;
    for (int k = 0; k < d; k++) {
      H[k] = tr_apex / d;
      n2 += (e[k] - H[k]) * (e[k] - H[k]);
    }
    *dq = sqrt(n2);
    return MPM_CASE_TIP;
  }
  const double dg = f / (2 * mu); /* (K27): f = 2 mu delta gamma */
  for (int k = 0; k < d; k++) H[k] = e[k] - dg * hat[k] / nh;
  *dq = dg;
  return MPM_CASE_CONE;
}

/* Guards (a)-(c): static friction inside the cone leaves F_E alone;
 * expansion releases all stress (F_E becomes a rotation); shear beyond the
 * friction limit is projected onto the cone without volume change along
 * the deviatoric direction (non-associative, K28).  Fixed states per dim. */
static void test_dp_cases(int dim)
{
  const MPMDruckerPragerParams p  = dp_params(dim, MPM_CONE_COMPRESSION, 30.0, 0.0);
  const double                 al = alpha_ref(dim, MPM_CONE_COMPRESSION, p.h0);
  double                       R1[9], R2[9], F[9], Fo[9], tau[9], tref[9], q, Jp, H[3], dq, f;
  random_rotation(dim, R1);
  random_rotation(dim, R2);
  const double taus = 2 * p.mu * 0.05; /* stress scale */
  CHECK(p.alpha0, al, 1e-15, "DP %dD setup: alpha0 = sqrt(2/3) 2 sin(phi)/(3 - sin(phi))", dim);
  CHECK(p.tr_apex0, 0, 0, "DP %dD setup: no cohesion -> apex at zero strain", dim);
  CHECK(p.hardening, 0, 0, "DP %dD setup: h1 = h3 = 0 -> no hardening", dim);

  /* (a) elastic */
  const double ea[3] = {-0.01, -0.011, -0.012};
  F_from_strain(dim, R1, ea, R2, F);
  memcpy(Fo, F, sizeof F);
  q = 0.3, Jp = 0.9;
  MPMPlasticCase c = mpm_dp_update(&p, F, &q, &Jp, tau);
  hencky_tau_ref(dim, p.mu, p.lambda, R1, ea, tref);
  CHECK(yield_fn(dim, tref, al, 0) < 0, 1, 0, "DP %dD (a) trial state is strictly inside the cone", dim);
  CHECK(c, MPM_CASE_ELASTIC, 0, "DP %dD (a) inside cone -> MPM_CASE_ELASTIC", dim);
  CHECK(maxdiff(dim * dim, F, Fo), 0, 0, "DP %dD (a) F_E unchanged", dim);
  CHECK(q, 0.3, 0, "DP %dD (a) q unchanged", dim);
  CHECK(Jp, 0.9, 0, "DP %dD (a) Jp unchanged", dim);
  CHECK(maxdiff(dim * dim, tau, tref), 0, 1e-10 * maxabs(dim * dim, tref), "DP %dD (a) tau = Hencky stress U(2mu eps + lambda tr eps)U^T", dim);

  /* (b) expansion -> tip */
  const double eb[3] = {0.02, 0.01, -0.005};
  F_from_strain(dim, R1, eb, R2, F);
  const double detb = mpm_det(dim, F);
  q = 0.3, Jp = 1.0;
  c = mpm_dp_update(&p, F, &q, &Jp, tau);
  double FtF[9], Ft[9], I[9], RR[9];
  transpose(dim, F, Ft);
  mpm_matmul(dim, Ft, F, FtF);
  identity(dim, I);
  transpose(dim, R2, Ft);
  mpm_matmul(dim, R1, Ft, RR);
  double ne = 0;
  for (int k = 0; k < dim; k++) ne += eb[k] * eb[k];
  CHECK(c, MPM_CASE_TIP, 0, "DP %dD (b) tr eps > 0 -> MPM_CASE_TIP", dim);
  CHECK(maxabs(dim * dim, tau), 0, 1e-12 * taus, "DP %dD (b) tip: tau = 0 (stress free)", dim);
  CHECK(maxdiff(dim * dim, FtF, I), 0, 1e-12, "DP %dD (b) tip: F_E^T F_E = I (pure rotation)", dim);
  CHECK(maxdiff(dim * dim, F, RR), 0, 1e-12, "DP %dD (b) tip: F_E = U V^T", dim);
  CHECK(q - 0.3, sqrt(ne), 1e-12, "DP %dD (b) tip: dq = ||eps||_F (K29)", dim);
  CHECK(Jp, detb, 1e-12, "DP %dD (b) tip: Jp *= det F_E (det F conserved)", dim);

  /* (c) compression + shear -> cone */
  const double ec[3] = {-0.05, 0.03, -0.01};
  F_from_strain(dim, R1, ec, R2, F);
  const double detc = mpm_det(dim, F);
  q = 0.3, Jp = 1.1;
  const MPMPlasticCase cref = dp_reference(dim, p.mu, p.lambda, al, 0, ec, H, &dq, &f);
  c                          = mpm_dp_update(&p, F, &q, &Jp, tau);
  double Fref[9], tnew[9];
  F_from_strain(dim, R1, H, R2, Fref);
  mpm_hencky_stress(dim, p.mu, p.lambda, F, tnew);
  const double tn = frob(dim * dim, tau);
  CHECK(cref, MPM_CASE_CONE, 0, "DP %dD (c) reference classifies the state as cone", dim);
  CHECK(c, MPM_CASE_CONE, 0, "DP %dD (c) compressive shear -> MPM_CASE_CONE", dim);
  CHECK(mpm_det(dim, F), detc, 1e-12 * detc, "DP %dD (c) det F_E before = after (volume preserved)", dim);
  CHECK(yield_fn(dim, tau, al, 0), 0, 1e-10 * tn, "DP %dD (c) on yield surface: ||dev tau|| + alpha tr tau = 0", dim);
  CHECK(maxdiff(dim * dim, F, Fref), 0, 1e-12, "DP %dD (c) F_E = U exp(eps - dgamma eps^/||eps^||) V^T (K28)", dim);
  CHECK(maxdiff(dim * dim, tau, tnew), 0, 1e-10 * tn, "DP %dD (c) returned tau = Hencky stress of new F_E", dim);
  CHECK(q - 0.3, dq, 1e-12, "DP %dD (c) dq = delta gamma (K27, K29)", dim);
  CHECK(Jp, 1.1, 1e-12, "DP %dD (c) Jp unchanged (no plastic volume change)", dim);

  /* the direct projector on the same principal strains */
  double eps[3];
  memcpy(eps, ec, sizeof eps);
  c = mpm_dp_project(&p, al, 0.0, eps, &dq);
  CHECK(c, MPM_CASE_CONE, 0, "DP %dD mpm_dp_project case", dim);
  CHECK(maxdiff(dim, eps, H), 0, 1e-15, "DP %dD mpm_dp_project H = eps - dgamma eps^/||eps^||", dim);
}

/* Random sweep: classification, projected F_E, yield surface, volume and
 * hardening increment against the independent reference for both cones,
 * with and without cohesion. */
static void test_dp_sweep(int dim)
{
  for (int cone = 0; cone <= 1; cone++)
    for (int coh = 0; coh <= 1; coh++) {
      const double                 phi_deg = 25.0 + 10.0 * coh + 5.0 * cone, cval = coh ? 2e5 : 0.0;
      const MPMDruckerPragerParams p       = dp_params(dim, cone, phi_deg, cval);
      const double                 al = alpha_ref(dim, cone, p.h0), ccot = cval / tan(p.h0);
      int                          nmis = 0, ncase[3] = {0, 0, 0};
      double                       eF = 0, eY = 0, eV = 0, eQ = 0, eT = 0;
      const int                    N = 600;
      for (int s = 0; s < N; s++) {
        double e[3], R1[9], R2[9], F[9], Fref[9], tau[9], tref[9], H[3], dq, f, q = 0.0, Jp = 1.0;
        for (int k = 0; k < dim; k++) e[k] = urange(-0.06, 0.04);
        random_rotation(dim, R1);
        random_rotation(dim, R2);
        const MPMPlasticCase cref = dp_reference(dim, p.mu, p.lambda, al, ccot, e, H, &dq, &f);
        if (fabs(f) < 1e-8 * p.mu) continue; /* too close to the surface to classify */
        F_from_strain(dim, R1, e, R2, F);
        const double         det0 = mpm_det(dim, F);
        const MPMPlasticCase c    = mpm_dp_update(&p, F, &q, &Jp, tau);
        if (c != cref) {
          nmis++;
          if (nmis <= 3) printf("   mismatch: dim %d cone %d coh %d e = (%g %g %g) kernel %d reference %d f = %g\n", dim, cone, coh, e[0], e[1], dim == 3 ? e[2] : 0.0, c, cref, f);
          continue;
        }
        ncase[c]++;
        F_from_strain(dim, R1, H, R2, Fref);
        hencky_tau_ref(dim, p.mu, p.lambda, R1, H, tref);
        eF = fmax(eF, maxdiff(dim * dim, F, Fref));
        eT = fmax(eT, maxdiff(dim * dim, tau, tref) / (2 * p.mu));
        eQ = fmax(eQ, fabs(q - dq));
        if (c == MPM_CASE_CONE) {
          eY = fmax(eY, fabs(yield_fn(dim, tau, al, ccot)) / frob(dim * dim, tau));
          eV = fmax(eV, fabs(mpm_det(dim, F) / det0 - 1.0));
        }
      }
      const char *cn = cone ? "plane-strain" : "compression";
      CHECK(nmis, 0, 0, "DP %dD sweep %s c=%g: case mismatches (I/II/III = %d/%d/%d)", dim, cn, cval, ncase[0], ncase[1], ncase[2]);
      CHECK(ncase[0] > 0 && ncase[1] > 0 && ncase[2] > 0, 1, 0, "DP %dD sweep %s c=%g: all three cases exercised", dim, cn, cval);
      CHECK(eF, 0, 1e-12, "DP %dD sweep %s c=%g: max|F_E - U exp(H) V^T|", dim, cn, cval);
      CHECK(eT, 0, 1e-12, "DP %dD sweep %s c=%g: max|tau - tau(H)|/(2 mu)", dim, cn, cval);
      CHECK(eQ, 0, 1e-12, "DP %dD sweep %s c=%g: max|dq - reference dq|", dim, cn, cval);
      CHECK(eY, 0, 1e-10, "DP %dD sweep %s c=%g: cone cases max|f(tau)|/||tau||", dim, cn, cval);
      CHECK(eV, 0, 1e-12, "DP %dD sweep %s c=%g: cone cases max|det F_E ratio - 1|", dim, cn, cval);
    }
}

/* (d) Hardening (K29, K30): the cone used is the one at the old q, and q
 * grows by dq = delta gamma (cone) or ||eps|| (tip). */
static void test_dp_hardening(int dim)
{
  MPMDruckerPragerParams p;
  memset(&p, 0, sizeof p);
  p.dim = dim;
  mpm_lame(E_SAND, NU_SAND, &p.mu, &p.lambda);
  const double deg = M_PI / 180.0;
  p.h0 = 35 * deg, p.h1 = 9 * deg, p.h2 = 0.2, p.h3 = 10 * deg; /* Klar et al. Table 3 */
  p.cone = MPM_CONE_COMPRESSION;
  mpm_dp_setup(&p);
  CHECK(p.hardening, 1, 0, "DP %dD hardening flag set for h1, h3 != 0", dim);
  const double qs[3] = {0.0, 1.0, 4.0};
  for (int i = 0; i < 3; i++) {
    const double q = qs[i], phi = p.h0 + (p.h1 * q - p.h3) * exp(-p.h2 * q);
    double       al, tra;
    CHECK(mpm_dp_friction_angle(&p, q), phi, 1e-15, "DP %dD phi_F(q=%g) = h0 + (h1 q - h3) exp(-h2 q)", dim, q);
    mpm_dp_cone(&p, q, &al, &tra);
    CHECK(al, alpha_ref(dim, MPM_CONE_COMPRESSION, phi), 1e-15, "DP %dD alpha(q=%g) = alpha(phi_F(q))", dim, q);
  }
  CHECK(p.alpha0, alpha_ref(dim, MPM_CONE_COMPRESSION, p.h0 - p.h3), 1e-15, "DP %dD alpha0 = alpha(h0 - h3)", dim);

  const double q0 = 0.7, phi0 = mpm_dp_friction_angle(&p, q0), al0 = alpha_ref(dim, MPM_CONE_COMPRESSION, phi0);
  double       R1[9], R2[9], F[9], tau[9], H[3], dq, f, q, Jp = 1;
  random_rotation(dim, R1);
  random_rotation(dim, R2);
  /* cone */
  const double ec[3] = {-0.05, 0.03, -0.01};
  F_from_strain(dim, R1, ec, R2, F);
  dp_reference(dim, p.mu, p.lambda, al0, 0, ec, H, &dq, &f);
  q                = q0;
  MPMPlasticCase c = mpm_dp_update(&p, F, &q, &Jp, tau);
  CHECK(c, MPM_CASE_CONE, 0, "DP %dD hardening: cone case", dim);
  CHECK(q - q0, dq, 1e-12, "DP %dD hardening: q += delta gamma (cone at old q)", dim);
  CHECK(yield_fn(dim, tau, al0, 0), 0, 1e-10 * frob(dim * dim, tau), "DP %dD hardening: tau on the cone alpha(phi_F(q_old))", dim);
  /* tip */
  const double eb[3] = {0.02, 0.01, -0.005};
  double       ne    = 0;
  for (int k = 0; k < dim; k++) ne += eb[k] * eb[k];
  F_from_strain(dim, R1, eb, R2, F);
  q = q0;
  c = mpm_dp_update(&p, F, &q, &Jp, tau);
  CHECK(c, MPM_CASE_TIP, 0, "DP %dD hardening: tip case", dim);
  CHECK(q - q0, sqrt(ne), 1e-12, "DP %dD hardening: q += ||eps||_F", dim);
  /* elastic: a state outside the q = 0 cone but inside the hardened one */
  const double alq0 = alpha_ref(dim, MPM_CONE_COMPRESSION, p.h0 - p.h3);
  double       ee[3] = {-0.03, -0.02, -0.03}, tr = 0, I[9], t0[9];
  identity(dim, I);
  /* scale the shear until the state sits between the two cones */
  for (int k = 0; k < dim; k++) tr += ee[k];
  for (double sh = 0.0; sh < 0.1; sh += 1e-4) {
    double e2[3] = {tr / dim + sh, tr / dim - sh, tr / dim};
    hencky_tau_ref(dim, p.mu, p.lambda, I, e2, t0);
    if (yield_fn(dim, t0, alq0, 0) > 0 && yield_fn(dim, t0, al0, 0) < 0) {
      memcpy(ee, e2, sizeof e2);
      break;
    }
  }
  hencky_tau_ref(dim, p.mu, p.lambda, I, ee, t0);
  CHECK(yield_fn(dim, t0, alq0, 0) > 0 && yield_fn(dim, t0, al0, 0) < 0, 1, 0, "DP %dD hardening: test state between cone(q=0) and cone(q0)", dim);
  F_from_strain(dim, R1, ee, R2, F);
  q = q0;
  c = mpm_dp_update(&p, F, &q, &Jp, tau);
  CHECK(c, MPM_CASE_ELASTIC, 0, "DP %dD hardening: hardened cone holds the state (elastic)", dim);
  CHECK(q, q0, 0, "DP %dD hardening: elastic -> q unchanged", dim);
}

/* (e) Cohesion: the apex moves to mean stress c cot(phi) in tension; mild
 * tension is then carried elastically. */
static void test_dp_cohesion(int dim)
{
  const double                 c0 = 1e5;
  const MPMDruckerPragerParams p  = dp_params(dim, MPM_CONE_PLANE_STRAIN, 30.0, c0);
  const double                 ccot = c0 / tan(p.h0);
  double                       al, tra;
  mpm_dp_cone(&p, 0.0, &al, &tra);
  CHECK(tra, dim * ccot / (dim * p.lambda + 2 * p.mu), 1e-15, "DP %dD cohesion: tr eps_apex = d c cot(phi)/(d lambda + 2 mu)", dim);
  double R1[9], R2[9], F[9], tau[9], q = 0, Jp = 1, nd, tr;
  random_rotation(dim, R1);
  random_rotation(dim, R2);
  const double eb[3] = {0.03, 0.02, 0.01};
  F_from_strain(dim, R1, eb, R2, F);
  MPMPlasticCase c = mpm_dp_update(&p, F, &q, &Jp, tau);
  dev_tr(dim, tau, &nd, &tr);
  CHECK(c, MPM_CASE_TIP, 0, "DP %dD cohesion: strong expansion -> tip", dim);
  CHECK(tr / dim, ccot, 1e-10 * ccot, "DP %dD cohesion: tip mean stress = c cot(phi) (tension)", dim);
  CHECK(nd, 0, 1e-10 * ccot, "DP %dD cohesion: tip deviatoric stress = 0", dim);
  /* mild tension (half the apex strain) with a little shear: elastic */
  const double em[3] = {0.5 * tra / dim + 1e-5, 0.5 * tra / dim - 1e-5, 0.5 * tra / dim};
  F_from_strain(dim, R1, em, R2, F);
  c = mpm_dp_update(&p, F, &q, &Jp, tau);
  dev_tr(dim, tau, &nd, &tr);
  CHECK(c, MPM_CASE_ELASTIC, 0, "DP %dD cohesion: mild tension carried elastically", dim);
  CHECK(tr > 0, 1, 0, "DP %dD cohesion: ... with tensile mean stress", dim);
  /* cone with cohesion: shifted surface */
  const double ec[3] = {-0.03, 0.03, -0.02};
  F_from_strain(dim, R1, ec, R2, F);
  c = mpm_dp_update(&p, F, &q, &Jp, tau);
  CHECK(c, MPM_CASE_CONE, 0, "DP %dD cohesion: sheared state -> cone", dim);
  CHECK(yield_fn(dim, tau, al, ccot), 0, 1e-10 * frob(dim * dim, tau), "DP %dD cohesion: ||dev tau|| + alpha (tr tau - d c cot phi) = 0", dim);
  if (dim == 2) { /* Mohr-Coulomb with cohesion: |t1 - t2| = -sin(phi)(t1 + t2) + 2 c cos(phi) */
    double lam[2], U[4];
    mpm_sym_eig(2, tau, lam, U);
    const double lhs = fabs(lam[0] - lam[1]), rhs = -sin(p.h0) * (lam[0] + lam[1]) + 2 * c0 * cos(p.h0);
    CHECK(lhs, rhs, 1e-10 * lhs, "DP 2D cohesion: |t1 - t2| = -sin(phi)(t1 + t2) + 2 c cos(phi) (MC)");
  }
}

/* (f) Which Mohr-Coulomb criterion each cone reproduces. */
static void test_dp_mohr_coulomb(void)
{
  const double phis[3] = {20.0, 30.0, 40.0};
  for (int i = 0; i < 3; i++) {
    const double phi = phis[i] * M_PI / 180.0, S = sin(phi);
    /* 2D plane-strain cone: a projected state satisfies MC exactly */
    const MPMDruckerPragerParams p = dp_params(2, MPM_CONE_PLANE_STRAIN, phis[i], 0.0);
    CHECK(p.alpha0, S / sqrt(2.0), 1e-15, "DP 2D plane-strain alpha(phi=%g) = sin(phi)/sqrt(2)", phis[i]);
    double R1[4], R2[4], F[4], tau[4], q = 0, Jp = 1, lam[2], U[4];
    random_rotation(2, R1);
    random_rotation(2, R2);
    const double ec[2] = {-0.06, 0.02};
    F_from_strain(2, R1, ec, R2, F);
    const MPMPlasticCase c = mpm_dp_update(&p, F, &q, &Jp, tau);
    mpm_sym_eig(2, tau, lam, U);
    const double lhs = fabs(lam[0] - lam[1]), rhs = -S * (lam[0] + lam[1]);
    CHECK(c, MPM_CASE_CONE, 0, "DP 2D plane-strain phi=%g: state projected to the cone", phis[i]);
    CHECK(lhs, rhs, 1e-10 * lhs, "DP 2D plane-strain phi=%g: |t1 - t2| = -sin(phi)(t1 + t2)", phis[i]);

    /* 3D compression cone passes through the MC compressive meridian:
     * t1 = t2 = -(1 - S)/(1 + S) > t3 = -1 satisfies t1 - t3 = -(t1 + t3) S */
    const double al_c = mpm_dp_alpha(3, MPM_CONE_COMPRESSION, phi);
    CHECK(al_c, sqrt(2.0 / 3.0) * 2 * S / (3 - S), 1e-15, "DP 3D compression alpha(phi=%g) (K31)", phis[i]);
    const double s1 = -(1 - S) / (1 + S), tm[9] = {s1, 0, 0, 0, s1, 0, 0, 0, -1.0};
    CHECK(yield_fn(3, tm, al_c, 0), 0, 1e-14, "DP 3D compression phi=%g: MC compressive meridian on the cone", phis[i]);

    /* 3D plane-strain cone: with associative flow and no out-of-plane
     * plastic strain (d f/d t2 = 0), an in-plane MC state is on the cone. */
    const double al_p = mpm_dp_alpha(3, MPM_CONE_PLANE_STRAIN, phi);
    double       lo = -100, hi = 100, t2 = 0, ts[9] = {0};
    for (int it = 0; it < 200; it++) {
      t2 = 0.5 * (lo + hi);
      const double m = (s1 - 1.0 + t2) / 3.0, dv[3] = {s1 - m, t2 - m, -1.0 - m};
      const double nd = sqrt(dv[0] * dv[0] + dv[1] * dv[1] + dv[2] * dv[2]);
      if (dv[1] / nd + al_p > 0) hi = t2;
      else lo = t2;
    }
    ts[0] = s1, ts[4] = t2, ts[8] = -1.0;
    CHECK(yield_fn(3, ts, al_p, 0), 0, 1e-12, "DP 3D plane-strain phi=%g: in-plane MC state on the cone", phis[i]);
  }
}

/* ======================================================================== */
/* 5. Hyperelasticity: stress = d psi / d F                                   */
/* ======================================================================== */
typedef double (*EnergyFn)(int, double, double, const double *);
typedef void (*StressFn)(int, double, double, const double *, double *);

/* Guards: the Kirchhoff stress the solver uses is the derivative of the
 * stored energy (no spurious work in a closed elastic cycle). */
/* Pfd = dpsi/dF at F by central differences of step h, entry by entry. */
static void fd_piola(int dim, double mu, double lambda, EnergyFn psi, const double *F, double h, double *Pfd)
{
  for (int a = 0; a < dim * dim; a++) {
    double Fp[9], Fm[9];
    memcpy(Fp, F, sizeof Fp);
    memcpy(Fm, F, sizeof Fm);
    Fp[a] += h;
    Fm[a] -= h;
    Pfd[a] = (psi(dim, mu, lambda, Fp) - psi(dim, mu, lambda, Fm)) / (2 * h);
  }
}

static void test_energy_stress(int dim, const char *nm, EnergyFn psi, StressFn stress)
{
  const double mu = 1.3, lambda = 2.1;
  double       emax = 0;
  for (int s = 0; s < 60; s++) {
    double F[9], tau[9], P[9], Pfd[9];
    if (s < 50) {
      do {
        for (int a = 0; a < dim * dim; a++) F[a] = (a % (dim + 1) == 0 ? 1.0 : 0.0) + urange(-0.3, 0.3);
      } while (mpm_det(dim, F) < 0.3);
    } else { /* repeated singular values: F = R diag(1.1, 1.1, 0.9) R2^T */
      double R1[9], R2[9];
      const double sv[3] = {1.1, 1.1, s % 2 ? 0.9 : 1.1};
      random_rotation(dim, R1);
      random_rotation(dim, R2);
      rot_diag_rot(dim, R1, sv, R2, F);
    }
    stress(dim, mu, lambda, F, tau);
    mpm_piola_from_kirchhoff(dim, tau, F, P);
    fd_piola(dim, mu, lambda, psi, F, 1e-6, Pfd);
    const double scale = fmax(maxabs(dim * dim, P), 1e-3 * mu);
    emax               = fmax(emax, maxdiff(dim * dim, P, Pfd) / scale);
  }
  CHECK(emax, 0, 1e-6, "%s %dD max|tau F^-T - dpsi/dF (FD)| / |P| (60 F)", nm, dim);
  /* stress-free reference: a rotation has zero energy and zero stress */
  double R[9], tau[9];
  random_rotation(dim, R);
  stress(dim, mu, lambda, R, tau);
  CHECK(psi(dim, mu, lambda, R), 0, 1e-14, "%s %dD psi(rotation) = 0", nm, dim);
  CHECK(maxabs(dim * dim, tau), 0, 1e-14, "%s %dD tau(rotation) = 0", nm, dim);
}

/* ======================================================================== */
/* 6. Symmetric eigen-decomposition and small linear algebra                  */
/* ======================================================================== */
static void eig_errors(int d, const double *A, double *erec, double *eorth)
{
  double lam[3], U[9], R[9], Ut[9], UtU[9], I[9];
  mpm_sym_eig(d, A, lam, U);
  rot_diag_rot(d, U, lam, U, R);
  transpose(d, U, Ut);
  mpm_matmul(d, Ut, U, UtU);
  identity(d, I);
  const double sc = fmax(1.0, maxabs(d * d, A));
  *erec           = fmax(*erec, maxdiff(d * d, A, R) / sc);
  *eorth          = fmax(*eorth, maxdiff(d * d, UtU, I));
}
static void sort3(int d, double *l)
{
  for (int i = 0; i < d; i++)
    for (int j = i + 1; j < d; j++)
      if (l[j] < l[i]) {
        const double t = l[i];
        l[i] = l[j], l[j] = t;
      }
}

/* Guards: A = U diag(lam) U^T with orthonormal U (so Hencky strains and
 * the projected F_E are exact), also for the (nearly) repeated eigenvalues
 * of F_E close to a rotation. */
static void test_eig(int d)
{
  double er = 0, eo = 0, A[9], R[9];
  for (int s = 0; s < 500; s++) {
    for (int i = 0; i < d; i++)
      for (int j = i; j < d; j++) A[i * d + j] = A[j * d + i] = urange(-1, 1);
    eig_errors(d, A, &er, &eo);
  }
  CHECK(er, 0, 1e-12, "eig %dD random symmetric: max|A - U L U^T|", d);
  CHECK(eo, 0, 1e-12, "eig %dD random symmetric: max|U^T U - I|", d);

  er = eo = 0;
  double el = 0;
  for (int s = 0; s < 200; s++) { /* I + 1e-9 perturbation */
    for (int i = 0; i < d; i++)
      for (int j = i; j < d; j++) A[i * d + j] = A[j * d + i] = (i == j) + 1e-9 * urange(-1, 1);
    eig_errors(d, A, &er, &eo);
  }
  for (int s = 0; s < 200; s++) { /* known, nearly repeated spectrum */
    const double l[3] = {1.0, 1.0 + 1e-9, 1.0 + 2.5e-9};
    double       lam[3], U[9], ls[3];
    random_rotation(d, R);
    rot_diag_rot(d, R, l, R, A);
    eig_errors(d, A, &er, &eo);
    mpm_sym_eig(d, A, lam, U);
    memcpy(ls, l, sizeof ls);
    sort3(d, lam);
    el = fmax(el, maxdiff(d, lam, ls));
  }
  CHECK(er, 0, 1e-12, "eig %dD nearly repeated (I + 1e-9 E): max|A - U L U^T|", d);
  CHECK(eo, 0, 1e-12, "eig %dD nearly repeated: max|U^T U - I|", d);
  CHECK(el, 0, 1e-14, "eig %dD nearly repeated: eigenvalues to 1e-14 absolute", d);

  er = eo = el = 0;
  for (int s = 0; s < 200; s++) { /* exactly repeated */
    const double l[3] = {2.0, 2.0, d == 3 ? 5.0 : 2.0}, l2[3] = {-1.0, 3.0, 3.0};
    double       lam[3], U[9];
    random_rotation(d, R);
    rot_diag_rot(d, R, s % 2 ? l : l2, R, A);
    eig_errors(d, A, &er, &eo);
    mpm_sym_eig(d, A, lam, U);
    double ls[3];
    memcpy(ls, s % 2 ? l : l2, sizeof ls);
    sort3(d, lam);
    sort3(d, ls);
    el = fmax(el, maxdiff(d, lam, ls));
  }
  const double Z[9] = {0}, Id3[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, Id2[4] = {1, 0, 0, 1};
  eig_errors(d, Z, &er, &eo);
  eig_errors(d, d == 3 ? Id3 : Id2, &er, &eo);
  CHECK(er, 0, 1e-12, "eig %dD exactly repeated / identity / zero: max|A - U L U^T|", d);
  CHECK(eo, 0, 1e-12, "eig %dD exactly repeated: max|U^T U - I|", d);
  CHECK(el, 0, 1e-13, "eig %dD exactly repeated: eigenvalues", d);

  /* det and inverse */
  double ei = 0, ed = 0;
  for (int s = 0; s < 200; s++) {
    double Ai[9], P[9], I[9], sv[3], R2[9], pr = 1;
    random_rotation(d, R);
    random_rotation(d, R2);
    for (int k = 0; k < d; k++) pr *= (sv[k] = urange(0.5, 2.0));
    rot_diag_rot(d, R, sv, R2, A);
    const double det = mpm_inverse(d, A, Ai);
    mpm_matmul(d, A, Ai, P);
    identity(d, I);
    ei = fmax(ei, maxdiff(d * d, P, I));
    ed = fmax(ed, fabs(det - pr) / pr);
    ed = fmax(ed, fabs(mpm_det(d, A) - pr) / pr);
  }
  CHECK(ei, 0, 1e-12, "linalg %dD max|A A^-1 - I|", d);
  CHECK(ed, 0, 1e-13, "linalg %dD det(R1 diag(s) R2^T) = prod s (relative)", d);
}

/* ======================================================================== */
/* 7. Signed distances and the grid-node collision response (K section 8)   */
/* ======================================================================== */
static void check_sdf(const MPMShape *s, const double *x, double phi_exp, const double *g_exp, const char *what)
{
  double       g[3];
  const double phi = mpm_sdf(s, x, g);
  CHECK(phi, phi_exp, 1e-14, "sdf %dD %s: phi", s->dim, what);
  CHECK(maxdiff(s->dim, g, g_exp), 0, 1e-14, "sdf %dD %s: grad phi", s->dim, what);
}

/* Guards: distances and unit normals of the collision shapes are exact
 * (the separating rule phi(x + dt v) >= min(phi, 0) relies on them), the
 * gradient is the derivative of phi with |grad phi| = 1, and inside_out
 * turns a solid into a container. */
static void test_sdf(void)
{
  const double r2 = 1.0 / sqrt(2.0), r3 = 1.0 / sqrt(3.0);
  MPMShape     s;
  memset(&s, 0, sizeof s);
  /* sphere r = 0.5 */
  s.dim = 3, s.type = MPM_SHAPE_SPHERE, s.r = 0.5;
  check_sdf(&s, (double[]){1.0, 0, 0}, 0.5, (double[]){1, 0, 0}, "sphere outside (1,0,0)");
  check_sdf(&s, (double[]){0.1, 0.2, 0.2}, -0.2, (double[]){1 / 3.0, 2 / 3.0, 2 / 3.0}, "sphere inside (0.1,0.2,0.2)");
  s.dim = 2;
  check_sdf(&s, (double[]){0.0, -2.0}, 1.5, (double[]){0, -1}, "disk outside (0,-2)");
  s.inside_out = 1;
  check_sdf(&s, (double[]){0.0, -2.0}, -1.5, (double[]){0, 1}, "disk inside_out (0,-2)");
  s.inside_out = 0;
  /* box a = (1, 2, 3) */
  s.dim = 3, s.type = MPM_SHAPE_BOX, s.a[0] = 1, s.a[1] = 2, s.a[2] = 3;
  check_sdf(&s, (double[]){2, 0, 0}, 1.0, (double[]){1, 0, 0}, "box face (2,0,0)");
  check_sdf(&s, (double[]){2, 3, 0}, sqrt(2.0), (double[]){r2, r2, 0}, "box edge (2,3,0)");
  check_sdf(&s, (double[]){-2, -3, -4}, sqrt(3.0), (double[]){-r3, -r3, -r3}, "box corner (-2,-3,-4)");
  check_sdf(&s, (double[]){-0.5, 0, 0}, -0.5, (double[]){-1, 0, 0}, "box inside (-0.5,0,0)");
  check_sdf(&s, (double[]){0, 0, 2.8}, -0.2, (double[]){0, 0, 1}, "box inside (0,0,2.8)");
  s.inside_out = 1;
  check_sdf(&s, (double[]){0, 0, 2.8}, 0.2, (double[]){0, 0, -1}, "box inside_out (0,0,2.8)");
  check_sdf(&s, (double[]){2, 0, 0}, -1.0, (double[]){-1, 0, 0}, "box inside_out (2,0,0)");
  s.inside_out = 0;
  s.dim        = 2;
  check_sdf(&s, (double[]){0.5, 2.5}, 0.5, (double[]){0, 1}, "rectangle (0.5,2.5)");
  /* capped cylinder, axis z, r = 1, half length 2 */
  s.dim = 3, s.type = MPM_SHAPE_CYLINDER, s.r = 1, s.a[0] = 2, s.n[0] = 0, s.n[1] = 0, s.n[2] = 1;
  check_sdf(&s, (double[]){3, 0, 0}, 2.0, (double[]){1, 0, 0}, "cylinder side (3,0,0)");
  check_sdf(&s, (double[]){0, 0, -5}, 3.0, (double[]){0, 0, -1}, "cylinder cap (0,0,-5)");
  check_sdf(&s, (double[]){0, 2, 3}, sqrt(2.0), (double[]){0, r2, r2}, "cylinder rim (0,2,3)");
  check_sdf(&s, (double[]){0.3, 0.4, 0}, -0.5, (double[]){0.6, 0.8, 0}, "cylinder inside radial (0.3,0.4,0)");
  check_sdf(&s, (double[]){0, 0, 1.8}, -0.2, (double[]){0, 0, 1}, "cylinder inside on axis near cap");
  s.inside_out = 1;
  check_sdf(&s, (double[]){0.3, 0.4, 0}, 0.5, (double[]){-0.6, -0.8, 0}, "cylinder inside_out (0.3,0.4,0)");
  s.inside_out = 0;
  /* tilted axis n = (1,1,0)/sqrt2 */
  s.n[0] = r2, s.n[1] = r2, s.n[2] = 0;
  check_sdf(&s, (double[]){3 * r2, 3 * r2, 0}, 1.0, (double[]){r2, r2, 0}, "tilted cylinder beyond cap");
  check_sdf(&s, (double[]){0, 0, 3}, 2.0, (double[]){0, 0, 1}, "tilted cylinder side (0,0,3)");
  /* infinite cylinder (a0 <= 0) */
  s.n[0] = 0, s.n[1] = 0, s.n[2] = 1, s.a[0] = 0;
  check_sdf(&s, (double[]){2, 0, 100}, 1.0, (double[]){1, 0, 0}, "infinite cylinder (2,0,100)");
  /* half space n = (0,1,0) */
  s.type = MPM_SHAPE_HALF_SPACE, s.n[0] = 0, s.n[1] = 1, s.n[2] = 0;
  check_sdf(&s, (double[]){5, -2, 3}, -2.0, (double[]){0, 1, 0}, "half space (5,-2,3)");

  /* |grad phi| = 1 and grad phi = central FD of phi at random points */
  double eu = 0, efd = 0;
  int    nfd = 0;
  for (int t = 0; t < 4; t++) {
    memset(&s, 0, sizeof s);
    s.dim  = 3;
    s.type = t == 0 ? MPM_SHAPE_SPHERE : t == 1 ? MPM_SHAPE_BOX : MPM_SHAPE_CYLINDER;
    s.r = 0.7, s.a[0] = t == 3 ? 0.0 : 0.9, s.a[1] = 0.5, s.a[2] = 1.2;
    s.n[0] = 2 / 3.0, s.n[1] = -1 / 3.0, s.n[2] = 2 / 3.0;
    for (int k = 0; k < 400; k++) {
      double x[3], g[3], gp[3], fd[3];
      for (int a = 0; a < 3; a++) x[a] = urange(-2, 2);
      mpm_sdf(&s, x, g);
      eu = fmax(eu, fabs(frob(3, g) - 1.0));
      const double h = 1e-6;
      for (int a = 0; a < 3; a++) {
        double xp[3] = {x[0], x[1], x[2]}, xm[3] = {x[0], x[1], x[2]};
        xp[a] += h, xm[a] -= h;
        fd[a] = (mpm_sdf(&s, xp, gp) - mpm_sdf(&s, xm, gp)) / (2 * h);
      }
      efd = fmax(efd, maxdiff(3, fd, g));
      nfd++;
    }
  }
  CHECK(eu, 0, 1e-14, "sdf 3D sphere/box/capped/infinite cylinder: max||grad phi| - 1|");
  CHECK(efd, 0, 1e-6, "sdf 3D max|grad phi - central FD| (%d random points)", nfd);

  /* bounding boxes */
  double lo[3], hi[3];
  memset(&s, 0, sizeof s);
  s.dim = 3, s.type = MPM_SHAPE_CYLINDER, s.r = 1, s.a[0] = 2, s.n[0] = 0.6, s.n[1] = 0, s.n[2] = 0.8;
  int ok = mpm_shape_bbox(&s, lo, hi);
  CHECK(ok, 1, 0, "bbox tilted capped cylinder: finite");
  CHECK(hi[0], 0.6 * 2 + 0.8, 1e-15, "bbox tilted cylinder hi.x = |n_x| a + r sqrt(1 - n_x^2)");
  CHECK(hi[1], 1.0, 1e-15, "bbox tilted cylinder hi.y = r");
  CHECK(lo[2], -(0.8 * 2 + 0.6), 1e-15, "bbox tilted cylinder lo.z");
  s.inside_out = 1;
  CHECK(mpm_shape_bbox(&s, lo, hi), 0, 0, "bbox inside_out shape: unbounded (returns 0)");
}

/* Polygons and prisms (2D regions and embankments) and terrain height
 * fields: a rectangle as a polygon is the box, to roundoff, at random
 * points inside and out, in 2D and extruded in 3D; an L shape (not
 * convex) at points of known distance; a planar terrain's distance is
 * exact, (y - h) / sqrt(1 + |grad h|^2), with the surface normal. */
static void test_sdf_geometry(void)
{
  static const double rect[] = {-1, -2, 1, -2, 1, 2, -1, 2}, rect_cw[] = {-1, -2, -1, 2, 1, 2, 1, -2};
  static const double L[]    = {0, 0, 2, 0, 2, 1, 1, 1, 1, 2, 0, 2};
  MPMShape            box, poly;
  double              e2 = 0, e3 = 0, eg = 0;
  memset(&box, 0, sizeof box);
  memset(&poly, 0, sizeof poly);
  box.type = MPM_SHAPE_BOX, box.a[0] = 1, box.a[1] = 2, box.a[2] = 0.5;
  poly.type = MPM_SHAPE_POLYGON, poly.np = 4, poly.a[2] = 0.5;
  for (int k = 0; k < 2000; k++) {
    const double x[3] = {urange(-3, 3), urange(-4, 4), urange(-2, 2)};
    double       gb[3], gp[3];
    poly.pts = k % 2 ? rect : rect_cw; /* either orientation */
    box.dim = poly.dim = 2;
    e2 = fmax(e2, fabs(mpm_sdf(&box, x, gb) - mpm_sdf(&poly, x, gp)));
    if (mpm_sdf(&box, x, gb) > 0) eg = fmax(eg, maxdiff(2, gb, gp)); /* outside, the nearest point is unique */
    box.dim = poly.dim = 3;
    e3 = fmax(e3, fabs(mpm_sdf(&box, x, gb) - mpm_sdf(&poly, x, gp)));
  }
  CHECK(e2, 0, 1e-14, "sdf polygon: a rectangle is the 2D box at 2000 points, max |phi - phi_box|");
  CHECK(eg, 0, 1e-14, "sdf polygon: gradient outside = the box's");
  CHECK(e3, 0, 1e-14, "sdf prism: an extruded rectangle is the 3D box, max |phi - phi_box|");
  poly.dim = 2, poly.pts = L, poly.np = 6;
  check_sdf(&poly, (double[]){1.5, 1.2}, 0.2, (double[]){0, 1}, "L shape: in the notch (1.5,1.2)");
  check_sdf(&poly, (double[]){0.4, 1.5}, -0.4, (double[]){-1, 0}, "L shape: inside the upright (0.4,1.5)");
  check_sdf(&poly, (double[]){1.5, 0.25}, -0.25, (double[]){0, -1}, "L shape: inside the foot (1.5,0.25)");
  check_sdf(&poly, (double[]){3, 0.5}, 1.0, (double[]){1, 0}, "L shape: outside (3,0.5)");
  {
    /* terrain y = 0.3 x - 0.2 z + 1 on a 4 x 3 grid of spacing 0.5 from (-1, -0.5), raised 0.1 */
    double   h[12];
    MPMShape t;
    memset(&t, 0, sizeof t);
    for (int j = 0; j < 3; j++)
      for (int i = 0; i < 4; i++) h[i + 4 * j] = 0.3 * (-1 + 0.5 * i) - 0.2 * (-0.5 + 0.5 * j) + 1;
    t.dim = 3, t.type = MPM_SHAPE_HEIGHTFIELD, t.pts = h, t.nx = 4, t.nz = 3, t.org[0] = -1, t.org[1] = -0.5, t.dh = 0.5, t.r = 0.1;
    const double len = sqrt(1 + 0.09 + 0.04), x[3] = {-0.3, 2.0, 0.2}, y0 = 0.3 * x[0] - 0.2 * x[2] + 1.1;
    check_sdf(&t, x, (x[1] - y0) / len, (double[]){-0.3 / len, 1 / len, 0.2 / len}, "planar terrain above");
    const double xb[3] = {0.4, -1.0, 0.3}, yb = 0.3 * xb[0] - 0.2 * xb[2] + 1.1;
    check_sdf(&t, xb, (xb[1] - yb) / len, (double[]){-0.3 / len, 1 / len, 0.2 / len}, "planar terrain below (solid)");
    const double xo[3] = {-2.0, 0.0, -1.5}, yo = 0.3 * -1 - 0.2 * -0.5 + 1.1; /* beyond the corner: the corner height, flat */
    check_sdf(&t, xo, xo[1] - yo, (double[]){0, 1, 0}, "terrain beyond the grid: the edge height continues");
  }
}


static void check_vec(int d, const double *v, const double *e, const char *what, int dim)
{
  CHECK(maxdiff(d, v, e), 0, 1e-14, "collide %dD %s", dim, what);
}

/* Guards: the collision response never pulls bodies together, removes
 * only what each mode should, and applies Coulomb friction limited by mu
 * times the normal velocity change (K 8.1). */
static void test_collide(int d)
{
  const double n[3] = {0, 1, 0}, zero[3] = {0, 0, 0}, dt = 1e-3;
  double       v[3];
  int          r;
  /* separating, in contact, frictionless */
  memcpy(v, (double[]){1, -2, 0.5}, sizeof v);
  r = mpm_collide_node(d, MPM_BC_SEPARATE, 0.0, -0.01, n, zero, dt, 0.0, v);
  check_vec(d, v, (double[]){1, 0, 0.5}, "separate: approaching normal velocity removed", d);
  CHECK(r, MPM_CONTACT_MOVED, 0, "collide %dD separate: returns MOVED when projected", d);
  memcpy(v, (double[]){1, 2, 0.5}, sizeof v);
  r = mpm_collide_node(d, MPM_BC_SEPARATE, 0.5, -0.01, n, zero, dt, 0.0, v);
  check_vec(d, v, (double[]){1, 2, 0.5}, "separate: separating velocity untouched (even with mu)", d);
  CHECK(r, MPM_CONTACT_NONE, 0, "collide %dD separate: returns NONE when untouched", d);
  /* separating, not yet in contact: may approach up to reaching the surface in dt */
  memcpy(v, (double[]){1, -5, 0}, sizeof v);
  mpm_collide_node(d, MPM_BC_SEPARATE, 0.0, 0.01, n, zero, dt, 0.0, v);
  check_vec(d, v, (double[]){1, -5, 0}, "separate: phi > 0, slow approach allowed", d);
  memcpy(v, (double[]){1, -20, 0}, sizeof v);
  mpm_collide_node(d, MPM_BC_SEPARATE, 0.0, 0.01, n, zero, dt, 0.0, v);
  CHECK(0.01 + dt * v[1], 0, 1e-15, "collide %dD separate: phi > 0, fast approach stops at phi(x + dt v) = 0", d);
  /* sticky */
  const double vb[3] = {0.3, 0.2, -0.1};
  memcpy(v, (double[]){1, -2, 0.5}, sizeof v);
  r = mpm_collide_node(d, MPM_BC_STICKY, 0.0, -0.01, n, vb, dt, 0.0, v);
  check_vec(d, v, vb, "sticky: v = v_body in contact", d);
  CHECK(r, MPM_CONTACT_HELD, 0, "collide %dD sticky: returns HELD in contact", d);
  memcpy(v, (double[]){1, -2, 0.5}, sizeof v);
  mpm_collide_node(d, MPM_BC_STICKY, 0.0, 0.01, n, vb, dt, 0.0, v);
  check_vec(d, v, (double[]){1, -2, 0.5}, "sticky: untouched outside", d);
  /* slip: normal relative velocity removed both ways */
  memcpy(v, (double[]){1, -2, 0.5}, sizeof v);
  mpm_collide_node(d, MPM_BC_SLIP, 0.0, -0.01, n, zero, dt, 0.0, v);
  check_vec(d, v, (double[]){1, 0, 0.5}, "slip: approaching normal velocity removed", d);
  memcpy(v, (double[]){1, 2, 0.5}, sizeof v);
  mpm_collide_node(d, MPM_BC_SLIP, 0.0, -0.01, n, zero, dt, 0.0, v);
  check_vec(d, v, (double[]){1, 0, 0.5}, "slip: separating normal velocity removed", d);
  memcpy(v, (double[]){1, 2, 0.5}, sizeof v);
  mpm_collide_node(d, MPM_BC_SLIP, 0.0, 0.01, n, zero, dt, 0.0, v);
  check_vec(d, v, (double[]){1, 2, 0.5}, "slip: untouched outside", d);
  memcpy(v, (double[]){1, -2, 0.5}, sizeof v);
  mpm_collide_node(d, MPM_BC_SLIP, 0.0, -0.01, n, vb, dt, 0.0, v);
  check_vec(d, v, (double[]){1, vb[1], 0.5}, "slip on moving body: v_n = v_body,n", d);
  /* Coulomb friction: |v_t| -> |v_t| - mu dv or 0 */
  const double mu = 0.5;
  memcpy(v, (double[]){3, -2, 0}, sizeof v); /* dv = 2, mu dv = 1 */
  r = mpm_collide_node(d, MPM_BC_SEPARATE, mu, -0.01, n, zero, dt, 0.0, v);
  check_vec(d, v, (double[]){2, 0, 0}, "friction: |v_t| 3 -> 3 - mu dv = 2", d);
  CHECK(r, MPM_CONTACT_MOVED, 0, "collide %dD friction: sliding returns MOVED", d);
  memcpy(v, (double[]){0.5, -2, 0}, sizeof v);
  r = mpm_collide_node(d, MPM_BC_SEPARATE, mu, -0.01, n, zero, dt, 0.0, v);
  check_vec(d, v, zero, "friction: |v_t| 0.5 < mu dv -> 0 (static)", d);
  CHECK(r, MPM_CONTACT_HELD, 0, "collide %dD friction: static returns HELD", d);
  memcpy(v, (double[]){0.0, -2, 0}, sizeof v);
  r = mpm_collide_node(d, MPM_BC_SEPARATE, 0.0, -0.01, n, zero, dt, 0.0, v);
  CHECK(r, MPM_CONTACT_MOVED, 0, "collide %dD frictionless, no tangential velocity: returns MOVED, not HELD", d);
  if (d == 3) {
    memcpy(v, (double[]){3, -4, 4}, sizeof v); /* |v_t| = 5, dv = 4, mu dv = 2 -> |v_t| = 3 along (3,0,4)/5 */
    mpm_collide_node(d, MPM_BC_SLIP, mu, -0.01, n, zero, dt, 0.0, v);
    check_vec(d, v, (double[]){1.8, 0, 2.4}, "friction slip: direction kept, |v_t| 5 -> 3", d);
  }
  /* friction relative to a moving body */
  memcpy(v, (double[]){4, -2, 0}, sizeof v); /* rel = (3,-2.2,..) with vb = (1,0.2,0) */
  const double vb2[3] = {1, 0.2, 0};
  mpm_collide_node(d, MPM_BC_SEPARATE, mu, -0.01, n, vb2, dt, 0.0, v);
  check_vec(d, v, (double[]){1 + 3 - mu * 2.2, 0.2, 0}, "friction on moving body: relative |v_t| -= mu dv", d);
  /* separating, no contact, fast approach with friction: dv = 10 */
  memcpy(v, (double[]){30, -20, 0}, sizeof v);
  mpm_collide_node(d, MPM_BC_SEPARATE, mu, 0.01, n, zero, dt, 0.0, v);
  check_vec(d, v, (double[]){25, -10, 0}, "friction, phi > 0 fast approach: dv = 10, |v_t| 30 -> 25", d);

  /* Random normals and velocities: relative speed never increases, and
   * in contact no relative normal approach survives (separate) or
   * remains at all (slip). */
  double ek = 0, en = 0, es = 0;
  for (int s = 0; s < 500; s++) {
    double nn[3] = {0}, vv[3] = {0}, vbb[3] = {0}, nl = 0;
    for (int a = 0; a < d; a++) {
      nn[a] = urange(-1, 1);
      nl += nn[a] * nn[a];
    }
    for (int a = 0; a < d; a++) nn[a] /= sqrt(nl), vv[a] = urange(-2, 2), vbb[a] = urange(-1, 1);
    const double m  = urange(0, 1.5);
    const int    md = s % 2 ? MPM_BC_SEPARATE : MPM_BC_SLIP;
    double       vo = 0, vn = 0, vnn = 0;
    for (int a = 0; a < d; a++) vo += (vv[a] - vbb[a]) * (vv[a] - vbb[a]);
    mpm_collide_node(d, (MPMBCMode)md, m, -0.01, nn, vbb, dt, 0.0, vv);
    for (int a = 0; a < d; a++) vn += (vv[a] - vbb[a]) * (vv[a] - vbb[a]), vnn += (vv[a] - vbb[a]) * nn[a];
    ek = fmax(ek, sqrt(vn) - sqrt(vo));
    if (md == MPM_BC_SEPARATE) en = fmin(en, vnn);
    else es = fmax(es, fabs(vnn));
  }
  CHECK(ek > 0 ? ek : 0, 0, 1e-14, "collide %dD random: relative speed never increases", d);
  CHECK(en, 0, 1e-14, "collide %dD random separate: relative v.n >= 0 after", d);
  CHECK(es, 0, 1e-14, "collide %dD random slip: relative v.n = 0 after", d);
}

/* ======================================================================== */
/* The vectorized batch update (mpm_dp_update_n, 16 particles per lane
 * group, its own log/exp) must agree with the scalar reference
 * mpm_dp_update particle by particle: same case, same F_E, q, Jp and stress
 * to roundoff, for every combination of hardening, cohesion and cone, and
 * for a batch length that is not a multiple of the lane count. */
static void test_dp_batch(void)
{
  enum { N = 203 };
  for (int dim = 2; dim <= 3; dim++)
    for (int variant = 0; variant < 4; variant++) {
      const int              d2 = dim * dim;
      MPMDruckerPragerParams p;
      memset(&p, 0, sizeof p);
      p.dim = dim;
      mpm_lame(1e6, 0.3, &p.mu, &p.lambda);
      p.h0       = (variant & 1 ? 35.0 : 30.0) * M_PI / 180;
      p.h1       = variant & 1 ? 9.0 * M_PI / 180 : 0;
      p.h2       = variant & 1 ? 0.2 : 0;
      p.h3       = variant & 1 ? 10.0 * M_PI / 180 : 0;
      p.cohesion = variant & 2 ? 2e3 : 0;
      p.cone     = variant & 2 ? MPM_CONE_PLANE_STRAIN : MPM_CONE_COMPRESSION;
      mpm_dp_setup(&p);
      static double F1[N * 9], F2[N * 9], q1[N], q2[N], J1[N], J2[N], t1[N * 9], t2[N * 9];
      static uint8_t c1[N], c2[N];
      for (int i = 0; i < N; i++) {
        double R1[9], R2[9], sv[3], M[9];
        random_rotation(dim, R1);
        random_rotation(dim, R2);
        const double vol = urange(-0.02, 0.01); /* compression and expansion */
        for (int k = 0; k < dim; k++) sv[k] = exp(vol / dim + urange(-0.03, 0.03));
        if (i % 50 == 7) sv[1] = sv[0]; /* repeated stretches (an isotropic b in 2D) */
        rot_diag_rot(dim, R1, sv, R2, M);
        memcpy(F1 + d2 * i, M, sizeof(double) * d2);
        q1[i] = urange(0, 3);
        J1[i] = urange(0.9, 1.1);
      }
      memcpy(F2, F1, sizeof F1);
      memcpy(q2, q1, sizeof q1);
      memcpy(J2, J1, sizeof J1);
      int    cases[3] = {0, 0, 0}, same = 1;
      double eF = 0, eq = 0, eJ = 0, et = 0, tscale = 0;
      for (int i = 0; i < N; i++) {
        c1[i] = (uint8_t)mpm_dp_update(&p, F1 + d2 * i, q1 + i, J1 + i, t1 + d2 * i);
        cases[c1[i]]++;
      }
      mpm_dp_update_n(&p, N, F2, q2, J2, t2, c2);
      for (int i = 0; i < N; i++) {
        same &= c1[i] == c2[i];
        eF = fmax(eF, maxdiff(d2, F1 + d2 * i, F2 + d2 * i));
        eq = fmax(eq, fabs(q1[i] - q2[i]));
        eJ = fmax(eJ, fabs(J1[i] - J2[i]));
        et = fmax(et, maxdiff(d2, t1 + d2 * i, t2 + d2 * i));
        tscale = fmax(tscale, maxabs(d2, t1 + d2 * i));
      }
      CHECK(same, 1, 0, "DP %dD batch variant %d: same case for all %d particles (I %d, II %d, III %d)", dim, variant, N, cases[0], cases[1], cases[2]);
      CHECK(cases[0] > 0 && cases[1] > 0 && cases[2] > 0, 1, 0, "DP %dD batch variant %d: all three cases occur", dim, variant);
      CHECK(eF, 0, 1e-13, "DP %dD batch variant %d: max |F_E batch - scalar|", dim, variant);
      CHECK(eq, 0, 1e-13, "DP %dD batch variant %d: max |q batch - scalar|", dim, variant);
      CHECK(eJ, 0, 1e-13, "DP %dD batch variant %d: max |Jp batch - scalar|", dim, variant);
      CHECK(et / tscale, 0, 1e-11, "DP %dD batch variant %d: max |tau batch - scalar| / max |tau|", dim, variant);
    }
}

/* Volume correction (Tampubolon et al. 2017, s. 4.3.4): a particle that
 * expands is projected to the tip (stress free) and stores the log volume
 * it gained; compressed back to its original volume it is stress free and
 * the store is empty, where without the correction it would be in
 * compression.  The cone case keeps the volume (nothing stored), and the
 * lane-parallel kernel gives the scalar one's results. */
static void test_dp_volume_correction(int dim)
{
  const MPMDruckerPragerParams p = dp_params(dim, MPM_CONE_COMPRESSION, 30.0, 0.0);
  double                       R1[9], R2[9], F[9], Fn[9], tau[9], q = 0, Jp = 1, vc = 0, G[9];
  const double                 grow = 0.01, taus = 2 * p.mu * grow;
  random_rotation(dim, R1);
  random_rotation(dim, R2);
  const double ex[3] = {grow, grow, grow};
  F_from_strain(dim, R1, ex, R2, F); /* isotropic expansion: to the tip */
  MPMPlasticCase c = mpm_dp_update_vc(&p, F, &q, &Jp, &vc, tau);
  CHECK(c, MPM_CASE_TIP, 0, "DP %dD volume correction: expansion -> tip", dim);
  CHECK(vc, dim * grow, 1e-13, "DP %dD volume correction: stores the log volume gained, d * eps (T26)", dim);
  CHECK(log(Jp), dim * grow, 1e-13, "DP %dD volume correction: Jp took up the same volume", dim);
  /* compress back to the original volume: F <- exp(-grow) F */
  for (int a = 0; a < dim * dim; a++) Fn[a] = exp(-grow) * F[a];
  memcpy(G, Fn, sizeof G);
  c = mpm_dp_update_vc(&p, Fn, &q, &Jp, &vc, tau);
  CHECK(maxabs(dim * dim, tau), 0, 1e-10 * taus, "DP %dD volume correction: compressed back, stress free", dim);
  CHECK(vc, 0, 1e-13, "DP %dD volume correction: compressed back, nothing stored", dim);
  CHECK(log(Jp), 0, 1e-13, "DP %dD volume correction: compressed back, Jp = 1", dim);
  double q2 = 0, J2 = 1;
  mpm_dp_update(&p, G, &q2, &J2, tau);
  double tr = 0;
  for (int a = 0; a < dim; a++) tr += tau[a * dim + a];
  CHECK(tr < -0.5 * dim * dim * grow * (p.lambda + 2 * p.mu / dim) * 0.5, 1, 0, "DP %dD without the correction: the same state is in compression", dim);
  /* a cone projection keeps the volume: nothing stored */
  const double es[3] = {-0.02, 0.015, -0.01}; /* compressive trace in 2D and 3D */
  F_from_strain(dim, R1, es, R2, F);
  vc = 0;
  c  = mpm_dp_update_vc(&p, F, &q, &Jp, &vc, tau);
  CHECK(c, MPM_CASE_CONE, 0, "DP %dD volume correction: shear -> cone", dim);
  CHECK(vc, 0, 1e-14, "DP %dD volume correction: the cone keeps the volume, vc stays 0", dim);
}

static void test_dp_volume_correction_batch(int dim)
{
  const int d2 = dim * dim;
  enum { N = 157 };
  const MPMDruckerPragerParams p = dp_params(dim, MPM_CONE_COMPRESSION, 30.0, 0.0);
  static double F1[N * 9], F2[N * 9], q1[N], q2[N], J1[N], J2[N], v1[N], v2[N], t1[N * 9], t2[N * 9];
  static uint8_t c1[N], c2[N];
  double         eF = 0, ev = 0, et = 0, ts = 0;
  int            same = 1, cases[3] = {0, 0, 0};
  for (int i = 0; i < N; i++) {
    double R1[9], R2[9], sv[3], M[9];
    random_rotation(dim, R1);
    random_rotation(dim, R2);
    const double vol = urange(-0.02, 0.02);
    for (int k = 0; k < dim; k++) sv[k] = exp(vol / dim + urange(-0.02, 0.02));
    rot_diag_rot(dim, R1, sv, R2, M);
    memcpy(F1 + d2 * i, M, sizeof(double) * d2);
    q1[i] = urange(0, 1);
    J1[i] = urange(0.95, 1.05);
    v1[i] = i % 3 ? urange(0, 0.03) : 0.0; /* some with a stored volume */
  }
  memcpy(F2, F1, sizeof F1), memcpy(q2, q1, sizeof q1), memcpy(J2, J1, sizeof J1), memcpy(v2, v1, sizeof v1);
  for (int i = 0; i < N; i++) cases[c1[i] = (uint8_t)mpm_dp_update_vc(&p, F1 + d2 * i, q1 + i, J1 + i, v1 + i, t1 + d2 * i)]++;
  mpm_dp_update_n_vc(&p, N, F2, q2, J2, v2, t2, c2);
  for (int i = 0; i < N; i++) {
    same &= c1[i] == c2[i];
    eF = fmax(eF, maxdiff(d2, F1 + d2 * i, F2 + d2 * i));
    ev = fmax(ev, fabs(v1[i] - v2[i]));
    et = fmax(et, maxdiff(d2, t1 + d2 * i, t2 + d2 * i));
    ts = fmax(ts, maxabs(d2, t1 + d2 * i));
  }
  CHECK(same && cases[0] && cases[1] && cases[2], 1, 0, "DP %dD volume correction batch: same cases as scalar, all three occur (I %d, II %d, III %d)", dim, cases[0], cases[1], cases[2]);
  CHECK(eF, 0, 1e-13, "DP %dD volume correction batch: max |F_E batch - scalar|", dim);
  CHECK(ev, 0, 1e-13, "DP %dD volume correction batch: max |vc batch - scalar|", dim);
  CHECK(et / ts, 0, 1e-11, "DP %dD volume correction batch: max |tau batch - scalar| / max |tau|", dim);
}


/* ======================================================================== */
/* 8. Implicit linearization: P(Z(Fhat)) and dP/dFhat (docs/design/implicit.md) */
/* ======================================================================== */
/* One linearization check: the returned case, P against the explicit path
 * (Z and tau of mpm_dp_update, P = tau Z^-T) and dP against a central finite
 * difference of P along three random directions. */
static void check_trial_piola(const MPMDruckerPragerParams *p, const double *Fhat, MPMPlasticCase want, const char *what)
{
  const int           d = p->dim;
  double              P[9], Pz[9], Z[9], tau[9], q = 0, Jp = 1, err = 0;
  MPMIsoLinearization lin;
  const int           pc = mpm_dp_trial_piola(p, p->alpha0, p->tr_apex0, Fhat, P, &lin);
  CHECK(pc, want, 0, "trial P %dD %s: case %d", d, what, (int)want);
  memcpy(Z, Fhat, sizeof(double) * (size_t)(d * d));
  mpm_dp_update(p, Z, &q, &Jp, tau);
  mpm_piola_from_kirchhoff(d, tau, Z, Pz);
  CHECK(maxdiff(d * d, P, Pz) / fmax(maxabs(d * d, Pz), p->mu * 1e-3), 0, 1e-10, "trial P %dD %s: = tau(Z) Z^-T of mpm_dp_update", d, what);
  for (int r = 0; r < 3; r++) {
    double dF[9], Fp[9], Fm[9], Pp[9], Pm[9], dP[9], fd[9];
    const double h = 1e-6;
    MPMIsoLinearization tmp;
    for (int i = 0; i < d * d; i++) dF[i] = urange(-1, 1);
    for (int i = 0; i < d * d; i++) {
      Fp[i] = Fhat[i] + h * dF[i];
      Fm[i] = Fhat[i] - h * dF[i];
    }
    mpm_dp_trial_piola(p, p->alpha0, p->tr_apex0, Fp, Pp, &tmp);
    mpm_dp_trial_piola(p, p->alpha0, p->tr_apex0, Fm, Pm, &tmp);
    for (int i = 0; i < d * d; i++) fd[i] = (Pp[i] - Pm[i]) / (2 * h);
    mpm_iso_dpiola(&lin, dF, dP);
    err = fmax(err, maxdiff(d * d, dP, fd) / fmax(maxabs(d * d, fd), p->mu * 1e-6));
  }
  CHECK(err, 0, 1e-6, "trial P %dD %s: dP = finite difference (3 directions)", d, what);
}

/* The elastic models: P against tau F^-T of their stress kernels, dP against
 * a central difference, at a random F (stretches 0.7-1.3, rotated). */
typedef void (*TrialFn)(int, double, double, const double *, double *, MPMIsoLinearization *);
static void test_trial_elastic(int dim, const char *nm, TrialFn trial, StressFn stress)
{
  const int           d = dim;
  double              mu, lambda, R1[9], R2[9], s[3], F[9], P[9], Pt[9], tau[9], err = 0;
  MPMIsoLinearization lin;
  mpm_lame(E_SAND, NU_SAND, &mu, &lambda);
  for (int trial_no = 0; trial_no < 4; trial_no++) {
    random_rotation(d, R1);
    random_rotation(d, R2);
    for (int k = 0; k < d; k++) s[k] = trial_no == 3 ? 0.9 : urange(0.7, 1.3); /* the last: equal stretches */
    rot_diag_rot(d, R1, s, R2, F);
    trial(d, mu, lambda, F, P, &lin);
    stress(d, mu, lambda, F, tau);
    mpm_piola_from_kirchhoff(d, tau, F, Pt);
    CHECK(maxdiff(d * d, P, Pt) / maxabs(d * d, Pt), 0, 1e-10, "trial P %dD %s (s %.2f %.2f): = tau F^-T", d, nm, s[0], s[1]);
    for (int r = 0; r < 3; r++) {
      double dF[9], Fp[9], Fm[9], Pp[9], Pm[9], dP[9], fd[9];
      const double h = 1e-6;
      MPMIsoLinearization tmp;
      for (int i = 0; i < d * d; i++) dF[i] = urange(-1, 1);
      for (int i = 0; i < d * d; i++) Fp[i] = F[i] + h * dF[i], Fm[i] = F[i] - h * dF[i];
      trial(d, mu, lambda, Fp, Pp, &tmp);
      trial(d, mu, lambda, Fm, Pm, &tmp);
      for (int i = 0; i < d * d; i++) fd[i] = (Pp[i] - Pm[i]) / (2 * h);
      mpm_iso_dpiola(&lin, dF, dP);
      err = fmax(err, maxdiff(d * d, dP, fd) / maxabs(d * d, fd));
    }
  }
  CHECK(err, 0, 1e-6, "trial P %dD %s: dP = finite difference (4 deformations x 3 directions)", d, nm);
}

/* The unilateral energy (Tampubolon et al. 2017, s. 3.1.1): h = 1 in region
 * A and 0 in C exactly; its gradient and Hessian against central
 * differences in region B; psi h's trial stress is the derivative of its
 * energy and its linearization that of the stress (finite differences). */
static void test_unilateral(int dim)
{
  const int           d = dim;
  const MPMUnilateral U = {-0.1, 0.1, 1.1, 0.02};
  double              mu, lambda, eA[3], eC[3], eg = 0, eh = 0, eP = 0, edP = 0;
  mpm_lame(E_SAND, NU_SAND, &mu, &lambda);
  for (int k = 0; k < d; k++) eA[k] = -0.2, eC[k] = 0.2;
  CHECK(mpm_unilateral_multiplier(d, &U, eA, NULL, NULL), 1.0, 0, "unilateral %dD: h = 1 in region A (hydrostatic compression 0.2)", d);
  CHECK(mpm_unilateral_multiplier(d, &U, eC, NULL, NULL), 0.0, 0, "unilateral %dD: h = 0 in region C (hydrostatic expansion 0.2)", d);
  for (int n = 0; n < 20; n++) {
    double e[3], g[3], H[9];
    const double step = 1e-6;
    for (int k = 0; k < d; k++) e[k] = urange(-0.06, 0.06);
    mpm_unilateral_multiplier(d, &U, e, g, H);
    for (int l = 0; l < d; l++) {
      double ep[3], em[3], gp[3], gm[3];
      for (int k = 0; k < d; k++) ep[k] = em[k] = e[k];
      ep[l] += step, em[l] -= step;
      const double hp = mpm_unilateral_multiplier(d, &U, ep, gp, NULL), hm = mpm_unilateral_multiplier(d, &U, em, gm, NULL);
      eg = fmax(eg, fabs((hp - hm) / (2 * step) - g[l]) / (maxabs(d, g) + 1e-3));
      for (int k = 0; k < d; k++) eh = fmax(eh, fabs((gp[k] - gm[k]) / (2 * step) - H[k * d + l]) / (maxabs(d * d, H) + 1e-3));
    }
  }
  CHECK(eg, 0, 1e-7, "unilateral %dD: dh/deps = finite difference (20 strains in region B)", d);
  CHECK(eh, 0, 1e-6, "unilateral %dD: d2h/deps2 = finite difference of dh/deps", d);
  for (int n = 0; n < 6; n++) {
    double R1[9], R2[9], st[3], F[9], P[9], dF[9], dP[9], Pp[9], Pm[9], fdP[9], fdE[9];
    const double        step = 1e-6;
    MPMIsoLinearization lin, tmp;
    random_rotation(d, R1);
    random_rotation(d, R2);
    for (int k = 0; k < d; k++) st[k] = urange(0.95, 1.05);
    rot_diag_rot(d, R1, st, R2, F);
    mpm_hencky_unilateral_trial_piola(d, mu, lambda, &U, F, P, &lin);
    for (int i = 0; i < d * d; i++) {
      double Fp[9], Fm[9];
      for (int j = 0; j < d * d; j++) Fp[j] = Fm[j] = F[j];
      Fp[i] += step, Fm[i] -= step;
      fdE[i] = (mpm_hencky_unilateral_energy(d, mu, lambda, &U, Fp) - mpm_hencky_unilateral_energy(d, mu, lambda, &U, Fm)) / (2 * step);
    }
    eP = fmax(eP, maxdiff(d * d, P, fdE) / maxabs(d * d, fdE));
    for (int i = 0; i < d * d; i++) dF[i] = urange(-1, 1);
    double Fp[9], Fm[9];
    for (int i = 0; i < d * d; i++) Fp[i] = F[i] + step * dF[i], Fm[i] = F[i] - step * dF[i];
    mpm_hencky_unilateral_trial_piola(d, mu, lambda, &U, Fp, Pp, &tmp);
    mpm_hencky_unilateral_trial_piola(d, mu, lambda, &U, Fm, Pm, &tmp);
    for (int i = 0; i < d * d; i++) fdP[i] = (Pp[i] - Pm[i]) / (2 * step);
    mpm_iso_dpiola(&lin, dF, dP);
    edP = fmax(edP, maxdiff(d * d, dP, fdP) / maxabs(d * d, fdP));
  }
  CHECK(eP, 0, 1e-6, "unilateral %dD: trial P = d(psi h)/dF (finite difference, 6 deformations)", d);
  CHECK(edP, 0, 1e-5, "unilateral %dD: dP = finite difference of P", d);
}

/* The implicit operators of transfer.c: the gradient of an affine grid
 * velocity is its matrix; the divergence of -dt V0 tau equals P2G's force;
 * the diagonal equals the operator applied to unit node velocities. */
static void test_implicit_operators(int dim, int order)
{
  const int       d = dim, dd = d * d, np = 40, off = 1;
  const char     *nm = order == 2 ? "quadratic" : "cubic";
  TestGrid        t;
  MPMParticleView p;
  double          A[9], b[3], *G = malloc(sizeof(double) * (size_t)(np * dd)), e = 0;
  grid_make(&t, dim, order, 1 + d, 10);
  parts_alloc(&p, dim, np);
  for (int q = 0; q < np; q++) random_inside(&t, p.x + q * d);
  for (int k = 0; k < dd; k++) A[k] = urange(-1, 1);
  for (int k = 0; k < d; k++) b[k] = urange(-1, 1);
  for (long n = 0; n < t.nn; n++) {
    double x[3] = {0};
    node_pos(&t, n, x);
    for (int a = 0; a < d; a++) {
      double v = b[a];
      for (int c = 0; c < d; c++) v += A[a * d + c] * x[c];
      t.grid[n * t.g.dof + off + a] = v;
    }
  }
  mpm_grid_gradient(&t.g, np, p.x, t.grid, off, G);
  for (int q = 0; q < np; q++) e = fmax(e, maxdiff(dd, G + q * dd, A));
  CHECK(e, 0, 1e-12, "implicit ops %dD %s: gradient of an affine grid velocity = its matrix", d, nm);

  /* divergence: P2G of massless particles with stress tau puts -dt V0 tau grad w in the momentum slots */
  const double dt = 0.01;
  double      *Am = malloc(sizeof(double) * (size_t)(np * dd)), *ref = malloc(sizeof(double) * (size_t)(t.nn * t.g.dof));
  for (int q = 0; q < np; q++) {
    p.V0[q] = urange(0.5, 1.5) * 1e-3;
    for (int k = 0; k < dd; k++) {
      p.tau[q * dd + k] = urange(-1e4, 1e4);
      Am[q * dd + k]    = -dt * p.V0[q] * p.tau[q * dd + k];
    }
  }
  grid_clear(&t);
  mpm_p2g(&t.g, &p, dt, t.grid);
  memcpy(ref, t.grid, sizeof(double) * (size_t)(t.nn * t.g.dof));
  grid_clear(&t);
  mpm_p2g_divergence(&t.g, np, p.x, Am, t.grid, off);
  CHECK(maxdiff((int)(t.nn * t.g.dof), t.grid, ref) / maxabs((int)(t.nn * t.g.dof), ref), 0, 1e-14, "implicit ops %dD %s: divergence of -dt V0 tau = P2G's force", d, nm);

  /* diagonal: D_p[a][c][f] = dt^2 V0 dP_ac/dF_af, against e_ia . K e_ia with K v = divergence(dt V0 dP(dt grad v F) F^T) */
  MPMIsoLinearization *lin = malloc(sizeof(MPMIsoLinearization) * (size_t)np);
  double *D = calloc((size_t)(np * dd * d), sizeof(double)), *diag = calloc((size_t)(t.nn * t.g.dof), sizeof(double)), mu, lambda, err = 0, scale = 0;
  mpm_lame(1e6, 0.3, &mu, &lambda);
  for (int q = 0; q < np; q++) {
    double R1[9], R2[9], sv[3], P[9];
    random_rotation(d, R1), random_rotation(d, R2);
    for (int k = 0; k < d; k++) sv[k] = urange(0.9, 1.1);
    rot_diag_rot(d, R1, sv, R2, p.Fe + q * dd);
    mpm_hencky_trial_piola(d, mu, lambda, p.Fe + q * dd, P, &lin[q]);
    for (int a = 0; a < d; a++)
      for (int f = 0; f < d; f++) {
        double E[9] = {0}, dP[9];
        E[a * d + f] = 1;
        mpm_iso_dpiola(&lin[q], E, dP);
        for (int c = 0; c < d; c++) D[q * dd * d + (a * d + c) * d + f] = dt * dt * p.V0[q] * dP[a * d + c];
      }
  }
  mpm_p2g_diagonal(&t.g, np, p.x, p.Fe, D, diag, off);
  for (int trial = 0; trial < 6; trial++) {
    const long n = (long)(urand() * t.nn) % t.nn;
    const int  a = trial % d;
    grid_clear(&t);
    t.grid[n * t.g.dof + off + a] = 1.0;
    mpm_grid_gradient(&t.g, np, p.x, t.grid, off, G);
    for (int q = 0; q < np; q++) {
      double dF[9], dP[9];
      mpm_matmul(d, G + q * dd, p.Fe + q * dd, dF);
      for (int k = 0; k < dd; k++) dF[k] *= dt;
      mpm_iso_dpiola(&lin[q], dF, dP);
      for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) {
          double s2 = 0;
          for (int k = 0; k < d; k++) s2 += dP[i * d + k] * p.Fe[q * dd + j * d + k]; /* dP F^T */
          Am[q * dd + i * d + j] = dt * p.V0[q] * s2;
        }
    }
    grid_clear(&t);
    mpm_p2g_divergence(&t.g, np, p.x, Am, t.grid, off);
    err   = fmax(err, fabs(t.grid[n * t.g.dof + off + a] - diag[n * t.g.dof + off + a]));
    scale = fmax(scale, fabs(t.grid[n * t.g.dof + off + a]));
  }
  CHECK(scale > 0, 1, 0, "implicit ops %dD %s: the probed nodes carry stiffness", d, nm);
  CHECK(err / fmax(scale, 1e-300), 0, 1e-12, "implicit ops %dD %s: diagonal = operator on unit node velocities (6 nodes)", d, nm);
  free(G), free(Am), free(ref), free(lin), free(D), free(diag);
  grid_free(&t);
  parts_free(&p);
}

/* The fused pass of the Jacobian's action equals mpm_grid_gradient, the
 * pointwise op, then mpm_p2g_divergence, bit for bit. */
static double fused_M[64][9];
static void fused_op(int q, const double *G, double *A, void *ctx)
{
  const int d = *(const int *)ctx;
  mpm_matmul(d, fused_M[q], G, A);
}

static void test_gradient_divergence(int dim, int order, int dof)
{
  const int       d = dim, dd = d * d, np = 64;
  const char     *nm = order == 2 ? "quadratic" : "cubic";
  TestGrid        t;
  MPMParticleView p;
  double         *G = malloc(sizeof(double) * (size_t)(np * dd)), *A = malloc(sizeof(double) * (size_t)(np * dd)), *in, *ref, *G1 = malloc(sizeof(double) * (size_t)(np * dd));
  grid_make(&t, dim, order, dof, 10);
  parts_alloc(&p, dim, np);
  in  = malloc(sizeof(double) * (size_t)(t.nn * dof));
  ref = calloc((size_t)(t.nn * dof), sizeof(double));
  for (long k = 0; k < t.nn * dof; k++) in[k] = k % dof < d ? urange(-1, 1) : 0.0;
  for (int q = 0; q < np; q++) {
    random_inside(&t, p.x + q * d);
    for (int k = 0; k < dd; k++) fused_M[q][k] = urange(-1, 1);
  }
  mpm_grid_gradient(&t.g, np, p.x, in, 0, G);
  for (int q = 0; q < np; q++) fused_op(q, G + q * dd, A + q * dd, (void *)&d);
  mpm_p2g_divergence(&t.g, np, p.x, A, ref, 0);
  grid_clear(&t);
  if (dof == d) {
    mpm_gradient_divergence(&t.g, np, p.x, in, fused_op, (void *)&d, t.grid);
    CHECK(memcmp(t.grid, ref, sizeof(double) * (size_t)(t.nn * d)) == 0, 1, 0, "implicit ops %dD %s: fused gradient-op-divergence = the three passes, bit for bit", d, nm);
  } else { /* the SIMD gradient and divergence (4 values per node) against the generic ones (values 1..3 of 4, off = 1) */
    double *in1 = calloc((size_t)(t.nn * dof), sizeof(double)), e = 0, sc = 0, pad = 0;
    for (long k = 0; k < t.nn; k++)
      for (int a = 0; a < d; a++) in1[k * dof + 1 + a] = in[k * dof + a];
    mpm_grid_gradient(&t.g, np, p.x, in1, 1, G1);
    for (int k = 0; k < np * dd; k++) e = fmax(e, fabs(G[k] - G1[k])), sc = fmax(sc, fabs(G1[k]));
    CHECK(e / sc, 0, 1e-14, "implicit ops %dD %s, 4 values per node: SIMD gradient = generic", d, nm);
    mpm_p2g_divergence(&t.g, np, p.x, A, t.grid, 1);
    e = sc = 0;
    for (long k = 0; k < t.nn; k++) {
      for (int a = 0; a < d; a++) e = fmax(e, fabs(ref[k * dof + a] - t.grid[k * dof + 1 + a])), sc = fmax(sc, fabs(ref[k * dof + a]));
      pad = fmax(pad, fabs(ref[k * dof + 3]));
    }
    CHECK(e / sc, 0, 1e-14, "implicit ops %dD %s, 4 values per node: SIMD divergence = generic", d, nm);
    CHECK(pad, 0, 0, "implicit ops %dD %s, 4 values per node: the divergence leaves the padding slot 0", d, nm);
    free(in1);
  }
  free(G), free(G1), free(A), free(in), free(ref);
  grid_free(&t);
  parts_free(&p);
}

/* The semi-implicit action with packed symmetric maps against the generic
 * fused pass with the same maps unpacked, and its diagonal against the
 * action on unit vectors. */
static double sym_full[64][81];
static void sym_op(int q, const double *G, double *A, void *ctx)
{
  const int nb = *(const int *)ctx * *(const int *)ctx;
  for (int i = 0; i < nb; i++) {
    A[i] = 0;
    for (int j = 0; j < nb; j++) A[i] += sym_full[q][i * nb + j] * G[j];
  }
}

static void test_gradient_divergence_sym(int dim, int order, int dof)
{
  const int       d = dim, nb = d * d, ns = mpm_sym_map_size(d), np = 64;
  const char     *nm = order == 2 ? "quadratic" : "cubic";
  TestGrid        t;
  MPMParticleView p;
  double         *S = malloc(sizeof(double) * (size_t)(np * ns)), *in, *ref, *diag, err = 0, scale = 0, derr = 0, dscale = 0, padding = 0;
  grid_make(&t, dim, order, dof, 10);
  parts_alloc(&p, dim, np);
  in   = malloc(sizeof(double) * (size_t)(t.nn * dof));
  ref  = calloc((size_t)(t.nn * dof), sizeof(double));
  diag = calloc((size_t)(t.nn * dof), sizeof(double));
  for (long k = 0; k < t.nn * dof; k++) in[k] = k % dof < d ? urange(-1, 1) : 0.0; /* the padding slot holds 0 */
  for (int q = 0; q < np; q++) {
    double Sp[45];
    random_inside(&t, p.x + q * d);
    if (d == 3) { /* random factors (any U: the expansion is symmetric for every U) */
      for (int k = 0; k < ns; k++) S[q * ns + k] = k < 12 && k % 4 == 3 ? 0.0 : urange(-1, 1);
      mpm_sym_factors_expand(S + q * ns, Sp);
    } else
      for (int k = 0; k < ns; k++) Sp[k] = S[q * ns + k] = urange(-1, 1);
    for (int i = 0, k = 0; i < nb; i++)
      for (int j = i; j < nb; j++, k++) sym_full[q][i * nb + j] = sym_full[q][j * nb + i] = Sp[k];
  }
  mpm_gradient_divergence(&t.g, np, p.x, in, sym_op, (void *)&d, ref);
  grid_clear(&t);
  mpm_gradient_divergence_sym(&t.g, np, p.x, S, in, t.grid);
  for (long k = 0; k < t.nn * dof; k++) {
    err   = fmax(err, fabs(t.grid[k] - ref[k]));
    scale = fmax(scale, fabs(ref[k]));
  }
  CHECK(err, 0, 1e-13 * scale, "semi-implicit action %dD %s, %d values per node: packed symmetric maps = the generic fused pass (max |diff|)", d, nm, dof);
  mpm_p2g_sym_diagonal(&t.g, np, p.x, S, -2.0, diag);
  for (long node = 0; node < t.nn; node += 7)
    for (int a = 0; a < d; a++) {
      memset(in, 0, sizeof(double) * (size_t)(t.nn * dof));
      in[node * dof + a] = 1;
      grid_clear(&t);
      mpm_gradient_divergence_sym(&t.g, np, p.x, S, in, t.grid);
      derr   = fmax(derr, fabs(diag[node * dof + a] + 2.0 * t.grid[node * dof + a]));
      dscale = fmax(dscale, fabs(t.grid[node * dof + a]));
    }
  CHECK(derr, 0, 1e-13 * dscale, "semi-implicit action %dD %s, %d values per node: its diagonal (scaled by -2) = the action on unit vectors", d, nm, dof);
  for (long k = d; dof > d && k < t.nn * dof; k += dof) padding = fmax(padding, fabs(t.grid[k]));
  if (dof > d) CHECK(padding, 0, 0, "semi-implicit action %dD %s, %d values per node: the padding slot stays 0", d, nm, dof);
  free(S), free(in), free(ref), free(diag);
  grid_free(&t);
  parts_free(&p);
}

/* mpm_iso_sym_map (the semi-implicit particle map built in the principal
 * frame) against the map applied through mpm_iso_dpiola to the unit
 * gradients and symmetrized: fixed-corotated (snow) and Hencky, with and
 * without the definiteness fix, compressed, stretched and with repeated
 * singular values. */
static void test_iso_sym_map(int dim)
{
  const int nb = dim * dim, ns = nb * (nb + 1) / 2;
  double    err = 0, ferr = 0, scale = 0, Sf[45];
  uint64_t  state = 12345u; /* its own generator: the later sections' random instances stay those of the shared stream */
  for (int trial = 0; trial < 60; trial++) {
    MPMIsoLinearization lin;
    double              F[9] = {0}, P[9], S[45], M[81];
    const double        dt = 1e-3, sc = -2.5e-6;
    for (int a = 0; a < nb; a++) F[a] = (a % (dim + 1) == 0 ? (trial % 3 == 0 ? 0.9 : 1.02) : 0.0) + (trial % 5 == 4 ? 0.0 : 0.16 * ((double)((state = state * 6364136223846793005u + 1442695040888963407u) >> 11) / 9007199254740992.0 - 0.5));
    if (trial % 2) mpm_fcr_trial_piola(dim, 7e5, 3e5, F, P, &lin);
    else mpm_hencky_trial_piola(dim, 7e5, 3e5, F, P, &lin);
    if (trial % 4 < 2) mpm_iso_definite(&lin);
    for (int j = 0; j < nb; j++) {
      double G[9] = {0}, dF[9] = {0}, dP[9], A[9];
      G[j] = 1;
      mpm_matmul(dim, G, F, dF);
      for (int k = 0; k < nb; k++) dF[k] *= dt;
      mpm_iso_dpiola(&lin, dF, dP);
      mpm_scaled_pft(dim, sc, dP, F, A);
      for (int i = 0; i < nb; i++) M[i * nb + j] = A[i];
    }
    mpm_iso_sym_map(&lin, dt, sc, S);
    if (dim == 3) { /* the factors the 3D operator applies, expanded */
      double f[27];
      mpm_iso_sym_factors(&lin, dt, sc, f);
      mpm_sym_factors_expand(f, Sf);
    }
    for (int i = 0, k = 0; i < nb; i++)
      for (int j = i; j < nb; j++, k++) {
        const double ref = 0.5 * (M[i * nb + j] + M[j * nb + i]);
        err   = fmax(err, fabs(S[k] - ref));
        if (dim == 3) ferr = fmax(ferr, fabs(Sf[k] - ref));
        scale = fmax(scale, fabs(ref));
      }
  }
  (void)ns;
  CHECK(err, 0, 1e-12 * scale, "semi-implicit map %dD: the principal-frame construction = dP applied to unit gradients, symmetrized (60 points)", dim);
  if (dim == 3) CHECK(ferr, 0, 1e-12 * scale, "semi-implicit map 3D: its factors (U, the diagonal and pair blocks), expanded = the same (60 points)");
}

static void test_trial_piola(int dim)
{
  const MPMDruckerPragerParams p = dp_params(dim, MPM_CONE_PLANE_STRAIN, 30.0, 0.0), pc = dp_params(dim, MPM_CONE_PLANE_STRAIN, 30.0, 2e4);
  /* principal Hencky strains well inside each case (checked by the returned case) */
  const double elastic[3] = {-0.010, -0.012, -0.011}, cone[3] = {0.020, -0.060, -0.020}, tip[3] = {0.020, 0.010, 0.015};
  const double twin[3] = {-0.010, -0.010 + 1e-10, -0.012}, equal[3] = {-0.01, -0.01, -0.01};
  const double cone_twin[3] = {0.020, -0.070, 0.020}; /* 3D: two equal strains on the cone */
  struct {
    const MPMDruckerPragerParams *p;
    const double                 *e;
    MPMPlasticCase                pc;
    const char                   *what;
  } cases[] = {
    {&p,  elastic,   MPM_CASE_ELASTIC, "elastic"                              },
    {&p,  cone,      MPM_CASE_CONE,    "cone"                                 },
    {&p,  tip,       MPM_CASE_TIP,     "tip"                                  },
    {&pc, tip,       MPM_CASE_TIP,     "tip with cohesion (stress at the apex)"},
    {&pc, cone,      MPM_CASE_CONE,    "cone with cohesion"                   },
    {&p,  twin,      MPM_CASE_ELASTIC, "elastic, s1 - s2 = 1e-10"             },
    {&p,  equal,     MPM_CASE_ELASTIC, "elastic, all s equal"                 },
    {&p,  cone_twin, MPM_CASE_CONE,    "cone, two equal s"                    },
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    double R1[9], R2[9], F[9];
    if (dim == 2 && cases[c].e == cone_twin) continue; /* in 2D two equal strains have no deviator: the tip */
    random_rotation(dim, R1);
    random_rotation(dim, R2);
    F_from_strain(dim, R1, cases[c].e, R2, F);
    check_trial_piola(cases[c].p, F, cases[c].pc, cases[c].what);
  }
  /* The cone's derivative is not symmetric (non-associative flow): dP(A):B != A:dP(B) */
  double R1[9], R2[9], F[9], P[9], A[9], B[9], dA[9], dB[9], ab = 0, ba = 0, sc = 0;
  MPMIsoLinearization lin;
  random_rotation(dim, R1);
  random_rotation(dim, R2);
  F_from_strain(dim, R1, cone, R2, F);
  mpm_dp_trial_piola(&p, p.alpha0, p.tr_apex0, F, P, &lin);
  for (int i = 0; i < dim * dim; i++) A[i] = urange(-1, 1), B[i] = urange(-1, 1);
  mpm_iso_dpiola(&lin, A, dA);
  mpm_iso_dpiola(&lin, B, dB);
  for (int i = 0; i < dim * dim; i++) ab += B[i] * dA[i], ba += A[i] * dB[i], sc += fabs(B[i] * dA[i]);
  CHECK(fabs(ab - ba) / sc > 1e-3, 1, 0, "trial P %dD cone: the linearization is not symmetric (|B:dP(A) - A:dP(B)| / scale = %.2g)", dim, fabs(ab - ba) / sc);
}

/* The assembled preconditioner's blocks: the tangent block of a
 * linearization is the matrix of its directional derivative between two
 * nodes, (K u)_i = V sum_k dP(u yb^T)_ik ya_k, here for a Drucker-Prager
 * cone particle (not symmetric); and at F = I the Hencky tangent is the
 * linear-elastic law, whose moduli mpm_iso_moduli recovers and whose block
 * mpm_elastic_block reproduces. */
static void test_assembled_blocks(int dim)
{
  const int                    d = dim;
  const MPMDruckerPragerParams p = dp_params(dim, MPM_CONE_PLANE_STRAIN, 30.0, 0.0);
  const double                 cone[3] = {0.020, -0.060, -0.020}, V = 2e-3;
  double                       R1[9], R2[9], F[9], P[9], C[81], ya[3], yb[3], u[3], K[9], err = 0, sc = 0;
  MPMIsoLinearization          lin;
  random_rotation(d, R1);
  random_rotation(d, R2);
  F_from_strain(d, R1, cone, R2, F);
  mpm_dp_trial_piola(&p, p.alpha0, p.tr_apex0, F, P, &lin);
  mpm_iso_tangent(&lin, C);
  for (int r = 0; r < 4; r++) {
    double dF[9], dP[9];
    for (int k = 0; k < d; k++) ya[k] = urange(-100, 100), yb[k] = urange(-100, 100), u[k] = urange(-1, 1);
    mpm_tangent_block(d, V, C, ya, yb, K);
    for (int j = 0; j < d; j++)
      for (int l = 0; l < d; l++) dF[j * d + l] = u[j] * yb[l];
    mpm_iso_dpiola(&lin, dF, dP);
    for (int i = 0; i < d; i++) {
      double ref = 0, got = 0;
      for (int k = 0; k < d; k++) ref += V * dP[i * d + k] * ya[k];
      for (int j = 0; j < d; j++) got += K[i * d + j] * u[j];
      err = fmax(err, fabs(got - ref));
      sc  = fmax(sc, fabs(ref));
    }
  }
  CHECK(err / sc, 0, 1e-12, "assembled %dD: tangent block u = V dP(u yb^T) ya (cone particle, 4 draws)", d);
  double mu, la, mu2, la2, I[9] = {0}, Ke[9];
  mpm_lame(E_SAND, NU_SAND, &mu, &la);
  for (int k = 0; k < d; k++) I[k * d + k] = 1;
  mpm_hencky_trial_piola(d, mu, la, I, P, &lin);
  mpm_iso_moduli(&lin, &mu2, &la2);
  CHECK(fabs(mu2 - mu) / mu + fabs(la2 - la) / mu, 0, 1e-12, "assembled %dD: moduli of the Hencky linearization at F = I = (mu, lambda)", d);
  mpm_iso_tangent(&lin, C);
  mpm_tangent_block(d, V, C, ya, yb, K);
  mpm_elastic_block(d, V, mu, la, ya, yb, Ke);
  CHECK(maxdiff(d * d, K, Ke) / maxabs(d * d, K), 0, 1e-12, "assembled %dD: elastic block = Hencky tangent block at F = I", d);
  mpm_dp_trial_piola(&p, p.alpha0, p.tr_apex0, F, P, &lin);
  mpm_iso_moduli(&lin, &mu2, &la2);
  CHECK(mu2 >= 0 && la2 + 2 * mu2 / d >= 0, 1, 0, "assembled %dD: cone particle's moduli positive semidefinite (mu %.3g, lambda %.3g)", d, mu2, la2);
}

/* ------------------------------------------------------------------ */
/* 9. Snow: signed SVD, fixed-corotated stress, clamped plasticity      */
/* ------------------------------------------------------------------ */
static double svd_error(int d, const double *F, double *s_out, double *orth, double *detuv)
{
  double U[9], s[3], V[9], R[9];
  mpm_svd_signed(d, F, U, s, V);
  rot_diag_rot(d, U, s, V, R);
  *orth = 0;
  for (int a = 0; a < d; a++)
    for (int b = 0; b < d; b++) {
      double uu = 0, vv = 0;
      for (int k = 0; k < d; k++) uu += U[k * d + a] * U[k * d + b], vv += V[k * d + a] * V[k * d + b];
      *orth = fmax(*orth, fmax(fabs(uu - (a == b)), fabs(vv - (a == b))));
    }
  *detuv = fmax(fabs(mpm_det(d, U) - 1), fabs(mpm_det(d, V) - 1));
  if (s_out) memcpy(s_out, s, sizeof(double) * (size_t)d);
  return maxdiff(d * d, R, F) / fmax(maxabs(d * d, F), 1e-300);
}

static void test_svd_signed(int d)
{
  /* name, singular values (the last may be negative: inverted) */
  const struct {
    const char *nm;
    double      sv[3];
  } cases[] = {
    {"distinct",           {1.3, 0.9, 0.7}       },
    {"repeated",           {1.01, 1.01, 0.98}    },
    {"all equal",          {1.02, 1.02, 1.02}    },
    {"inverted",           {1.1, 0.9, -0.8}      },
    {"inverted, repeated", {0.95, 0.95, -0.95}   },
    {"near singular",      {1.2, 0.8, 1e-13}     },
    {"singular",           {1.2, 0.8, 0.0}       },
    {"rank one",           {1.5, 0.0, 0.0}       },
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    double err = 0, orth = 0, detuv = 0, serr = 0, sgn = 0;
    for (int r = 0; r < 20; r++) {
      double R1[9], R2[9], F[9], sv[3], s[3], o, du;
      for (int k = 0; k < d; k++) sv[k] = cases[c].sv[k < d - 1 ? k : 2];
      if (d == 2 && c == 7) sv[0] = 1.5, sv[1] = 0.0;
      random_rotation(d, R1);
      random_rotation(d, R2);
      rot_diag_rot(d, R1, sv, R2, F);
      err   = fmax(err, svd_error(d, F, s, &o, &du));
      orth  = fmax(orth, o);
      detuv = fmax(detuv, du);
      /* the singular values, the smallest signed like det F */
      double a[3], b[3];
      for (int k = 0; k < d; k++) a[k] = fabs(s[k]), b[k] = fabs(sv[k]);
      qsort(a, (size_t)d, sizeof(double), cmp_double);
      qsort(b, (size_t)d, sizeof(double), cmp_double);
      serr = fmax(serr, maxdiff(d, a, b));
      double ps = 1, pv = 1;
      for (int k = 0; k < d; k++) ps *= s[k], pv *= sv[k];
      if (pv != 0 && (ps > 0) != (pv > 0)) sgn += 1;
    }
    CHECK(err, 0, 1e-13, "%dD signed SVD, %s: max |U S V^T - F| / |F|", d, cases[c].nm);
    CHECK(orth, 0, 1e-13, "%dD signed SVD, %s: U, V orthonormal", d, cases[c].nm);
    CHECK(detuv, 0, 1e-13, "%dD signed SVD, %s: det U = det V = 1", d, cases[c].nm);
    CHECK(serr, 0, 1e-12, "%dD signed SVD, %s: |singular values|", d, cases[c].nm);
    CHECK(sgn, 0, 0, "%dD signed SVD, %s: sign of prod s = sign of det F (misses)", d, cases[c].nm);
  }
  double Z[9] = {0}, o, du;
  CHECK(svd_error(d, Z, NULL, &o, &du) + o + du, 0, 1e-14, "%dD signed SVD of the zero matrix: rotations, S = 0", d);
}

/* The fixed-corotated P against central differences of psi where F is
 * inverted (det < 0): the model is defined there (Stomakhin et al. 2012). */
static void test_fcr_inverted(int d)
{
  const double mu = 1.3, lambda = 2.1, h = 1e-6;
  double       emax = 0;
  for (int r = 0; r < 30; r++) {
    double R1[9], R2[9], F[9], P[9], Pfd[9];
    const double sv[3] = {urange(0.8, 1.2), urange(0.5, 0.75), -urange(0.3, 0.45)};
    double       s2[3] = {sv[0], sv[1], sv[2]};
    if (d == 2) s2[1] = sv[2];
    random_rotation(d, R1);
    random_rotation(d, R2);
    rot_diag_rot(d, R1, s2, R2, F);
    mpm_fcr_piola(d, mu, lambda, F, P);
    fd_piola(d, mu, lambda, mpm_fcr_energy, F, h, Pfd);
    emax = fmax(emax, maxdiff(d * d, P, Pfd) / maxabs(d * d, P));
  }
  CHECK(emax, 0, 1e-7, "%dD fixed corotated, inverted F: max |P - dpsi/dF| / |P|", d);
}

/* The fixed-corotated stress differential against central differences of
 * P (relative 1e-6) at F near identity, with repeated singular values and
 * inverted, and the symmetry of the Hessian (the semi-implicit system). */
static void test_fcr_dpiola(int d)
{
  const double mu = 1.3, lambda = 2.1, h = 1e-6;
  double       efd = 0, esym = 0;
  for (int r = 0; r < 60; r++) {
    double F[9], dF[9], dG[9], dP[9], dQ[9], Pp[9], Pm[9], Fp[9], Fm[9], fd[9];
    double R1[9], R2[9], sv[3] = {urange(0.9, 1.1), urange(0.9, 1.1), urange(0.9, 1.1)};
    if (r % 3 == 1) sv[1] = sv[0];                  /* repeated */
    if (r % 3 == 2) sv[d - 1] = -urange(0.3, 0.5); /* inverted */
    random_rotation(d, R1);
    random_rotation(d, R2);
    rot_diag_rot(d, R1, sv, R2, F);
    for (int a = 0; a < d * d; a++) dF[a] = urange(-1, 1), dG[a] = urange(-1, 1);
    mpm_fcr_dpiola(d, mu, lambda, F, dF, dP);
    for (int a = 0; a < d * d; a++) Fp[a] = F[a] + h * dF[a], Fm[a] = F[a] - h * dF[a];
    mpm_fcr_piola(d, mu, lambda, Fp, Pp);
    mpm_fcr_piola(d, mu, lambda, Fm, Pm);
    for (int a = 0; a < d * d; a++) fd[a] = (Pp[a] - Pm[a]) / (2 * h);
    efd = fmax(efd, maxdiff(d * d, dP, fd) / maxabs(d * d, dP));
    mpm_fcr_dpiola(d, mu, lambda, F, dG, dQ);
    double g1 = 0, g2 = 0;
    for (int a = 0; a < d * d; a++) g1 += dG[a] * dP[a], g2 += dF[a] * dQ[a];
    esym = fmax(esym, fabs(g1 - g2) / (fabs(g1) + fabs(g2)));
  }
  CHECK(efd, 0, 1e-6, "%dD fixed corotated: dP against central differences of P (60 F, repeated, inverted)", d);
  CHECK(esym, 0, 1e-13, "%dD fixed corotated: dG : dP(dF) = dF : dP(dG) (symmetric Hessian)", d);
}

/* The isotropic linearization of the fixed-corotated stress (what the
 * implicit integrators apply) against the closed-form Hessian action, at
 * distinct and repeated singular values, and its symmetry. */
static void test_fcr_trial(int d)
{
  const double mu = 1.3, lambda = 2.1;
  double       err = 0;
  for (int r = 0; r < 60; r++) {
    double F[9], dF[9], P[9], Pref[9], dP[9], dPref[9], R1[9], R2[9], sv[3] = {urange(0.9, 1.1), urange(0.9, 1.1), urange(0.9, 1.1)};
    MPMIsoLinearization lin;
    if (r % 3 == 1) sv[1] = sv[0];
    if (r % 3 == 2) sv[0] = sv[1] = sv[2] = 0.97; /* all equal: the clamped state at rest */
    random_rotation(d, R1);
    random_rotation(d, R2);
    rot_diag_rot(d, R1, sv, R2, F);
    for (int a = 0; a < d * d; a++) dF[a] = urange(-1, 1);
    mpm_fcr_trial_piola(d, mu, lambda, F, P, &lin);
    mpm_fcr_piola(d, mu, lambda, F, Pref);
    mpm_iso_dpiola(&lin, dF, dP);
    mpm_fcr_dpiola(d, mu, lambda, F, dF, dPref);
    err = fmax(err, fmax(maxdiff(d * d, P, Pref) / maxabs(d * d, Pref), maxdiff(d * d, dP, dPref) / maxabs(d * d, dPref)));
  }
  CHECK(err, 0, 1e-12, "%dD fixed corotated: isotropic linearization = closed-form P and dP (60 F, repeated)", d);
}

/* mpm_fcr_trial_piola_n (lanes in 3D) against the scalar one, particle by
 * particle: P and the action of the linearization dP on a random dF, and
 * the semi-implicit map built from it, at distinct, repeated and all-equal
 * singular values, crushed (0.1, the scalar fallback) and inverted points;
 * n = 37 leaves a partly filled last block of lanes. */
static void test_fcr_trial_n(int d)
{
  enum { N = 37 };
  double               F[N * 9], P[N * 9], mu[N], la[N], err = 0, serr = 0;
  MPMIsoLinearization *lin = malloc(sizeof(*lin) * N);
  for (int q = 0; q < N; q++) {
    double R1[9], R2[9], sv[3] = {urange(0.9, 1.1), urange(0.9, 1.1), urange(0.9, 1.1)};
    if (q % 5 == 1) sv[1] = sv[0];
    if (q % 5 == 2) sv[0] = sv[1] = sv[2] = 0.975;
    if (q % 5 == 3 && q < 20) sv[0] = 0.1;
    if (q == 4) sv[d - 1] = -0.95;
    random_rotation(d, R1);
    random_rotation(d, R2);
    rot_diag_rot(d, R1, sv, R2, F + q * d * d);
    mu[q] = urange(1, 2);
    la[q] = urange(1, 3);
  }
  mpm_fcr_trial_piola_n(d, N, mu, la, F, P, lin);
  for (int q = 0; q < N; q++) {
    const int           nb = d * d, ns = nb * (nb + 1) / 2;
    double              Pref[9], dF[9], dP[9], dPref[9], S[45], Sref[45];
    MPMIsoLinearization ref;
    for (int a = 0; a < nb; a++) dF[a] = urange(-1, 1);
    mpm_fcr_trial_piola(d, mu[q], la[q], F + q * nb, Pref, &ref);
    mpm_iso_dpiola(&lin[q], dF, dP);
    mpm_iso_dpiola(&ref, dF, dPref);
    err = fmax(err, fmax(maxdiff(nb, P + q * nb, Pref) / maxabs(nb, Pref), maxdiff(nb, dP, dPref) / maxabs(nb, dPref)));
    mpm_iso_definite(&lin[q]);
    mpm_iso_definite(&ref);
    mpm_iso_sym_map(&lin[q], 1e-3, -2.0, S);
    mpm_iso_sym_map(&ref, 1e-3, -2.0, Sref);
    serr = fmax(serr, maxdiff(ns, S, Sref) / maxabs(ns, Sref));
  }
  CHECK(err, 0, 1e-12, "%dD fixed corotated, %d points at once (lanes in 3D) = one by one: P and dP (distinct, repeated, equal, crushed, inverted)", d, N);
  CHECK(serr, 0, 1e-12, "%dD fixed corotated, %d points at once: the semi-implicit symmetric maps (definite) = one by one", d, N);
  free(lin);
}

/* One material point: the seed's parameters (Table 2), uniaxial compression
 * in 1 % steps from rest; after each step the clamped F_E, J_P = det F / det
 * F_E and the hardened stress. */
static void test_snow(int d)
{
  double         mu0, lambda0;
  mpm_lame(1.4e5, 0.2, &mu0, &lambda0);
  const MPMSnowParams p = {d, mu0, lambda0, 2.5e-2, 7.5e-3, 10.0};
  double              Fe[9], Jp = 1.0, Ftot = 1.0, err_law = 0, err_fe = 0, err_j = 0;
  int                 plastic_steps = 0;
  identity(d, Fe);
  for (int step = 0; step < 40; step++) {
    double tau[9], ref[9], mu, lambda;
    Fe[0] *= 0.99; /* the trial: (I + dt grad v) F_E with grad v = diag(-0.01/dt, 0, ...) */
    Ftot *= 0.99;
    plastic_steps += mpm_snow_update(&p, Fe, &Jp, tau) > 0;
    err_j   = fmax(err_j, fabs(Jp * mpm_det(d, Fe) - Ftot) / Ftot);
    err_fe  = fmax(err_fe, fabs(Fe[0] - fmax(pow(0.99, step + 1), 1.0 - p.theta_c)));
    mu      = mu0 * exp(p.xi * (1.0 - Jp));
    lambda  = lambda0 * exp(p.xi * (1.0 - Jp));
    mpm_fcr_stress(d, mu, lambda, Fe, ref);
    err_law = fmax(err_law, maxdiff(d * d, tau, ref) / maxabs(d * d, ref));
  }
  CHECK(err_fe, 0, 1e-15, "%dD snow, uniaxial compression: F_E = max(0.99^n, 1 - theta_c)", d);
  CHECK(err_j, 0, 1e-14, "%dD snow: J_P det F_E = det F (F = F_E F_P kept)", d);
  CHECK(err_law, 0, 1e-14, "%dD snow: stress with mu = mu0 exp(xi (1 - J_P)) (S2)", d);
  CHECK(plastic_steps, 38, 0, "%dD snow: plastic from the 3rd 1 %% step (0.99^3 < 0.975)", d);
  /* random trials: the clamped singular values stay in bounds and F is kept */
  double out = 0, keep = 0, err_tau = 0;
  for (int r = 0; r < 200; r++) {
    double F[9], s[3], U[9], V[9], tau[9], ref[9], mu, lambda, J0 = urange(0.8, 1.2), J1 = J0;
    do {
      for (int a = 0; a < d * d; a++) F[a] = (a % (d + 1) == 0 ? 1.0 : 0.0) + urange(-0.08, 0.08);
    } while (mpm_det(d, F) < 0.5);
    const double det0 = mpm_det(d, F);
    mpm_snow_update(&p, F, &J1, tau);
    mpm_svd_signed(d, F, U, s, V);
    for (int k = 0; k < d; k++) out = fmax(out, fmax(1.0 - p.theta_c - s[k], s[k] - 1.0 - p.theta_s));
    keep = fmax(keep, fabs(J1 * mpm_det(d, F) - J0 * det0) / (J0 * det0));
    mpm_snow_lame(&p, J1, &mu, &lambda);
    mpm_fcr_stress(d, mu, lambda, F, ref);
    err_tau = fmax(err_tau, maxdiff(d * d, tau, ref) / maxabs(d * d, ref));
  }
  CHECK(err_tau, 0, 1e-12, "%dD snow, 200 random trials: tau from the update's SVD = fixed-corotated stress of the clamped F_E", d);
  CHECK(fmax(out, 0), 0, 1e-14, "%dD snow, 200 random trials: singular values within [1 - theta_c, 1 + theta_s]", d);
  CHECK(keep, 0, 1e-13, "%dD snow, 200 random trials: J_P det F_E unchanged by the clamp", d);
  /* the batch update (3D in SIMD lanes) against the scalar one: 37
   * particles (two full lanes and a partial one), elastic, clamped in
   * compression and stretch, hardened, and some inverted or crushed ones
   * that the lanes hand to the scalar update */
  enum { N = 37 };
  double  F1[N * 9], F2[N * 9], J1[N], J2[N], t1[N * 9], t2[N * 9], eF = 0, eJ = 0, et = 0;
  uint8_t c2[N];
  int     same_case = 1;
  for (int i = 0; i < N; i++) {
    const double amp = i % 3 == 0 ? 0.005 : 0.08;
    for (int a = 0; a < d * d; a++) F1[d * d * i + a] = (a % (d + 1) == 0 ? 1.0 : 0.0) + urange(-amp, amp);
    if (i % 7 == 3) F1[d * d * i] = -0.5; /* inverted */
    if (i % 11 == 5) F1[d * d * i + d + 1] = 0.1; /* crushed */
    J1[i] = urange(0.4, 1.1);
  }
  memcpy(F2, F1, sizeof F1);
  memcpy(J2, J1, sizeof J1);
  mpm_snow_update_n(&p, N, F2, J2, t2, c2);
  for (int i = 0; i < N; i++) {
    const int nc = mpm_snow_update(&p, F1 + d * d * i, J1 + i, t1 + d * d * i);
    same_case &= c2[i] == (nc ? MPM_CASE_CONE : MPM_CASE_ELASTIC);
    eF = fmax(eF, maxdiff(d * d, F1 + d * d * i, F2 + d * d * i));
    eJ = fmax(eJ, fabs(J1[i] - J2[i]) / J1[i]);
    et = fmax(et, maxdiff(d * d, t1 + d * d * i, t2 + d * d * i) / maxabs(d * d, t1 + d * d * i));
  }
  CHECK(same_case, 1, 0, "%dD snow, batch update of 37: clamped where the scalar update clamps", d);
  CHECK(eF, 0, 1e-14, "%dD snow, batch update of 37: F_E as the scalar update", d);
  CHECK(eJ, 0, 1e-14, "%dD snow, batch update of 37: J_P as the scalar update (relative)", d);
  CHECK(et, 0, 1e-12, "%dD snow, batch update of 37: tau as the scalar update (relative)", d);
}

/* Water (Tampubolon et al. 2017, s. 3.2, 4.3.1): the pressure law, its
 * energy (dpsi/dJ = -p by central differences, also across the tension
 * cutoff), tau = -J p I, and the J update: J <- (1 + dt div v) J from the
 * trial F_E = I + dt grad v, which a rotation (div v = 0) leaves unchanged
 * (det(I + dt grad v) would grow by dt^2 w^2 per step), F_E reset to I. */
static void test_water(int d)
{
  MPMWaterParams p = {d, 1e5, 7.0, INFINITY, 1.0};
  double         err_p = 0, err_e = 0;
  for (int cut = 0; cut < 2; cut++) {
    p.max_tension = cut ? 2e4 : INFINITY;
    for (double J = 0.95; J <= 1.2; J += 0.0123) {
      const double h = 1e-6, dpsi = (mpm_water_energy(&p, J + h) - mpm_water_energy(&p, J - h)) / (2 * h);
      const double law = fmax(p.k * (pow(J, -p.gamma) - 1.0), -p.max_tension);
      err_p            = fmax(err_p, fabs(mpm_water_pressure(&p, J) - law) / p.k);
      err_e            = fmax(err_e, fabs(dpsi + mpm_water_pressure(&p, J)) / p.k);
    }
  }
  CHECK(err_p, 0, 1e-15, "%dD water: p = max(k (J^-gamma - 1), -max_tension)", d);
  CHECK(err_e, 0, 1e-7, "%dD water: dpsi/dJ = -p (central differences, h 1e-6; with and without the cutoff)", d);
  CHECK(mpm_water_energy(&p, 1.0), 0, 0, "%dD water: psi(1) = 0", d);
  p.max_tension = INFINITY;
  /* a rotation at w dt = 0.01 for 100 steps, then a compression */
  double Fe[9], tau[9], J = 1.0, Jdet = 1.0;
  for (int step = 0; step < 100; step++) {
    identity(d, Fe);
    Fe[1] = -0.01, Fe[d] = 0.01; /* I + dt [[0, -w], [w, 0]] in the x-y plane */
    Jdet *= mpm_det(d, Fe);
    mpm_water_update(&p, 1.0, Fe, &J, tau);
  }
  CHECK(J, 1.0, 0, "%dD water: 100 steps of rotation keep J = 1 exactly (det F would give %.6f)", d, Jdet);
  identity(d, Fe);
  Fe[0] = 0.99, Fe[1] = 0.3; /* div v dt = -0.01, with shear */
  mpm_water_update(&p, 1.0, Fe, &J, tau);
  double off = 0;
  for (int i = 0; i < d * d; i++) off = fmax(off, fabs(Fe[i] - (i % (d + 1) == 0)));
  CHECK(J, 0.99, 1e-15, "%dD water: J <- (1 + dt div v) J, shear ignored", d);
  CHECK(off, 0, 0, "%dD water: F_E reset to the identity", d);
  CHECK(tau[0], -0.99 * 1e5 * (pow(0.99, -7.0) - 1.0), 1e-9, "%dD water: tau = -J p I", d);
  CHECK(tau[1], 0, 0, "%dD water: no shear stress", d);
}


/* ------------------------------------------------------------------------ */
/* 11. The nonsmooth rheology's per-node Coulomb problem (dcfp.c)            */
/* ------------------------------------------------------------------------ */
static double tnorm(int n, const double *x)
{
  double s = 0;
  for (int i = 1; i < n; i++) s += x[i] * x[i];
  return sqrt(s);
}

/* chi is orthonormal for T : T / 2, Tr chi(r) = sqrt(2 d) ... and inverts */
static void test_chi(int d)
{
  const int n = mpm_sym_size(d);
  double    worst_dot = 0, worst_tr = 0, worst_dev = 0, worst_inv = 0;
  for (int k = 0; k < 200; k++) {
    double r[6], s[6], T[9], S[9], back[6], dot = 0, dd = 0, tr = 0, ndev, trT;
    for (int i = 0; i < n; i++) r[i] = urange(-1, 1), s[i] = urange(-1, 1), dot += r[i] * s[i];
    mpm_chi(d, r, T);
    mpm_chi(d, s, S);
    for (int i = 0; i < d * d; i++) dd += 0.5 * T[i] * S[i];
    dev_tr(d, T, &ndev, &trT);
    for (int i = 0; i < d; i++) tr += T[i * d + i];
    mpm_chi_inverse(d, T, back);
    worst_dot = fmax(worst_dot, fabs(dd - dot));
    worst_tr  = fmax(worst_tr, fabs(tr - (d == 3 ? sqrt(6.0) : 2.0) * r[0]));
    worst_dev = fmax(worst_dev, fabs(ndev / sqrt(2.0) - tnorm(n, r)));
    worst_inv = fmax(worst_inv, maxdiff(n, r, back));
    (void)trT;
  }
  CHECK(worst_dot, 0, 1e-14, "%dD chi: r . s = chi(r) : chi(s) / 2 (200 pairs)", d);
  CHECK(worst_tr, 0, 1e-14, "%dD chi: Tr chi(r) = %s r_N", d, d == 3 ? "sqrt(6)" : "2");
  CHECK(worst_dev, 0, 1e-14, "%dD chi: |Dev chi(r)|_F / sqrt(2) = |r_T|", d);
  CHECK(worst_inv, 0, 1e-14, "%dD chi^-1(chi(r)) = r", d);
}

/* The cone projection APGD steps with: p in K, idempotent, and the Moreau
 * decomposition x = p + q, q in the polar cone, p . q = 0, on random points
 * inside, outside and in the polar cone. */
static void test_dcfp_project(int d)
{
  const int n = mpm_sym_size(d);
  double    w_in = 0, w_idem = 0, w_polar = 0, w_orth = 0;
  for (int k = 0; k < 600; k++) {
    const double mu = urange(0, 1.5);
    double       x[6], p[6], pp[6], q[6], dot = 0;
    for (int i = 0; i < n; i++) x[i] = urange(-1, 1);
    mpm_dcfp_project(n, mu, x, p);
    mpm_dcfp_project(n, mu, p, pp);
    for (int i = 0; i < n; i++) q[i] = x[i] - p[i], dot += p[i] * q[i];
    w_in    = fmax(w_in, tnorm(n, p) - mu * p[0]);             /* |p_T| <= mu p_N */
    w_idem  = fmax(w_idem, maxdiff(n, p, pp));                 /* P(P(x)) = P(x) */
    w_polar = fmax(w_polar, mu * tnorm(n, q) + q[0]);          /* mu |q_T| <= -q_N */
    w_orth  = fmax(w_orth, fabs(dot));
  }
  CHECK(fmax(w_in, 0), 0, 1e-14, "%dD cone projection: in the cone (600 points)", d);
  CHECK(w_idem, 0, 1e-14, "%dD cone projection: idempotent", d);
  CHECK(fmax(w_polar, 0), 0, 1e-14, "%dD cone projection: x - P(x) in the polar cone", d);
  CHECK(w_orth, 0, 1e-14, "%dD cone projection: P(x) . (x - P(x)) = 0", d);
}

/* Random instances u = W r + b: the solution meets every condition of the
 * Coulomb law (cone, u_N >= 0, complementarity, friction opposing u_T) to
 * 1e-10 relative, in all three regimes, also through the fail-safe alone. */
static void test_dcfp_local(int d, int max_newton)
{
  const int n = mpm_sym_size(d), N = max_newton ? 3000 : 300;
  int       count[4] = {0, 0, 0, 0}, worst_its = 0;
  rng_key = (uint64_t)d << 40 | (uint64_t)max_newton << 20; /* its own instances, whatever the tests before it drew (an added test shifted them onto one that needed the fail-safe) */
  double    w_cone = 0, w_un = 0, w_comp = 0, w_fric = 0, w_res = 0, w_stick = 0, w_at = 0, res_at_min = INFINITY;
  for (int k = 0; k < N; k++) {
    double A[36], W[36], b[6], r[6], u[6];
    const double sw = pow(10.0, urange(-3, 3)), sb = pow(10.0, urange(-3, 3)), mu = k % 10 == 0 ? 0.0 : urange(0.0, 1.2);
    int          its;
    for (int i = 0; i < n * n; i++) A[i] = urange(-1, 1);
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++) {
        double s = i == j ? 0.2 : 0.0;
        for (int m = 0; m < n; m++) s += A[i * n + m] * A[j * n + m];
        W[i * n + j] = sw * s;
      }
    for (int i = 0; i < n; i++) b[i] = sb * urange(-1, 1);
    if (k % 3 == 0) b[0] = -fabs(b[0]) - sb; /* compressive: stick or slide */
    if (k % 6 == 0)
      for (int i = 1; i < n; i++) b[i] *= 0.1; /* mostly normal: more sticking */
    const MPMDcfpCase c = mpm_dcfp_local(n, W, b, mu, 1e-13, max_newton, r, &its);
    count[c]++;
    worst_its = its > worst_its ? its : worst_its;
    for (int i = 0; i < n; i++) {
      u[i] = b[i];
      for (int j = 0; j < n; j++) u[i] += W[i * n + j] * r[j];
    }
    const double R = sb / sw, ut = tnorm(n, u); /* r's scale; u's is sb */
    w_cone = fmax(w_cone, (tnorm(n, r) - mu * r[0]) / R);
    w_un   = fmax(w_un, -u[0] / sb);
    w_comp = fmax(w_comp, fabs(r[0] * u[0]) / (R * sb));
    if (ut > 1e-9 * sb) { /* sliding: r_T = -mu r_N u_T / |u_T| */
      double e = 0;
      for (int i = 1; i < n; i++) e = fmax(e, fabs(r[i] + mu * r[0] * u[i] / ut));
      w_fric = fmax(w_fric, e / R);
    } else w_stick = fmax(w_stick, (tnorm(n, r) - mu * r[0]) / R); /* sticking: inside the cone */
    w_res = fmax(w_res, mpm_dcfp_residual(n, W, b, mu, r) / R);
    { /* away from the solution, the residual at u = W r' + b (APGD's form) is the one from W and b */
      double r2[6], u2[6], tr = 0;
      for (int i = 0; i < n; i++) r2[i] = r[i] + R * (2 * mpm_uniform(0x7e57a7ULL, (uint64_t)k * 8 + i, 7) - 1); /* not the instances' stream */
      for (int i = 0; i < n; i++) {
        u2[i] = b[i], tr += W[i * (n + 1)];
        for (int j = 0; j < n; j++) u2[i] += W[i * n + j] * r2[j];
      }
      const double e = mpm_dcfp_residual(n, W, b, mu, r2), e_at = mpm_dcfp_residual_at(n, tr, mu, r2, u2);
      w_at       = fmax(w_at, fabs(e_at - e) / e);
      res_at_min = fmin(res_at_min, e / R);
    }
  }
  printf("  %dD, %d instances%s: take-off %d, stick %d, slide %d, fail-safe %d; most iterations %d\n", d, N, max_newton ? "" : " (fail-safe only)", count[0], count[1],
         count[2], count[3], worst_its);
  CHECK(w_cone < 1e-10, 1, 0, "%dD DCFP%s: |r_T| <= mu r_N", d, max_newton ? "" : " fail-safe");
  CHECK(w_un < 1e-10, 1, 0, "%dD DCFP%s: u_N >= 0", d, max_newton ? "" : " fail-safe");
  CHECK(w_comp, 0, 1e-10, "%dD DCFP%s: r_N u_N = 0", d, max_newton ? "" : " fail-safe");
  CHECK(w_fric, 0, 1e-10, "%dD DCFP%s: r_T = -mu r_N u_T / |u_T| where u_T != 0", d, max_newton ? "" : " fail-safe");
  CHECK(w_stick < 1e-10, 1, 0, "%dD DCFP%s: |r_T| <= mu r_N where u_T = 0", d, max_newton ? "" : " fail-safe");
  CHECK(w_res, 0, 1e-10, "%dD DCFP%s: natural-map residual", d, max_newton ? "" : " fail-safe");
  CHECK(w_at, 0, 1e-12, "%dD DCFP%s: residual at u = W r + b the same as from W and b (relative, smallest residual %.2e)", d, max_newton ? "" : " fail-safe", res_at_min);
  if (max_newton) {
    CHECK(count[0] > N / 20 && count[1] > N / 20 && count[2] > N / 20, 1, 0, "%dD DCFP: every regime sampled (> 5 %% each)", d);
    CHECK(count[3], 0, 0, "%dD DCFP: Newton solves every sliding instance (no fail-safe)", d);
  }
}


/* ------------------------------------------------------------------------ */
/* 12. Anisotropic grains (D s. 6.2, dcfp.c)                                 */
/* ------------------------------------------------------------------------ */
/* lambda~ = Tr(lambda)/d I + Dev(N Dev(lambda) N) by matrices, N = M^-1 */
static void aniso_direct(int d, const double *M, const double *lam, double *out)
{
  double N[9], T[9], S[9], tr = 0, trs = 0;
  mpm_inverse(d, M, N);
  mpm_chi(d, lam, T);
  for (int a = 0; a < d; a++) tr += T[a * (d + 1)];
  for (int a = 0; a < d; a++) T[a * (d + 1)] -= tr / d;
  for (int a = 0; a < d; a++)
    for (int b = 0; b < d; b++) {
      double t = 0;
      for (int k = 0; k < d; k++)
        for (int l = 0; l < d; l++) t += N[a * d + k] * T[k * d + l] * N[l * d + b];
      S[a * d + b] = t;
    }
  for (int a = 0; a < d; a++) trs += S[a * (d + 1)];
  for (int a = 0; a < d; a++) S[a * (d + 1)] += (tr - trs) / d;
  mpm_chi_inverse(d, S, out);
}

/* A random normal distribution's moment: sum of 3 random n n^T, trace 1 */
static void random_nu2(int d, double *nu2)
{
  for (int i = 0; i < d * d; i++) nu2[i] = 0;
  double w = 0;
  for (int k = 0; k < 3; k++) {
    double n[3] = {urange(-1, 1), urange(-1, 1), d == 3 ? urange(-1, 1) : 0}, nn = 0;
    for (int a = 0; a < d; a++) nn += n[a] * n[a];
    for (int a = 0; a < d; a++)
      for (int b = 0; b < d; b++) nu2[a * d + b] += n[a] * n[b] / nn;
    w += 1;
  }
  for (int i = 0; i < d * d; i++) nu2[i] /= w;
}

static void nu2_to_M(int d, double alpha, const double *nu2, double *M)
{
  for (int a = 0; a < d; a++)
    for (int b = 0; b < d; b++) M[a * d + b] = (a == b ? 1.0 - alpha : 0.0) + d * alpha * nu2[a * d + b];
}

static void test_aniso_map(int d)
{
  const int n = mpm_sym_size(d);
  double    Nm[36], Ni[36], M[9], nu2[9], worst_id = 0, worst_sym = 0, worst_inv = 0, worst_direct = 0, worst_trace = 0;
  for (int a = 0; a < d; a++) /* isotropic normals: the identity, any alpha */
    for (int b = 0; b < d; b++) nu2[a * d + b] = a == b ? 1.0 / d : 0.0;
  nu2_to_M(d, 0.6, nu2, M);
  CHECK(mpm_aniso_map(d, M, Nm, Ni), 1, 0, "%dD anisotropy: map built", d);
  for (int i = 0; i < n * n; i++) worst_id = fmax(worst_id, fmax(fabs(Nm[i] - (i % (n + 1) == 0)), fabs(Ni[i] - (i % (n + 1) == 0))));
  CHECK(worst_id, 0, 1e-14, "%dD anisotropy: isotropic normals (nu2 = I/d, alpha 0.6) leave the law unchanged (N = I)", d);
  for (int k = 0; k < 200; k++) {
    double lam[6], a[6], b[6], c[6];
    random_nu2(d, nu2);
    nu2_to_M(d, urange(0, 0.9), nu2, M);
    mpm_aniso_map(d, M, Nm, Ni);
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++) {
        double t = 0;
        for (int l = 0; l < n; l++) t += Nm[i * n + l] * Ni[l * n + j];
        worst_inv = fmax(worst_inv, fabs(t - (i == j)));
        worst_sym = fmax(worst_sym, fabs(Nm[i * n + j] - Nm[j * n + i]));
      }
    for (int i = 1; i < n; i++) worst_trace = fmax(worst_trace, fmax(fabs(Nm[i]), fabs(Nm[i * n])));
    for (int i = 0; i < n; i++) lam[i] = urange(-1, 1);
    aniso_direct(d, M, lam, a);
    for (int i = 0; i < n; i++) {
      b[i] = 0;
      for (int j = 0; j < n; j++) b[i] += Nm[i * n + j] * lam[j];
    }
    worst_direct = fmax(worst_direct, maxdiff(n, a, b));
    (void)c;
  }
  CHECK(worst_sym, 0, 1e-14, "%dD anisotropy: the map is symmetric in the chi basis (200 random nu2, alpha)", d);
  CHECK(worst_trace, 0, 0, "%dD anisotropy: the trace part is untouched (block diagonal)", d);
  CHECK(worst_inv, 0, 1e-12, "%dD anisotropy: the inverse", d);
  CHECK(worst_direct, 0, 1e-13, "%dD anisotropy: the matrix applies Tr/d I + Dev(N Dev N)", d);
  { /* aligned normals e_0: the cone admits shears scaled by 1/(N_a N_b) */
    const double alpha = 0.4;
    double       T[9] = {0}, r[6], out[6];
    for (int i = 0; i < d * d; i++) nu2[i] = i == 0 ? 1.0 : 0.0;
    nu2_to_M(d, alpha, nu2, M);
    mpm_aniso_map(d, M, Nm, Ni);
    T[1] = T[d] = 1; /* normal-tangent shear e0 e1 */
    mpm_chi_inverse(d, T, r);
    for (int i = 0; i < n; i++) {
      out[i] = 0;
      for (int j = 0; j < n; j++) out[i] += Nm[i * n + j] * r[j];
    }
    CHECK(tnorm(n, out) / tnorm(n, r), 1.0 / ((1 + (d - 1) * alpha) * (1 - alpha)), 1e-14, "%dD anisotropy: aligned normals, normal-tangent shear: friction x (1 + %d alpha)(1 - alpha)", d, d - 1);
    if (d == 3) {
      for (int i = 0; i < 9; i++) T[i] = 0;
      T[5] = T[7] = 1; /* tangent-tangent shear e1 e2 */
      mpm_chi_inverse(d, T, r);
      for (int i = 0; i < n; i++) {
        out[i] = 0;
        for (int j = 0; j < n; j++) out[i] += Nm[i * n + j] * r[j];
      }
      CHECK(tnorm(n, out) / tnorm(n, r), 1.0 / ((1 - alpha) * (1 - alpha)), 1e-14, "3D anisotropy: aligned normals, tangent-tangent shear: friction x (1 - alpha)^2 (the seed's)");
    }
  }
}

/* The normals' moment: isotropic stays isotropic, a pure rotation turns
 * it, a simple shear aligns the normals with the velocity gradient
 * (flat grains stack parallel to the shear planes) */
static void test_grain_orientation(int d)
{
  double nu2[9], G[9] = {0}, worst_iso = 0, worst_tr = 0, minev = 1;
  for (int k = 0; k < 50; k++) {
    for (int a = 0; a < d; a++)
      for (int b = 0; b < d; b++) nu2[a * d + b] = a == b ? 1.0 / d : 0.0, G[a * d + b] = urange(-1, 1);
    for (int a = 0; a < d; a++)
      for (int b = 0; b < a; b++) G[a * d + b] = -G[b * d + a]; /* skew: a rotation */
    for (int a = 0; a < d; a++) G[a * (d + 1)] = 0;
    mpm_grain_orientation_step(d, urange(0, 1), G, 1e-2, nu2);
    for (int a = 0; a < d; a++)
      for (int b = 0; b < d; b++) worst_iso = fmax(worst_iso, fabs(nu2[a * d + b] - (a == b ? 1.0 / d : 0.0)));
  }
  CHECK(worst_iso, 0, 1e-15, "%dD grain normals: an isotropic distribution stays isotropic under rotation", d);
  { /* a rotation by pi/4 about the last axis turns nu2 = e0 e0 */
    const int    steps = 4000;
    const double th    = M_PI / 4, dt = th / steps;
    for (int i = 0; i < 9; i++) nu2[i] = 0, G[i] = 0;
    nu2[0]    = 1;
    G[1 * d]  = 1; /* du_y/dx = 1, du_x/dy = -1: omega = 1 */
    G[1]      = -1;
    for (int s = 0; s < steps; s++) {
      mpm_grain_orientation_step(d, 0.8, G, dt, nu2);
      double tr = 0;
      for (int a = 0; a < d; a++) tr += nu2[a * (d + 1)];
      worst_tr = fmax(worst_tr, fabs(tr - 1));
    }
    const double c = cos(th), s = sin(th);
    CHECK(fmax(fabs(nu2[0] - c * c), fmax(fabs(nu2[1] - c * s), fabs(nu2[d + 1] - s * s))), 0, 2e-3, "%dD grain normals: a rotation by pi/4 turns e0 e0 to n n^T, n = (cos, sin) (explicit steps of pi/16000)", d);
    CHECK(worst_tr, 0, 1e-14, "%dD grain normals: trace 1 kept", d);
  }
  { /* simple shear u_x = y: the steady orientation of Jeffery's equation
       with the closure, nu2 = diag((1 - ell)/2, (1 + ell)/2, 0) (the normals
       in the plane of the shear, mostly along the velocity gradient), stays */
    const double ell = 0.8;
    for (int i = 0; i < 9; i++) G[i] = 0, nu2[i] = 0;
    G[1] = 1;
    nu2[0] = 0.5 * (1 - ell), nu2[d + 1] = 0.5 * (1 + ell);
    for (int s = 0; s < 1000; s++) mpm_grain_orientation_step(d, ell, G, 1e-3, nu2);
    CHECK(fmax(fabs(nu2[0] - 0.5 * (1 - ell)), fmax(fabs(nu2[1]), fabs(nu2[d + 1] - 0.5 * (1 + ell)))), 0, 1e-12,
          "%dD grain normals: simple shear, ell 0.8: the steady nu2 = diag((1 - ell)/2, (1 + ell)/2%s) stays (strain 1)", d, d == 3 ? ", 0" : "");
  }
  { /* from isotropic normals: orbits about it (a centre, as Jeffery's orbits), normals mostly along y */
    double avg[9] = {0};
    for (int i = 0; i < 9; i++) G[i] = 0;
    for (int a = 0; a < d; a++)
      for (int b = 0; b < d; b++) nu2[a * d + b] = a == b ? 1.0 / d : 0.0;
    G[1] = 1;
    for (int s = 0; s < 40000; s++) {
      double l2[3], U2[9];
      mpm_grain_orientation_step(d, 0.8, G, 1e-3, nu2);
      mpm_sym_eig(d, nu2, l2, U2);
      for (int a = 0; a < d; a++) minev = fmin(minev, l2[a]);
      for (int i = 0; i < d * d; i++) avg[i] += nu2[i] / 40000;
    }
    printf("   %dD simple shear from isotropic normals, ell 0.8, strain 40: mean nu2_xx %.3f, nu2_yy %.3f, nu2_xy %.3f\n", d, avg[0], avg[d + 1], avg[1]);
    CHECK(minev > -1e-14, 1, 0, "%dD grain normals: nu2 stays positive semidefinite (smallest eigenvalue %.1e)", d, minev);
    CHECK(avg[d + 1] > avg[0] + 0.15, 1, 0, "%dD grain normals: under shear the normals turn to the velocity gradient (mean nu2_yy - nu2_xx > 0.15)", d);
  }
}

/* ------------------------------------------------------------------------ */
/* 13. Particle frames, splitting and merging (D s. 5.3, frames.c)           */
/* ------------------------------------------------------------------------ */
/* Mass, momentum and angular momentum about the origin (the APIC spin
 * m D eps : C included: the grid's, section 2) of n particles. */
static void frame_totals(int d, int n, const double *m, const double *x, const double *v, const double *C, double D, double *out)
{
  for (int k = 0; k < 7; k++) out[k] = 0;
  for (int q = 0; q < n; q++) {
    double l[3], s[3];
    out[0] += m[q];
    for (int a = 0; a < d; a++) out[1 + a] += m[q] * v[q * d + a];
    const int nl = cross(d, x + q * d, v + q * d, l);
    apic_spin(d, C + q * d * d, D, s);
    for (int a = 0; a < nl; a++) out[4 + a] += m[q] * (l[a] + s[a]);
  }
}

static void random_frame(int d, double rmin, double rmax, double *F)
{
  double R[9], s[3];
  random_rotation(d, R);
  for (int a = 0; a < d; a++) s[a] = urange(rmin, rmax) * urange(rmin, rmax) / rmax;
  for (int a = 0; a < d; a++) s[a] *= s[a];
  rot_diag_rot(d, R, s, R, F); /* R diag(s) R^T */
}

/* Guards: a merge keeps mass, momentum and the APIC angular momentum to
 * roundoff (the pair's relative motion goes into C's skew part) and its
 * frame is the pair's second moment (two touching balls of radius r: r
 * sqrt(d + 3) along the line, r across); a split keeps all three and
 * halves the longest axis; the frame's step F <- A F A^T stretches and
 * turns as A does. */
static void test_frames(int dim)
{
  const int    d = dim, dd = d * d;
  const double h = 0.1, D = 1.0 / mpm_apic_dinv(MPM_KERNEL_QUADRATIC, h);
  double       em = 0, es = 0, eax = 0, elong = 0, emin = INFINITY;

  for (int t = 0; t < 500; t++) {
    double m[2], x[6], v[6], C[18], F[18], xm[3], vm[3], Cm[9], Fm[9], before[7], after[7], scale = 0, lam[3], U[9];
    for (int k = 0; k < 2; k++) {
      m[k] = urange(0.5, 2.0);
      for (int a = 0; a < d; a++) x[k * d + a] = urange(-1, 1), v[k * d + a] = urange(-1, 1);
      for (int a = 0; a < dd; a++) C[k * dd + a] = urange(-5, 5);
      random_frame(d, 0.005, 0.05, F + k * dd);
      scale += m[k] * (1.0 + 2.0 * maxabs(dd, C + k * dd) * D);
    }
    frame_totals(d, 2, m, x, v, C, D, before);
    mpm_frame_merge(d, D, m[0], x, v, C, F, m[1], x + d, v + d, C + dd, F + dd, xm, vm, Cm, Fm);
    {
      const double M = m[0] + m[1];
      frame_totals(d, 1, &M, xm, vm, Cm, D, after);
    }
    for (int k = 0; k < 7; k++) em = fmax(em, fabs(after[k] - before[k]) / scale);
    mpm_sym_eig(d, Fm, lam, U);
    for (int a = 0; a < d; a++) emin = fmin(emin, lam[a]);
    /* split particle 0 */
    {
      double dx[3], Fc[9], ms[2] = {0.5 * m[0], 0.5 * m[0]}, xs[6], vs[6], Cs[18], Fd[3];
      const double a = mpm_frame_split(d, F, dx, Fc);
      for (int b = 0; b < d; b++) xs[b] = x[b] - dx[b], xs[d + b] = x[b] + dx[b], vs[b] = vs[d + b] = v[b];
      for (int b = 0; b < dd; b++) Cs[b] = Cs[dd + b] = C[b];
      frame_totals(d, 1, m, x, v, C, D, before);
      frame_totals(d, 2, ms, xs, vs, Cs, D, after);
      for (int k = 0; k < 7; k++) es = fmax(es, fabs(after[k] - before[k]) / scale);
      mpm_matvec(d, Fc, dx, Fd); /* the split axis: (a/2)^2 now */
      for (int b = 0; b < d; b++) eax = fmax(eax, fabs(Fd[b] - 0.25 * a * a * dx[b]) / (a * a * a));
      elong = fmax(elong, fabs(a - mpm_frame_longest(d, F)));
    }
  }
  CHECK(em, 0, 1e-13, "frames %dD merge: max |change| of mass, momentum, angular momentum (APIC spin) / scale (500 random pairs)", d);
  CHECK(emin > 0, 1, 0, "frames %dD merged frames positive definite (smallest eigenvalue %.3g)", d, emin);
  CHECK(es, 0, 1e-14, "frames %dD split: max |change| of mass, momentum, angular momentum / scale", d);
  CHECK(eax, 0, 1e-13, "frames %dD split halves the longest semi-axis (Fc e = (a/2)^2 e)", d);
  CHECK(elong, 0, 0, "frames %dD split cuts along the longest semi-axis", d);
  {
    const double r = 0.02, zero[9] = {0};
    double       F[9], x[6] = {0}, v[6] = {0}, xm[3], vm[3], Cm[9], Fm[9], Fm2[9];
    mpm_frame_initial(d, pow(2 * r, d), F);
    CHECK(F[0], r * r, 1e-18, "frames %dD initial frame: a ball of half the spacing", d);
    CHECK(mpm_frame_ratio(d, F), 1, 1e-14, "frames %dD initial frame round", d);
    x[0] = -r, x[d] = r;
    mpm_frame_merge(d, D, 1.0, x, v, zero, F, 1.0, x + d, v + d, zero, F, xm, vm, Cm, Fm);
    CHECK(mpm_frame_longest(d, Fm), r * sqrt(d + 3.0), 1e-15, "frames %dD two touching balls merge to r sqrt(d + 3) along their line", d);
    CHECK(mpm_frame_ratio(d, Fm), sqrt(d + 3.0), 1e-13, "frames %dD ... and r across it", d);
    /* the step of the frame: a stretch and a rotation */
    double A[9], R[9];
    identity(d, A);
    A[0] = 2.0, A[d + 1] = 0.5;
    mpm_frame_advect(d, A, F);
    CHECK(mpm_frame_ratio(d, F), 4.0, 1e-13, "frames %dD F <- A F A^T with A = diag(2, 1/2): ratio 4", d);
    memcpy(Fm2, F, sizeof(double) * dd);
    random_rotation(d, R);
    mpm_frame_advect(d, R, F);
    CHECK(mpm_frame_ratio(d, F), 4.0, 1e-12, "frames %dD ... a rotation keeps the axes' lengths", d);
    {
      double Rt[9], RF[9], RFRt[9];
      transpose(d, R, Rt);
      mpm_matmul(d, R, Fm2, RF);
      mpm_matmul(d, RF, Rt, RFRt);
      CHECK(maxdiff(dd, F, RFRt), 0, 1e-18, "frames %dD ... and turns them: R F R^T", d);
    }
  }
}

/* Guards: mu(I) runs from mu_s at rest to mu_2 at I -> infinity, halfway
 * at I = I0; the inertial number of a simple shear gamma_dot is d gamma_dot
 * / sqrt(p / rho), a rotation or a dilation gives 0, no pressure gives
 * infinity (free grains: mu_2). */
static void test_mu_i(int dim)
{
  const double mus = 0.38, mu2 = 0.64, I0 = 0.279, dg = 0.5e-3, rho = 2500, pr = 400, gd = 7.0;
  double       G[9] = {0}, R[9] = {0}, Dl[9] = {0}, Rt[9], GR[9], Gr[9];
  CHECK(mpm_mu_of_i(mus, mu2, I0, 0.0), mus, 0, "mu(I) %dD: mu(0) = mu_s", dim);
  CHECK(mpm_mu_of_i(mus, mu2, I0, I0), 0.5 * (mus + mu2), 1e-15, "mu(I) %dD: mu(I0) halfway", dim);
  CHECK(mpm_mu_of_i(mus, mu2, I0, INFINITY), mu2, 0, "mu(I) %dD: mu(infinity) = mu_2", dim);
  CHECK(mpm_mu_of_i(mus, mu2, I0, 1e12), mu2, 1e-12, "mu(I) %dD: tends to mu_2", dim);
  G[1] = gd; /* du_x/dy: simple shear */
  CHECK(mpm_inertial_number(dim, dg, rho, G, pr), dg * gd / sqrt(pr / rho), 1e-15, "mu(I) %dD: I of a simple shear = d gamma_dot / sqrt(p / rho)", dim);
  /* the same shear turned: I is frame-indifferent */
  random_rotation(dim, R);
  transpose(dim, R, Rt);
  mpm_matmul(dim, R, G, GR);
  mpm_matmul(dim, GR, Rt, Gr);
  CHECK(mpm_inertial_number(dim, dg, rho, Gr, pr), dg * gd / sqrt(pr / rho), 1e-14, "mu(I) %dD: ... in any orientation", dim);
  G[1] = gd, G[dim] = -gd; /* a rotation */
  CHECK(mpm_inertial_number(dim, dg, rho, G, pr), 0, 0, "mu(I) %dD: a rigid rotation has I = 0", dim);
  for (int a = 0; a < dim; a++) Dl[a * (dim + 1)] = 3.0; /* a dilation */
  CHECK(mpm_inertial_number(dim, dg, rho, Dl, pr), 0, 1e-15, "mu(I) %dD: a dilation has I = 0", dim);
  CHECK(isinf(mpm_inertial_number(dim, dg, rho, Gr, 0.0)), 1, 0, "mu(I) %dD: no pressure: I infinite", dim);
}

/* Position-based contact (Macklin et al. 2014): the contact leaves two
 * grains exactly touching with their momentum unchanged; friction holds a
 * contact exactly while the tangential slip is below mu_s d and removes
 * exactly mu_k d of it above; a surface does the same to one grain. */
static double norm_d(int d, const double *a)
{
  double s = 0;
  for (int k = 0; k < d; k++) s += a[k] * a[k];
  return sqrt(s);
}

static void test_pbd(int d)
{
  const double ra = 0.01, rb = 0.015, ma = 2.0, mb = 3.0, wa = 1 / ma, wb = 1 / mb, mus = 0.6, muk = 0.4;
  double       xa[3] = {0.1, 0.2, 0.3}, xb[3] = {0}, x0a[3] = {0}, x0b[3] = {0}, da[3], db[3], n[3] = {0.6, 0.8, 0}, t1[3] = {-0.8, 0.6, 0}; /* 2D reads two of each */
  if (d == 3) { /* a normal off the axes */
    n[0] = 0.48, n[1] = 0.64, n[2] = 0.6;
    t1[0] = -0.8, t1[1] = 0.6, t1[2] = 0;
  }
  const double pen = 0.004;
  for (int a = 0; a < d; a++) xb[a] = xa[a] - (ra + rb - pen) * n[a];
  /* normal approach only: exact separation, momentum kept */
  for (int a = 0; a < d; a++) x0a[a] = xa[a] - 0.002 * n[a], x0b[a] = xb[a];
  double got = mpm_pbd_pair(d, xa, xb, x0a, x0b, ra, rb, wa, wb, mus, muk, da, db);
  CHECK(got, pen, 1e-15, "pbd %dD pair: returns the penetration", d);
  double ya[3], yb[3], sep[3], p = 0;
  for (int a = 0; a < d; a++) ya[a] = xa[a] + da[a], yb[a] = xb[a] + db[a], sep[a] = ya[a] - yb[a];
  CHECK(norm_d(d, sep), ra + rb, 1e-15, "pbd %dD pair: grains exactly touching after the contact", d);
  for (int a = 0; a < d; a++) p = fmax(p, fabs(ma * da[a] + mb * db[a]));
  CHECK(p, 0, 1e-17, "pbd %dD pair: momentum of the correction m_a da + m_b db = 0", d);
  /* static: a slip below mu_s d is removed exactly */
  const double slip_s = 0.5 * mus * pen, slip_k = 3 * mus * pen;
  for (int a = 0; a < d; a++) x0a[a] = xa[a] - slip_s * t1[a], x0b[a] = xb[a];
  mpm_pbd_pair(d, xa, xb, x0a, x0b, ra, rb, wa, wb, mus, muk, da, db);
  double rel = 0;
  for (int a = 0; a < d; a++) rel += ((xa[a] + da[a] - x0a[a]) - (xb[a] + db[a] - x0b[a])) * t1[a];
  CHECK(rel, 0, 2e-16, "pbd %dD pair: static friction (slip %.1f mu_s d) holds exactly", d, 0.5);
  /* kinetic: above mu_s d, the slip shrinks by mu_k d */
  for (int a = 0; a < d; a++) x0a[a] = xa[a] - slip_k * t1[a];
  mpm_pbd_pair(d, xa, xb, x0a, x0b, ra, rb, wa, wb, mus, muk, da, db);
  rel = 0;
  for (int a = 0; a < d; a++) rel += ((xa[a] + da[a] - x0a[a]) - (xb[a] + db[a] - x0b[a])) * t1[a];
  CHECK(rel, slip_k - muk * pen, 2e-16, "pbd %dD pair: kinetic friction removes mu_k d of the slip", d);
  /* the pair evaluated in the other order gives the same corrections */
  double ea[3], eb[3];
  mpm_pbd_pair(d, xb, xa, x0b, x0a, rb, ra, wb, wa, mus, muk, eb, ea);
  CHECK(fmax(maxdiff(d, ea, da), maxdiff(d, eb, db)), 0, 1e-18, "pbd %dD pair: symmetric in the order of the grains", d);
  /* apart: nothing */
  for (int a = 0; a < d; a++) xb[a] = xa[a] - (ra + rb + 1e-9) * n[a];
  got = mpm_pbd_pair(d, xa, xb, x0a, x0b, ra, rb, wa, wb, mus, muk, da, db);
  CHECK(maxabs(d, da) + maxabs(d, db) + (got <= 0 ? 0 : 1), 0, 0, "pbd %dD pair: grains apart are left alone", d);
  /* a wall: out to phi = r, static and kinetic friction against its motion */
  double disp[3], dx[3];
  for (int a = 0; a < d; a++) disp[a] = -0.001 * n[a] + slip_s * t1[a];
  got = mpm_pbd_wall(d, ra - pen, n, disp, ra, mus, muk, dx);
  double dn = 0, dt = 0;
  for (int a = 0; a < d; a++) dn += dx[a] * n[a], dt += (disp[a] + dx[a]) * t1[a];
  CHECK(ra - pen + dn, ra, 1e-15, "pbd %dD wall: the grain ends on the surface (phi = r)", d);
  CHECK(dt, 0, 2e-16, "pbd %dD wall: static friction holds exactly", d);
  for (int a = 0; a < d; a++) disp[a] = slip_k * t1[a];
  mpm_pbd_wall(d, ra - pen, n, disp, ra, mus, muk, dx);
  dt = 0;
  for (int a = 0; a < d; a++) dt += (disp[a] + dx[a]) * t1[a];
  CHECK(dt, slip_k - muk * pen, 2e-16, "pbd %dD wall: kinetic friction removes mu_k d", d);
  got = mpm_pbd_wall(d, ra + 1e-9, n, disp, ra, mus, muk, dx);
  CHECK(maxabs(d, dx) + (got <= 0 ? 0 : 1), 0, 0, "pbd %dD wall: a grain off the surface is left alone", d);
}

/* Accumulated friction (-pbd_friction accumulated): the bound is mu_s times
 * the normal correction the contact took over the substep, so a contact
 * whose overlap an earlier sweep removed still holds; kinetic friction
 * brings the accumulated tangential correction to mu_k ln and no further,
 * however many sweeps see the same slip. */
static void test_pbd_accumulated(int d)
{
  const double ra = 0.01, rb = 0.015, ma = 2.0, mb = 3.0, wa = 1 / ma, wb = 1 / mb, mus = 0.6, muk = 0.4, w = 0.5;
  double       xa[3] = {0.1, 0.2, 0.3}, xb[3] = {0}, x0a[3] = {0}, x0b[3] = {0}, da[3], db[3], n[3] = {0.6, 0.8, 0}, t1[3] = {-0.8, 0.6, 0}; /* 2D reads two of each */
  if (d == 3) n[0] = 0.48, n[1] = 0.64, n[2] = 0.6;
  const double pen = 0.004, ln = 0.003;
  /* touching, no overlap left: the seed's friction is gone, the accumulated one holds */
  for (int a = 0; a < d; a++) xb[a] = xa[a] - (ra + rb) * n[a], x0b[a] = xb[a];
  const double slip_s = 0.5 * mus * ln, slip_k = 3 * mus * ln;
  for (int a = 0; a < d; a++) x0a[a] = xa[a] - slip_s * t1[a];
  double lam[4] = {ln, 0, 0, 0};
  mpm_pbd_pair_acc(d, xa, xb, x0a, x0b, ra, rb, wa, wb, mus, muk, 1.0, lam, da, db);
  double rel = 0, p = 0;
  for (int a = 0; a < d; a++) rel += ((xa[a] + da[a] - x0a[a]) - (xb[a] + db[a] - x0b[a])) * t1[a];
  CHECK(rel, 0, 2e-16, "pbd %dD accumulated: a resolved contact (ln %.0e m) holds a slip of 0.5 mu_s ln exactly", d, ln);
  for (int a = 0; a < d; a++) p = fmax(p, fabs(ma * da[a] + mb * db[a]));
  CHECK(p, 0, 1e-18, "pbd %dD accumulated: momentum of the correction m_a da + m_b db = 0", d);
  mpm_pbd_pair(d, xa, xb, x0a, x0b, ra, rb, wa, wb, mus, muk, da, db);
  CHECK(maxabs(d, da) + maxabs(d, db), 0, 0, "pbd %dD accumulated: (the seed's friction leaves the same contact sliding)", d);
  /* kinetic, over sweeps of weight w: the tangential correction tends to mu_k ln, never beyond */
  for (int a = 0; a < d; a++) x0a[a] = xa[a] - slip_k * t1[a];
  double ya[3], yb[3], lt = 0;
  for (int a = 0; a < d; a++) ya[a] = xa[a], yb[a] = xb[a];
  lam[0] = ln, lam[1] = lam[2] = lam[3] = 0;
  for (int it = 0; it < 60; it++) {
    mpm_pbd_pair_acc(d, ya, yb, x0a, x0b, ra, rb, wa, wb, mus, muk, w, lam, da, db);
    for (int a = 0; a < d; a++) ya[a] += da[a], yb[a] += db[a];
  }
  rel = 0;
  for (int a = 0; a < d; a++) rel += ((ya[a] - x0a[a]) - (yb[a] - x0b[a])) * t1[a], lt -= lam[1 + a] * lam[1 + a];
  lt = -sqrt(-lt);
  /* to 1e-4 ln: the pair's normal turns as it slides (a sweep booking its
   * friction again would be off by mu_k ln) */
  CHECK(rel, slip_k - muk * ln, 1e-4 * ln, "pbd %dD accumulated: 60 kinetic sweeps of weight %.1f remove mu_k ln of the slip, not more", d, w);
  CHECK(lt, -muk * ln, 1e-4 * ln, "pbd %dD accumulated: the booked friction is mu_k ln", d);
  /* an overlapping pair: the push is booked with its weight, and the pair evaluated in either order agrees */
  for (int a = 0; a < d; a++) xb[a] = xa[a] - (ra + rb - pen) * n[a], x0b[a] = xb[a], x0a[a] = xa[a] - slip_s * t1[a];
  double l1[4] = {0, 0, 0, 0}, l2[4] = {0, 0, 0, 0}, ea[3], eb[3];
  mpm_pbd_pair_acc(d, xa, xb, x0a, x0b, ra, rb, wa, wb, mus, muk, w, l1, da, db);
  CHECK(l1[0], w * pen, 1e-17, "pbd %dD accumulated: a sweep books w d of normal correction", d);
  mpm_pbd_pair_acc(d, xb, xa, x0b, x0a, rb, ra, wb, wa, mus, muk, w, l2, eb, ea);
  CHECK(fmax(maxdiff(d, ea, da), maxdiff(d, eb, db)), 0, 1e-18, "pbd %dD accumulated: symmetric in the order of the grains", d);
  /* never touched in the substep, apart: nothing */
  for (int a = 0; a < d; a++) xb[a] = xa[a] - (ra + rb + 1e-9) * n[a];
  l1[0] = l1[1] = l1[2] = l1[3] = 0;
  mpm_pbd_pair_acc(d, xa, xb, x0a, x0b, ra, rb, wa, wb, mus, muk, w, l1, da, db);
  CHECK(maxabs(d, da) + maxabs(d, db) + fabs(l1[0]), 0, 0, "pbd %dD accumulated: grains apart that never touched are left alone", d);
}

int main(void)
{
  printf("%-74s %-20s %-20s %-7s %s\n", "check", "value", "expected", "tol", "result");
  test_bspline();

  section("2. P2G/G2P conservation (mass, momentum, angular momentum, forces)");
  for (int dim = 2; dim <= 3; dim++)
    for (int order = 2; order <= 3; order++) test_transfer_conservation(dim, order);

  section("3. APIC reproduces affine velocity fields exactly");
  for (int dim = 2; dim <= 3; dim++)
    for (int order = 2; order <= 3; order++) {
      test_transfer_affine(dim, order, 1);
      test_transfer_affine(dim, order, 0);
    }

  section("4. Drucker-Prager return mapping");
  for (int dim = 2; dim <= 3; dim++) {
    test_dp_cases(dim);
    test_dp_hardening(dim);
    test_dp_cohesion(dim);
    test_dp_sweep(dim);
  }
  test_dp_mohr_coulomb();
  test_dp_batch();
  test_dp_volume_correction(2);
  test_dp_volume_correction(3);
  test_dp_volume_correction_batch(2);
  test_dp_volume_correction_batch(3);

  section("5. Hyperelastic stress = d psi / d F");
  for (int dim = 2; dim <= 3; dim++) {
    test_energy_stress(dim, "hencky", mpm_hencky_energy, mpm_hencky_stress);
    test_energy_stress(dim, "neohookean", mpm_neohookean_energy, mpm_neohookean_stress);
  }

  section("6. Symmetric eigen-decomposition, det, inverse");
  test_eig(2);
  test_eig(3);

  section("7. Signed distance functions and collision response");
  test_sdf();
  test_sdf_geometry();
  test_collide(2);
  test_collide(3);

  section("8. Implicit linearization: P(Z(Fhat)) and its derivative");
  test_trial_piola(2);
  test_trial_piola(3);
  for (int dim = 2; dim <= 3; dim++)
    for (int order = 2; order <= 3; order++) {
      test_implicit_operators(dim, order);
      test_gradient_divergence(dim, order, dim);
      if (dim == 3) test_gradient_divergence(dim, order, 4);
      test_gradient_divergence_sym(dim, order, dim);
      if (dim == 3) test_gradient_divergence_sym(dim, order, 4);
    }
  for (int dim = 2; dim <= 3; dim++) {
    test_iso_sym_map(dim);
    test_trial_elastic(dim, "hencky", mpm_hencky_trial_piola, mpm_hencky_stress);
    test_trial_elastic(dim, "neohookean", mpm_neohookean_trial_piola, mpm_neohookean_stress);
    test_unilateral(dim);
    test_assembled_blocks(dim);
  }

  section("9. Snow (Stomakhin et al. 2013): signed SVD, fixed corotated, clamped plasticity");
  for (int dim = 2; dim <= 3; dim++) {
    test_svd_signed(dim);
    test_energy_stress(dim, "fixed corotated", mpm_fcr_energy, mpm_fcr_stress);
    test_fcr_inverted(dim);
    test_fcr_dpiola(dim);
    test_fcr_trial(dim);
    test_fcr_trial_n(dim);
    test_trial_elastic(dim, "fixed corotated", mpm_fcr_trial_piola, mpm_fcr_stress);
    test_snow(dim);
  }

  section("10. Water (Tampubolon et al. 2017): pressure law, energy, J update");
  for (int dim = 2; dim <= 3; dim++) test_water(dim);

  section("11. Nonsmooth Drucker-Prager (Daviet and Bertails-Descoubes 2016): chi, the per-node Coulomb problem");
  for (int dim = 2; dim <= 3; dim++) {
    test_chi(dim);
    test_dcfp_project(dim);
    test_dcfp_local(dim, 50);
    test_dcfp_local(dim, 0);
  }

  section("12. Anisotropic grains (Daviet and Bertails-Descoubes 2016 s. 6.2): the friction's change of variables, the normals' moment");
  for (int dim = 2; dim <= 3; dim++) {
    test_aniso_map(dim);
    test_grain_orientation(dim);
  }

  section("13. Particle frames, splitting and merging (Daviet and Bertails-Descoubes 2016 s. 5.3): conservation, the frames' geometry");
  for (int dim = 2; dim <= 3; dim++) test_frames(dim);

  section("14. The mu(I) rheology (Jop et al. 2006; Daviet and Bertails-Descoubes 2016 s. 6.3): the friction law and the inertial number");
  for (int dim = 2; dim <= 3; dim++) test_mu_i(dim);

  section("15. Position-based granular contact (Macklin et al. 2014): contact, static and kinetic friction");
  for (int dim = 2; dim <= 3; dim++) test_pbd(dim);
  for (int dim = 2; dim <= 3; dim++) test_pbd_accumulated(dim);

  printf("\n%d checks, %d failed\n", n_checks, n_failed);
  return n_failed ? 1 : 0;
}
