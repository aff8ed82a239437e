/* Run records: the output directory, run.json (provenance, written at
 * start), history.csv (the invariants, the integrator's statistics and the
 * force on every collider, one row per frame or -history_interval steps),
 * summary.json (written at the end) and the global diagnostics.
 *
 * Files are written to a temporary name and renamed, so a killed run
 * leaves only complete files behind. */
#define _POSIX_C_SOURCE 200809L /* dirent, unlink under -std=c11 */
#include "io.h"
#include <sys/resource.h>
#include <sys/stat.h>
#include <dirent.h>
#include <errno.h>
#include <time.h>
#include <unistd.h>

static PetscErrorCode MakeDir(const char *path)
{
  char     buf[PETSC_MAX_PATH_LEN];
  size_t   len;

  PetscFunctionBeginUser;
  PetscCall(PetscStrncpy(buf, path, sizeof(buf)));
  PetscCall(PetscStrlen(buf, &len));
  for (size_t i = 1; i <= len; i++) {
    if (buf[i] != '/' && buf[i] != 0) continue;
    const char c = buf[i];
    buf[i]       = 0;
    PetscCheck(mkdir(buf, 0755) == 0 || errno == EEXIST, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "-output_dir: cannot create directory %s: %s", buf, strerror(errno));
    buf[i] = c;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Write text to path atomically (temporary file, then rename). */
PetscErrorCode MPMWriteFileAtomic(const char *path, const char *text)
{
  char  tmp[PETSC_MAX_PATH_LEN];
  FILE *f;

  PetscFunctionBeginUser;
  PetscCall(PetscSNPrintf(tmp, sizeof(tmp), "%s.tmp", path));
  f = fopen(tmp, "w");
  PetscCheck(f, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "Cannot write %s: %s", tmp, strerror(errno));
  fputs(text, f);
  PetscCheck(fclose(f) == 0, PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE, "Cannot write %s", tmp);
  PetscCheck(rename(tmp, path) == 0, PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE, "Cannot rename %s to %s", tmp, path);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* JSON string escaping of the options database (it may contain quotes). */
static void JsonEscape(const char *in, char *out, size_t len)
{
  size_t j = 0;
  for (size_t i = 0; in && in[i] && j + 7 < len; i++) {
    const char c = in[i];
    if (c == '"' || c == '\\') {
      out[j++] = '\\';
      out[j++] = c;
    } else if ((unsigned char)c < 0x20) out[j++] = ' ';
    else out[j++] = c;
  }
  out[j] = 0;
}

/* run.json at a fresh start; restart_<step>.json when continuing from a
 * checkpoint (run.json keeps the original run's record). */
static PetscErrorCode WriteRunRecord(MPMSim sim, PetscBool restarted)
{
  char     *esc, *text;
  size_t    len;
  time_t    now = time(NULL);
  char      stamp[64], path[PETSC_MAX_PATH_LEN];
  unsigned  h5maj, h5min, h5rel;

  PetscFunctionBeginUser;
  PetscCall(PetscStrlen(sim->options_string, &len));
  PetscCall(PetscMalloc2(2 * len + 16, &esc, 2 * len + 4096, &text));
  JsonEscape(sim->options_string, esc, 2 * len + 16);
  strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S%z", localtime(&now));
  H5get_libversion(&h5maj, &h5min, &h5rel);
  PetscCall(PetscSNPrintf(text, 2 * len + 4096,
                          "{\n  \"program\": \"granular-mpm\",\n  \"version\": \"%s\",\n  \"petsc\": \"%d.%d.%d\",\n  \"hdf5\": \"%u.%u.%u\",\n"
                          "  \"ranks\": %d,\n  \"dim\": %" PetscInt_FMT ",\n  \"integrator\": \"%s\",\n  \"started\": \"%s\",\n  \"restart_step\": %" PetscInt_FMT ",\n  \"options\": \"%s\"\n}\n",
                          MPMVersion(), PETSC_VERSION_MAJOR, PETSC_VERSION_MINOR, PETSC_VERSION_SUBMINOR, h5maj, h5min, h5rel, sim->size, sim->dim, sim->integ->type, stamp,
                          restarted ? sim->step : (PetscInt)-1, esc));
  if (restarted) PetscCall(PetscSNPrintf(path, sizeof(path), "%s/restart_%08" PetscInt_FMT ".json", sim->outdir, sim->step));
  else PetscCall(PetscSNPrintf(path, sizeof(path), "%s/run.json", sim->outdir));
  PetscCall(MPMWriteFileAtomic(path, text));
  PetscCall(PetscFree2(esc, text));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Files written by rank 0 alone: every rank learns whether it worked, so a
 * failure stops all ranks instead of leaving them waiting in a collective. */
PetscErrorCode MPMRank0Outcome(MPMSim sim, PetscErrorCode ierr, const char *what)
{
  int code = (int)ierr;

  PetscFunctionBeginUser;
  PetscCall(MPMBroadcastInt(sim->comm, &code));
  PetscCheck(code == 0, sim->comm, PETSC_ERR_FILE_WRITE, "Rank 0 failed %s in -output_dir %s (its message is above)", what, sim->outdir);
  PetscFunctionReturn(PETSC_SUCCESS);
}


/* mkdir -p on rank 0, the outcome known to all ranks. */
PetscErrorCode MPMOutputMakeDir(MPMSim sim, const char *dir)
{
  PetscFunctionBeginUser;
  PetscCall(MPMRank0Outcome(sim, sim->rank == 0 ? MakeDir(dir) : PETSC_SUCCESS, "creating a directory"));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Remove the temporaries a killed run may have left (they never got their
 * final name, so no reader ever saw them). */
static void RemoveTemporaries(const char *dir)
{
  DIR           *d = opendir(dir);
  struct dirent *e;
  char           path[PETSC_MAX_PATH_LEN];
  if (!d) return;
  while ((e = readdir(d))) {
    const size_t len = strlen(e->d_name);
    if (len > 4 && !strcmp(e->d_name + len - 4, ".tmp")) {
      snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
      unlink(path);
    }
  }
  closedir(d);
}

/* Appends ",name" to the header and ",unit" to the units row (the first
 * column without the comma). */
static PetscErrorCode AddColumn(char *h, char *u, size_t len, const char *name, const char *unit)
{
  PetscFunctionBeginUser;
  PetscCall(PetscSNPrintf(h + strlen(h), len - strlen(h), "%s%s", h[0] ? "," : "", name));
  PetscCall(PetscSNPrintf(u + strlen(u), len - strlen(u), "%s%s", u[0] ? "," : "", unit && unit[0] ? unit : "-"));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The header of history.csv and its SI units (history_units.csv: the same
 * header over a row of units; "-": a count or a ratio; 2D: per unit
 * depth): the invariants, then the integrator's statistics, then the mean
 * force and torque on every collider since the previous row (2D: fx, fy,
 * tz; 3D: fx, fy, fz, tx, ty, tz), then the dynamic bodies' centre,
 * velocity and angular velocity.  Allocated; no newline. */
static PetscErrorCode HistoryColumns(MPMSim sim, char **header, char **units)
{
  MPMStepStats       st;
  const MPMColliders c    = sim->colliders;
  const size_t       len  = 512 + 40 * MPM_MAX_STATS + 15 * (size_t)c->nobj * (MPM_NAME_LEN + 8);
  const PetscBool    d3   = sim->dim == 3 ? PETSC_TRUE : PETSC_FALSE;
  static const char *f3[] = {"fx", "fy", "fz", "tx", "ty", "tz"}, *f2[] = {"fx", "fy", "tz"};
  static const char *b3[] = {"x", "y", "z", "vx", "vy", "vz", "wx", "wy", "wz"}, *b2[] = {"x", "y", "vx", "vy", "wz"};
  const char        *energy = d3 ? "J" : "J/m", *momentum = d3 ? "kg m/s" : "kg/s";
  const char *const  fixed[][2] = {{"t", "s"}, {"step", "-"}, {"particles", "-"}, {"mass", d3 ? "kg" : "kg/m"}, {"momentum_x", momentum}, {"momentum_y", momentum}, {"momentum_z", momentum},
                                   {"kinetic_energy", energy}, {"elastic_energy", energy}, {"dt", "s"}, {"vmax", "m/s"}, {"imbalance", "-"},
                                   {"potential_energy", energy}, {"work_objects", energy}, {"dissipated_energy", energy}};
  char              *h, *u, name[MPM_NAME_LEN + 8];

  PetscFunctionBeginUser;
  PetscCall(PetscCalloc2(len, &h, len, &u));
  for (size_t k = 0; k < sizeof(fixed) / sizeof(fixed[0]); k++) PetscCall(AddColumn(h, u, len, fixed[k][0], fixed[k][1]));
  PetscCall(MPMIntegratorStats(sim->integ, &st));
  for (PetscInt i = 0; i < st.n; i++) PetscCall(AddColumn(h, u, len, st.name[i], st.unit[i]));
  for (PetscInt o = 0; o < c->nobj; o++) {
    if (!MPMColliderReported(&c->obj[o])) continue;
    for (int k = 0; k < (d3 ? 6 : 3); k++) {
      const PetscBool torque = d3 ? (k >= 3 ? PETSC_TRUE : PETSC_FALSE) : (k == 2 ? PETSC_TRUE : PETSC_FALSE);
      PetscCall(PetscSNPrintf(name, sizeof(name), "%s_%s", c->obj[o].name, d3 ? f3[k] : f2[k]));
      PetscCall(AddColumn(h, u, len, name, torque ? (d3 ? "N m" : "N m/m") : (d3 ? "N" : "N/m")));
    }
  }
  for (PetscInt o = 0; o < c->nobj; o++) {
    if (!c->obj[o].dynamic) continue;
    for (int k = 0; k < (d3 ? 9 : 5); k++) {
      const char *b = d3 ? b3[k] : b2[k];
      PetscCall(PetscSNPrintf(name, sizeof(name), "%s_%s", c->obj[o].name, b));
      PetscCall(AddColumn(h, u, len, name, b[0] == 'w' ? "rad/s" : (b[0] == 'v' ? "m/s" : "m")));
    }
  }
  *header = h;
  *units  = u;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* history_units.csv: history.csv's header over the row of its units. */
static PetscErrorCode WriteHistoryUnitsRank0(MPMSim sim, const char *header, const char *units)
{
  char  path[PETSC_MAX_PATH_LEN];
  FILE *f;

  PetscFunctionBeginUser;
  PetscCall(PetscSNPrintf(path, sizeof(path), "%s/history_units.csv", sim->outdir));
  f = fopen(path, "w");
  PetscCheck(f, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "Cannot write %s: %s", path, strerror(errno));
  fprintf(f, "%s\n%s\n", header, units);
  PetscCheck(fclose(f) == 0, PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE, "Cannot write %s: %s", path, strerror(errno));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* On restart, history.csv keeps its rows up to the checkpoint's step (a
 * killed run may have written rows past it, or half a row).  If its columns
 * are not this run's (a run from an older version, or -objects / -bc_*
 * changed), those rows are kept in history_until_<step>.csv and
 * history.csv starts anew (*fresh); also when there is none. */
static PetscErrorCode TruncateCsvRank0(MPMSim sim, const char *path, const char *header, PetscBool *fresh)
{
  FILE   *in = fopen(path, "r"), *out;
  char   *line = NULL, tmp[PETSC_MAX_PATH_LEN + 8], keep[PETSC_MAX_PATH_LEN];
  size_t  cap  = 0;
  ssize_t len;
  double  t;
  long    step;

  PetscFunctionBeginUser;
  *fresh = PETSC_TRUE;
  if (!in) PetscFunctionReturn(PETSC_SUCCESS);
  len = getline(&line, &cap, in);
  if (len > 0 && line[len - 1] == '\n') line[--len] = 0;
  *fresh = len <= 0 || strcmp(line, header) ? PETSC_TRUE : PETSC_FALSE;
  if (*fresh && len > 0) {
    PetscCall(PetscStrncpy(keep, path, sizeof(keep)));
    PetscCall(PetscSNPrintf(keep + strlen(keep) - 4, sizeof(keep) - strlen(keep) + 4, "_until_%08" PetscInt_FMT ".csv", sim->step)); /* path ends in .csv */
  }
  else PetscCall(PetscStrncpy(keep, path, sizeof(keep)));
  PetscCall(PetscSNPrintf(tmp, sizeof(tmp), "%s.tmp", keep));
  out = fopen(tmp, "w");
  PetscCheck(out, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "Cannot write %s: %s", tmp, strerror(errno));
  if (len > 0) fprintf(out, "%s\n", line); /* the header */
  while ((len = getline(&line, &cap, in)) > 0)
    if (line[len - 1] == '\n' && sscanf(line, "%lf,%ld,", &t, &step) == 2 && step <= sim->step) fputs(line, out);
  fclose(in);
  free(line);
  PetscCheck(fclose(out) == 0 && rename(tmp, keep) == 0, PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE, "Cannot rewrite %s", keep);
  if (strcmp(keep, path)) {
    PetscCheck(unlink(path) == 0, PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE, "Cannot replace %s: %s", path, strerror(errno));
    PetscCall(PetscPrintf(PETSC_COMM_SELF, "%s had other columns than this run's: its rows up to step %" PetscInt_FMT " are in %s; it starts anew\n", path, sim->step, keep));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* forces/<object>.csv: one file per object with a history.csv column (the
 * domain faces bc_* and the deck's objects), a row per history row: the
 * mean force and torque since the previous row, the impulse and angular
 * impulse since the start, |F| and the largest |F| so far (the design
 * load of a barrier).  2D: per unit depth (N/m, N m/m, N s/m). */
static const char *ForceColumns(PetscInt dim) { return dim == 3 ? "fx,fy,fz,tx,ty,tz,jx,jy,jz,jtx,jty,jtz,f_abs,f_peak,t_peak" : "fx,fy,tz,jx,jy,jtz,f_abs,f_peak,t_peak"; }

static PetscErrorCode ForcePath(MPMSim sim, const MPMCollider *o, char *path, size_t len)
{
  PetscFunctionBeginUser;
  PetscCall(PetscSNPrintf(path, len, "%s/forces/%s.csv", sim->outdir, o->name));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode ForcesSetUpRank0(MPMSim sim, PetscBool restarted)
{
  const MPMColliders c = sim->colliders;
  char               path[PETSC_MAX_PATH_LEN], header[256];
  PetscBool          fresh = PETSC_TRUE;

  PetscFunctionBeginUser;
  PetscCall(PetscSNPrintf(path, sizeof(path), "%s/forces", sim->outdir));
  PetscCall(MakeDir(path));
  PetscCall(PetscSNPrintf(header, sizeof(header), "t,step,%s", ForceColumns(sim->dim)));
  for (PetscInt o = 0; o < c->nobj; o++) {
    FILE *f;
    if (!MPMColliderReported(&c->obj[o])) continue;
    PetscCall(ForcePath(sim, &c->obj[o], path, sizeof(path)));
    if (restarted) PetscCall(TruncateCsvRank0(sim, path, header, &fresh));
    if (!fresh) continue;
    f = fopen(path, "w");
    PetscCheck(f, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "Cannot write %s: %s", path, strerror(errno));
    fprintf(f, "%s\n", header);
    PetscCheck(fclose(f) == 0, PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE, "Cannot write %s: %s", path, strerror(errno));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Rank 0: a row of every forces/<object>.csv (appended: rows are per
 * history row, not per step). */
static PetscErrorCode ForcesRowRank0(MPMSim sim, const double *ft)
{
  const MPMColliders c = sim->colliders;
  char               path[PETSC_MAX_PATH_LEN];

  PetscFunctionBeginUser;
  for (PetscInt o = 0; o < c->nobj; o++) {
    const double *f = ft + 6 * o, *tot = c->total + MPM_COLLIDER_TOTALS * o;
    FILE         *out;
    if (!MPMColliderReported(&c->obj[o])) continue;
    PetscCall(ForcePath(sim, &c->obj[o], path, sizeof(path)));
    out = fopen(path, "a");
    PetscCheck(out, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "Cannot append to %s: %s", path, strerror(errno));
    fprintf(out, "%.12g,%" PetscInt_FMT, sim->t, sim->step);
    if (sim->dim == 3) fprintf(out, ",%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g", f[0], f[1], f[2], f[3], f[4], f[5], tot[0], tot[1], tot[2], tot[3], tot[4], tot[5]);
    else fprintf(out, ",%.10g,%.10g,%.10g,%.10g,%.10g,%.10g", f[0], f[1], f[5], tot[0], tot[1], tot[5]);
    fprintf(out, ",%.10g,%.10g,%.10g\n", sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]), tot[6], tot[7]);
    PetscCheck(fclose(out) == 0, PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE, "Cannot write %s: %s", path, strerror(errno));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode OutputSetUpRank0(MPMSim sim, PetscBool restarted)
{
  char      path[PETSC_MAX_PATH_LEN], *header, *units;
  PetscBool fresh = PETSC_TRUE;

  PetscFunctionBeginUser;
  PetscCall(PetscSNPrintf(path, sizeof(path), "%s/frames", sim->outdir));
  PetscCall(MakeDir(path));
  RemoveTemporaries(path);
  PetscCall(PetscSNPrintf(path, sizeof(path), "%s/checkpoints", sim->outdir));
  RemoveTemporaries(path);
  PetscCall(WriteRunRecord(sim, restarted));
  PetscCall(PetscSNPrintf(path, sizeof(path), "%s/history.csv", sim->outdir));
  PetscCall(HistoryColumns(sim, &header, &units));
  if (restarted) PetscCall(TruncateCsvRank0(sim, path, header, &fresh));
  sim->history = fopen(path, fresh ? "w" : "a");
  PetscCheck(sim->history, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "Cannot write %s: %s", path, strerror(errno));
  if (fresh) fprintf(sim->history, "%s\n", header);
  PetscCall(WriteHistoryUnitsRank0(sim, header, units));
  PetscCall(PetscFree2(header, units));
  PetscCall(ForcesSetUpRank0(sim, restarted));
  if (restarted) PetscCall(MPMOutputWriteXdmf(sim)); /* the series up to the checkpoint */
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMOutputSetUp(MPMSim sim, PetscBool restarted)
{
  PetscFunctionBeginUser;
  PetscCall(MPMOutputCheckFields(sim));
  PetscCall(MPMRank0Outcome(sim, sim->rank == 0 ? OutputSetUpRank0(sim, restarted) : PETSC_SUCCESS, "creating the output directory, run.json or history.csv"));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The energy budget (collective through the collider totals, already
 * reduced): the work done on the material by the objects and faces since
 * the start, and what was dissipated (plastic flow, friction, collisions
 * and the transfers' numerical dissipation): the initial total plus the
 * work put in (objects, the gravity ramp) less the current total. */
static void Budget(MPMSim sim, const MPMDiagnostics *d, double *work_objects, double *dissipated)
{
  const MPMColliders c = sim->colliders;
  double             w = 0;
  for (PetscInt o = 0; o < c->nobj; o++) w += c->total[MPM_COLLIDER_TOTALS * o + 8];
  if (!sim->energy0_set) {
    sim->energy0     = d->ke + d->ee + d->pe;
    sim->energy0_set = PETSC_TRUE;
  }
  *work_objects = w;
  *dissipated   = sim->energy0 + w + sim->work_ramp - (d->ke + d->ee + d->pe);
}

/* The collider forces are collective (summed over ranks), so every rank
 * calls this; rank 0 writes the row. */
PetscErrorCode MPMOutputHistory(MPMSim sim, const MPMDiagnostics *d)
{
  MPMStepStats       st;
  const MPMColliders c = sim->colliders;
  double            *ft, wobj, diss;

  PetscFunctionBeginUser;
  PetscCall(PetscMalloc1(6 * c->nobj + 1, &ft));
  PetscCall(MPMCollidersReport(c, sim->comm, sim->t, ft));
  PetscCall(MPMIntegratorStats(sim->integ, &st));
  Budget(sim, d, &wobj, &diss);
  if (sim->rank == 0 && sim->history) {
    fprintf(sim->history, "%.12g,%" PetscInt_FMT ",%lld,%.15g,%.15g,%.15g,%.15g,%.15g,%.15g,%.6g,%.6g,%.4f,%.15g,%.15g,%.15g", sim->t, sim->step, (long long)d->n, d->mass, d->mom[0],
            d->mom[1], d->mom[2], d->ke, d->ee, sim->dt, d->vmax, sim->imbalance, d->pe, wobj, diss);
    for (PetscInt i = 0; i < st.n; i++) fprintf(sim->history, ",%.10g", st.value[i]);
    for (PetscInt o = 0; o < c->nobj; o++) {
      const double *f = ft + 6 * o;
      if (!MPMColliderReported(&c->obj[o])) continue;
      if (sim->dim == 3) fprintf(sim->history, ",%.10g,%.10g,%.10g,%.10g,%.10g,%.10g", f[0], f[1], f[2], f[3], f[4], f[5]);
      else fprintf(sim->history, ",%.10g,%.10g,%.10g", f[0], f[1], f[5]);
    }
    for (PetscInt o = 0; o < c->nobj; o++) {
      const MPMPlacedShape *ps = &c->obj[o].ps;
      if (!c->obj[o].dynamic) continue;
      for (PetscInt a = 0; a < sim->dim; a++) fprintf(sim->history, ",%.15g", ps->c[a]);
      for (PetscInt a = 0; a < sim->dim; a++) fprintf(sim->history, ",%.15g", ps->vel[a]);
      for (PetscInt a = (sim->dim == 3 ? 0 : 2); a < 3; a++) fprintf(sim->history, ",%.15g", ps->omega[a]);
    }
    fprintf(sim->history, "\n");
    fflush(sim->history);
  }
  PetscCall(MPMRank0Outcome(sim, sim->rank == 0 && sim->history ? ForcesRowRank0(sim, ft) : PETSC_SUCCESS, "writing forces/<object>.csv"));
  PetscCall(PetscFree(ft));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* "n0, n1, ..." : one count of every rank (particles, grid nodes: the load balance). */
static PetscErrorCode PerRankCounts(MPMSim sim, int64_t mine, char *buf, size_t len)
{
  int64_t *all;

  PetscFunctionBeginUser;
  PetscCall(PetscMalloc1(sim->size, &all));
  PetscCall(MPMAllGatherInt64(sim->comm, mine, all));
  buf[0] = 0;
  for (PetscMPIInt r = 0; r < sim->size && strlen(buf) + 24 < len; r++) snprintf(buf + strlen(buf), len - strlen(buf), "%s%lld", r ? ", " : "", (long long)all[r]);
  PetscCall(PetscFree(all));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static double PeakRSSBytes(void)
{
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return 1024.0 * (double)ru.ru_maxrss; /* Linux reports kB */
}

/* JSON has no NaN or infinity: such numbers (printed by %g as nan, -nan,
 * inf, -inf) become null.  text has room for len bytes. */
static PetscErrorCode JsonFiniteNumbers(char *text, size_t len)
{
  static const char *bad[] = {"-nan", "nan", "-inf", "inf"};
  char              *out, *w;

  PetscFunctionBeginUser;
  PetscCall(PetscMalloc1(2 * strlen(text) + 1, &out));
  w = out;
  for (const char *r = text; *r;) {
    size_t    k = 0, n = 0;
    const int value_start = r > text && (r[-1] == ' ' || r[-1] == '[');
    for (; value_start && k < 4; k++) {
      n = strlen(bad[k]);
      if (!strncmp(r, bad[k], n) && (r[n] == ',' || r[n] == ']' || r[n] == '\n')) break;
    }
    if (value_start && k < 4) {
      memcpy(w, "null", 4);
      w += 4;
      r += n;
    } else *w++ = *r++;
  }
  *w = 0;
  PetscCall(PetscStrncpy(text, out, len));
  PetscCall(PetscFree(out));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The steps taken per limit that set them (what to change to go faster:
 * -cfl, the stiffness, or the output cadence). */
static PetscErrorCode DtLimits(MPMSim sim, char *buf, size_t len)
{
  PetscFunctionBeginUser;
  PetscCall(PetscSNPrintf(buf + strlen(buf), len - strlen(buf), "  \"dt_taken_min\": %.6g,\n  \"steps_by_dt_limit\": {", sim->step ? sim->dt_taken_lo : 0.0));
  for (int k = 0, first = 1; k < MPM_DT_NREASONS; k++) {
    if (sim->dt_count[k] == 0) continue;
    PetscCall(PetscSNPrintf(buf + strlen(buf), len - strlen(buf), "%s\"%s\": %.0f", first ? "" : ", ", MPMDtLimitNames[k], sim->dt_count[k]));
    first = 0;
  }
  PetscCall(PetscStrlcat(buf, "},\n", len));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* "[a, b, c]" of n values */
static void JsonVector(char *buf, size_t len, const double *v, int n)
{
  buf[0] = 0;
  for (int k = 0; k < n; k++) snprintf(buf + strlen(buf), len - strlen(buf), "%s%.8g", k ? ", " : "[", v[k]);
  snprintf(buf + strlen(buf), len - strlen(buf), "]");
}

/* Per object: the impulse and angular impulse since the start and the
 * largest mean |force| of a history row, with its time. */
static PetscErrorCode ObjectTotals(MPMSim sim, char *buf, size_t len)
{
  const MPMColliders c = sim->colliders;
  const int          d = (int)sim->dim;

  PetscFunctionBeginUser;
  PetscCall(PetscStrlcat(buf, "  \"objects\": {", len));
  for (PetscInt o = 0, first = 1; o < c->nobj; o++) {
    const double *tot = c->total + MPM_COLLIDER_TOTALS * o;
    char          J[128], L[128];
    if (!MPMColliderReported(&c->obj[o])) continue;
    JsonVector(J, sizeof(J), tot, d);
    if (d == 3) JsonVector(L, sizeof(L), tot + 3, 3);
    else snprintf(L, sizeof(L), "%.8g", tot[5]); /* 2D: about z */
    PetscCall(PetscSNPrintf(buf + strlen(buf), len - strlen(buf), "%s\n    \"%s\": {\"impulse\": %s, \"angular_impulse\": %s, \"peak_force\": %.8g, \"peak_time\": %.8g}", first ? "" : ",",
                            c->obj[o].name, J, L, tot[6], tot[7]));
    first = 0;
  }
  PetscCall(PetscStrlcat(buf, "\n  },\n", len));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The bytes this rank's shapes hold now: the regions' and the objects'
 * samples, heights and vertices. */
double MPMGeometryBytes(const MPMSim sim)
{
  double b = 0;
  for (PetscInt r = 0; r < sim->nreg; r++) b += MPMPlacedShapeBytes(&sim->reg[r].ps);
  for (PetscInt o = 0; sim->colliders && o < sim->colliders->nobj; o++) b += MPMPlacedShapeBytes(&sim->colliders->obj[o].ps);
  return b;
}

/* The run's counts and totals as summary.json lines: plausibility
 * warnings, the steps by limit, the objects' loads, and the integrator's
 * statistics ("integrator_<name>", none for an integrator without). */
static PetscErrorCode StatsTotals(MPMSim sim, char *buf, size_t len)
{
  MPMStepStats st;
  double       geom[2]; /* the shapes' samples, heights and vertices on the rank that holds most: the most held (the set-up's end, with the regions, or now), and now */

  PetscFunctionBeginUser;
  geom[1] = MPMGeometryBytes(sim);
  geom[0] = PetscMax(geom[1], sim->geometry_bytes_setup);
  PetscCall(MPMGlobalMax(sim->comm, geom, 2));
  PetscCall(PetscSNPrintf(buf, len, "  \"warnings\": %" PetscInt_FMT ",\n  \"geometry_bytes_max_rank\": %.6g,\n  \"geometry_bytes_stepping_max_rank\": %.6g,\n", MPMWarnings(), geom[0], geom[1]));
  PetscCall(DtLimits(sim, buf, len));
  PetscCall(ObjectTotals(sim, buf, len));
  PetscCall(MPMIntegratorStats(sim->integ, &st));
  for (PetscInt i = 0; i < st.n; i++) PetscCall(PetscSNPrintf(buf + strlen(buf), len - strlen(buf), "  \"integrator_%s\": %.10g,\n", st.name[i], st.total[i]));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMOutputSummary(MPMSim sim)
{
  MPMDiagnostics d;
  double         rss[2] = {PeakRSSBytes(), 0}, rss_sum, wall, wobj, diss;
  char          *text, *counts, *nodes, path[PETSC_MAX_PATH_LEN], stats[16384];
  const size_t   clen = 24 * (size_t)sim->size + 16, tlen = 8192 + sizeof(stats) + 2 * clen;
  int64_t        owned = 1;
  PetscLogDouble now;

  PetscFunctionBeginUser;
  PetscCall(MPMComputeDiagnostics(sim, &d));
  Budget(sim, &d, &wobj, &diss);
  rss_sum = rss[0];
  PetscCall(MPMGlobalSum(sim->comm, &rss_sum, 1));
  PetscCall(MPMGlobalMax(sim->comm, rss, 1));
  PetscCall(PetscTime(&now));
  wall = sim->wall_before + (now - sim->wall_start); /* whole run, across restarts */
  PetscCall(PetscMalloc3(tlen, &text, clen, &counts, clen, &nodes));
  for (PetscInt a = 0; a < sim->dim; a++) owned *= sim->layout.xm[a];
  PetscCall(PerRankCounts(sim, MPMLocalParticles(sim), counts, clen));
  PetscCall(PerRankCounts(sim, owned, nodes, clen));
  PetscCall(StatsTotals(sim, stats, sizeof(stats)));
  const double psteps = sim->particle_steps, rate = sim->wall_steps > 0 ? psteps / sim->wall_steps : 0;
  const double rate_rank = sim->rank_seconds_steps > 0 ? psteps / sim->rank_seconds_steps : 0; /* across restarts on other rank counts too */
  PetscCall(PetscSNPrintf(text, tlen,
                          "{\n  \"version\": \"%s\",\n  \"ranks\": %d,\n  \"decomposition\": \"%s\",\n  \"decomposition_parts\": [%" PetscInt_FMT ", %" PetscInt_FMT ", %" PetscInt_FMT "],\n  \"dim\": %" PetscInt_FMT ",\n  \"particles\": %lld,\n  \"particles_deleted\": %lld,\n"
                          "  \"particles_emitted\": %lld,\n  \"particles_split\": %lld,\n  \"particles_merged\": %lld,\n  \"steps\": %" PetscInt_FMT ",\n  \"simulated_time\": %.12g,\n  \"dt_min\": %.6g,\n  \"dt_max\": %.6g,\n"
                          "  \"total_mass\": %.15g,\n  \"total_momentum\": [%.15g, %.15g, %.15g],\n  \"kinetic_energy\": %.15g,\n  \"elastic_energy\": %.15g,\n"
                          "  \"potential_energy\": %.15g,\n  \"work_objects\": %.15g,\n  \"dissipated_energy\": %.15g,\n"
                          "  \"wall_seconds\": %.6g,\n  \"wall_seconds_stepping\": %.6g,\n  \"particle_steps\": %.6g,\n  \"particle_steps_per_second\": %.6g,\n"
                          "  \"particle_steps_per_second_per_rank\": %.6g,\n  \"state_bytes_per_particle\": %zu,\n  \"peak_rss_bytes_max_rank\": %.6g,\n"
                          "  \"peak_rss_bytes_total\": %.6g,\n  \"output_frames\": %" PetscInt_FMT ",\n  \"particles_per_rank\": [%s],\n"
                          "  \"nodes_per_rank\": [%s],\n  \"balance_node_cost\": %.6g,\n  \"rebalances\": %" PetscInt_FMT ",\n  \"checkpoints_written\": %" PetscInt_FMT ",\n  \"checkpoint_seconds\": %.6g,\n%s  \"status\": \"%s\"\n}\n",
                          MPMVersion(), sim->size, MPMLayoutDecompositionName(&sim->layout), sim->layout.parts[0], sim->layout.parts[1], sim->layout.parts[2], sim->dim, (long long)d.n, (long long)sim->n_deleted, (long long)sim->n_emitted, (long long)sim->n_split, (long long)sim->n_merged, sim->step,
                          sim->t, sim->step ? sim->dt_lo : 0.0, sim->step ? sim->dt_hi : 0.0, d.mass, d.mom[0], d.mom[1], d.mom[2], d.ke, d.ee, d.pe, wobj, diss, wall, sim->wall_steps, psteps,
                          rate, rate_rank, sim->species[0]->p.bytes, rss[0], rss_sum, sim->frame, counts, nodes, sim->balance_node_cost, sim->rebalances, sim->ckpt_count, sim->ckpt_seconds,
                          stats, sim->exit_code == MPM_EXIT_CHECKPOINTED ? "checkpointed" : (sim->exit_code == MPM_EXIT_NONFINITE ? "nonfinite" : "finished")));
  PetscCall(JsonFiniteNumbers(text, tlen));
  PetscCall(PetscSNPrintf(path, sizeof(path), "%s/summary.json", sim->outdir));
  PetscCall(MPMRank0Outcome(sim, sim->rank == 0 ? MPMWriteFileAtomic(path, text) : PETSC_SUCCESS, "writing summary.json"));
  PetscCall(PetscFree3(text, counts, nodes));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMOutputFinalize(MPMSim sim)
{
  PetscFunctionBeginUser;
  if (sim->history) fclose(sim->history);
  sim->history = NULL;
  PetscCall(PetscFree(sim->frames));
  sim->nframes = sim->capframes = 0;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* This rank's -sum m gs g.(x - domain_lo): the potential energy with the
 * gravity ramp's factor gs. */
static double LocalPotential(const MPMSim sim, double gs)
{
  const PetscInt d  = sim->dim;
  double         pe = 0;
  for (PetscInt sp = 0; sp < sim->nspecies; sp++) {
    const MPMParticles *p = &sim->species[sp]->p;
    const double       *m = MPMFieldReal(p, p->f_m), *x = MPMFieldReal(p, p->f_x);
    for (PetscInt q = 0; q < p->n; q++) {
      double gx = 0;
      for (PetscInt a = 0; a < d; a++) gx += sim->gravity[a] * (x[q * d + a] - sim->layout.lo[a]);
      pe -= gs * m[q] * gx;
    }
  }
  return pe;
}

/* Collective: the potential energy with the full gravity (the ramp's work
 * per step is this times the change of its factor). */
PetscErrorCode MPMPotentialEnergyFull(MPMSim sim, double *pe)
{
  PetscFunctionBeginUser;
  *pe = LocalPotential(sim, 1.0);
  PetscCall(MPMGlobalSum(sim->comm, pe, 1));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Global invariants: count, mass, momentum, kinetic, elastic and potential
 * energy, the fastest particle. */
PetscErrorCode MPMComputeDiagnostics(MPMSim sim, MPMDiagnostics *out)
{
  const PetscInt d = sim->dim;
  double         s[8] = {0}, vmax = 0;

  PetscFunctionBeginUser;
  for (PetscInt sp = 0; sp < sim->nspecies; sp++) {
    const MPMParticles *p = &sim->species[sp]->p;
    const double       *m = MPMFieldReal(p, p->f_m), *v = MPMFieldReal(p, p->f_v);
    for (PetscInt q = 0; q < p->n; q++) {
      double v2 = 0;
      s[0] += 1;
      s[1] += m[q];
      for (PetscInt a = 0; a < d; a++) {
        s[2 + a] += m[q] * v[q * d + a];
        v2 += v[q * d + a] * v[q * d + a];
      }
      s[5] += 0.5 * m[q] * v2;
      vmax = PetscMax(vmax, v2);
    }
    s[6] += MPMMaterialsElasticEnergy(sim->species[sp]); /* (K20) */
  }
  s[7] = LocalPotential(sim, MPMGravityScale(sim));
  vmax = sqrt(vmax);
  PetscCall(MPMGlobalSum(sim->comm, s, 8));
  PetscCall(MPMGlobalMax(sim->comm, &vmax, 1));
  out->n    = (int64_t)s[0];
  out->mass = s[1];
  for (PetscInt a = 0; a < 3; a++) out->mom[a] = s[2 + a];
  out->ke   = s[5];
  out->ee   = s[6];
  out->pe   = s[7];
  out->vmax = vmax;
  PetscFunctionReturn(PETSC_SUCCESS);
}
