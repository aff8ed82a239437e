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

double mpm_mu_of_i(double mu_s, double mu_2, double i0, double inum) { return isinf(inum) ? mu_2 : mu_s + (mu_2 - mu_s) * inum / (i0 + inum); }

double mpm_inertial_number(int dim, double diameter, double rho, const double *G, double p)
{
  double D[9], tr = 0, dd = 0;
  if (!(p > 0)) return INFINITY;
  for (int a = 0; a < dim; a++)
    for (int b = 0; b < dim; b++) D[a * dim + b] = 0.5 * (G[a * dim + b] + G[b * dim + a]);
  for (int a = 0; a < dim; a++) tr += D[a * dim + a];
  for (int a = 0; a < dim; a++) D[a * dim + a] -= tr / dim;
  for (int k = 0; k < dim * dim; k++) dd += D[k] * D[k];
  return diameter * sqrt(2.0 * dd) / sqrt(p / rho);
}

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

static inline __attribute__((always_inline)) double norm_t(int n, const double *x)
{
  double s = 0;
  for (int i = 1; i < n; i++) s += x[i] * x[i];
  return sqrt(s);
}

/* P_K(x); with J not NULL, its (generalized) Jacobian, row-major n x n */
static inline __attribute__((always_inline)) void project_cone_n(const int n, double mu, const double *x, double *p, double *J)
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

/* with n a constant in 3D and 2D: APGD projects every node twice a step
 * (the same operations, unrolled) */
static void project_cone(int n, double mu, const double *x, double *p, double *J)
{
  if (n == 6) project_cone_n(6, mu, x, p, J);
  else if (n == 3) project_cone_n(3, mu, x, p, J);
  else project_cone_n(n, mu, x, p, J);
}

/* De Saxce's modified velocity uh = u + mu |u_T| e_N */
static void modified_velocity(int n, double mu, const double *u, double *uh)
{
  memcpy(uh, u, sizeof(double) * (size_t)n);
  uh[0] += mu * norm_t(n, u);
}

/* u = W r + b and its modified velocity uh */
static void velocities(int n, const double *W, const double *b, double mu, const double *r, double *u, double *uh)
{
  for (int i = 0; i < n; i++) {
    u[i] = b[i];
    for (int j = 0; j < n; j++) u[i] += W[i * n + j] * r[j];
  }
  modified_velocity(n, mu, u, uh);
}

/* F = r - P_K(r - rho uh) for the modified velocity uh; |F|^2 returned */
static double natural_map_uh(int n, double mu, double rho, const double *r, const double *uh, double *F, double *Jp)
{
  double x[MPM_SYM_MAX] = {0}, p[MPM_SYM_MAX], s = 0; /* = {0}: GCC cannot see n >= 1 */
  for (int i = 0; i < n; i++) x[i] = r[i] - rho * uh[i];
  project_cone(n, mu, x, p, Jp);
  for (int i = 0; i < n; i++) {
    F[i] = r[i] - p[i];
    s += F[i] * F[i];
  }
  return s;
}

/* F(r) = r - P_K(r - rho uh(r)); |F|^2 returned */
static double natural_map(int n, const double *W, const double *b, double mu, double rho, const double *r, double *F, double *Jp, double *u)
{
  double uh[MPM_SYM_MAX];
  velocities(n, W, b, mu, r, u, uh);
  return natural_map_uh(n, mu, rho, r, uh, F, Jp);
}

void mpm_dcfp_project(int n, double mu, const double *x, double *p) { project_cone(n, mu, x, p, NULL); }

double mpm_dcfp_residual(int n, const double *W, const double *b, double mu, const double *r)
{
  double F[MPM_SYM_MAX], u[MPM_SYM_MAX], tr = 0;
  for (int i = 0; i < n; i++) tr += W[i * n + i];
  return sqrt(natural_map(n, W, b, mu, n / tr, r, F, NULL, u));
}

double mpm_dcfp_residual_at(int n, double trW, double mu, const double *r, const double *u)
{
  double F[MPM_SYM_MAX], uh[MPM_SYM_MAX];
  modified_velocity(n, mu, u, uh);
  return sqrt(natural_map_uh(n, mu, n / trW, r, uh, F, NULL));
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

/* ---------------------------------------------------------- anisotropy */
/* Grain orientation (D s. 6.2).  nu2 = int n n^T psi(n), the second moment
 * of the grains' normals (trace 1), and pi2 the moment of their tangent
 * directions, pi2 = P (I - D) P^T / (d - 1) for nu2 = P D P^T, which is
 * (I - nu2) / (d - 1) without the eigen-decomposition (the seed's 1/2 in
 * 3D; 1 in 2D, where a grain has one tangent).  pi2 follows Jeffery's
 * equation for fibres with the quadratic closure pi4 ~ pi2 (x) pi2
 * (D24), one explicit Euler step:
 *
 *   pi2' = pi2 + dt [W pi2 - pi2 W + ell (E pi2 + pi2 E - 2 pi2 (pi2 : E))]
 *
 * E, W the symmetric and skew parts of G = grad u.  The seed prints
 * "W pi2 + pi2 W"; that is not symmetric for a skew W, so the rotation
 * term is taken as the commutator, as in Jeffery's equation and in the
 * frames' own update (D22).  nu2' = I - (d - 1) pi2', its negative
 * eigenvalues (a step too large for the closure) clamped to 0 and the
 * result scaled to trace 1 (the seed's nu2 / |nu2|_1). */
void mpm_grain_orientation_step(int dim, double ell, const double *G, double dt, double *nu2)
{
  const int d = dim;
  double    pi[9], E[9], W[9], r[9], pe = 0, lam[3], U[9], tr = 0;
  for (int a = 0; a < d; a++)
    for (int b = 0; b < d; b++) {
      pi[a * d + b] = ((a == b ? 1.0 : 0.0) - nu2[a * d + b]) / (d - 1);
      E[a * d + b]  = 0.5 * (G[a * d + b] + G[b * d + a]);
      W[a * d + b]  = 0.5 * (G[a * d + b] - G[b * d + a]);
    }
  for (int k = 0; k < d * d; k++) pe += pi[k] * E[k];
  for (int a = 0; a < d; a++)
    for (int b = 0; b < d; b++) {
      double t = -2.0 * ell * pi[a * d + b] * pe;
      for (int c = 0; c < d; c++) t += W[a * d + c] * pi[c * d + b] - pi[a * d + c] * W[c * d + b] + ell * (E[a * d + c] * pi[c * d + b] + pi[a * d + c] * E[c * d + b]);
      r[a * d + b] = pi[a * d + b] + dt * t;
    }
  for (int a = 0; a < d; a++) /* nu2' = I - (d - 1) pi2', symmetrized */
    for (int b = 0; b < d; b++) pi[a * d + b] = (a == b ? 1.0 : 0.0) - 0.5 * (d - 1) * (r[a * d + b] + r[b * d + a]);
  mpm_sym_eig(d, pi, lam, U);
  for (int k = 0; k < d; k++) {
    lam[k] = lam[k] > 0 ? lam[k] : 0.0;
    tr += lam[k];
  }
  for (int a = 0; a < d; a++)
    for (int b = 0; b < d; b++) {
      double t = 0;
      for (int k = 0; k < d; k++) t += U[a * d + k] * lam[k] * U[b * d + k];
      nu2[a * d + b] = tr > 0 ? t / tr : (a == b ? 1.0 / d : 0.0); /* all clamped: no direction left, isotropic */
    }
}

/* The friction's change of variables at a node (D s. 6.2): with M =
 * N^-1 = (1 - alpha) I + d alpha nu2 (d x d, symmetric positive definite;
 * the seed's 3 alpha in 3D, so that N = I for isotropic normals nu2 = I/d)
 * the map lambda -> lambda~ = Tr(lambda)/d I + Dev(N Dev(lambda) N) and
 * its inverse, as n x n matrices in the chi basis.  The seed writes N Dev
 * N without the outer Dev: keeping it makes the map symmetric in the
 * orthonormal chi basis (block diagonal, the trace part untouched), which
 * its dual change gamma~ = N^-1 gamma and W~ = N^-1 W N^-1 need to keep
 * the maximum dissipation principle.  Returns 0 if M is singular. */
int mpm_aniso_map(int dim, const double *M, double *Nmat, double *Ninv)
{
  const int d = dim, n = mpm_sym_size(dim);
  double    N[9];
  if (!(mpm_inverse(d, M, N) != 0)) return 0;
  for (int c = 0; c < n; c++) {
    double e[MPM_SYM_MAX] = {0}, T[9], S[9], r[MPM_SYM_MAX], tr = 0;
    e[c] = 1;
    mpm_chi(d, e, T);
    if (c == 0) { /* the trace part: itself */
      for (int s = 0; s < n; s++) Nmat[s * n + c] = e[s];
      continue;
    }
    for (int a = 0; a < d; a++) /* N T N (T = chi(e_c) is deviatoric) */
      for (int b = 0; b < d; b++) {
        double t = 0;
        for (int k = 0; k < d; k++)
          for (int l = 0; l < d; l++) t += N[a * d + k] * T[k * d + l] * N[l * d + b];
        S[a * d + b] = t;
      }
    for (int a = 0; a < d; a++) tr += S[a * (d + 1)];
    for (int a = 0; a < d; a++) S[a * (d + 1)] -= tr / d;
    mpm_chi_inverse(d, S, r);
    r[0] = 0; /* Dev: exactly, not to roundoff */
    for (int s = 0; s < n; s++) Nmat[s * n + c] = r[s];
  }
  for (int c = 0; c < n; c++) { /* the inverse, column by column */
    double e[MPM_SYM_MAX] = {0}, x[MPM_SYM_MAX];
    e[c] = 1;
    if (!solve_dense(n, Nmat, e, x)) return 0;
    for (int s = 0; s < n; s++) Ninv[s * n + c] = x[s];
  }
  return 1;
}
