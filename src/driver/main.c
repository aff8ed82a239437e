/* granular-mpm: the driver.  Everything is in the library; see
 * docs/user-guide.md for the options (or run with -help). */
#include <mpm/mpm.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char help[] = "granular-mpm: distributed explicit material point method for granular flows.\n"
                           "Usage: mpiexec -n N granular-mpm -options_file_yaml inputs/<deck>.yaml [-option value ...]\n"
                           "Every option below can be set in the deck and overridden on the command line.\n\n";

static PetscBool in_setup = PETSC_FALSE;

/* Reading the deck fails on bad input; every rank reads the same values, so
 * every rank fails alike.  Print the one message that names the option
 * (once, from rank 0) instead of a stack trace.  Errors while running keep
 * PETSc's traceback, except the user-input ones (a particle left the
 * domain), which are also raised on every rank. */
static PetscBool IsInputError(PetscErrorCode n)
{
  if (n == PETSC_ERR_USER_INPUT) return PETSC_TRUE;
  /* during set-up also PETSc's own option parsing errors (enum values, numbers,
   * too many ranks for the grid), but not system failures */
  return in_setup && n != PETSC_ERR_MEM && n != PETSC_ERR_PLIB && n != PETSC_ERR_LIB && n != PETSC_ERR_SYS && n != PETSC_ERR_MPI && n != PETSC_ERR_SIG &&
         n != PETSC_ERR_MEMC && n != PETSC_ERR_FILE_OPEN && n != PETSC_ERR_FILE_WRITE;
}

/* Is `item` one of the comma-separated elements of `list`? */
static int HasElement(const char *list, const char *item)
{
  const size_t n = strlen(item);
  for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
    if (!strncmp(p, item, n) && (p[n] == ',' || p[n] == 0)) return 1;
  return 0;
}

/* PETSc's message for an unparsable number does not say which option it
 * came from; name the options that carry the offending value. */
static void NameBadValue(const char *mess, char *out, size_t len)
{
  const char *b = strstr(mess, "Input string "), *e = b ? strstr(b, " has no numeric value") : NULL;
  char        bad[256], *all = NULL;
  out[0] = 0;
  if (!b || !e || (size_t)(e - b - 13) >= sizeof(bad)) return;
  memcpy(bad, b + 13, (size_t)(e - b - 13));
  bad[e - b - 13] = 0;
  if (PetscOptionsGetAll(NULL, &all)) return;
  for (char *tok = strtok(all, " "), *opt = NULL; tok; tok = strtok(NULL, " ")) {
    if (tok[0] == '-' && (tok[1] < '0' || tok[1] > '9') && tok[1] != '.') opt = tok;
    else if (opt && HasElement(tok, bad)) snprintf(out + strlen(out), len - strlen(out), " (option %s %s)", opt, tok);
  }
  PetscFree(all);
}

static PetscErrorCode InputErrorHandler(MPI_Comm comm, int line, const char *func, const char *file, PetscErrorCode n, PetscErrorType p, const char *mess, void *ctx)
{
  if (!IsInputError(n)) return PetscTraceBackErrorHandler(comm, line, func, file, n, p, mess, ctx);
  if (p == PETSC_ERROR_INITIAL && PetscGlobalRank == 0) {
    char where[512];
    NameBadValue(mess, where, sizeof(where));
    fprintf(stderr, "granular-mpm: error: %s%s\n", mess, where);
    fflush(stderr);
  }
  return n;
}

/* Input errors are raised on every rank alike (all ranks check the same
 * replicated values), so the run can finalize cleanly and exit 1 instead of
 * aborting MPI. */
static int Finish(PetscErrorCode ierr)
{
  if (IsInputError(ierr)) { /* evaluated while in_setup still says where it happened */
    PetscOptionsSetValue(NULL, "-options_left", "0"); /* the message already said what was wrong */
    PetscFinalize();
    return 1;
  }
  return (int)ierr;
}

/* A missing deck would otherwise fail deep inside PetscInitialize with a
 * stack trace: say it plainly, once (Open MPI names the rank before MPI starts). */
static int CheckDeckFiles(int argc, char **argv)
{
  const char *rank = getenv("OMPI_COMM_WORLD_RANK");
  for (int i = 1; i + 1 < argc; i++) {
    if (strcmp(argv[i], "-options_file_yaml") && strcmp(argv[i], "-options_file")) continue;
    if (access(argv[i + 1], R_OK) == 0) continue;
    if (!rank || !strcmp(rank, "0")) fprintf(stderr, "granular-mpm: error: %s %s: cannot read the deck file\n", argv[i], argv[i + 1]);
    return 1;
  }
  return 0;
}

int main(int argc, char **argv)
{
  MPMSim         sim = NULL;
  PetscErrorCode ierr;

  if (CheckDeckFiles(argc, argv)) return 1;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscPushErrorHandler(InputErrorHandler, NULL));
  PetscCall(MPMCreate(PETSC_COMM_WORLD, &sim));
  in_setup = PETSC_TRUE;
  ierr     = MPMSetFromOptions(sim);
  if (ierr) return Finish(ierr);
  in_setup = PETSC_FALSE;
  ierr     = MPMRun(sim);
  if (ierr) return Finish(ierr);
  const int code = MPMExitCode(sim);
  PetscCall(MPMDestroy(&sim));
  PetscCall(PetscPopErrorHandler());
  PetscCall(PetscFinalize());
  return code;
}
