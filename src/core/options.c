/* Helpers for reading the deck: vectors with an exact component count and
 * finite values, and the name lists of -materials/-regions/-objects/-emitters. */
#include "core.h"
#include <stdarg.h>
#include <stdio.h>

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
  for (PetscInt i = 0; i < *n; i++) {
    size_t len;
    PetscCall(PetscStrlen(names[i], &len));
    PetscCheck(len > 0 && len < MPM_NAME_LEN - 1, comm, PETSC_ERR_USER_INPUT, "%s: the name '%s' must have 1 to %d characters", opt, names[i], MPM_NAME_LEN - 2);
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMOptionsFreeNames(char **names, PetscInt n)
{
  PetscFunctionBeginUser;
  for (PetscInt i = 0; i < n; i++) PetscCall(PetscFree(names[i]));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* "a, b, c": the names registered in a PetscFunctionList, for messages. */
PetscErrorCode MPMFunctionListNames(PetscFunctionList list, char *buf, size_t len)
{
  const char **names;
  int          n;

  PetscFunctionBeginUser;
  PetscCall(PetscFunctionListGet(list, &names, &n));
  buf[0] = 0;
  for (int i = 0; i < n; i++) {
    if (!names[i] || !names[i][0]) continue;
    PetscCall(PetscStrlcat(buf, buf[0] ? ", " : "", len));
    PetscCall(PetscStrlcat(buf, names[i], len));
  }
  PetscCall(PetscFree(names));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The option was given with an empty value ("-dx" alone, "dx:" in a deck). */
static PetscErrorCode CheckNotEmpty(PetscOptionItems *PetscOptionsObject, const char opt[])
{
  char      buf[8];
  PetscBool set;

  PetscFunctionBeginUser;
  PetscCall(PetscOptionsGetString(PetscOptionsObject->options, PetscOptionsObject->prefix, opt, buf, sizeof(buf), &set));
  PetscCheck(!set || buf[0], PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s%s needs a value", PetscOptionsObject->prefix ? PetscOptionsObject->prefix : "", opt + 1);
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMOptionsRealChecked(PetscOptionItems *PetscOptionsObject, const char opt[], const char text[], const char man[], PetscReal cur, PetscReal *val, PetscBool *set)
{
  PetscBool s;

  PetscFunctionBeginUser;
  PetscCall(CheckNotEmpty(PetscOptionsObject, opt));
  PetscCall(PetscOptionsReal_Private(PetscOptionsObject, opt, text, man, cur, val, &s));
  PetscCheck(!s || isfinite(*val), PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s%s must be a finite number, got %g", PetscOptionsObject->prefix ? PetscOptionsObject->prefix : "",
             opt + 1, *val);
  if (set) *set = s;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMOptionsIntChecked(PetscOptionItems *PetscOptionsObject, const char opt[], const char text[], const char man[], PetscInt cur, PetscInt *val, PetscBool *set)
{
  PetscFunctionBeginUser;
  PetscCall(CheckNotEmpty(PetscOptionsObject, opt));
  PetscCall(PetscOptionsInt_Private(PetscOptionsObject, opt, text, man, cur, val, set, PETSC_MIN_INT, PETSC_MAX_INT));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMOptionsEListChecked(PetscOptionItems *PetscOptionsObject, const char opt[], const char text[], const char man[], const char *const *list, PetscInt ntext,
                                      const char cur[], PetscInt *val, PetscBool *set)
{
  PetscFunctionBeginUser;
  PetscCall(CheckNotEmpty(PetscOptionsObject, opt));
  PetscCall(PetscOptionsEList_Private(PetscOptionsObject, opt, text, man, list, ntext, cur, val, set));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A direction whose squared length overflows or underflows (1e200, 1e-200)
 * is scaled by its largest component first, so normalising it gives a unit
 * vector, not zero or NaN; ordinary vectors are left bit for bit alone. */
PetscErrorCode MPMVectorTame(PetscInt d, double *v)
{
  double len2 = 0, m = 0;

  PetscFunctionBeginUser;
  for (PetscInt a = 0; a < d; a++) len2 += v[a] * v[a];
  if (isfinite(len2) && len2 > 1e-280) PetscFunctionReturn(PETSC_SUCCESS);
  for (PetscInt a = 0; a < d; a++) m = PetscMax(m, PetscAbs(v[a]));
  if (m > 0 && isfinite(m))
    for (PetscInt a = 0; a < d; a++) v[a] /= m;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ------------------------------------------------------ plausibility */
/* A value far outside an option's usual range is accepted (a study may
 * go there on purpose) but named, with the range and the likely slip
 * (usually units), from rank 0, before the first step.  summary.json
 * counts the warnings. */
static PetscInt nwarnings = 0;

PetscErrorCode MPMWarn(MPI_Comm comm, const char *fmt, ...)
{
  char    msg[1024];
  va_list ap;

  PetscFunctionBeginUser;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  nwarnings++;
  PetscCall(PetscFPrintf(comm, PETSC_STDERR, "granular-mpm: warning: %s\n", msg));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscInt MPMWarnings(void) { return nwarnings; }

PetscErrorCode MPMWarnUnusual(MPI_Comm comm, const char *opt, double value, double lo, double hi, const char *unit, const char *hint)
{
  PetscFunctionBeginUser;
  if (!(value < lo || value > hi)) PetscFunctionReturn(PETSC_SUCCESS);
  const char *sp = unit && unit[0] ? " " : ""; /* a ratio has no unit */
  PetscCall(MPMWarn(comm, "%s = %g%s%s is far outside the usual range [%g, %g]%s%s%s%s", opt, value, sp, unit ? unit : "", lo, hi, sp, unit ? unit : "", hint && hint[0] ? ": " : "", hint ? hint : ""));
  PetscFunctionReturn(PETSC_SUCCESS);
}
