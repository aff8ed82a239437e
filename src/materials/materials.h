/* Private header of src/materials/: constitutive models behind one
 * interface, registered by name (PetscFunctionList, like KSPRegister) and
 * created per deck instance with the instance name as options prefix:
 *   -materials sand,ball -sand_type drucker_prager -ball_type neo_hookean
 *
 * A model is one file that fills the ops table in its create function
 * (which also reads the elastic constants, MPMMaterialElasticOptions, after
 * setting its own defaults for them);
 * adding one is that file plus one MPMMaterialRegister() line in
 * MPMMaterialRegisterAll() (material.c). */
#ifndef MPM_MATERIALS_H
#define MPM_MATERIALS_H

#include "core/core.h"

/* The per-particle arrays of the elastoplastic state every material here
 * shares, offset to the first particle of a run of consecutive particles
 * of one material.  A model with more state registers its own fields in
 * ops.declare_fields and keeps their indices in its context. */
typedef struct {
  double  *Fe;    /* elastic deformation gradient F_E (dim x dim) */
  double  *tau;   /* out: Kirchhoff stress tau = J sigma (dim x dim) [Pa] */
  double  *Jp;    /* plastic volume ratio det F_P */
  double  *q;     /* hardening state */
  uint8_t *pcase; /* outcome of the return mapping (MPMPlasticCase) */
  MPMParticles *p; /* the particles, for a model's own fields: they start at q0 */
  PetscInt      q0;
} MPMMaterialPoints;

/* Capability flags: an integrator that needs one refuses a material without it. */
#define MPM_MATERIAL_PLASTIC 1u /* projects F_E onto a yield surface in commit */
#define MPM_MATERIAL_DSTRESS 2u /* ops.trial_stress: the linearized stress for implicit solvers */
#define MPM_MATERIAL_FLUID   4u /* a fluid phase: the two-phase integrators put it on its own species */
#define MPM_MATERIAL_PORE    8u /* fills only part of its particles' volume (pore water): needs a two-phase integrator */
#define MPM_MATERIAL_WET     32u /* its cohesion follows the water saturation a two-phase integrator sets (field "saturation") */
#define MPM_MATERIAL_UNILATERAL 64u /* its ops.elastic_trial is the unilateral energy: only a solve with plasticity lagged uses it */
#define MPM_MATERIAL_GRAIN   128u /* a rigid grain of the position-based solver (-integrator pbd), no stress: only that integrator moves it */
#define MPM_MATERIAL_LAGGED  16u /* ops.elastic_trial (solids) or ops.fluid_trial (fluids): the elastic stress for solves with plasticity lagged */

typedef struct {
  /* Register per-particle fields beyond the shared state (optional). */
  PetscErrorCode (*declare_fields)(MPMMaterial m, MPMParticles *p);
  /* End of a step for n particles: plasticity (project F_E, update Jp and
   * q, record the case), then tau from the projected F_E. */
  void (*commit)(const MPMMaterial m, int n, const MPMMaterialPoints *pts);
  /* Kirchhoff stress of an elastic deformation gradient at plastic volume
   * ratio Jp (models whose moduli harden with Jp), no state change. */
  void (*stress)(const MPMMaterial m, const double *Fe, double Jp, double *tau);
  /* Elastic energy density psi(F_E) per unit reference volume [J/m^3]. */
  double (*energy)(const MPMMaterial m, const double *Fe, double Jp);
  /* Implicit integrators: the first Piola-Kirchhoff stress P of the trial
   * elastic deformation Fhat of particle i of the run, after the model's
   * return mapping at the state the step started from (no state change),
   * and its linearization for mpm_iso_dpiola.  Returns the MPMPlasticCase.
   * NULL: not available (then no_trial_stress may say why). */
  int (*trial_stress)(const MPMMaterial m, const MPMMaterialPoints *pts, int i, const double *Fhat, double *P, MPMIsoLinearization *lin);
  /* The same for the n points i0 .. i0 + n - 1 of the run at once, Fhat, P
   * and lin starting at point i0 (optional, for speed: snow's runs in SIMD
   * lanes; equal to trial_stress to roundoff; NULL: one by one). */
  void (*trial_stress_n)(const MPMMaterial m, const MPMMaterialPoints *pts, int i0, int n, const double *Fhat, double *P, MPMIsoLinearization *lin);
  /* Solves with plasticity lagged to commit (-integrator mixture, stresses
   * implicit): the same with the elastic law alone, at the moduli of the
   * state the step started from.  Solids. */
  void (*elastic_trial)(const MPMMaterial m, const MPMMaterialPoints *pts, int i, const double *Fhat, double *P, MPMIsoLinearization *lin);
  /* The same for fluids, whose stress is a pressure: the energy W per unit
   * reference volume as a function of the trial volume change a = dt div v
   * (F_E = I at the step's start) and of the change dn of the porosity
   * around the point (pore water: the pores the skeleton leaves it; with
   * coupled false, or for free water, W does not depend on it), its
   * gradient g = (dW/da, dW/dn) and Hessian H = (W_aa, W_an, W_nn). */
  void (*fluid_trial)(const MPMMaterial m, const MPMMaterialPoints *pts, int i, double a, double dn, PetscBool coupled, double *g, double *H);
  /* P-wave speed at a density, in the undeformed state: the explicit
   * stability limit [m/s]. */
  double (*wave_speed)(const MPMMaterial m, double density);
  /* Models whose moduli grow with the state (snow's hardening): the largest
   * factor by which the n points' moduli exceed those wave_speed assumes,
   * so that the explicit step shrinks by its square root (optional: 1). */
  double (*stiffening)(const MPMMaterial m, int n, const MPMMaterialPoints *pts);
  /* The state of a point at rest under the hydrostatic pressure of its
   * own fluid at depth, given as |g| depth [m^2/s^2] (a region's
   * -<r>_water_table; optional: fluids). */
  void (*hydrostatic)(const MPMMaterial m, double g_depth, double *Fe, double *Jp);
  PetscErrorCode (*destroy)(MPMMaterial m);
} MPMMaterialOps;

/* Anisotropic grains (Daviet and Bertails-Descoubes 2016 s. 6.2;
 * -integrator nonsmooth): the friction law seen through N, N^-1 = (1 -
 * alpha) I + d alpha nu2, nu2 the second moment of the grains' normals,
 * carried by the particles and turned by the flow (Jeffery, elongation
 * ell).  alpha = 0: isotropic, nothing is carried. */
typedef enum { MPM_GRAIN_NORMALS_ISOTROPIC, MPM_GRAIN_NORMALS_RANDOM, MPM_GRAIN_NORMALS_ALIGNED } MPMGrainNormals;
extern const char *const MPMGrainNormalsNames[];
typedef struct {
  double   alpha;     /* -<m>_anisotropy [0, 1) */
  double   ell;       /* -<m>_grain_elongation [0, 1] */
  PetscInt normals;   /* MPMGrainNormals: the seeded particles' nu2 */
  double   normal[3]; /* -<m>_grain_normal, unit (MPM_GRAIN_NORMALS_ALIGNED) */
} MPMGrainShape;

/* The mu(I) rheology (Jop, Forterre and Pouliquen 2006; Daviet and
 * Bertails-Descoubes 2016 s. 6.3; -integrator nonsmooth): the friction
 * coefficient grows with the inertial number I = d |gamma_dot| /
 * sqrt(p / rho_s) from mu_hat (I = 0) to mu2_hat (I -> infinity),
 * mu = mu_hat + (mu2_hat - mu_hat) I / (I0 + I).  mu2_hat <= 0 (-1, or 0 in
 * materials that never set it): constant. */
typedef struct {
  double mu2_hat;  /* sqrt(J2)/p of -<m>_friction_angle_dynamic on the material's cone (-1: off) */
  double I0;       /* -<m>_inertial_number_i0 [-] */
  double diameter; /* -<m>_grain_diameter [m] */
} MPMMuI;

struct _p_MPMMaterial {
  char           name[MPM_NAME_LEN]; /* instance name = options prefix */
  char           type[MPM_NAME_LEN];
  PetscInt       dim;
  double         density; /* [kg/m^3] */
  double         true_density; /* of the material itself: pore water's particles carry n_p rho_w, this is rho_w (0: density) */
  double         E, nu, mu, lambda;
  double         mu_hat;  /* friction coefficient of sqrt(J2) <= mu_hat p (Drucker-Prager; 0: not frictional, -1: with cohesion or hardening): -integrator nonsmooth */
  MPMGrainShape  grains;  /* anisotropic friction (alpha > 0: -integrator nonsmooth only) */
  MPMMuI         mui;     /* the mu(I) rheology (mu2_hat > 0: -integrator nonsmooth only) */
  unsigned       flags;   /* MPM_MATERIAL_* */
  const char    *no_trial_stress; /* why ops.trial_stress is NULL, for the error message (or NULL) */
  void          *ctx;     /* model parameters */
  MPMMaterialOps ops;
};

/* The end of the run of consecutive particles of one material that starts
 * at q0 (of n): the ops take such runs. */
static inline PetscInt MPMMaterialRunEnd(const int32_t *mat, PetscInt q0, PetscInt n)
{
  PetscInt q1 = q0 + 1;
  while (q1 < n && mat[q1] == mat[q0]) q1++;
  return q1;
}

typedef PetscErrorCode (*MPMMaterialCreateFn)(MPMMaterial, PetscOptionItems *);
PetscErrorCode MPMMaterialRegisterAll(void);
PetscErrorCode MPMMaterialRegister(const char *type, MPMMaterialCreateFn create);
PetscErrorCode MPMMaterialSetUp(MPI_Comm comm, PetscInt dim, const char *name, MPMMaterial *mat);
PetscErrorCode MPMMaterialDestroy(MPMMaterial *mat);
PetscErrorCode MPMMaterialElasticOptions(MPMMaterial m, PetscOptionItems *PetscOptionsObject);
PetscErrorCode MPMMaterialWarnDensity(const MPMMaterial m); /* plausibility warning (usual range, units) */
double         MPMMaterialWaveSpeedElastic(const MPMMaterial m, double density);
PetscErrorCode MPMMaterialRequire(const MPMMaterial m, unsigned flags, const char *who);

/* The species' materials from -materials (split by phase when fluid is
 * given: fluids there, the rest in solid), and the shared per-particle state. */
PetscErrorCode MPMMaterialsSetUp(MPMSim sim, MPMSpecies *solid, MPMSpecies *fluid);
PetscErrorCode MPMMaterialsDestroy(MPMSpecies *sp);
/* Indices of the shared state's fields, looked up once (MPMMaterialsFields)
 * so that MPMMaterialsPoints costs nothing in the step. */
typedef struct {
  PetscInt f_Fe, f_Jp, f_q, f_pcase;
} MPMMaterialFields;
PetscErrorCode MPMMaterialsFields(const MPMSpecies *sp, MPMMaterialFields *mf);
void           MPMMaterialsPoints(MPMSpecies *sp, const MPMMaterialFields *mf, PetscInt f_tau, PetscInt q0, MPMMaterialPoints *pts);
double         MPMMaterialsElasticEnergy(const MPMSpecies *sp);
/* After seeding: the prestressed start of regions with -<r>_water_table,
 * and every particle's stress (the field "tau") from its state. */
PetscErrorCode MPMMaterialsInitialState(MPMSim sim);
/* The grains' orientation of particles that have none yet (seeded or
 * emitted), from their materials' -<m>_grain_normals. */
void MPMMaterialsGrainsInit(MPMSpecies *sp, uint64_t seed);

PetscErrorCode MPMMaterialCreate_DruckerPrager(MPMMaterial, PetscOptionItems *);
PetscErrorCode MPMMaterialCreate_NeoHookean(MPMMaterial, PetscOptionItems *);
PetscErrorCode MPMMaterialCreate_Hencky(MPMMaterial, PetscOptionItems *);
PetscErrorCode MPMMaterialCreate_Snow(MPMMaterial, PetscOptionItems *);
PetscErrorCode MPMMaterialCreate_Water(MPMMaterial, PetscOptionItems *);
PetscErrorCode MPMMaterialCreate_Grain(MPMMaterial, PetscOptionItems *);

/* The parameters of -<m>_type grain (m->ctx), read by -integrator pbd. */
typedef struct {
  double radius; /* [m] */
  double mu_s;   /* static friction coefficient [-] */
  double mu_k;   /* kinetic friction coefficient [-] */
  double radius_variation; /* radii vary uniformly by +- this fraction (drawn from the grain's id) [-] */
} MPMGrainParams;

#endif
