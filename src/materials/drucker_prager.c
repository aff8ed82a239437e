/* Drucker-Prager sand (Klar et al. 2016, sections 6.3 and 7): Hencky-strain
 * elasticity, the three-case return mapping with volume-preserving
 * non-associative flow, hardening (K29-K31), optional cohesion, and the
 * optional volume correction of Tampubolon et al. 2017 (s. 4.3.4), which
 * keeps the volume a particle gained in projections to the tip in a
 * per-particle field ("volume_correction") and lets it be given back
 * stress-free. */
#include "materials.h"

/* The kernel's parameters first, so the ops can take either. */
typedef struct {
  MPMDruckerPragerParams k;
  PetscBool              volume_correction;
  PetscInt               f_vc; /* its field, -1 without */
  double                 wet_cohesion, optimum_saturation; /* cohesion from the water saturation (mixtures) */
  PetscInt               f_sat; /* the field "saturation", -1 without */
  char                   no_trial[128]; /* why there is no implicit linearization */
  PetscBool              unilateral;    /* the lagged solve's elastic energy is psi h (Tampubolon et al. 2017, s. 3.1.1) */
  MPMUnilateral          uni;
} DPContext;

static const char *const ConeNames[] = {"compression", "plane_strain", "repose", "MPMConeMatch", "MPM_CONE_", NULL};

/* Project F_E onto the cone, harden, and the stress: the lane-parallel
 * kernel over the run of particles. */
static void DPCommit(const MPMMaterial m, int n, const MPMMaterialPoints *pts)
{
  const DPContext *c = (const DPContext *)m->ctx;
  if (c->f_sat >= 0) { /* wet sand: each particle's cohesion from its saturation (one at a time) */
    const int     d2 = c->k.dim * c->k.dim;
    const double *S  = MPMFieldReal(pts->p, c->f_sat) + pts->q0;
    double       *vc = c->f_vc >= 0 ? MPMFieldReal(pts->p, c->f_vc) + pts->q0 : NULL;
    for (int i = 0; i < n; i++) {
      const double coh = c->k.cohesion + mpm_dp_saturation_cohesion(c->wet_cohesion, c->optimum_saturation, S[i]);
      pts->pcase[i]    = (uint8_t)mpm_dp_update_cohesion(&c->k, coh, pts->Fe + d2 * i, &pts->q[i], &pts->Jp[i], vc ? &vc[i] : NULL, pts->tau + d2 * i);
    }
    return;
  }
  mpm_dp_update_n_vc(&c->k, n, pts->Fe, pts->q, pts->Jp, c->f_vc >= 0 ? MPMFieldReal(pts->p, c->f_vc) + pts->q0 : NULL, pts->tau, pts->pcase);
}

/* The volume-correction scalar, when asked for: checkpointed, migrated and
 * written to frames like any field. */
static PetscErrorCode DPDeclareFields(MPMMaterial m, MPMParticles *p)
{
  DPContext *c = (DPContext *)m->ctx;

  PetscFunctionBeginUser;
  c->f_vc  = -1;
  c->f_sat = -1;
  if (c->wet_cohesion > 0) { /* set by -integrator mixture every step before commit; output for the pictures */
    PetscCall(MPMParticlesFindField(p, "saturation", &c->f_sat));
    if (c->f_sat < 0) PetscCall(MPMParticlesRegisterField(p, "saturation", MPM_FIELD_REAL, 1, NULL, MPM_FIELD_MIGRATE, &c->f_sat));
    PetscCall(MPMParticlesSetOutput(p, c->f_sat, "saturation", MPM_FIELD_REAL, PETSC_FALSE));
  }
  if (!c->volume_correction) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(MPMParticlesRegisterField(p, "volume_correction", MPM_FIELD_REAL, 1, NULL, MPM_FIELD_STATE, &c->f_vc));
  PetscCall(MPMParticlesSetOutput(p, c->f_vc, "volume_correction", MPM_FIELD_REAL, PETSC_FALSE));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static void DPStress(const MPMMaterial m, const double *Fe, double Jp, double *tau)
{
  const MPMDruckerPragerParams *p = (const MPMDruckerPragerParams *)m->ctx;
  mpm_hencky_stress(p->dim, p->mu, p->lambda, Fe, tau);
}

static double DPEnergy(const MPMMaterial m, const double *Fe, double Jp)
{
  const MPMDruckerPragerParams *p = (const MPMDruckerPragerParams *)m->ctx;
  return mpm_hencky_energy(p->dim, p->mu, p->lambda, Fe);
}

/* The trial stress of the implicit step: the return map with the cone of
 * the particle's hardening state at the step's start (the seed is implicit
 * in plasticity, not in hardening). */
static int DPTrial(const MPMMaterial m, const MPMMaterialPoints *pts, int i, const double *Fhat, double *P, MPMIsoLinearization *lin)
{
  const MPMDruckerPragerParams *p = (const MPMDruckerPragerParams *)m->ctx;
  double                        alpha = p->alpha0, tr_apex = p->tr_apex0;
  if (p->hardening) mpm_dp_cone(p, pts->q[i], &alpha, &tr_apex);
  return mpm_dp_trial_piola(p, alpha, tr_apex, Fhat, P, lin);
}

/* Plasticity lagged: Hencky's elastic law (the return map follows in
 * commit), or with -<m>_unilateral its energy times the multiplier h that
 * fades it out where the cone would not let the stress be (expansion, large
 * shear), so that the solve does not lean on tension the return map then
 * removes. */
static void DPElasticTrial(const MPMMaterial m, const MPMMaterialPoints *pts, int i, const double *Fhat, double *P, MPMIsoLinearization *lin)
{
  const DPContext              *ctx = (const DPContext *)m->ctx;
  const MPMDruckerPragerParams *p   = &ctx->k;
  if (ctx->unilateral) mpm_hencky_unilateral_trial_piola(p->dim, p->mu, p->lambda, &ctx->uni, Fhat, P, lin);
  else mpm_hencky_trial_piola(p->dim, p->mu, p->lambda, Fhat, P, lin);
}

/* -<m>_unilateral and its parameters a, b, c0, s_C (eqs. 8-10), in log
 * strain.  The seed's a = -0.5, b = 0 belong to its soft, strongly strained
 * examples; sand of E ~ 1e6-1e7 Pa strains by 1e-4-1e-2, so the default
 * transition is the last 1e-3 of hydrostatic compression before expansion. */
static PetscErrorCode DPUnilateralOptions(MPMMaterial m, DPContext *ctx, PetscOptionItems *PetscOptionsObject)
{
  MPMUnilateral *U = &ctx->uni;

  PetscFunctionBeginUser;
  ctx->unilateral = PETSC_FALSE;
  U->a = -1.0e-3, U->b = 0.0, U->c0 = 1.1, U->shift = 0.0;
  PetscCall(PetscOptionsBool("-unilateral", "The implicit mixture solve's elastic energy is psi h, faded out beyond the cone (Tampubolon et al. 2017 s. 3.1.1; -integrator mixture -mixture_stress implicit)",
                             NULL, ctx->unilateral, &ctx->unilateral, NULL));
  PetscCall(MPMOptionsReal("-unilateral_a", "a of the multiplier: h = 1 where u + f < a + shift (u = tr(eps)/sqrt(dim)) [-]", NULL, U->a, &U->a, NULL));
  PetscCall(MPMOptionsReal("-unilateral_b", "b of the multiplier: h = 0 where u + f > b + shift [-]", NULL, U->b, &U->b, NULL));
  PetscCall(MPMOptionsReal("-unilateral_c0", "c0 of f = c0 v^4/(1 + v^3), the envelope's opening about the hydrostatic axis [-]", NULL, U->c0, &U->c0, NULL));
  PetscCall(MPMOptionsReal("-unilateral_shift", "s_C, the shift of the multiplier along the hydrostatic axis [-]", NULL, U->shift, &U->shift, NULL));
  PetscCheck(U->b > U->a, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s_unilateral_b (%g) must be above -%s_unilateral_a (%g)", m->name, U->b, m->name, U->a);
  PetscCheck(U->c0 >= 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s_unilateral_c0 must be >= 0, got %g", m->name, U->c0);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Klar's feasibility (h0 > h3 >= 0, h1, h2 >= 0) and phi_F(q) in [0, 90) deg for all q. */
static PetscErrorCode DPCheckHardening(MPMMaterial m, const MPMDruckerPragerParams *p)
{
  double phimax = 0;

  PetscFunctionBeginUser;
  PetscCheck(p->h0 >= 0 && p->h0 < PETSC_PI / 2, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT,
             "-%s_friction_angle (or h0 of -%s_hardening) = %g deg is outside [0, 90) deg", m->name, m->name, p->h0 * 180 / PETSC_PI);
  PetscCheck(p->h3 >= 0 && p->h3 <= p->h0 && p->h1 >= 0 && p->h2 >= 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT,
             "-%s_hardening h0,h1,h2,h3 must satisfy h0 >= h3 >= 0 and h1, h2 >= 0 (Klar et al. 2016, eq. 30)", m->name);
  for (int i = 0; i <= 4000; i++) {
    const double phi = mpm_dp_friction_angle(p, 0.01 * i); /* once: PetscMax is a macro */
    phimax           = PetscMax(phimax, phi);
  }
  PetscCheck(phimax < PETSC_PI / 2, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s_hardening reaches a friction angle of %g deg; it must stay below 90 deg", m->name,
             phimax * 180 / PETSC_PI);
  PetscCheck(p->cohesion >= 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s_cohesion must be >= 0 Pa, got %g", m->name, p->cohesion);
  PetscCheck(p->cohesion == 0 || p->h0 - p->h3 > 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT,
             "-%s_cohesion > 0 needs a friction angle > 0 (the Drucker-Prager apex sits at c cot(phi))", m->name);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Plausibility: an angle typed in radians (0.55 for 31.5 deg) is the usual
 * slip; granular friction angles lie between about 15 and 50 deg. */
static PetscErrorCode DPWarnUnusual(MPMMaterial m, const MPMDruckerPragerParams *p)
{
  const double phi = p->h0 * 180 / PETSC_PI;
  char         opt[MPM_NAME_LEN + 24], hint[128];

  PetscFunctionBeginUser;
  PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%s_friction_angle", m->name));
  if (phi > 0 && phi < 1.6) PetscCall(PetscSNPrintf(hint, sizeof(hint), "angles are in degrees (%g rad would be %.1f deg)", phi, phi * 180 / PETSC_PI));
  else PetscCall(PetscStrncpy(hint, "granular friction angles are about 15 to 50 deg", sizeof(hint)));
  if (phi > 0) PetscCall(MPMWarnUnusual(PETSC_COMM_WORLD, opt, phi, 5, 70, "deg", hint));
  PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%s_cohesion", m->name));
  PetscCall(MPMWarnUnusual(PETSC_COMM_WORLD, opt, p->cohesion, 0, 1e7, "Pa", "cohesion is in Pa (moist sand 0.1-10 kPa, 5 kPa is 5000 Pa)"));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* sqrt(J2) / p on the cone ||dev tau||_F + alpha tr tau <= 0: ||dev tau||_F
 * = sqrt(2 J2) and tr tau = -d p give alpha d / sqrt(2) (2D plane strain:
 * sin phi, 3D compression: 2 sqrt(3) sin phi / (3 - sin phi), Daviet's
 * circumscribed); the nonsmooth integrator's mu_hat. */
static double ConeMu(int dim, double alpha) { return alpha * dim / sqrt(2.0); }

/* The mu(I) rheology (D s. 6.3), read by -integrator nonsmooth; the others
 * refuse it (run.c).  The dynamic angle goes through the same cone as the
 * static one. */
static PetscErrorCode DPMuIOptions(MPMMaterial m, const MPMDruckerPragerParams *p, PetscOptionItems *PetscOptionsObject)
{
  MPMMuI *u    = &m->mui;
  double  phi2 = 0;

  PetscFunctionBeginUser;
  u->mu2_hat  = -1;
  u->I0       = 0.279;
  u->diameter = 0.5e-3;
  PetscCall(MPMOptionsReal("-friction_angle_dynamic", "mu(I) rheology (Jop et al. 2006; -integrator nonsmooth): the friction angle of fast flows (I -> infinity), on the same cone as -<m>_friction_angle; 0: constant friction [deg]",
                           NULL, phi2, &phi2, NULL));
  PetscCall(MPMOptionsReal("-inertial_number_i0", "mu(I): the inertial number at which the friction is halfway between the static and the dynamic angle's (Jop et al.: 0.279) [-]", NULL, u->I0, &u->I0, NULL));
  PetscCall(MPMOptionsReal("-grain_diameter", "mu(I): the grains' diameter d of I = d |gamma_dot| / sqrt(p / rho_s) [m]", NULL, u->diameter, &u->diameter, NULL));
  PetscCheck(u->I0 > 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s_inertial_number_i0 must be > 0, got %g", m->name, u->I0);
  PetscCheck(u->diameter > 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s_grain_diameter must be > 0 m, got %g", m->name, u->diameter);
  if (phi2 == 0) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCheck(phi2 * PETSC_PI / 180 >= p->h0 && phi2 < (p->cone == MPM_CONE_REPOSE ? 45 : 90), PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT,
             "-%s_friction_angle_dynamic must be in [-%s_friction_angle, %d) deg = [%g, %d), got %g", m->name, m->name, p->cone == MPM_CONE_REPOSE ? 45 : 90, p->h0 * 180 / PETSC_PI,
             p->cone == MPM_CONE_REPOSE ? 45 : 90, phi2);
  u->mu2_hat = ConeMu(p->dim, mpm_dp_alpha(p->dim, (MPMConeMatch)p->cone, phi2 * PETSC_PI / 180));
  PetscFunctionReturn(PETSC_SUCCESS);
}

const char *const MPMGrainNormalsNames[] = {"isotropic", "random", "aligned", "MPMGrainNormals", "MPM_GRAIN_NORMALS_", NULL};

/* The grains' anisotropy (Daviet and Bertails-Descoubes 2016 s. 6.2), read
 * by -integrator nonsmooth; the others refuse alpha > 0 (run.c). */
static PetscErrorCode DPGrainOptions(MPMMaterial m, PetscOptionItems *PetscOptionsObject)
{
  MPMGrainShape *g = &m->grains;
  char           prefix[MPM_NAME_LEN + 1];
  double         nn = 0;

  PetscFunctionBeginUser;
  PetscCall(PetscSNPrintf(prefix, sizeof(prefix), "%s_", m->name));
  g->alpha   = 0;
  g->ell     = 0.8;
  g->normals = MPM_GRAIN_NORMALS_ISOTROPIC;
  for (int a = 0; a < 3; a++) g->normal[a] = a == 1 ? 1.0 : 0.0;
  PetscCall(MPMOptionsReal("-anisotropy", "Anisotropy alpha of the grains' friction (Daviet and Bertails-Descoubes 2016 s. 6.2; -integrator nonsmooth): the cone seen through N, N^-1 = (1 - alpha) I + d alpha nu2 with nu2 the grains' normals' second moment; aligned normals give a tangent-tangent shear (1 - alpha)^2 mu; 0: isotropic [-]", NULL, g->alpha, &g->alpha, NULL));
  PetscCall(MPMOptionsReal("-grain_elongation", "ell = (L/W - 1)/(L/W + 1) of the grains' shape (Jeffery's equation): how fast shear aligns their normals with the velocity gradient; 0: they only turn with the flow; 0.8: L/W = 9, coin-like [-]", NULL, g->ell, &g->ell, NULL));
  PetscCall(MPMOptionsEList("-grain_normals", "The seeded grains' normals: isotropic (nu2 = I/d per particle), random (one random normal per particle, by its id) or aligned (all along -<m>_grain_normal)", NULL, MPMGrainNormalsNames, 3, MPMGrainNormalsNames[g->normals], &g->normals, NULL));
  PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-grain_normal", "The grains' normal with -<m>_grain_normals aligned (normalized; default y, up in the shipped decks)", m->dim, g->normal, NULL));
  PetscCheck(g->alpha >= 0 && g->alpha < 1, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s_anisotropy must be in [0, 1) (0: isotropic), got %g", m->name, g->alpha);
  PetscCheck(g->ell >= 0 && g->ell <= 1, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s_grain_elongation must be in [0, 1], got %g", m->name, g->ell);
  for (int a = 0; a < m->dim; a++) nn += g->normal[a] * g->normal[a];
  PetscCheck(nn > 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s_grain_normal must not be zero", m->name);
  for (int a = 0; a < m->dim; a++) g->normal[a] /= sqrt(nn);
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMMaterialCreate_DruckerPrager(MPMMaterial m, PetscOptionItems *PetscOptionsObject)
{
  DPContext              *ctx;
  MPMDruckerPragerParams *p;
  double                  phi = 30.0, h[4] = {35, 9, 0.2, 10};
  PetscInt                cone = m->dim == 2 ? MPM_CONE_PLANE_STRAIN : MPM_CONE_COMPRESSION;
  PetscBool               hset, phiset;
  char                    prefix[MPM_NAME_LEN + 1];

  PetscFunctionBeginUser;
  PetscCall(MPMMaterialElasticOptions(m, PetscOptionsObject));
  if (!m->ctx) PetscCall(PetscNew(&ctx));
  else ctx = (DPContext *)m->ctx;
  m->ctx    = ctx;
  p         = &ctx->k;
  ctx->f_vc = -1;
  PetscCall(PetscSNPrintf(prefix, sizeof(prefix), "%s_", m->name));
  PetscCall(MPMOptionsReal("-friction_angle", "Friction angle phi without hardening [deg]", NULL, phi, &phi, &phiset));
  PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-hardening", "Hardening h0,h1,h2,h3 of phi_F = h0 + (h1 q - h3) exp(-h2 q) [deg] (instead of -friction_angle)", 4, h, &hset));
  PetscCheck(!(hset && phiset), PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s_friction_angle and -%s_hardening exclude each other (h0 of the hardening law is the initial friction angle)", m->name, m->name);
  p->cohesion = 0;
  PetscCall(MPMOptionsReal("-cohesion", "Mohr-Coulomb cohesion c [Pa]", NULL, p->cohesion, &p->cohesion, NULL));
  ctx->wet_cohesion       = 0;
  ctx->optimum_saturation = 0.4;
  PetscCall(MPMOptionsReal("-wet_cohesion", "Largest cohesion of the wet sand, at the optimum water saturation (-integrator mixture; Tampubolon et al. 2017 s. 3.4): 0 dry, 0 saturated, added to -cohesion [Pa]", NULL,
                           ctx->wet_cohesion, &ctx->wet_cohesion, NULL));
  PetscCall(MPMOptionsReal("-optimum_saturation", "Water saturation of the pores at which the wet cohesion peaks [-]", NULL, ctx->optimum_saturation, &ctx->optimum_saturation, NULL));
  PetscCheck(ctx->wet_cohesion >= 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s_wet_cohesion must be >= 0 Pa, got %g", m->name, ctx->wet_cohesion);
  PetscCheck(ctx->optimum_saturation > 0 && ctx->optimum_saturation < 1, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s_optimum_saturation must be in (0, 1), got %g", m->name,
             ctx->optimum_saturation);
  PetscCall(MPMOptionsEList("-cone",
                            "Drucker-Prager cone of the friction angle: compression or plane_strain matched to Mohr-Coulomb (plane_strain is exact Mohr-Coulomb in 2D), or repose (phi is the repose angle: "
                            "sqrt(J2) <= tan(phi) p, where volume-preserving flow on a slope of phi stops)",
                            NULL, ConeNames, 3, ConeNames[cone], &cone, NULL));
  p->dim    = (int)m->dim;
  p->mu     = m->mu;
  p->lambda = m->lambda;
  p->cone   = (int)cone;
  if (hset) {
    p->h0 = h[0];
    p->h1 = h[1];
    p->h2 = h[2];
    p->h3 = h[3];
  } else {
    p->h0 = phi;
    p->h1 = p->h2 = p->h3 = 0;
  }
  p->h0 *= PETSC_PI / 180;
  p->h1 *= PETSC_PI / 180;
  p->h3 *= PETSC_PI / 180;
  PetscCall(DPCheckHardening(m, p));
  if (!PetscOptionsObject->printhelp) PetscCall(DPWarnUnusual(m, p));
  PetscCheck(p->cone != MPM_CONE_REPOSE || (p->h0 < PETSC_PI / 4 && !hset), PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT,
             "-%s_cone repose: the repose angle -%s_friction_angle must be below 45 deg (tan(phi) < 1: no tension between grains) and without -%s_hardening, got %g deg", m->name, m->name,
             m->name, p->h0 * 180 / PETSC_PI);
  PetscCheck(ctx->wet_cohesion == 0 || p->h0 - p->h3 > 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT,
             "-%s_wet_cohesion > 0 needs a friction angle > 0 (the Drucker-Prager apex sits at c cot(phi))", m->name);
  mpm_dp_setup(p);
  m->mu_hat = ConeMu(p->dim, p->alpha0);
  if (p->cohesion != 0 || p->hardening || ctx->wet_cohesion > 0) m->mu_hat = -1; /* beyond the nonsmooth integrator's law */
  PetscCall(DPMuIOptions(m, p, PetscOptionsObject));
  ctx->volume_correction = PETSC_FALSE;
  PetscCall(PetscOptionsBool("-volume_correction", "Give back stress-free the volume gained in projections to the cone tip (Tampubolon et al. 2017, s. 4.3.4)", NULL,
                             ctx->volume_correction, &ctx->volume_correction, NULL));
  PetscCall(DPUnilateralOptions(m, ctx, PetscOptionsObject));
  PetscCall(DPGrainOptions(m, PetscOptionsObject));
  m->ops.declare_fields = DPDeclareFields;
  m->flags = MPM_MATERIAL_PLASTIC | MPM_MATERIAL_LAGGED | (ctx->wet_cohesion > 0 ? MPM_MATERIAL_WET : 0u) | (ctx->unilateral ? MPM_MATERIAL_UNILATERAL : 0u);
  m->ops.elastic_trial = DPElasticTrial;
  if (!ctx->volume_correction) {
    m->ops.trial_stress = DPTrial;
    m->flags |= MPM_MATERIAL_DSTRESS;
  } else {
    PetscCall(PetscSNPrintf(ctx->no_trial, sizeof(ctx->no_trial), "not with -%s_volume_correction true (its linearization is not built yet)", m->name));
    m->no_trial_stress = ctx->no_trial;
  }
  m->ops.commit = DPCommit;
  m->ops.stress = DPStress;
  m->ops.energy = DPEnergy;
  PetscFunctionReturn(PETSC_SUCCESS);
}
