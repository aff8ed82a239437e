/* Material registry: a name -> create-function table (PetscFunctionList),
 * like KSPRegister.  Every material instance in a deck has its own options
 * prefix, its instance name: "-materials sand,ball -sand_type
 * drucker_prager -ball_type neo_hookean".  Also the per-particle state the
 * materials share, registered in the species' field registry. */
#include "materials.h"

static PetscFunctionList MPMMaterialList = NULL;

PetscErrorCode MPMMaterialRegister(const char *type, MPMMaterialCreateFn create)
{
  PetscFunctionBeginUser;
  PetscCall(PetscFunctionListAdd(&MPMMaterialList, type, create));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMMaterialRegisterAll(void)
{
  static PetscBool registered = PETSC_FALSE;

  PetscFunctionBeginUser;
  if (registered) PetscFunctionReturn(PETSC_SUCCESS);
  registered = PETSC_TRUE;
  PetscCall(MPMMaterialRegister("drucker_prager", MPMMaterialCreate_DruckerPrager));
  PetscCall(MPMMaterialRegister("neo_hookean", MPMMaterialCreate_NeoHookean));
  PetscCall(MPMMaterialRegister("hencky_elastic", MPMMaterialCreate_Hencky));
  PetscCall(MPMMaterialRegister("snow", MPMMaterialCreate_Snow));
  PetscCall(MPMMaterialRegister("water", MPMMaterialCreate_Water));
  PetscCall(MPMMaterialRegister("grain", MPMMaterialCreate_Grain));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Plausibility (warnings, not errors): a density or modulus typed in the
 * wrong units is the usual slip. */
PetscErrorCode MPMMaterialWarnDensity(const MPMMaterial m)
{
  char opt[MPM_NAME_LEN + 16];

  PetscFunctionBeginUser;
  PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%s_density", m->name));
  PetscCall(MPMWarnUnusual(PETSC_COMM_WORLD, opt, m->density, 50, 2.5e4, "kg/m^3", "densities are in kg/m^3 (snow 100-900, sand 1500-2100, 2.65 g/cm^3 is 2650 kg/m^3)"));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode WarnElastic(const MPMMaterial m)
{
  char opt[MPM_NAME_LEN + 16];

  PetscFunctionBeginUser;
  PetscCall(MPMMaterialWarnDensity(m));
  PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%s_youngs_modulus", m->name));
  PetscCall(MPMWarnUnusual(PETSC_COMM_WORLD, opt, m->E, 1e3, 1e12, "Pa", "moduli are in Pa (snow 1.4e5, loose sand 1e6-1e8; 20 MPa is 2e7 Pa)"));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Density and the two elastic constants every model needs: called by the
 * model's create function, after it has set its defaults (m->density, E,
 * nu: 1600 kg/m^3, 1 MPa, 0.3 unless it changes them). */
PetscErrorCode MPMMaterialElasticOptions(MPMMaterial m, PetscOptionItems *PetscOptionsObject)
{
  PetscFunctionBeginUser;
  PetscCall(MPMOptionsReal("-density", "Density of the solid material [kg/m^3]", NULL, m->density, &m->density, NULL));
  PetscCall(MPMOptionsReal("-youngs_modulus", "Young's modulus E [Pa]", NULL, m->E, &m->E, NULL));
  PetscCall(MPMOptionsReal("-poisson_ratio", "Poisson's ratio nu [-]", NULL, m->nu, &m->nu, NULL));
  PetscCheck(m->density > 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s_density must be > 0 kg/m^3, got %g", m->name, m->density);
  PetscCheck(m->E > 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s_youngs_modulus must be > 0 Pa, got %g", m->name, m->E);
  PetscCheck(m->nu > -1.0 && m->nu < 0.5, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s_poisson_ratio must be in (-1, 0.5), got %g", m->name, m->nu);
  if (!PetscOptionsObject->printhelp) PetscCall(WarnElastic(m));
  mpm_lame(m->E, m->nu, &m->mu, &m->lambda);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* P-wave speed sqrt((lambda + 2 mu)/rho) of the small-strain Lame
 * parameters: the default ops.wave_speed. */
double MPMMaterialWaveSpeedElastic(const MPMMaterial m, double density) { return sqrt((m->lambda + 2.0 * m->mu) / density); }

/* An integrator (`who`, e.g. "-integrator implicit") that needs a
 * capability refuses a material without it, naming both options. */
PetscErrorCode MPMMaterialRequire(const MPMMaterial m, unsigned flags, const char *who)
{
  PetscFunctionBeginUser;
  PetscCheck(!(flags & MPM_MATERIAL_DSTRESS) || m->ops.trial_stress, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT,
             "%s needs the linearized stress dP/dF of every material, which -%s_type %s does not provide%s%s", who, m->name, m->type, m->no_trial_stress ? ": " : "",
             m->no_trial_stress ? m->no_trial_stress : "");
  PetscCheck(!(flags & MPM_MATERIAL_LAGGED) || m->ops.elastic_trial || m->ops.fluid_trial, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT,
             "%s needs the elastic stress and its linearization of every material, which -%s_type %s does not provide", who, m->name, m->type);
  PetscCheck(!(flags & MPM_MATERIAL_PLASTIC) || (m->flags & MPM_MATERIAL_PLASTIC), PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "%s needs a plastic material, -%s_type %s is not", who,
             m->name, m->type);
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMMaterialSetUp(MPI_Comm comm, PetscInt dim, const char *name, MPMMaterial *mat)
{
  MPMMaterial         m;
  char                prefix[MPM_NAME_LEN + 1], title[2 * MPM_NAME_LEN];
  MPMMaterialCreateFn create = NULL;
  PetscBool           set = PETSC_FALSE, help;

  PetscFunctionBeginUser;
  PetscCall(MPMMaterialRegisterAll());
  PetscCall(PetscOptionsHasHelp(NULL, &help));
  PetscCall(PetscNew(&m));
  PetscCall(PetscStrncpy(m->name, name, sizeof(m->name)));
  PetscCall(PetscStrncpy(m->type, "drucker_prager", sizeof(m->type)));
  PetscCall(PetscSNPrintf(prefix, sizeof(prefix), "%s_", name));
  PetscCall(PetscSNPrintf(title, sizeof(title), "Material '%s'", name));
  m->dim            = dim;
  m->density        = 1600.0;
  m->E              = 1e6;
  m->nu             = 0.3;
  m->ops.wave_speed = MPMMaterialWaveSpeedElastic;
  PetscOptionsBegin(comm, prefix, title, NULL);
  PetscCall(PetscOptionsFList("-type", "Constitutive model (required)", NULL, MPMMaterialList, m->type, m->type, sizeof(m->type), &set));
  PetscCall(PetscFunctionListFind(MPMMaterialList, m->type, &create));
  if (!create || !(set || help)) {
    char types[256];
    PetscCall(MPMFunctionListNames(MPMMaterialList, types, sizeof(types)));
    PetscCheck(set || help, comm, PETSC_ERR_USER_INPUT, "-%s_type is required for material '%s' listed in -materials; allowed: %s", name, name, types);
    SETERRQ(comm, PETSC_ERR_USER_INPUT, "-%s_type %s is not a known material; allowed: %s", name, m->type, types);
  }
  PetscCall((*create)(m, PetscOptionsObject));
  PetscOptionsEnd();
  if (m->true_density <= 0) m->true_density = m->density;
  *mat = m;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMMaterialDestroy(MPMMaterial *mat)
{
  PetscFunctionBeginUser;
  if (!*mat) PetscFunctionReturn(PETSC_SUCCESS);
  if ((*mat)->ops.destroy) PetscCall((*mat)->ops.destroy(*mat));
  PetscCall(PetscFree((*mat)->ctx));
  PetscCall(PetscFree(*mat));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The elastoplastic state the materials share: F_E (identity at rest), the
 * plastic volume ratio Jp (1), the hardening state q and the case of the
 * last return mapping, in checkpoints and (Jp, q, case) in frames. */
static PetscErrorCode DeclareSharedFields(MPMParticles *p)
{
  const int d = (int)p->dim;
  double    eye[9] = {0}, one = 1.0;
  PetscInt  f;

  PetscFunctionBeginUser;
  for (int a = 0; a < d; a++) eye[a * (d + 1)] = 1.0;
  PetscCall(MPMParticlesRegisterField(p, "Fe", MPM_FIELD_REAL, d * d, eye, MPM_FIELD_STATE, &f));
  PetscCall(MPMParticlesRegisterField(p, "Jp", MPM_FIELD_REAL, 1, &one, MPM_FIELD_STATE, &f));
  PetscCall(MPMParticlesSetOutput(p, f, "plastic_volume_ratio", MPM_FIELD_REAL, PETSC_FALSE));
  PetscCall(MPMParticlesRegisterField(p, "q", MPM_FIELD_REAL, 1, NULL, MPM_FIELD_STATE, &f));
  PetscCall(MPMParticlesSetOutput(p, f, "hardening", MPM_FIELD_REAL, PETSC_FALSE));
  PetscCall(MPMParticlesRegisterField(p, "plastic_case", MPM_FIELD_UINT8, 1, NULL, MPM_FIELD_STATE, &f));
  PetscCall(MPMParticlesSetOutput(p, f, "plastic_case", MPM_FIELD_INT32, PETSC_FALSE));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Append material m to species sp. */
static PetscErrorCode SpeciesAddMaterial(MPMSpecies *sp, MPMMaterial m)
{
  PetscFunctionBeginUser;
  PetscCall(PetscRealloc(sizeof(MPMMaterial) * (sp->nmat + 1), &sp->mat));
  PetscCall(PetscRealloc(sizeof(*sp->matinfo) * (sp->nmat + 1), &sp->matinfo));
  sp->mat[sp->nmat] = m;
  PetscCall(PetscStrncpy(sp->matinfo[sp->nmat].name, m->name, sizeof(sp->matinfo[sp->nmat].name)));
  sp->matinfo[sp->nmat].density = m->density;
  sp->nmat++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Grains (-integrator pbd) have no elastoplastic state: a species of
 * grains only carries the fields every particle has. */
static PetscErrorCode SpeciesDeclareFields(MPMSpecies *sp)
{
  PetscInt ngrain = 0;

  PetscFunctionBeginUser;
  for (PetscInt m = 0; m < sp->nmat; m++) ngrain += (sp->mat[m]->flags & MPM_MATERIAL_GRAIN) ? 1 : 0;
  PetscCheck(ngrain == 0 || ngrain == sp->nmat, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT,
             "-materials mixes grains (-<m>_type grain, moved by -integrator pbd) with continuum materials; a run uses one or the other");
  if (ngrain) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(DeclareSharedFields(&sp->p));
  for (PetscInt m = 0; m < sp->nmat; m++)
    if (sp->mat[m]->ops.declare_fields) PetscCall(sp->mat[m]->ops.declare_fields(sp->mat[m], &sp->p));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The materials of -materials, in their order, to `solid`, or split by
 * phase when `fluid` is given (the two-phase integrators): fluids
 * (MPM_MATERIAL_FLUID) to `fluid`, the others to `solid`. */
PetscErrorCode MPMMaterialsSetUp(MPMSim sim, MPMSpecies *solid, MPMSpecies *fluid)
{
  char    *names[MPM_MAX_NAMES];
  PetscInt n;

  PetscFunctionBeginUser;
  PetscCall(MPMOptionsGetNames(sim->comm, "Materials", "-materials", "Names of the materials; each reads -<name>_type and -<name>_*", names, &n));
  PetscCheck(n > 0 || sim->help, sim->comm, PETSC_ERR_USER_INPUT, "-materials is required: a comma-separated list of material names, e.g. -materials sand");
  for (PetscInt m = 0; m < n; m++) {
    MPMMaterial mat;
    PetscCall(MPMMaterialSetUp(sim->comm, sim->dim, names[m], &mat));
    PetscCall(SpeciesAddMaterial(fluid && (mat->flags & MPM_MATERIAL_FLUID) ? fluid : solid, mat));
  }
  PetscCall(MPMOptionsFreeNames(names, n));
  PetscCall(SpeciesDeclareFields(solid));
  if (fluid) PetscCall(SpeciesDeclareFields(fluid));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMMaterialsDestroy(MPMSpecies *sp)
{
  PetscFunctionBeginUser;
  for (PetscInt m = 0; m < sp->nmat; m++) PetscCall(MPMMaterialDestroy(&sp->mat[m]));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMMaterialsFields(const MPMSpecies *sp, MPMMaterialFields *mf)
{
  PetscFunctionBeginUser;
  PetscCall(MPMParticlesFindField(&sp->p, "Fe", &mf->f_Fe));
  PetscCall(MPMParticlesFindField(&sp->p, "Jp", &mf->f_Jp));
  PetscCall(MPMParticlesFindField(&sp->p, "q", &mf->f_q));
  PetscCall(MPMParticlesFindField(&sp->p, "plastic_case", &mf->f_pcase));
  PetscCheck(mf->f_Fe >= 0 && mf->f_Jp >= 0 && mf->f_q >= 0 && mf->f_pcase >= 0, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Species %s has no material state", sp->name);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The shared state of particles q0.. of the species; tau is the caller's
 * stress field (f_tau < 0: none). */
void MPMMaterialsPoints(MPMSpecies *sp, const MPMMaterialFields *mf, PetscInt f_tau, PetscInt q0, MPMMaterialPoints *pts)
{
  MPMParticles  *p  = &sp->p;
  const PetscInt d2 = p->dim * p->dim;

  pts->Fe    = MPMFieldReal(p, mf->f_Fe) + q0 * d2;
  pts->tau   = f_tau >= 0 ? MPMFieldReal(p, f_tau) + q0 * d2 : NULL;
  pts->Jp    = MPMFieldReal(p, mf->f_Jp) + q0;
  pts->q     = MPMFieldReal(p, mf->f_q) + q0;
  pts->pcase = MPMFieldUInt8(p, mf->f_pcase) + q0;
  pts->p     = p;
  pts->q0    = q0;
}

/* Elastic energy on this rank: sum of V0 psi(F_E) (K20) [J]. */
double MPMMaterialsElasticEnergy(const MPMSpecies *sp)
{
  const MPMParticles *p  = &sp->p;
  const PetscInt      d2 = p->dim * p->dim;
  const int32_t      *mat = MPMFieldInt32(p, p->f_mat);
  const double       *V0  = MPMFieldReal(p, p->f_V0);
  PetscInt            f_Fe, f_Jp;
  double              e = 0;
  if (MPMParticlesFindField(p, "Fe", &f_Fe) || f_Fe < 0 || MPMParticlesFindField(p, "Jp", &f_Jp) || f_Jp < 0) return 0; /* a species without material state has no elastic energy */
  const double *Fe = MPMFieldReal(p, f_Fe), *Jp = MPMFieldReal(p, f_Jp);
  for (PetscInt q = 0; q < p->n; q++) {
    const MPMMaterial m = sp->mat[mat[q]];
    e += V0[q] * m->ops.energy(m, Fe + q * d2, Jp[q]);
  }
  return e;
}

/* The height of x along -gravity (up), and |g|. */
static double Height(const MPMSim sim, const double *x, double *g)
{
  double g2 = 0, h = 0;
  for (PetscInt a = 0; a < sim->dim; a++) g2 += sim->gravity[a] * sim->gravity[a];
  *g = sqrt(g2);
  if (!(g2 > 0)) return 0;
  for (PetscInt a = 0; a < sim->dim; a++) h -= x[a] * sim->gravity[a] / *g;
  return h;
}

/* Particles whose grains have no orientation yet (the field
 * "grain_orientation", d x d, all 0: seeded, or emitted since) take their
 * material's -<m>_grain_normals: isotropic nu2 = I/d, one random normal
 * n n^T drawn from the particle's id (the same on any rank count), or the
 * aligned -<m>_grain_normal.  Nothing when the method carries no
 * orientation (the nonsmooth integrator with anisotropic grains does). */
void MPMMaterialsGrainsInit(MPMSpecies *sp, uint64_t seed)
{
  MPMParticles *p = &sp->p;
  const int     d = (int)p->dim;
  PetscInt      f;
  if (MPMParticlesFindField(p, "grain_orientation", &f) || f < 0) return;
  double        *nu2 = MPMFieldReal(p, f);
  const int64_t *id  = MPMFieldInt64(p, p->f_id);
  const int32_t *mat = MPMFieldInt32(p, p->f_mat);
  for (PetscInt q = 0; q < p->n; q++) {
    double *N = nu2 + q * d * d, tr = 0, nv[3] = {0, 0, 0};
    for (int a = 0; a < d; a++) tr += N[a * (d + 1)];
    if (tr > 0) continue;
    const MPMGrainShape *g = &sp->mat[mat[q]]->grains;
    if (g->normals == MPM_GRAIN_NORMALS_ISOTROPIC) {
      for (int k = 0; k < d * d; k++) N[k] = k % (d + 1) == 0 ? 1.0 / d : 0.0;
      continue;
    }
    if (g->normals == MPM_GRAIN_NORMALS_ALIGNED)
      for (int a = 0; a < d; a++) nv[a] = g->normal[a];
    else { /* uniform on the circle or the sphere */
      const double ph = 2 * PETSC_PI * mpm_uniform(seed, (uint64_t)id[q], 11);
      const double z  = d == 3 ? 2 * mpm_uniform(seed, (uint64_t)id[q], 12) - 1 : 0.0, rxy = sqrt(1 - z * z);
      nv[0] = rxy * cos(ph), nv[1] = rxy * sin(ph), nv[2] = z;
    }
    for (int a = 0; a < d; a++)
      for (int b = 0; b < d; b++) N[a * d + b] = nv[a] * nv[b];
  }
}

PetscErrorCode MPMMaterialsInitialState(MPMSim sim)
{
  PetscFunctionBeginUser;
  for (PetscInt s = 0; s < sim->nspecies; s++) MPMMaterialsGrainsInit(sim->species[s], sim->seed);
  for (PetscInt r = 0; r < sim->nreg; r++) {
    const MPMRegion  *R = &sim->reg[r];
    const MPMMaterial m = sim->species[R->species]->mat[R->mat];
    PetscCheck(!R->hydrostatic || m->ops.hydrostatic, sim->comm, PETSC_ERR_USER_INPUT, "-%s_water_table: region '%s' is of -%s_type %s; a hydrostatic start needs a fluid (water)", R->name,
               R->name, m->name, m->type);
  }
  for (PetscInt s = 0; s < sim->nspecies; s++) {
    MPMSpecies    *sp = sim->species[s];
    MPMParticles  *p  = &sp->p;
    const PetscInt d2 = p->dim * p->dim;
    PetscInt       f_Fe, f_Jp, f_tau;
    PetscCall(MPMParticlesFindField(p, "Fe", &f_Fe));
    PetscCall(MPMParticlesFindField(p, "Jp", &f_Jp));
    PetscCall(MPMParticlesFindField(p, "tau", &f_tau));
    if (f_Fe < 0 || f_Jp < 0 || f_tau < 0) continue; /* no stress state in this method */
    double        *Fe = MPMFieldReal(p, f_Fe), *Jp = MPMFieldReal(p, f_Jp), *tau = MPMFieldReal(p, f_tau);
    const double  *x   = MPMFieldReal(p, p->f_x);
    const int64_t *id  = MPMFieldInt64(p, p->f_id);
    const int32_t *mat = MPMFieldInt32(p, p->f_mat);
    for (PetscInt q = 0; q < p->n; q++) {
      const PetscInt    r = MPMRegionOfId(id[q]);
      const MPMMaterial m = sp->mat[mat[q]];
      if (r >= 0 && r < sim->nreg && sim->reg[r].hydrostatic) {
        double g, h = Height(sim, x + q * p->dim, &g);
        m->ops.hydrostatic(m, g * PetscMax(0.0, sim->reg[r].water_table - h), Fe + q * d2, Jp + q);
      }
      m->ops.stress(m, Fe + q * d2, Jp[q], tau + q * d2);
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}
