/* Material registry: a name -> create-function table (PetscFunctionList),
 * like KSPRegister.  Every material instance in a deck has its own options
 * prefix, its instance name: "-materials sand,ball -sand_type
 * drucker_prager -ball_type neo_hookean". */
#include "mpm_impl.h"

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
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MPMMaterialListTypes(char *buf, size_t len)
{
  const char *names[] = {"drucker_prager", "neo_hookean", "hencky_elastic"};

  PetscFunctionBeginUser;
  buf[0] = 0;
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    PetscCall(PetscStrlcat(buf, i ? ", " : "", len));
    PetscCall(PetscStrlcat(buf, names[i], len));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Density and the two elastic constants every model needs. */
PetscErrorCode MPMMaterialElasticOptions(MPMMaterial m, PetscOptionItems *PetscOptionsObject)
{
  PetscFunctionBeginUser;
  PetscCall(PetscOptionsReal("-density", "Density of the solid material [kg/m^3]", NULL, m->density, &m->density, NULL));
  PetscCall(PetscOptionsReal("-youngs_modulus", "Young's modulus E [Pa]", NULL, m->E, &m->E, NULL));
  PetscCall(PetscOptionsReal("-poisson_ratio", "Poisson's ratio nu [-]", NULL, m->nu, &m->nu, NULL));
  PetscCheck(m->density > 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s_density must be > 0 kg/m^3, got %g", m->name, m->density);
  PetscCheck(m->E > 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s_youngs_modulus must be > 0 Pa, got %g", m->name, m->E);
  PetscCheck(m->nu > -1.0 && m->nu < 0.5, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s_poisson_ratio must be in (-1, 0.5), got %g", m->name, m->nu);
  mpm_lame(m->E, m->nu, &m->mu, &m->lambda);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* P-wave speed sqrt((lambda + 2 mu)/rho): the explicit stability limit. */
double MPMMaterialWaveSpeed(const MPMMaterial m)
{
  return sqrt((m->lambda + 2.0 * m->mu) / m->density);
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
  m->dim     = dim;
  m->density = 1600.0;
  m->E       = 1e6;
  m->nu      = 0.3;
  PetscOptionsBegin(comm, prefix, title, NULL);
  PetscCall(PetscOptionsFList("-type", "Constitutive model (required)", NULL, MPMMaterialList, m->type, m->type, sizeof(m->type), &set));
  PetscCall(PetscFunctionListFind(MPMMaterialList, m->type, &create));
  if (!create || !(set || help)) {
    char types[256];
    PetscCall(MPMMaterialListTypes(types, sizeof(types)));
    PetscCheck(set || help, comm, PETSC_ERR_USER_INPUT, "-%s_type is required for material '%s' listed in -materials; allowed: %s", name, name, types);
    SETERRQ(comm, PETSC_ERR_USER_INPUT, "-%s_type %s is not a known material; allowed: %s", name, m->type, types);
  }
  PetscCall(MPMMaterialElasticOptions(m, PetscOptionsObject));
  PetscCall((*create)(m, PetscOptionsObject));
  PetscOptionsEnd();
  *mat = m;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMMaterialDestroy(MPMMaterial *mat)
{
  PetscFunctionBeginUser;
  if (!*mat) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscFree((*mat)->ctx));
  PetscCall(PetscFree(*mat));
  PetscFunctionReturn(PETSC_SUCCESS);
}
