/* Grains of the position-based granular solver (-integrator pbd; Macklin
 * et al. 2014 s. 6.1, the seed pbd-granular-position-based-friction):
 * rigid spheres (discs in 2D) of one radius, or of radii spread evenly
 * about it (-<m>_radius_variation), with the seed's static and
 * kinetic friction.  No stress and no elastic state: a particle is a grain,
 * and contacts between grains are the only interaction.  The density is
 * the bulk density of the seeded packing (a particle carries density x
 * its lattice cell, as in the continuum methods), so a region weighs the
 * same whichever method moves it.  Options -<m>_radius (required),
 * -<m>_static_friction, -<m>_kinetic_friction, -<m>_density. */
#include "materials.h"

static PetscErrorCode GrainCheck(MPMGrainParams *g, PetscBool rset, const char *name, MPI_Comm comm)
{
  PetscFunctionBeginUser;
  PetscCheck(rset, comm, PETSC_ERR_USER_INPUT, "-%s_radius is required for -%s_type grain: the grain radius, > 0 m", name, name);
  PetscCheck(g->radius > 0, comm, PETSC_ERR_USER_INPUT, "-%s_radius must be > 0 m, got %g", name, g->radius);
  PetscCheck(g->radius_variation >= 0 && g->radius_variation < 0.5, comm, PETSC_ERR_USER_INPUT, "-%s_radius_variation must be in [0, 0.5), got %g", name, g->radius_variation);
  PetscCheck(g->mu_s >= 0 && g->mu_s <= 10, comm, PETSC_ERR_USER_INPUT, "-%s_static_friction must be in [0, 10], got %g", name, g->mu_s);
  PetscCheck(g->mu_k >= 0 && g->mu_k <= g->mu_s, comm, PETSC_ERR_USER_INPUT, "-%s_kinetic_friction must be in [0, -%s_static_friction = %g], got %g", name, name, g->mu_s, g->mu_k);
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMMaterialCreate_Grain(MPMMaterial m, PetscOptionItems *PetscOptionsObject)
{
  MPMGrainParams *g;
  PetscBool       rset = PETSC_FALSE;

  PetscFunctionBeginUser;
  PetscCall(PetscNew(&g));
  m->ctx  = g;
  g->mu_s = 0.6; /* glass beads to sand: repose angles of 22 to 35 deg need mu of about 0.4 to 0.7 */
  g->mu_k = 0.5;
  PetscCall(MPMOptionsReal("-density", "Bulk density of the grains' packing [kg/m^3]", NULL, m->density, &m->density, NULL));
  PetscCall(MPMOptionsReal("-radius", "Grain radius [m] (required)", NULL, g->radius, &g->radius, &rset));
  PetscCall(MPMOptionsReal("-radius_variation", "Radii vary uniformly by +- this fraction of -radius, drawn from each grain's id (polydisperse grains do not crystallize) [-]", NULL, g->radius_variation, &g->radius_variation, NULL));
  PetscCall(MPMOptionsReal("-static_friction", "Static friction coefficient mu_s: a contact whose slip is below mu_s x penetration holds [-]", NULL, g->mu_s, &g->mu_s, NULL));
  PetscCall(MPMOptionsReal("-kinetic_friction", "Kinetic friction coefficient mu_k <= mu_s: a sliding contact loses mu_k x penetration of its slip [-]", NULL, g->mu_k, &g->mu_k, NULL));
  PetscCheck(m->density > 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s_density must be > 0 kg/m^3, got %g", m->name, m->density);
  if (!PetscOptionsObject->printhelp) {
    char opt[MPM_NAME_LEN + 16];
    PetscCall(GrainCheck(g, rset, m->name, PETSC_COMM_WORLD));
    PetscCall(MPMMaterialWarnDensity(m));
    PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%s_radius", m->name));
    PetscCall(MPMWarnUnusual(PETSC_COMM_WORLD, opt, g->radius, 1e-5, 0.5, "m", "lengths are in m (a 2 mm grain is 0.002 m)"));
    PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%s_static_friction", m->name));
    PetscCall(MPMWarnUnusual(PETSC_COMM_WORLD, opt, g->mu_s, 0, 2, "", "a coefficient, tan of the friction angle (30 deg is 0.58)"));
  }
  m->flags          = MPM_MATERIAL_GRAIN;
  m->ops.wave_speed = NULL; /* no elastic waves: the position-based solver has no stiffness limit */
  m->no_trial_stress = "grains have no stress (-integrator pbd)";
  PetscFunctionReturn(PETSC_SUCCESS);
}
