/* granular-mpm: the driver.  Everything is in the library; see
 * docs/user-guide.md for the options (or run with -help). */
#include <mpm/mpm.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>
#include <hdf5.h>

static const char help[] = "granular-mpm: distributed material point method (and position-based grains) for granular flows.\n"
                           "Usage: mpiexec -n N granular-mpm -options_file_yaml inputs/<deck>.yaml [-option value ...]\n"
                           "Every option below can be set in the deck and overridden on the command line.\n\n";

/* What a bare run, -h and --help print: enough to start, and where the
 * rest is (-help with a deck lists every option of that deck's objects). */
static const char usage[] =
  "granular-mpm: distributed material point method (and position-based grains) for granular flows.\n"
  "\n"
  "Usage:\n"
  "  mpiexec -n N granular-mpm -options_file_yaml DECK.yaml [-option value ...]\n"
  "  granular-mpm -options_file_yaml DECK.yaml -help   every option of that deck, with units and defaults\n"
  "  granular-mpm --version                             version, commit and libraries\n"
  "\n"
  "A deck is a YAML mapping of options; every option can be overridden on the command line.\n"
  "Decks to start from: inputs/ in the source tree, or share/granular-mpm/inputs/ under the install prefix.\n"
  "Frequent options:\n"
  "  -output_dir DIR       where frames, history.csv, summary.json and checkpoints go\n"
  "  -t_end T [s]          simulated time;  -output_dt T [s]: time between output frames\n"
  "  -monitor N            a progress line every N steps\n"
  "  -integrator NAME      explicit, implicit, semi_implicit, mixture, nonsmooth, pbd\n"
  "  -restart latest       continue from the latest checkpoint in -output_dir\n"
  "Documentation: docs/user-guide.md (options), docs/gallery.md (every shipped deck), docs/architecture.md.\n";

static PetscBool in_setup = PETSC_FALSE;

/* Before MPI starts, Open MPI's environment names the rank. */
static int IsRankZero(void)
{
  const char *rank = getenv("OMPI_COMM_WORLD_RANK");
  return !rank || !strcmp(rank, "0");
}

/* Reading the deck fails on bad input; every rank reads the same values, so
 * every rank fails alike.  Print the one message that names the option
 * (once, from rank 0) instead of a stack trace.  Errors while running keep
 * PETSc's traceback, except the user-input ones (a particle left the
 * domain), which are also raised on every rank. */
static PetscBool IsInputError(PetscErrorCode n)
{
  if (n == PETSC_ERR_USER_INPUT) return PETSC_TRUE;
  if (n == PETSC_ERR_NOT_CONVERGED) return PETSC_TRUE; /* an implicit solve that kept failing: its reason is collective */
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

/* The offending value in PETSc's messages for an unparsable number,
 * integer or logical value ("" if the message is none of those). */
static void BadValue(const char *mess, char *bad, size_t len)
{
  const char *b = strstr(mess, "Input string "), *e = NULL;
  bad[0]        = 0;
  if (b) {
    b += 13;
    e = strstr(b, " has no ");
  } else if ((b = strstr(mess, "Unknown logical value: "))) {
    b += 23;
    e = b + strcspn(b, " \n");
  }
  if (!b || !e || (size_t)(e - b) >= len) return;
  memcpy(bad, b, (size_t)(e - b));
  bad[e - b] = 0;
}

/* PETSc's message for an unparsable value does not say which option it
 * came from; name the options that carry the offending value. */
static void NameBadValue(const char *mess, char *out, size_t len)
{
  char bad[256], *all = NULL;
  out[0] = 0;
  BadValue(mess, bad, sizeof(bad));
  if (!bad[0]) return;
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
static int Finish(MPMSim *sim, PetscErrorCode ierr)
{
  if (IsInputError(ierr)) { /* evaluated while in_setup still says where it happened */
    PetscOptionsSetValue(NULL, "-options_left", "0"); /* the message already said what was wrong */
    MPMDestroy(sim);
    PetscFinalize();
    return 1;
  }
  /* Any other failure may have happened on this rank alone, while the
   * others wait in a collective (a write, a reduction): returning would
   * leave them, and this rank's HDF5 clean-up, waiting forever.  End the
   * whole job; PETSc's traceback above says where and why. */
  fprintf(stderr, "granular-mpm: error: runtime failure (PETSc error %d) on rank %d: aborting every rank\n", (int)ierr, (int)PetscGlobalRank);
  fflush(stderr);
  PETSCABORT(PETSC_COMM_WORLD, ierr);
  return (int)ierr;
}

#define MPM_YAML_MAX_DEPTH 8 /* decks nest two levels (bc: xlo:); PETSc's loader has a fixed limit */

/* One YAML event; 0 with a message naming file, line and column on a
 * syntax error (PETSc's loader would print a stack trace and abort). */
static int YamlEvent(yaml_parser_t *parser, yaml_event_t *ev, const char *path, char *msg, size_t len)
{
  if (yaml_parser_parse(parser, ev)) return 1;
  snprintf(msg, len, "%s:%lu:%lu: %s%s%s%s", path, (unsigned long)parser->problem_mark.line + 1, (unsigned long)parser->problem_mark.column + 1,
           parser->problem ? parser->problem : "syntax error", parser->context ? " (" : "", parser->context ? parser->context : "", parser->context ? ")" : "");
  return 0;
}

/* Parse a YAML deck before PETSc does: syntax, encoding (UTF-8), a mapping
 * at the top, bounded nesting.  0 and a message if it is not a deck. */
static int CheckYamlDeck(const char *path, char *msg, size_t len)
{
  FILE         *f = fopen(path, "rb");
  yaml_parser_t parser;
  yaml_event_t  ev;
  int           ok = 1, depth = 0, first = 1;

  if (!f) {
    snprintf(msg, len, "%s: cannot read the deck file", path);
    return 0;
  }
  yaml_parser_initialize(&parser);
  yaml_parser_set_input_file(&parser, f);
  for (int done = 0; ok && !done;) {
    if (!(ok = YamlEvent(&parser, &ev, path, msg, len))) break;
    if (ev.type == YAML_STREAM_START_EVENT && ev.data.stream_start.encoding != YAML_UTF8_ENCODING && ev.data.stream_start.encoding != YAML_ANY_ENCODING) {
      snprintf(msg, len, "%s: the deck is UTF-16 encoded; save it as UTF-8", path);
      ok = 0;
    } else if (ev.type == YAML_MAPPING_START_EVENT || ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_SCALAR_EVENT) {
      if (first && ev.type != YAML_MAPPING_START_EVENT) {
        snprintf(msg, len, "%s:%lu:%lu: a deck is a mapping of options (key: value lines)", path, (unsigned long)ev.start_mark.line + 1, (unsigned long)ev.start_mark.column + 1);
        ok = 0;
      }
      first = 0;
      if (ev.type != YAML_SCALAR_EVENT && ++depth > MPM_YAML_MAX_DEPTH) {
        snprintf(msg, len, "%s:%lu:%lu: nested deeper than %d levels", path, (unsigned long)ev.start_mark.line + 1, (unsigned long)ev.start_mark.column + 1, MPM_YAML_MAX_DEPTH);
        ok = 0;
      }
    } else if (ev.type == YAML_MAPPING_END_EVENT || ev.type == YAML_SEQUENCE_END_EVENT) depth--;
    done = ev.type == YAML_STREAM_END_EVENT;
    yaml_event_delete(&ev);
  }
  yaml_parser_delete(&parser);
  fclose(f);
  return ok;
}

/* A missing or malformed deck would otherwise fail deep inside
 * PetscInitialize with a stack trace: say it plainly, once (Open MPI names
 * the rank before MPI starts). */
static int CheckDeckFiles(int argc, char **argv)
{
  char msg[1024];
  for (int i = 1; i + 1 < argc; i++) {
    if (strcmp(argv[i], "-options_file_yaml") && strcmp(argv[i], "-options_file")) continue;
    if (access(argv[i + 1], R_OK) == 0) {
      if (strcmp(argv[i], "-options_file_yaml") || CheckYamlDeck(argv[i + 1], msg, sizeof(msg))) continue;
      if (IsRankZero()) fprintf(stderr, "granular-mpm: error: -options_file_yaml %s\n", msg);
      return 1;
    }
    if (IsRankZero()) fprintf(stderr, "granular-mpm: error: %s %s: cannot read the deck file\n", argv[i], argv[i + 1]);
    return 1;
  }
  return 0;
}

/* --version, -h, --help and a bare run are answered before MPI starts: they
 * need no deck (and a bare run would otherwise end in "-materials is
 * required").  Returns -1 to go on, else the exit code. */
static int Informational(int argc, char **argv)
{
  if (argc == 1) {
    if (IsRankZero()) fputs(usage, stderr);
    return 1;
  }
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      if (IsRankZero()) fputs(usage, stdout);
      return 0;
    }
    if (!strcmp(argv[i], "--version")) {
      if (IsRankZero())
        printf("granular-mpm %s\nPETSc %d.%d.%d, HDF5 %d.%d.%d (parallel), MPI %d.%d%s\n", MPMVersion(), PETSC_VERSION_MAJOR, PETSC_VERSION_MINOR, PETSC_VERSION_SUBMINOR,
               H5_VERS_MAJOR, H5_VERS_MINOR, H5_VERS_RELEASE, MPI_VERSION, MPI_SUBVERSION, MPMHaveCatalyst() ? ", ParaView Catalyst" : "");
      return 0;
    }
  }
  return -1;
}

/* A run refused before PETSc starts still passes through MPI_Finalize's
 * fence (PETSc started without the arguments), so no rank leaves before rank 0 has printed why: mpiexec kills the
 * others when the first exits non-zero (at once when the test suite sets
 * odls_base_sigkill_timeout 0), which could swallow the message. */
static int LeaveTogether(int code)
{
  if (PetscInitializeNoArguments() == PETSC_SUCCESS) (void)PetscFinalize(); /* no deck read: MPI starts and ends, nothing else */
  return code;
}

int main(int argc, char **argv)
{
  MPMSim         sim = NULL;
  PetscErrorCode ierr;
  const int      info = Informational(argc, argv);

  if (info >= 0) return info;
  if (CheckDeckFiles(argc, argv)) return LeaveTogether(1);

  PetscCall(MPMMemoryUseHugePages(argc, argv));
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  for (int i = 1; i + 1 < argc; i++) /* the deck's directory: its terrain files are found next to it */
    if (!strcmp(argv[i], "-options_file_yaml") || !strcmp(argv[i], "-options_file")) {
      char        dir[4096];
      const char *slash = strrchr(argv[i + 1], '/');
      snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - argv[i + 1]) : 1, slash ? argv[i + 1] : ".");
      PetscCall(MPMSetDeckDirectory(dir));
    }
  PetscCall(PetscPushErrorHandler(InputErrorHandler, NULL));
  PetscCall(MPMCreate(PETSC_COMM_WORLD, &sim));
  in_setup = PETSC_TRUE;
  ierr     = MPMSetFromOptions(sim);
  if (ierr) return Finish(&sim, ierr);
  in_setup = PETSC_FALSE;
  ierr     = MPMRun(sim);
  if (ierr) return Finish(&sim, ierr);
  const int code = MPMExitCode(sim);
  PetscCall(MPMDestroy(&sim));
  PetscCall(PetscPopErrorHandler());
  PetscCall(PetscFinalize());
  return code;
}
