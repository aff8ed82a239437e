/* The nonsmooth Drucker-Prager rheology as a Coulomb friction law (Daviet
 * and Bertails-Descoubes 2016, section 5.2; D = its equations): per stress
 * node, a symmetric tensor written in an orthonormal basis, r = (r_N, r_T)
 * with r_N the trace part and r_T the deviator (5 components in 3D, 2 in
 * 2D), satisfies the Coulomb-Signorini conditions (D13) against the
 * "velocity" u = (u_N, u_T) of the same basis:
 *
 *   0 <= u_N  _|_  r_N >= 0,   |r_T| <= mu r_N,
 *   r_T = -mu r_N u_T / |u_T|  where u_T != 0.
 *
 * Equivalently (De Saxce): K ∋ r _|_ u + mu |u_T| e_N ∈ K*, K the cone
 * {|r_T| <= mu r_N} and K* its dual {mu |u_T| <= u_N}; or r is a zero of
 * the natural map r - P_K(r - rho (u + mu |u_T| e_N)) for any rho > 0.
 * mpm_dcfp_local solves one node's problem u = W r + b (W the node's
 * block of the Delassus operator, symmetric positive definite) exactly:
 * the take-off and sticking cases in closed form, sliding by semismooth
 * Newton on the natural map with a backtracking line search, and a
 * projected fixed-point iteration as the fail-safe.  Pure pointwise
 * kernels. */
#include <math.h>
#include <string.h>
#include <mpm/kernels.h>

int mpm_sym_size(int dim) { return dim == 3 ? 6 : 3; }

/* chi (D, section 5.2): R^n -> symmetric tensors (row-major d x d),
 * orthonormal for |T|^2 = T : T / 2: in 3D Tr chi(r) = sqrt(6) r_N and
 * |Dev chi(r)| = |r_T|; in 2D the analogue (a, b, c) -> [[a + b, c],
 * [c, a - b]], Tr = 2 a. */
void mpm_chi(int dim, const double *r, double *T)
{
  if (dim == 3) {
    const double s = (sqrt(2.0) * r[0] - r[2]) / sqrt(3.0);
    T[0] = s + r[1], T[1] = r[3], T[2] = r[4];
    T[3] = r[3], T[4] = s - r[1], T[5] = r[5];
    T[6] = r[4], T[7] = r[5], T[8] = (sqrt(2.0) * r[0] + 2.0 * r[2]) / sqrt(3.0);
  } else {
    T[0] = r[0] + r[1], T[1] = r[2];
    T[2] = r[2], T[3] = r[0] - r[1];
  }
}

/* chi^-1 of the symmetric part of T */
void mpm_chi_inverse(int dim, const double *T, double *r)
{
  if (dim == 3) {
    const double a = T[0], e = T[4], c = T[8];
    r[0] = (a + e + c) / sqrt(6.0);
    r[1] = 0.5 * (a - e);
    r[2] = (2.0 * c - a - e) / (2.0 * sqrt(3.0));
    r[3] = 0.5 * (T[1] + T[3]);
    r[4] = 0.5 * (T[2] + T[6]);
    r[5] = 0.5 * (T[5] + T[7]);
  } else {
    r[0] = 0.5 * (T[0] + T[3]);
    r[1] = 0.5 * (T[0] - T[3]);
    r[2] = 0.5 * (T[1] + T[2]);
  }
}

/* mu of the Coulomb law from the Drucker-Prager coefficient mu_hat of
 * sqrt(J2) <= mu_hat p: sqrt(2/3) mu_hat in 3D (D, section 4.2), mu_hat in
 * 2D (|Dev| = sqrt(J2) and r_N = Tr / 2 = p). */
double mpm_dcfp_mu(int dim, double mu_hat) { return dim == 3 ? sqrt(2.0 / 3.0) * mu_hat : mu_hat; }

static double norm_t(int n, const double *x)
{
  double s = 0;
  for (int i = 1; i < n; i++) s += x[i] * x[i];
  return sqrt(s);
}

/* P_K(x); with J not NULL, its (generalized) Jacobian, row-major n x n */
static void project_cone(int n, double mu, const double *x, double *p, double *J)
{
  const double xt = norm_t(n, x);
  if (J) memset(J, 0, sizeof(double) * (size_t)(n * n));
  if (xt <= mu * x[0]) { /* inside K */
    memcpy(p, x, sizeof(double) * (size_t)n);
    if (J)
      for (int i = 0; i < n; i++) J[i * n + i] = 1.0;
    return;
  }
  if (mu * xt <= -x[0]) { /* inside the polar cone */
    memset(p, 0, sizeof(double) * (size_t)n);
    return;
  }
  { /* onto the boundary: p_N = (x_N + mu |x_T|) / (1 + mu^2), p_T = mu p_N t */
    const double pn = (x[0] + mu * xt) / (1.0 + mu * mu);
    double       t[MPM_SYM_MAX];
    for (int i = 1; i < n; i++) t[i] = x[i] / xt;
    p[0] = pn;
    for (int i = 1; i < n; i++) p[i] = mu * pn * t[i];
    if (!J) return;
    /* dp_N = (dx_N + mu t . dx_T) / (1 + mu^2); dp_T = mu (dp_N t + p_N (I - t t^T) dx_T / |x_T|) */
    J[0] = 1.0 / (1.0 + mu * mu);
    for (int j = 1; j < n; j++) J[j] = mu * t[j] / (1.0 + mu * mu);
    for (int i = 1; i < n; i++)
      for (int j = 0; j < n; j++) J[i * n + j] = mu * (J[j] * t[i] + (j > 0 ? pn * ((i == j) - t[i] * t[j]) / xt : 0.0));
  }
}

/* u = W r + b and the modified velocity uh = u + mu |u_T| e_N */
static void velocities(int n, const double *W, const double *b, double mu, const double *r, double *u, double *uh)
{
  for (int i = 0; i < n; i++) {
    u[i] = b[i];
    for (int j = 0; j < n; j++) u[i] += W[i * n + j] * r[j];
  }
  memcpy(uh, u, sizeof(double) * (size_t)n);
  uh[0] += mu * norm_t(n, u);
}

/* F(r) = r - P_K(r - rho uh(r)); |F|^2 returned */
static double natural_map(int n, const double *W, const double *b, double mu, double rho, const double *r, double *F, double *Jp, double *u)
{
  double uh[MPM_SYM_MAX], x[MPM_SYM_MAX], p[MPM_SYM_MAX], s = 0;
  velocities(n, W, b, mu, r, u, uh);
  for (int i = 0; i < n; i++) x[i] = r[i] - rho * uh[i];
  project_cone(n, mu, x, p, Jp);
  for (int i = 0; i < n; i++) {
    F[i] = r[i] - p[i];
    s += F[i] * F[i];
  }
  return s;
}

void mpm_dcfp_project(int n, double mu, const double *x, double *p) { project_cone(n, mu, x, p, NULL); }

double mpm_dcfp_residual(int n, const double *W, const double *b, double mu, const double *r)
{
  double F[MPM_SYM_MAX], u[MPM_SYM_MAX], tr = 0;
  for (int i = 0; i < n; i++) tr += W[i * n + i];
  return sqrt(natural_map(n, W, b, mu, n / tr, r, F, NULL, u));
}

/* Solve A x = y (n x n, Gaussian elimination with partial pivoting);
 * returns 0 if A is singular. */
static int solve_dense(int n, const double *A, const double *y, double *x)
{
  double M[MPM_SYM_MAX * (MPM_SYM_MAX + 1)];
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < n; j++) M[i * (n + 1) + j] = A[i * n + j];
    M[i * (n + 1) + n] = y[i];
  }
  for (int c = 0; c < n; c++) {
    int piv = c;
    for (int i = c + 1; i < n; i++)
      if (fabs(M[i * (n + 1) + c]) > fabs(M[piv * (n + 1) + c])) piv = i;
    if (M[piv * (n + 1) + c] == 0.0) return 0;
    if (piv != c)
      for (int j = 0; j <= n; j++) {
        const double t = M[c * (n + 1) + j];
        M[c * (n + 1) + j] = M[piv * (n + 1) + j], M[piv * (n + 1) + j] = t;
      }
    for (int i = c + 1; i < n; i++) {
      const double f = M[i * (n + 1) + c] / M[c * (n + 1) + c];
      for (int j = c; j <= n; j++) M[i * (n + 1) + j] -= f * M[c * (n + 1) + j];
    }
  }
  for (int i = n - 1; i >= 0; i--) {
    double s = M[i * (n + 1) + n];
    for (int j = i + 1; j < n; j++) s -= M[i * (n + 1) + j] * x[j];
    x[i] = s / M[i * (n + 1) + i];
  }
  return 1;
}

/* Semismooth Newton on F: J_F = I - J_P (I - rho duh/dr), duh/dr = W +
 * mu e_N t^T W_T (t = u_T / |u_T|); backtracking on |F|^2. */
static int newton(int n, const double *W, const double *b, double mu, double rho, double tol2, int max_it, double *r, int *its)
{
  double F[MPM_SYM_MAX], Jp[MPM_SYM_MAX * MPM_SYM_MAX], u[MPM_SYM_MAX], f = natural_map(n, W, b, mu, rho, r, F, Jp, u);
  for (*its = 0; *its < max_it && f > tol2; (*its)++) {
    double D[MPM_SYM_MAX * MPM_SYM_MAX], JF[MPM_SYM_MAX * MPM_SYM_MAX], dr[MPM_SYM_MAX], mF[MPM_SYM_MAX], t[MPM_SYM_MAX] = {0};
    const double ut = norm_t(n, u);
    for (int i = 1; i < n && ut > 0; i++) t[i] = u[i] / ut;
    for (int i = 0; i < n; i++) /* D = I - rho duh/dr */
      for (int j = 0; j < n; j++) {
        double g = W[i * n + j];
        if (i == 0)
          for (int k = 1; k < n; k++) g += mu * t[k] * W[k * n + j];
        D[i * n + j] = (i == j) - rho * g;
      }
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++) {
        double s = (i == j);
        for (int k = 0; k < n; k++) s -= Jp[i * n + k] * D[k * n + j];
        JF[i * n + j] = s;
      }
    for (int i = 0; i < n; i++) mF[i] = -F[i];
    if (!solve_dense(n, JF, mF, dr)) return 0;
    { /* backtracking: the full step, then halves while |F|^2 does not drop */
      double a = 1.0, rt[MPM_SYM_MAX], ft = 0;
      int    k;
      for (k = 0; k < 30; k++, a *= 0.5) {
        for (int i = 0; i < n; i++) rt[i] = r[i] + a * dr[i];
        ft = natural_map(n, W, b, mu, rho, rt, F, Jp, u);
        if (ft < (1.0 - 1e-4 * a) * f) break;
      }
      if (k == 30) return 0; /* no descent: the fail-safe takes over */
      memcpy(r, rt, sizeof(double) * (size_t)n);
      f = ft;
    }
  }
  return f <= tol2;
}

/* The fail-safe: r <- P_K(r - rho uh(r)) with rho = 1 / |W|_1 (a bound on
 * W's largest eigenvalue): slow but convergent from anywhere. */
static void fixed_point(int n, const double *W, const double *b, double mu, double tol2, int max_it, double *r, int *its)
{
  double rho = 0, F[MPM_SYM_MAX], u[MPM_SYM_MAX];
  for (int i = 0; i < n; i++) {
    double s = 0;
    for (int j = 0; j < n; j++) s += fabs(W[i * n + j]);
    rho = s > rho ? s : rho;
  }
  rho = 1.0 / rho;
  for (*its = 0; *its < max_it; (*its)++) {
    if (natural_map(n, W, b, mu, rho, r, F, NULL, u) <= tol2 * rho * rho) break;
    for (int i = 0; i < n; i++) r[i] -= F[i];
  }
}

MPMDcfpCase mpm_dcfp_local(int n, const double *W, const double *b, double mu, double tol, int max_newton, double *r, int *its)
{
  double tr = 0, mb[MPM_SYM_MAX] = {0}, rs[MPM_SYM_MAX] = {0}, scale = 0;
  *its = 0;
  if (b[0] >= 0) { /* take-off: r = 0, u = b with u_N >= 0 */
    memset(r, 0, sizeof(double) * (size_t)n);
    return MPM_DCFP_TAKEOFF;
  }
  for (int i = 0; i < n; i++) mb[i] = -b[i];
  if (solve_dense(n, W, mb, rs) && norm_t(n, rs) <= mu * rs[0]) { /* sticking: u = 0 */
    memcpy(r, rs, sizeof(double) * (size_t)n);
    return MPM_DCFP_STICK;
  }
  /* sliding: from the sticking solution's projection onto K (a
   * warm-started r would do as well; this one does not depend on the sweep) */
  for (int i = 0; i < n; i++) tr += W[i * n + i], scale += b[i] * b[i];
  project_cone(n, mu, rs, r, NULL);
  {
    const double rho = n / tr, tol2 = tol * tol * scale * rho * rho; /* |F| <= tol rho |b| */
    if (newton(n, W, b, mu, rho, tol2, max_newton, r, its)) return MPM_DCFP_SLIDE;
    {
      int fits;
      project_cone(n, mu, rs, r, NULL);
      fixed_point(n, W, b, mu, tol * tol * scale, 100000, r, &fits);
      *its += fits;
    }
  }
  return MPM_DCFP_FAILSAFE;
}
