/* The registries behind "one code, many methods", on one rank:
 * - the particle field registry: registration is idempotent, a clash of
 *   types is refused, a field registered late gives existing particles its
 *   default, new particles start at every field's default, migration
 *   packing carries the migrating fields and resets the others, sorting
 *   permutes every field alike, removing a list of particles leaves the
 *   rest as the mask compaction does;
 * - the material registry and its capability check: an integrator needing
 *   the stress differential refuses a material without it, naming both
 *   options;
 * - the integrator registry: -integrator explicit is there.
 * Prints "N passed, M failed" and exits nonzero on a failure. */
#include "integrators/integrators.h"

static int  passed, failed;
static char last_error[1024];

static void Expect(int ok, const char *what)
{
  if (ok) passed++;
  else failed++;
  printf("  %-70s %s\n", what, ok ? "ok" : "FAIL");
}

/* Keeps the message of an expected error instead of printing a trace. */
static PetscErrorCode Quiet(MPI_Comm comm, int line, const char *fun, const char *file, PetscErrorCode n, PetscErrorType p, const char *mess, void *ctx)
{
  if (p == PETSC_ERROR_INITIAL) snprintf(last_error, sizeof(last_error), "%s", mess ? mess : "");
  return n;
}

static PetscErrorCode FieldRegistry(void)
{
  MPMParticles p;
  PetscInt     a, b, start, late, scratch, perm[4] = {2, 0, 1, 3};
  const double two[2] = {7, -1};
  char         buf[512];

  PetscFunctionBeginUser;
  PetscCall(MPMParticlesCreate(2, &p));
  PetscCall(MPMParticlesRegisterField(&p, "w", MPM_FIELD_REAL, 2, two, MPM_FIELD_MIGRATE, &a));
  PetscCall(MPMParticlesRegisterField(&p, "w", MPM_FIELD_REAL, 2, two, MPM_FIELD_CHECKPOINT, &b));
  Expect(a == b && (p.field[a].flags & MPM_FIELD_STATE) == MPM_FIELD_STATE, "registering a field twice returns it, flags merged");
  PetscCall(PetscPushErrorHandler(Quiet, NULL));
  Expect(MPMParticlesRegisterField(&p, "w", MPM_FIELD_INT32, 1, NULL, 0, &b) != 0 && strstr(last_error, "w registered twice"), "a clash of types is refused");
  PetscCall(PetscPopErrorHandler());
  PetscCall(MPMParticlesAppend(&p, 3, &start));
  Expect(start == 0 && MPMFieldReal(&p, a)[0] == 7 && MPMFieldReal(&p, a)[5] == -1, "new particles start at the field's default");
  for (PetscInt q = 0; q < 3; q++) {
    MPMFieldInt64(&p, p.f_id)[q]   = 100 + q;
    MPMFieldReal(&p, a)[2 * q]     = q;
    MPMFieldReal(&p, p.f_x)[2 * q] = 0.5 * q;
  }
  PetscCall(MPMParticlesRegisterField(&p, "late", MPM_FIELD_UINT8, 1, (double[]){3}, MPM_FIELD_STATE, &late));
  Expect(MPMFieldUInt8(&p, late)[0] == 3 && MPMFieldUInt8(&p, late)[2] == 3, "a field registered late gives existing particles its default");
  PetscCall(MPMParticlesRegisterField(&p, "scratch", MPM_FIELD_REAL, 1, (double[]){-5}, 0, &scratch));
  MPMFieldReal(&p, scratch)[1] = 42;
  PetscCheck(p.mbytes <= sizeof(buf), PETSC_COMM_SELF, PETSC_ERR_PLIB, "buffer");
  MPMParticlesPackFields(&p, (PetscInt[]){1}, 1, buf);
  PetscCall(MPMParticlesGrow(&p, 1, &start));
  MPMParticlesUnpackFields(&p, start, 1, buf);
  Expect(MPMFieldInt64(&p, p.f_id)[3] == 101 && MPMFieldReal(&p, a)[6] == 1 && MPMFieldUInt8(&p, late)[3] == 3, "unpacking restores the migrating fields");
  Expect(MPMFieldReal(&p, scratch)[3] == -5 && p.mbytes == p.bytes - sizeof(double), "a field without MPM_FIELD_MIGRATE is not sent and arrives at its default");
  PetscCall(MPMParticlesPermute(&p, perm));
  Expect(MPMFieldInt64(&p, p.f_id)[0] == 102 && MPMFieldReal(&p, a)[0] == 2 && MPMFieldReal(&p, p.f_x)[2] == 0.0 && MPMFieldReal(&p, scratch)[2] == 42, "a permutation moves every field alike");
  PetscCall(MPMParticlesDestroy(&p));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Removing a list of particles (the migration's MPMParticlesRemoveField)
 * leaves every field as the mask compaction does: random sets of 0 to all
 * of 200 particles, the first and last among them. */
static PetscErrorCode RemoveList(void)
{
  MPMParticles p, q;
  PetscInt     a, start, gone[200], ngone, same = 1;
  PetscBool    keep[200];
  const double two[2] = {0, 0};

  PetscFunctionBeginUser;
  for (int trial = 0; trial < 40; trial++) {
    MPMParticles *both[2] = {&p, &q};
    for (int k = 0; k < 2; k++) {
      PetscCall(MPMParticlesCreate(2, both[k]));
      PetscCall(MPMParticlesRegisterField(both[k], "w", MPM_FIELD_REAL, 2, two, MPM_FIELD_MIGRATE, &a));
      PetscCall(MPMParticlesAppend(both[k], 200, &start));
      for (PetscInt i = 0; i < 400; i++) MPMFieldReal(both[k], a)[i] = i;
    }
    ngone = 0;
    for (PetscInt i = 0; i < 200; i++) { /* trial 0: none; 39: all; else every particle with probability trial / 40 */
      keep[i] = trial == 0 || (trial < 39 && (double)((1103515245u * (unsigned)(i + 200 * trial) + 12345u) % 1000) >= 25.0 * trial);
      if (!keep[i]) gone[ngone++] = i;
    }
    for (PetscInt f = 0; f < p.nfield; f++) {
      MPMParticlesCompactField(&p, f, keep, MPMParticlesKeptPrefix(&p, keep));
      MPMParticlesRemoveField(&q, f, gone, ngone);
      same = same && !memcmp(p.field[f].data, q.field[f].data, MPMFieldSize(&p.field[f]) * (size_t)(200 - ngone));
    }
    PetscCall(MPMParticlesDestroy(&p));
    PetscCall(MPMParticlesDestroy(&q));
  }
  Expect(same, "removing a list of particles keeps the others in order, as the mask does");
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode Registries(void)
{
  MPMMaterial m;
  PetscErrorCode ierr;

  PetscFunctionBeginUser;
  PetscCall(PetscOptionsSetValue(NULL, "-sand_type", "drucker_prager"));
  PetscCall(MPMMaterialSetUp(PETSC_COMM_WORLD, 3, "sand", &m));
  Expect(m->ops.commit && m->ops.stress && m->ops.energy && m->ops.wave_speed && (m->flags & MPM_MATERIAL_PLASTIC), "drucker_prager fills its ops and is plastic");
  Expect(MPMMaterialRequire(m, MPM_MATERIAL_PLASTIC | MPM_MATERIAL_DSTRESS, "-integrator x") == 0 && m->ops.trial_stress, "capabilities the material has pass");
  PetscCall(MPMMaterialDestroy(&m));
  /* with the volume correction Drucker-Prager has no linearization (yet): refused, with the reason */
  PetscCall(PetscOptionsSetValue(NULL, "-sand_volume_correction", "true"));
  PetscCall(MPMMaterialSetUp(PETSC_COMM_WORLD, 3, "sand", &m));
  PetscCall(PetscPushErrorHandler(Quiet, NULL));
  ierr = MPMMaterialRequire(m, MPM_MATERIAL_DSTRESS, "-integrator implicit");
  PetscCall(PetscPopErrorHandler());
  Expect(ierr == PETSC_ERR_USER_INPUT && strstr(last_error, "-integrator implicit") && strstr(last_error, "-sand_type drucker_prager") &&
           strstr(last_error, "-sand_volume_correction"),
         "a material without dP/dF is refused, naming the options and why");
  PetscCall(MPMMaterialDestroy(&m));
  PetscCall(PetscOptionsClearValue(NULL, "-sand_volume_correction"));
  PetscCall(MPMIntegratorRegisterAll());
  MPMSim sim;
  PetscCall(MPMCreate(PETSC_COMM_WORLD, &sim));
  PetscCall(MPMIntegratorCreate(sim));
  Expect(!strcmp(sim->integ->type, "explicit") && !strcmp(sim->integ->prefix, "explicit_") && sim->integ->ops.step && sim->integ->ops.stable_dt,
         "the default integrator is explicit, prefix explicit_");
  PetscCall(MPMDestroy(&sim));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  printf("registries of particle fields, materials and integrators\n");
  PetscCall(FieldRegistry());
  PetscCall(RemoveList());
  PetscCall(Registries());
  printf("%d passed, %d failed\n", passed, failed);
  PetscCall(PetscFinalize());
  return failed != 0;
}
