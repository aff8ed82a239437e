/* Pure pointwise kernels of the material point method.
 *
 * Everything declared here works on plain C arrays and a const parameter
 * struct: no PETSc, no MPI, no global state.  That keeps the physics
 * unit-testable per point (tests/test_kernels.c) and easy to vectorize.
 *
 * Conventions
 *   - dim is 2 or 3.  Vectors have dim entries, matrices dim*dim entries in
 *     row-major order (A[i*dim+j]).
 *   - Equation numbers "(Kx)" refer to Klar et al. 2016, "Drucker-Prager
 *     elastoplasticity for sand animation", ACM Trans. Graph. 35(4) 103.
 *   - SI units throughout.
 */
#ifndef MPM_KERNELS_H
#define MPM_KERNELS_H

#include <math.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MPM_MAX_DIM 3
#define MPM_MAX_STENCIL 4 /* cubic B-spline: 4 nodes per axis */

/* ------------------------------------------------------------------------ */
/* B-spline interpolation kernels (K5, K6)                                    */
/* ------------------------------------------------------------------------ */
typedef enum { MPM_KERNEL_QUADRATIC = 2, MPM_KERNEL_CUBIC = 3 } MPMKernelOrder;

/* Number of grid nodes per axis a particle touches. */
static inline int mpm_stencil_size(int order) { return order + 1; }

/* 1D weights of the tensor-product B-spline (K6).
 *   xr   particle coordinate in grid units, (x - origin)/h
 *   base first node index of the stencil (output)
 *   w    weights of nodes base..base+order
 *   dw   d w / d xr (divide by h for a physical gradient)
 * The quadratic spline is centred on the nearest node; the cubic spline
 * (K5) uses the two nodes on each side. */
static inline void mpm_bspline_weights(int order, double xr, int *base, double *w, double *dw)
{
  if (order == MPM_KERNEL_QUADRATIC) {
    const int    b  = (int)floor(xr - 0.5);
    const double fx = xr - b; /* in [0.5, 1.5) */
    const double a = 1.5 - fx, c = fx - 1.0, e = fx - 0.5;
    *base = b;
    w[0]  = 0.5 * a * a;
    w[1]  = 0.75 - c * c;
    w[2]  = 0.5 * e * e;
    dw[0] = -a;
    dw[1] = -2.0 * c;
    dw[2] = e;
  } else {
    const int    b  = (int)floor(xr) - 1;
    const double fx = xr - b; /* in [1, 2): distances to nodes are fx-k */
    *base = b;
    for (int k = 0; k < 4; k++) {
      const double t = fx - k, at = fabs(t);
      if (at < 1.0) {
        w[k]  = 0.5 * at * at * at - t * t + 2.0 / 3.0;
        dw[k] = 1.5 * t * at - 2.0 * t;
      } else {
        const double r = 2.0 - at;
        w[k]  = r * r * r / 6.0;
        dw[k] = -0.5 * r * r * (t > 0 ? 1.0 : -1.0);
      }
    }
  }
}

/* APIC inertia tensor D = dinv^-1 I (K8): dinv = 4/h^2 (quadratic), 3/h^2 (cubic). */
static inline double mpm_apic_dinv(int order, double h) { return (order == MPM_KERNEL_QUADRATIC ? 4.0 : 3.0) / (h * h); }

/* ------------------------------------------------------------------------ */
/* Small dense linear algebra                                                 */
/* ------------------------------------------------------------------------ */
/* Eigen-decomposition of a symmetric dim x dim matrix A = U diag(lam) U^T.
 * U's columns are the eigenvectors (row-major U[i*dim+k] = component i of
 * eigenvector k).  3D uses cyclic Jacobi, robust for the nearly repeated
 * eigenvalues that dominate here (F_E close to a rotation). */
void mpm_sym_eig(int dim, const double *A, double *lam, double *U);

/* Lane-parallel (SIMD) variants work on MPM_LANES independent problems at
 * once, stored structure-of-arrays: x[i][l] is entry i of problem l, so the
 * loops over l vectorize.  16 lanes are several SIMD registers per
 * operation, which hides the latency of the divisions and square roots of
 * the Jacobi rotations.  They give the results of the one-problem functions
 * up to roundoff. */
#define MPM_LANES 16

/* mpm_sym_eig for MPM_LANES symmetric 3x3 matrices given by their entries
 * A = (a00, a11, a22, a01, a02, a12); U[i*3+k][l] is component i of
 * eigenvector k of matrix l. */
void mpm_sym_eig3_lanes(const double A[6][MPM_LANES], double lam[3][MPM_LANES], double U[9][MPM_LANES]);

/* Eigenvalues lam and eigenvectors U of F F^T (the squared singular values
 * and left singular vectors of F). */
void mpm_ffT_eig(int dim, const double *F, double *lam, double *U);

/* C = A B (dim x dim) */
/* A = s P F^T: the scaled stress a particle scatters (s = -dt V0 gives dt f, K23) */
static inline void mpm_scaled_pft(int dim, double s, const double *P, const double *F, double *A)
{
  for (int a = 0; a < dim; a++)
    for (int b = 0; b < dim; b++) {
      double t = 0;
      for (int c = 0; c < dim; c++) t += P[a * dim + c] * F[b * dim + c];
      A[a * dim + b] = s * t;
    }
}
/* y = A x (dim x dim times a vector) */
static inline void mpm_matvec(int dim, const double *A, const double *x, double *y)
{
  for (int i = 0; i < dim; i++) {
    double t = 0;
    for (int k = 0; k < dim; k++) t += A[i * dim + k] * x[k];
    y[i] = t;
  }
}
static inline void mpm_matmul(int dim, const double *A, const double *B, double *C)
{
  for (int i = 0; i < dim; i++)
    for (int j = 0; j < dim; j++) {
      double s = 0;
      for (int k = 0; k < dim; k++) s += A[i * dim + k] * B[k * dim + j];
      C[i * dim + j] = s;
    }
}
double mpm_det(int dim, const double *A);
/* Ainv = A^{-1}; returns det(A). */
double mpm_inverse(int dim, const double *A, double *Ainv);

/* ------------------------------------------------------------------------ */
/* Constitutive models                                                        */
/* ------------------------------------------------------------------------ */
/* Return-mapping outcome, stored per particle as "plastic_case". */
typedef enum {
  MPM_CASE_ELASTIC = 0, /* Case I: inside the yield surface (static friction)      */
  MPM_CASE_TIP     = 1, /* Case II: expansion, projected to the cone tip (no stress) */
  MPM_CASE_CONE    = 2  /* Case III: projected to the cone surface, volume preserved */
} MPMPlasticCase;

/* Which Drucker-Prager cone a friction angle phi gives:
 *   COMPRESSION   alpha = sqrt(2/3) 2 sin(phi)/(3 - sin(phi))          (K31)
 *   PLANE_STRAIN  3D:  alpha = sqrt(2) tan(phi)/sqrt(9 + 12 tan^2(phi))
 *                 2D:  alpha = sin(phi)/sqrt(2), which makes the in-plane
 *                      yield condition exactly Mohr-Coulomb.
 *   REPOSE        phi is the angle of repose of volume-preserving flow:
 *                 sqrt(J2) <= tan(phi) p (2D: the in-plane Mohr radius),
 *                 so a layer sheared at constant volume stops on a slope
 *                 of phi (mu_s = tan(theta_stop), Jop et al. 2006);
 *                 alpha = sqrt(2) tan(phi)/d.
 * alpha is the coefficient in ||dev tau||_F + alpha tr(tau) <= 0 (K27). */
typedef enum { MPM_CONE_COMPRESSION = 0, MPM_CONE_PLANE_STRAIN = 1, MPM_CONE_REPOSE = 2 } MPMConeMatch;

typedef struct {
  int    dim;
  double mu, lambda;     /* Lame parameters [Pa] */
  double h0, h1, h2, h3; /* hardening (K30) [rad], h1 in [rad] per unit q */
  double cohesion;       /* Mohr-Coulomb cohesion c [Pa]; shifts the cone apex into tension */
  int    cone;           /* MPMConeMatch */
  /* derived by mpm_dp_setup() */
  int    hardening;         /* h1 or h3 nonzero: the cone depends on q */
  double alpha0, tr_apex0;  /* the cone at q = 0 */
} MPMDruckerPragerParams;

/* Friction angle phi_F(q) = h0 + (h1 q - h3) exp(-h2 q) (K30) [rad]. */
static inline double mpm_dp_friction_angle(const MPMDruckerPragerParams *p, double q)
{
  return p->h0 + (p->h1 * q - p->h3) * exp(-p->h2 * q);
}
double mpm_dp_alpha(int dim, MPMConeMatch cone, double phi);
/* Fill the derived fields of p (call after setting the inputs). */
void mpm_dp_setup(MPMDruckerPragerParams *p);
/* The cone at hardening state q: alpha, and the trace of the Hencky strain
 * at the apex (0 without cohesion; d c cot(phi)/(d lambda + 2 mu) with). */
void mpm_dp_cone(const MPMDruckerPragerParams *p, double q, double *alpha, double *tr_apex);

/* Project the principal Hencky strains eps[dim] to the yield surface (K27,
 * K28, with the cohesion shift), in place.  Returns the case and the
 * hardening increment dq (K29). */
MPMPlasticCase mpm_dp_project(const MPMDruckerPragerParams *p, double alpha, double tr_apex, double *eps, double *dq);

/* Full Drucker-Prager particle update: F_E <- Z(F_E, alpha) (K16-K18),
 * hardening q <- q + dq (K29), plastic volume ratio Jp, and the Kirchhoff
 * stress tau = dpsi/dF F^T for the next force computation (K23, K26).
 * Works on the eigen-decomposition of b = F F^T only, so no SVD is needed:
 * the projection keeps U and V, hence F_E,new = U exp(H) Sigma^-1 U^T F_E. */
MPMPlasticCase mpm_dp_update(const MPMDruckerPragerParams *p, double *Fe, double *q, double *Jp, double *tau);

/* mpm_dp_update for n particles (Fe and tau dim*dim per particle, q, Jp
 * and the returned case pcase one per particle), lane-parallel in 3D. */
void mpm_dp_update_n(const MPMDruckerPragerParams *p, int n, double *Fe, double *q, double *Jp, double *tau, uint8_t *pcase);

/* The same with the volume correction of Tampubolon et al. 2017 (s. 4.3.4):
 * vc, one per particle, is the log of the volume a particle gained by
 * projections (to the tip, under expansion) and not yet given back; the
 * projection acts on the Hencky strain plus vc/d I (T27), and vc takes up
 * log det F_E before minus after the projection (T26).  So a particle that
 * expanded stress-free can be compressed back to its volume stress-free.
 * vc = NULL: no correction (mpm_dp_update). */
MPMPlasticCase mpm_dp_update_vc(const MPMDruckerPragerParams *p, double *Fe, double *q, double *Jp, double *vc, double *tau);
void           mpm_dp_update_n_vc(const MPMDruckerPragerParams *p, int n, double *Fe, double *q, double *Jp, double *vc, double *tau, uint8_t *pcase);

/* Wet sand (Tampubolon et al. 2017, s. 3.4 and 4.3.3): the cohesion as a
 * piecewise-linear function of the water saturation S of the pores, 0 dry,
 * cmax at the optimum S_opt, 0 again at full saturation [Pa]. */
double mpm_dp_saturation_cohesion(double cmax, double sopt, double S);
/* mpm_dp_update_vc with the particle's own cohesion c (in place of
 * p->cohesion): the cone's apex at c cot(phi). */
MPMPlasticCase mpm_dp_update_cohesion(const MPMDruckerPragerParams *p, double c, double *Fe, double *q, double *Jp, double *vc, double *tau);

/* Hencky elasticity, no plasticity: tau from F_E. */
void mpm_hencky_stress(int dim, double mu, double lambda, const double *Fe, double *tau);
/* Hencky energy density psi(F) = mu tr((ln S)^2) + lambda/2 (tr ln S)^2 (K25). */
double mpm_hencky_energy(int dim, double mu, double lambda, const double *Fe);

/* Compressible neo-Hookean: psi = mu/2 (tr b - d) - mu ln J + lambda/2 ln^2 J,
 * tau = mu (b - I) + lambda ln J I. */
void   mpm_neohookean_stress(int dim, double mu, double lambda, const double *Fe, double *tau);
double mpm_neohookean_energy(int dim, double mu, double lambda, const double *Fe);

/* First Piola-Kirchhoff stress P = tau F^-T from a Kirchhoff stress. */
void mpm_piola_from_kirchhoff(int dim, const double *tau, const double *F, double *P);

/* Linearization of an isotropic stress function P(Fhat) = U diag(g(s)) V^T
 * at Fhat = U diag(s) V^T (singular values s > 0), for the implicit
 * integrator's Jacobian (src/kernels/linearize.c). */
typedef struct {
  int    dim;
  double U[9], V[9]; /* Fhat = U diag(s) V^T, row-major, columns are the singular vectors */
  double s[3], g[3]; /* singular values of Fhat and of P */
  double dg[9];      /* dg[k*dim+l] = d g_k / d s_l */
  int    definite;   /* 1: mpm_iso_definite made the tangent positive semidefinite */
} MPMIsoLinearization;

/* The implicit force's stress: P(Z(Fhat)), Hencky's first Piola-Kirchhoff
 * stress (K26) of the Drucker-Prager return map Z (K27, K28) of the trial
 * Fhat, with the cone alpha and apex tr_apex of the step's hardening state
 * (not updated: the seed is implicit in plasticity, not in hardening).
 * Returns the case and fills the linearization for mpm_iso_dpiola. */
MPMPlasticCase mpm_dp_trial_piola(const MPMDruckerPragerParams *p, double alpha, double tr_apex, const double *Fhat, double *P, MPMIsoLinearization *lin);
/* The same for the elastic models (no return map): Hencky (K25, K26) and
 * compressible neo-Hookean. */
void mpm_hencky_trial_piola(int dim, double mu, double lambda, const double *F, double *P, MPMIsoLinearization *lin);
void mpm_neohookean_trial_piola(int dim, double mu, double lambda, const double *F, double *P, MPMIsoLinearization *lin);
/* The unilateral energy of Tampubolon et al. 2017 (s. 3.1.1, eqs. 7-10):
 * Hencky's psi(eps) times a multiplier h(eps) that is 1 in the region A
 * (u + f < a + shift), 0 in C (u + f > b + shift) and C2 between, with
 * u = eps.o the strain along the hydrostatic axis o, v = |eps - u o|,
 * f = c0 v^4 / (1 + v^3).  eps are principal log strains (tension > 0). */
typedef struct {
  double a, b, c0, shift; /* [-] log strain, b > a */
} MPMUnilateral;
/* h(eps); its gradient dh/deps (dim values) and Hessian (dim x dim) if not NULL. */
double mpm_unilateral_multiplier(int dim, const MPMUnilateral *U, const double *eps, double *grad, double *hess);
/* psi h of the elastic deformation Fe, and the trial stress of psi h (as
 * mpm_hencky_trial_piola). */
double mpm_hencky_unilateral_energy(int dim, double mu, double lambda, const MPMUnilateral *U, const double *Fe);
void   mpm_hencky_unilateral_trial_piola(int dim, double mu, double lambda, const MPMUnilateral *U, const double *F, double *P, MPMIsoLinearization *lin);
/* dP = dP/dFhat : dF, the derivative of the stress linearized in lin (not
 * symmetric in general: plastic flow on the cone is non-associative). */
void mpm_iso_dpiola(const MPMIsoLinearization *lin, const double *dF, double *dP);
/* The semi-implicit stiffness of one particle as a map on the velocity
 * gradient: A = scale dP(dt G F) F^T, with F the point lin was made at, as a
 * symmetric dim^2 x dim^2 matrix on vec(G) (G_ab at a dim + b), its upper
 * triangle row by row (dim^2 (dim^2 + 1) / 2 values).  Built in the
 * principal frame of F (hyperelastic lin: dg symmetric; symmetrized). */
void mpm_iso_sym_map(const MPMIsoLinearization *lin, double dt, double scale, double *S);
/* The same map in 3D as its principal-frame factors, 27 values (the
 * padded columns of U, the diagonal block, the three 2x2 blocks; layout in
 * linearize.c), which mpm_gradient_divergence_sym applies in 3D; and their
 * expansion into the packed 45 (for checks and the generic paths). */
void mpm_iso_sym_factors(const MPMIsoLinearization *lin, double dt, double scale, double *f);
void mpm_sym_factors_expand(const double *f, double *S);
/* The definiteness fix of Teran et al. 2005 for a hyperelastic linearization
 * (dg symmetric): dg projected onto the positive semidefinite matrices and
 * the 2x2 rotation/shear blocks' eigenvalues (g_k - g_l)/(s_k - s_l) and
 * (g_k + g_l)/(s_k + s_l) clamped at 0 in mpm_iso_dpiola.  Compressed
 * fixed-corotated material has negative rotational stiffness; kept, a
 * linearized implicit step with dt^2 k / m > 1 amplifies it. */
void mpm_iso_definite(MPMIsoLinearization *lin);

/* For the assembled preconditioner of the implicit integrator: the
 * isotropic moduli (mu, lambda) a linearization behaves like (softened on
 * the Drucker-Prager cone, zero at its tip without cohesion), and the linear-
 * elastic d x d stiffness block of volume V between two nodes,
 * K_ij = V (lambda ya_i yb_j + mu (delta_ij ya.yb + ya_j yb_i)), y = F^T grad w. */
void mpm_iso_moduli(const MPMIsoLinearization *lin, double *mu, double *lambda);
void mpm_elastic_block(int dim, double V, double mu, double lambda, const double *ya, const double *yb, double *K);
/* The full tangent C_ikjl = dP_ik/dF_jl of a linearization (dim^4 values)
 * and its stiffness block K_ij = V sum_kl C_ikjl ya_k yb_l: the exact
 * Jacobian's, plastic flow included (not symmetric on the cone). */
void mpm_iso_tangent(const MPMIsoLinearization *lin, double *C);
void mpm_tangent_block(int dim, double V, const double *C, const double *ya, const double *yb, double *K);

/* ------------------------------------------------------------------------ */
/* Snow (Stomakhin et al. 2013; src/kernels/snow.c)                            */
/* ------------------------------------------------------------------------ */
/* Signed SVD F = U diag(s) V^T with U and V rotations (det +1); the
 * smallest singular value is negative when det F < 0.  Robust at repeated
 * and zero singular values. */
void mpm_svd_signed(int dim, const double *F, double *U, double *s, double *V);
/* Fixed-corotated energy psi = mu ||F - R||^2 + lambda/2 (J - 1)^2, its first
 * Piola-Kirchhoff stress P = 2 mu (F - R) + lambda (J - 1) J F^-T and its
 * Kirchhoff stress tau = P F^T (R from the polar decomposition). */
double mpm_fcr_energy(int dim, double mu, double lambda, const double *F);
void   mpm_fcr_piola(int dim, double mu, double lambda, const double *F, double *P);
void   mpm_fcr_stress(int dim, double mu, double lambda, const double *F, double *tau);
/* dP = d^2 psi / dF dF : dF of the fixed-corotated energy (symmetric). */
void   mpm_fcr_dpiola(int dim, double mu, double lambda, const double *F, const double *dF, double *dP);
/* P of mpm_fcr_piola and its linearization as an isotropic function of the
 * singular values, for mpm_iso_dpiola (the implicit integrators). */
void   mpm_fcr_trial_piola(int dim, double mu, double lambda, const double *F, double *P, MPMIsoLinearization *lin);
/* The same for n particles (moduli per particle; 3D in MPM_LANES SIMD
 * lanes, equal to it to roundoff). */
void   mpm_fcr_trial_piola_n(int dim, int n, const double *mu, const double *lambda, const double *F, double *P, MPMIsoLinearization *lin);

typedef struct {
  int    dim;
  double mu0, lambda0;   /* Lame parameters at J_P = 1 [Pa] */
  double theta_c, theta_s; /* critical compression and stretch: singular values of F_E in [1 - theta_c, 1 + theta_s] */
  double xi;             /* hardening coefficient: mu = mu0 exp(xi (1 - J_P)) */
} MPMSnowParams;
/* The hardened Lame parameters at plastic volume ratio Jp. */
void mpm_snow_lame(const MPMSnowParams *p, double Jp, double *mu, double *lambda);
/* End of a step for one particle: clamp the trial F_E (in/out), update
 * J_P = det F_P, and the Kirchhoff stress.  Returns the number of clamped
 * singular values (0: elastic). */
int mpm_snow_update(const MPMSnowParams *p, double *Fe, double *Jp, double *tau);

/* ------------------------------------------------------------------------ */
/* The nonsmooth Drucker-Prager rheology as Coulomb friction (dcfp.c)        */
/* ------------------------------------------------------------------------ */
#define MPM_SYM_MAX 6 /* symmetric 3 x 3 tensors */
/* n = 6 in 3D, 3 in 2D: the components of a symmetric tensor */
int mpm_sym_size(int dim);
/* the orthonormal basis chi of Daviet and Bertails-Descoubes (r_N first,
 * the trace part; then the deviator) and its inverse */
void   mpm_chi(int dim, const double *r, double *T);
void   mpm_chi_inverse(int dim, const double *T, double *r);
double mpm_dcfp_mu(int dim, double mu_hat);
typedef enum { MPM_DCFP_TAKEOFF = 0, MPM_DCFP_STICK, MPM_DCFP_SLIDE, MPM_DCFP_FAILSAFE } MPMDcfpCase;
/* One node: r with K ∋ r _|_ u + mu |u_T| e_N ∈ K*, u = W r + b (W n x n
 * symmetric positive definite); tol relative to |b|; at most max_newton
 * Newton steps before the fail-safe; *its the Newton (and fail-safe)
 * iterations.  Returns the case that solved it. */
MPMDcfpCase mpm_dcfp_local(int n, const double *W, const double *b, double mu, double tol, int max_newton, double *r, int *its);
/* p = P_K(x), the projection on the cone K = {|x_T| <= mu x_N} */
void mpm_dcfp_project(int n, double mu, const double *x, double *p);
/* |r - P_K(r - rho (u + mu |u_T| e_N))|, rho = n / tr W: 0 at a solution */
double mpm_dcfp_residual(int n, const double *W, const double *b, double mu, const double *r);
/* The same at the velocity u itself, trW = tr W (APGD has u = W r + b from its operator) */
double mpm_dcfp_residual_at(int n, double trW, double mu, const double *r, const double *u);
/* Anisotropic grains (D s. 6.2).  One explicit step of the normals'
 * second moment nu2 (d x d, trace 1) under the velocity gradient G:
 * Jeffery's equation for the tangents' moment with the quadratic closure,
 * ell = (L/W - 1)/(L/W + 1) the grains' elongation in [0, 1]. */
void mpm_grain_orientation_step(int dim, double ell, const double *G, double dt, double *nu2);
/* The change of variables lambda~ = N(lambda) = Tr(lambda)/d I +
 * Dev(N Dev(lambda) N), M = N^-1 = (1 - alpha) I + d alpha nu2 given: its
 * n x n matrix in the chi basis (symmetric) and the inverse's.  0 if M
 * is singular. */
int mpm_aniso_map(int dim, const double *M, double *Nmat, double *Ninv);
/* The mu(I) rheology (D s. 6.3, Jop et al. 2006): mu_s + (mu_2 - mu_s) I /
 * (I0 + I) (mu_2 at I = infinity); the inertial number I = d |gamma_dot| /
 * sqrt(p / rho) of a velocity gradient G (|gamma_dot| = sqrt(2 Dev D : Dev
 * D), D = sym G: the rate of a simple shear), infinite where p <= 0. */
double mpm_mu_of_i(double mu_s, double mu_2, double i0, double inum);
double mpm_inertial_number(int dim, double diameter, double rho, const double *G, double p);
/* Particle frames (frames.c; D s. 5.3): the ellipsoid F = sum a_i a_i^T of
 * a particle's volume, moved by F <- A F A^T (A = I + dt grad v); its
 * longest semi-axis and longest over shortest; the split of a particle
 * in two along the longest axis (halves at x -+ d, frame Fc; returns the
 * axis' length); the merge of two particles (mass, centre of mass, its
 * velocity, C with the pair's relative angular momentum, the pair's
 * frame; Dp the APIC inertia scalar, h^2/4 quadratic); the initial frame
 * of a particle of volume V. */
void   mpm_frame_advect(int dim, const double *A, double *F);
double mpm_frame_longest(int dim, const double *F);
double mpm_frame_ratio(int dim, const double *F);
double mpm_frame_split(int dim, const double *F, double *d, double *Fc);
void   mpm_frame_merge(int dim, double Dp, double m1, const double *x1, const double *v1, const double *C1, const double *F1, double m2, const double *x2, const double *v2, const double *C2,
                       const double *F2, double *x, double *v, double *C, double *F);
void   mpm_frame_initial(int dim, double V, double *F);
/* mpm_snow_update of n particles (3D in MPM_LANES SIMD lanes, equal to it
 * to roundoff); pcase[i] = MPM_CASE_CONE where clamped, else ELASTIC. */
void mpm_snow_update_n(const MPMSnowParams *p, int n, double *Fe, double *Jp, double *tau, uint8_t *pcase);

/* ------------------------------------------------------------------------ */
/* Weakly compressible water (Tampubolon et al. 2017; src/kernels/fluid.c)    */
/* ------------------------------------------------------------------------ */
typedef struct {
  int    dim;
  double k;           /* bulk parameter of p = k (J^-gamma - 1) [Pa] */
  double gamma;       /* stiffening exponent [-] */
  double max_tension; /* the pressure is cut off at -max_tension [Pa] (infinite: the law as is) */
  double porosity;    /* n: the water fills this fraction of its particles' volume (1: free water; the
                         sand's porosity for pore water): their mass is n rho_w V */
} MPMWaterParams;
/* p = max(k (J^-gamma - 1), -max_tension) [Pa]. */
double mpm_water_pressure(const MPMWaterParams *p, double J);
/* psi(J) with dpsi/dJ = -p and psi(1) = 0 [J/m^3 of the water's reference volume]. */
double mpm_water_energy(const MPMWaterParams *p, double J);
/* Kirchhoff stress tau = -J p I (p the pore pressure in a mixture). */
void mpm_water_stress(const MPMWaterParams *p, double J, double *tau);
/* End of a step: J <- (1 + dt div v) J from the trial F_E = I + dt grad v
 * (in/out: reset to I), and tau = -J p(fill J) I: in a mixture the
 * pressure is that of the water's true density, fill = n / n_p (the
 * porosity around the particle over the one it was seeded with). */
void mpm_water_update(const MPMWaterParams *p, double fill, double *Fe, double *J, double *tau);
/* The energy of the implicit mixture's trial (per unit reference volume),
 * its gradient g = (dW/da, dW/dn) and Hessian H = (W_aa, W_an, W_nn) in
 * the trial volume change a = dt div v (J = J_n (1 + a), as
 * mpm_water_update) and the change dn of the porosity n0 around the
 * particle.  Pore water (porosity n_p < 1) with coupled: W = n_p psi(x),
 * x = (n/n_p) J the true volume ratio, n = n0 + dn, so dW/da = -p n J_n (the
 * water's share n of the pressure) and dW/dn = -p J (the skeleton's, through
 * dn = (1 - n) dV/V).  Otherwise (free water; pore water with n0 lagged):
 * W = psi(fill J_n (1 + a)) / fill, dW/da = -p J_n (the whole pressure). */
void mpm_water_trial(const MPMWaterParams *p, double n0, double Jn, double a, double dn, int coupled, double *g, double *H);

/* Lame parameters from Young's modulus and Poisson's ratio. */
static inline void mpm_lame(double E, double nu, double *mu, double *lambda)
{
  *mu     = E / (2.0 * (1.0 + nu));
  *lambda = E * nu / ((1.0 + nu) * (1.0 - 2.0 * nu));
}

/* ------------------------------------------------------------------------ */
/* Signed distance functions (negative inside)                                */
/* ------------------------------------------------------------------------ */
typedef enum { MPM_SHAPE_HALF_SPACE = 0, MPM_SHAPE_BOX, MPM_SHAPE_SPHERE, MPM_SHAPE_CYLINDER, MPM_SHAPE_POLYGON, MPM_SHAPE_HEIGHTFIELD, MPM_SHAPE_SAMPLED } MPMShapeType;

/* Geometry in the shape's own frame, whose origin is the shape's centre:
 *   half space: { x : n . x <= 0 } is solid, n = normal (unit, points out of the solid)
 *   box:        half extents a[dim]
 *   sphere:     radius r (a disk in 2D)
 *   cylinder:   axis (unit), radius r, half length a[0] (<= 0: infinite); a disk in 2D
 *   polygon:    a simple polygon of np vertices pts (x0,y0, x1,y1, ...) in
 *               the x-y plane, either orientation; in 3D a prism along z,
 *               half length a[2] (<= 0: infinite)
 *   heightfield: 3D terrain, solid below y = h(x, z): heights h[i + nx j]
 *               at x = org[0] + i dh, z = org[1] + j dh, bilinear, raised
 *               by r; phi is the vertical distance times the normal's
 *               vertical component (exact on planes, first order on
 *               curved terrain).  Outside the grid the edge heights
 *               continue.  (2D terrain is a polygon.)
 *   sampled:    3D, phi sampled at lo3 + dh (i, j, k), n3 points per axis,
 *               trilinear; outside the samples the distance to their box
 *               is added to the nearest sample's value (triangle meshes:
 *               core/mesh.c samples them).  Stored in a narrow band: the
 *               lattice is cut into bricks of MPM_BRICK^3 samples; a brick
 *               near the surface keeps its samples (pts[MPM_BRICK^3 b + i'
 *               + MPM_BRICK (j' + MPM_BRICK k')], b = bricks[brick]), a
 *               brick farther than band from it holds +band (bricks[brick]
 *               = MPM_BRICK_OUT) or -band (MPM_BRICK_IN) everywhere, so the
 *               memory goes with the surface's area, not the box's volume;
 *               a near brick another rank stores (MPM_BRICK_ABSENT) reads
 *               NaN, so a lookup outside this rank's part cannot pass
 *               unnoticed */
typedef struct {
  int           dim;
  MPMShapeType  type;
  double        n[3];       /* half space normal / cylinder axis */
  double        a[3];       /* box half extents, cylinder half length in a[0], prism half length in a[2] */
  double        r;          /* sphere / cylinder radius; heightfield raise */
  int           inside_out; /* 1: the solid is the complement (containers) */
  int           np;         /* polygon vertices */
  const double *pts;        /* polygon vertices (2 np values), heightfield heights (nx nz) */
  int           nx, nz;     /* heightfield grid */
  double        org[2], dh; /* heightfield origin (x, z) and spacing; the sampled grid's spacing */
  int           n3[3];      /* sampled grid points per axis */
  double        lo3[3];     /* sampled grid origin */
  const int    *bricks;     /* sampled: per brick, its index in pts or MPM_BRICK_OUT / IN / ABSENT */
  int           nb3[3];     /* sampled: bricks per axis */
  double        band;       /* sampled: |phi| beyond the band */
} MPMShape;
#define MPM_BRICK     8
#define MPM_BRICK_OUT (-1)
#define MPM_BRICK_IN  (-2)
#define MPM_BRICK_ABSENT (-3)

/* phi(x) and grad phi at a point x given in the shape frame. */
double mpm_sdf(const MPMShape *s, const double *x, double *grad);
/* Signed distance to a simple polygon in the plane (negative inside), its gradient. */
double mpm_sdf_polygon(int np, const double *pts, const double *x, double *grad);
/* Axis-aligned bounding box of the solid in the shape frame (finite shapes only). */
int mpm_shape_bbox(const MPMShape *s, double *lo, double *hi);

/* Grid-node collision response against a body moving with velocity vb at
 * the node (K section 8).  v is the node velocity after forces; phi/n the
 * signed distance and unit normal at the node; returns the projected and
 * frictional velocity in v.
 *   mode STICKY:   v = vb where phi <= 0
 *   mode SLIP:     no normal relative motion where phi <= 0
 *   mode SEPARATE: phi(x + dt v) >= min(phi(x), 0), linearized
 * Friction (K 8.1): the normal velocity change dv caused by the projection
 * limits the tangential correction to mu dv (Coulomb).
 * Returns what the body did to the node: nothing, moved it (projection,
 * sliding), or held it by friction (sticky, or |v_t| <= mu dv with mu > 0). */
typedef enum { MPM_BC_STICKY = 0, MPM_BC_SLIP, MPM_BC_SEPARATE, MPM_BC_NONE } MPMBCMode;
typedef enum { MPM_CONTACT_NONE = 0, MPM_CONTACT_MOVED, MPM_CONTACT_HELD } MPMContact;
MPMContact mpm_collide_node(int dim, MPMBCMode mode, double mu, double phi, const double *n, const double *vb, double dt, double tol, double *v);

/* ------------------------------------------------------------------------ */
/* Position-based granular contact (Macklin et al. 2014; src/kernels/pbd.c)  */
/* ------------------------------------------------------------------------ */
/* Friction of a contact of penetration d: the tangential part t of the
 * relative displacement rel (normal n) to remove, all of it while |t| <
 * mu_s d (static), else mu_k d of it (kinetic). */
void   mpm_pbd_friction(int dim, const double *n, const double *rel, double d, double mu_s, double mu_k, double *t);
/* Two grains: contact and friction corrections da, db; returns the
 * penetration (<= 0: none).  Call with the pair in one fixed order. */
double mpm_pbd_pair(int dim, const double *xa, const double *xb, const double *x0a, const double *x0b, double ra, double rb, double wa, double wb, double mu_s, double mu_k,
                    double *da, double *db);
/* A grain against a surface (signed distance phi, normal n), having moved
 * disp relative to it: the correction dx; returns the penetration. */
double mpm_pbd_wall(int dim, double phi, const double *n, const double *disp, double r, double mu_s, double mu_k, double *dx);
/* Friction as a Coulomb projection of a contact's accumulated corrections
 * lam = [ln, lt(3)] over the substep's sweeps (-pbd_friction accumulated):
 * the change dt of the friction correction, bounded by mu_s ln. */
void   mpm_pbd_friction_acc(int dim, const double *n, const double *rel, const double *lam, double mu_s, double mu_k, double *dt);
/* Book weight w of a sweep's push d (along n) and friction change dt into lam. */
void   mpm_pbd_accumulate(int dim, const double *n, double d, const double *dt, double w, double *lam);
/* mpm_pbd_pair with accumulated friction: corrections weighted by w, lam
 * (4 doubles) updated. */
double mpm_pbd_pair_acc(int dim, const double *xa, const double *xb, const double *x0a, const double *x0b, double ra, double rb, double wa, double wb, double mu_s, double mu_k, double w,
                        double *lam, double *da, double *db);
/* mpm_pbd_wall with accumulated friction: the correction weighted by w,
 * lam updated. */
double mpm_pbd_wall_acc(int dim, double phi, const double *n, const double *disp, double r, double mu_s, double mu_k, double w, double *lam, double *dx);

/* ------------------------------------------------------------------------ */
/* Counter-based random numbers: rank-invariant seeding                       */
/* ------------------------------------------------------------------------ */
static inline uint64_t mpm_hash64(uint64_t x)
{
  /* splitmix64 finalizer */
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
/* Uniform in [0,1) from (seed, key, stream). */
static inline double mpm_uniform(uint64_t seed, uint64_t key, uint64_t stream)
{
  uint64_t h = mpm_hash64(seed ^ mpm_hash64(key ^ mpm_hash64(stream + 0x632be59bd9b4e019ULL)));
  return (double)(h >> 11) * (1.0 / 9007199254740992.0);
}

#ifdef __cplusplus
}
#endif
#endif
