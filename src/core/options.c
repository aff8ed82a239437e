/* Helpers for reading the deck: vectors with an exact component count and
 * finite values, and the name lists of -materials/-regions/-objects/-emitters. */
#include "core.h"

/* Read option `opt` (e.g. "-velocity") of the current options block as a
 * vector of exactly `need` finite values.  PETSc silently drops values
 * beyond the buffer, so read one more than needed and refuse extras.
 * prefix is the block's options prefix ("" for none), for the message. */
PetscErrorCode MPMOptionsVector(PetscOptionItems *PetscOptionsObject, const char *prefix, const char *opt, const char *help, PetscInt need, double *val, PetscBool *set)
{
  double    buf[MPM_MAX_VECTOR + 1];
  PetscInt  n = need + 1;
  PetscBool s;

  PetscFunctionBeginUser;
  PetscCheck(need <= MPM_MAX_VECTOR, PETSC_COMM_SELF, PETSC_ERR_PLIB, "vector option %s longer than %d", opt, MPM_MAX_VECTOR);
  for (PetscInt i = 0; i < need; i++) buf[i] = val[i];
  PetscCall(PetscOptionsRealArray(opt, help, NULL, buf, &n, &s));
  if (s) {
    PetscCheck(n == need, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s%s needs %" PetscInt_FMT " comma-separated values, got %s%" PetscInt_FMT, prefix, opt + 1, need,
               n > need ? "more than " : "", n > need ? need : n);
    for (PetscInt i = 0; i < need; i++) {
      PetscCheck(PetscIsNormalReal(buf[i]) || buf[i] == 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s%s: value %" PetscInt_FMT " (%g) is not a finite number", prefix, opt + 1,
                 i + 1, buf[i]);
      val[i] = buf[i];
    }
  }
  if (set) *set = s;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The comma-separated instance names of a list option (-materials,
 * -regions, -objects, -emitters): *n names in names[], to be freed with
 * MPMOptionsFreeNames().  Too many names is an error, not a truncation. */
PetscErrorCode MPMOptionsGetNames(MPI_Comm comm, const char *title, const char *opt, const char *help, char **names, PetscInt *n)
{
  PetscFunctionBeginUser;
  *n = MPM_MAX_NAMES;
  PetscOptionsBegin(comm, NULL, title, NULL);
  PetscCall(PetscOptionsStringArray(opt, help, NULL, names, n, NULL));
  PetscOptionsEnd();
  PetscCheck(*n < MPM_MAX_NAMES, comm, PETSC_ERR_USER_INPUT, "%s lists %d or more names; at most %d are supported", opt, MPM_MAX_NAMES, MPM_MAX_NAMES - 1);
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMOptionsFreeNames(char **names, PetscInt n)
{
  PetscFunctionBeginUser;
  for (PetscInt i = 0; i < n; i++) PetscCall(PetscFree(names[i]));
  PetscFunctionReturn(PETSC_SUCCESS);
}
