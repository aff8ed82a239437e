/* Checkpoint and restart.
 *
 * A checkpoint is one parallel HDF5 file, OUTDIR/checkpoints/ckpt_<step>.h5,
 * holding every particle field of the field table (so a field added to the
 * table is checkpointed without further code), the per-rank particle counts
 * and slab layout, the time-stepping and output state, the emitters' layer
 * counters and the options.  The jitter and emitter positions come from a
 * counter-based hash, so there is no other random-number state.  Files are
 * written under a temporary name and renamed; the newest -checkpoint_keep
 * are kept.
 *
 * Triggers: every -checkpoint_interval steps, every -checkpoint_wall seconds,
 * and on SIGTERM/SIGUSR1 (Slurm's --signal): the signal only sets a flag;
 * the step's one reduction spreads it to every rank, the checkpoint is
 * written at the step boundary and the run exits with MPM_EXIT_CHECKPOINTED.
 *
 * Restart (-restart FILE | latest): on the same rank count every rank reads
 * back exactly its own particles in their order, so the continuation is bit
 * for bit the uninterrupted run; on another rank count the particles are read
 * in equal blocks and migrated to their owners. */
#define _POSIX_C_SOURCE 200809L /* sigaction, dirent, unlink under -std=c11 */
#include "io.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static volatile sig_atomic_t caught_signal = 0;

static void OnSignal(int sig) { caught_signal = sig; }

PetscErrorCode MPMCheckpointSetUp(MPMSim sim)
{
  PetscFunctionBeginUser;
  sim->ckpt_keep = 2;
  PetscOptionsBegin(sim->comm, NULL, "Checkpoint and restart", NULL);
  PetscCall(MPMOptionsInt("-checkpoint_interval", "Steps between checkpoints (0: none)", NULL, sim->ckpt_interval, &sim->ckpt_interval, NULL));
  PetscCall(MPMOptionsReal("-checkpoint_wall", "Wall-clock seconds between checkpoints (0: none) [s]", NULL, sim->ckpt_wall, &sim->ckpt_wall, NULL));
  PetscCall(MPMOptionsInt("-checkpoint_keep", "Number of newest checkpoints kept", NULL, sim->ckpt_keep, &sim->ckpt_keep, NULL));
  PetscCall(PetscOptionsString("-restart", "Continue from a checkpoint file, or 'latest' in -output_dir/checkpoints (a fresh start if there is none)", NULL, sim->restart,
                               sim->restart, sizeof(sim->restart), NULL));
  PetscOptionsEnd();
  PetscCheck(sim->ckpt_interval >= 0, sim->comm, PETSC_ERR_USER_INPUT, "-checkpoint_interval must be >= 0 steps, got %" PetscInt_FMT, sim->ckpt_interval);
  PetscCheck(sim->ckpt_wall >= 0, sim->comm, PETSC_ERR_USER_INPUT, "-checkpoint_wall must be >= 0 s, got %g", sim->ckpt_wall);
  PetscCheck(sim->ckpt_keep >= 1, sim->comm, PETSC_ERR_USER_INPUT, "-checkpoint_keep must be >= 1, got %" PetscInt_FMT, sim->ckpt_keep);
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMCheckpointInstallSignals(MPMSim sim)
{
  struct sigaction sa;

  PetscFunctionBeginUser;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  PetscCheck(sigaction(SIGTERM, &sa, NULL) == 0 && sigaction(SIGUSR1, &sa, NULL) == 0, PETSC_COMM_SELF, PETSC_ERR_SYS, "Cannot install the SIGTERM/SIGUSR1 handlers");
  PetscCall(PetscTime(&sim->ckpt_last_wall));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* This rank's requests for the step reduction (ORed over ranks). */
int64_t MPMCheckpointLocalFlags(const MPMSim sim)
{
  int64_t        flags = caught_signal ? MPM_FLAG_SIGNAL : 0;
  PetscLogDouble now;
  if (sim->ckpt_wall > 0 && PetscTime(&now) == PETSC_SUCCESS && now - sim->ckpt_last_wall >= sim->ckpt_wall) flags |= MPM_FLAG_WALL;
  return flags;
}

/* ------------------------------------------------------------------ write */
static hid_t FieldType(const MPMField *f)
{
  switch (f->type) {
  case MPM_FIELD_REAL: return H5T_NATIVE_DOUBLE;
  case MPM_FIELD_INT64: return H5T_NATIVE_INT64;
  case MPM_FIELD_INT32: return H5T_NATIVE_INT32;
  default: return H5T_NATIVE_UINT8;
  }
}

/* A dataset or group name of species s: `base` for the first species (a
 * checkpoint of one species reads as before), `base`_<species> otherwise. */
static void SpeciesName(const MPMSim sim, PetscInt s, const char *base, char *name, size_t len)
{
  if (s == 0) snprintf(name, len, "%s", base);
  else snprintf(name, len, "%s_%s", base, sim->species[s]->name);
}

static PetscErrorCode WriteParticles(MPMSim sim, PetscInt s, MPMH5File *F)
{
  char                group[MPM_NAME_LEN + 16], name[3 * MPM_NAME_LEN];
  hid_t               grp;
  const MPMParticles *p = &sim->species[s]->p;

  PetscFunctionBeginUser;
  SpeciesName(sim, s, "particles", group, sizeof(group));
  F->n = p->n;
  PetscCall(MPMGlobalOffset(sim->comm, F->n, &F->offset, &F->total));
  H5CALL(grp = H5Gcreate2(F->file, group, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5CALL(H5Gclose(grp));
  for (PetscInt f = 0; f < p->nfield; f++) {
    const MPMField *fd = &p->field[f];
    if (!(fd->flags & MPM_FIELD_CHECKPOINT)) continue;
    PetscCall(PetscSNPrintf(name, sizeof(name), "%s/%s", group, fd->name));
    PetscCall(MPMH5WriteArray(F, name, FieldType(fd), fd->ncomp, fd->data));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* One entry per rank: this rank's value at row `rank`. */
static PetscErrorCode WritePerRankN(MPMSim sim, hid_t file, const char *name, int n, const int64_t *values)
{
  MPMH5File R = {file, 0, sim->rank, sim->size, 1};

  PetscFunctionBeginUser;
  H5CALL(R.dxpl = H5Pcreate(H5P_DATASET_XFER));
  H5CALL(H5Pset_dxpl_mpio(R.dxpl, H5FD_MPIO_COLLECTIVE));
  PetscCall(MPMH5WriteArray(&R, name, H5T_NATIVE_INT64, n, values));
  H5CALL(H5Pclose(R.dxpl));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode WritePerRank(MPMSim sim, hid_t file, const char *name, int64_t value) { return WritePerRankN(sim, file, name, 1, &value); }

/* The decomposition: the ranks along each axis and each rank's first node
 * plane along them ("slab_start": along the slab axis, as checkpoints
 * before blocks were added had it). */
static PetscErrorCode WriteLayout(MPMSim sim, hid_t file)
{
  const MPMLayout *l        = &sim->layout;
  const int64_t    parts[3] = {l->parts[0], l->parts[1], l->parts[2]}, xs[3] = {l->xs[0], l->xs[1], l->xs[2]};

  PetscFunctionBeginUser;
  PetscCall(MPMH5WriteAttr(file, "decomposition_parts", H5T_NATIVE_INT64, 3, parts));
  PetscCall(WritePerRank(sim, file, "slab_start", l->xs[l->slab_axis]));
  PetscCall(WritePerRankN(sim, file, "part_start", 3, xs));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The frames written so far (rank 0 keeps the list): t, particle count of
 * each species, number. */
static PetscErrorCode WriteFrameList(MPMSim sim, hid_t file)
{
  int       nf = (int)sim->nframes;
  double   *t;
  int64_t  *n, *num;
  char      name[MPM_NAME_LEN + 32];
  MPMH5File R = {file, 0, 0, 0, 0};

  PetscFunctionBeginUser;
  PetscCall(MPMBroadcastInt(sim->comm, &nf));
  R.total = nf;
  R.n     = sim->rank == 0 ? nf : 0;
  PetscCall(PetscMalloc3(nf + 1, &t, nf + 1, &n, nf + 1, &num));
  for (PetscInt f = 0; f < R.n; f++) {
    t[f]   = sim->frames[f].t;
    num[f] = sim->frames[f].frame;
  }
  H5CALL(R.dxpl = H5Pcreate(H5P_DATASET_XFER));
  H5CALL(H5Pset_dxpl_mpio(R.dxpl, H5FD_MPIO_COLLECTIVE));
  PetscCall(MPMH5WriteArray(&R, "frame_time", H5T_NATIVE_DOUBLE, 1, t));
  for (PetscInt s = 0; s < sim->nspecies; s++) {
    for (PetscInt f = 0; f < R.n; f++) n[f] = sim->frames[f].n[s];
    SpeciesName(sim, s, "frame_particles", name, sizeof(name));
    PetscCall(MPMH5WriteArray(&R, name, H5T_NATIVE_INT64, 1, n));
  }
  PetscCall(MPMH5WriteArray(&R, "frame_number", H5T_NATIVE_INT64, 1, num));
  H5CALL(H5Pclose(R.dxpl));
  PetscCall(PetscFree3(t, n, num));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Whole-run totals, so summary.json after restarts describes the whole run:
 * wall seconds so far, rebalances, checkpoints and their seconds. */
static PetscErrorCode WriteTotals(MPMSim sim, hid_t file)
{
  PetscLogDouble now;

  PetscFunctionBeginUser;
  PetscCall(PetscTime(&now));
  const double  r[2] = {sim->wall_before + (now - sim->wall_start), sim->ckpt_seconds};
  const int64_t i[2] = {sim->rebalances, sim->ckpt_count + 1};
  PetscCall(MPMH5WriteAttr(file, "totals_wall_ckptseconds", H5T_NATIVE_DOUBLE, 2, r));
  PetscCall(MPMH5WriteAttr(file, "totals_rebalances_checkpoints", H5T_NATIVE_INT64, 2, i));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode ReadTotals(MPMSim sim, hid_t file, const char *what)
{
  double  r[2];
  int64_t i[2];

  PetscFunctionBeginUser;
  PetscCall(MPMH5ReadAttr(file, "totals_wall_ckptseconds", H5T_NATIVE_DOUBLE, 2, r, what));
  PetscCall(MPMH5ReadAttr(file, "totals_rebalances_checkpoints", H5T_NATIVE_INT64, 2, i, what));
  sim->wall_before  = r[0];
  sim->ckpt_seconds = r[1];
  sim->rebalances   = (PetscInt)i[0];
  sim->ckpt_count   = (PetscInt)i[1];
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode WriteState(MPMSim sim, hid_t file)
{
  const double  r[8] = {sim->t, sim->dt, sim->dt_lo, sim->dt_hi, sim->t_next_output, sim->t_last_frame, sim->particle_steps, sim->wall_steps};
  const int64_t i[8] = {sim->step, sim->frame, sim->n_global, sim->n_deleted, sim->n_emitted, sim->dim, sim->size, (int64_t)sim->seed};
  const int64_t nodes[3] = {sim->layout.N[0], sim->layout.N[1], sim->layout.N[2]};
  int64_t       layers[MPM_MAX_NAMES];

  PetscFunctionBeginUser;
  PetscCall(MPMH5WriteAttr(file, "time_dt_dtlo_dthi_tnext_tlastframe_psteps_wallsteps", H5T_NATIVE_DOUBLE, 8, r));
  PetscCall(MPMH5WriteAttr(file, "step_frame_n_deleted_emitted_dim_ranks_seed", H5T_NATIVE_INT64, 8, i));
  PetscCall(MPMH5WriteAttr(file, "grid_nodes", H5T_NATIVE_INT64, 3, nodes));
  {
    const int64_t sm[2] = {sim->n_split, sim->n_merged}; /* split halves' ids count on from n_split */
    PetscCall(MPMH5WriteAttr(file, "particles_split_merged", H5T_NATIVE_INT64, 2, sm));
  }
  {
    double lim[MPM_DT_NREASONS + 2] = {(double)sim->dt_limit, sim->dt_taken_lo};
    for (int k = 0; k < MPM_DT_NREASONS; k++) lim[k + 2] = sim->dt_count[k];
    PetscCall(MPMH5WriteAttr(file, "dt_limit_takenmin_counts", H5T_NATIVE_DOUBLE, MPM_DT_NREASONS + 2, lim));
  }
  {
    const double e[3] = {sim->energy0, (double)sim->energy0_set, sim->work_ramp};
    PetscCall(MPMH5WriteAttr(file, "energy0_set_workramp", H5T_NATIVE_DOUBLE, 3, e));
  }
  PetscCall(MPMH5WriteAttr(file, "rank_seconds_stepping", H5T_NATIVE_DOUBLE, 1, &sim->rank_seconds_steps));
  PetscCall(WriteTotals(sim, file));
  for (PetscInt e = 0; e < sim->nem; e++) layers[e] = sim->em[e].layers;
  layers[sim->nem] = sim->nem;
  PetscCall(MPMH5WriteAttr(file, "emitter_layers_and_count", H5T_NATIVE_INT64, (int)sim->nem + 1, layers));
  PetscCall(MPMH5WriteString(file, "version", MPMVersion()));
  PetscCall(MPMH5WriteString(file, "options", sim->options_string ? sim->options_string : ""));
  for (PetscInt s = 0; s < sim->nspecies; s++) {
    char name[MPM_NAME_LEN + 32];
    SpeciesName(sim, s, "particles_per_rank", name, sizeof(name));
    PetscCall(WritePerRank(sim, file, name, sim->species[s]->p.n));
  }
  PetscCall(WriteLayout(sim, file));
  PetscCall(WriteFrameList(sim, file));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A body's centre, frame, velocity and angular velocity (18 values) to
 * (out) or from a checkpoint row. */
static void BodyState(MPMPlacedShape *ps, double *b, PetscBool out)
{
  double *f[4] = {ps->c, ps->R, ps->vel, ps->omega};
  int     n[4] = {3, 9, 3, 3}, k = 0;
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < n[i]; j++, k++) {
      if (out) b[k] = f[i][j];
      else f[i][j] = b[k];
    }
}

/* The integrator's name and scalars, and every rank's collider impulses
 * since the last history row (one row per rank), so the next row after a
 * restart is the uninterrupted run's. */
static PetscErrorCode WriteMethodState(MPMSim sim, MPMH5File *F)
{
  const MPMColliders c  = sim->colliders;
  const int          nc = 6 * (int)c->nobj;
  double             state[MPM_MAX_INTEGRATOR_STATE];
  PetscInt           n = 0;
  MPMH5File          R = {F->file, F->dxpl, sim->rank, sim->size, 1};

  PetscFunctionBeginUser;
  PetscCall(MPMH5WriteString(F->file, "integrator", sim->integ->type));
  if (sim->integ->ops.get_state) PetscCall(sim->integ->ops.get_state(sim->integ, &n, state));
  if (n > 0) PetscCall(MPMH5WriteAttr(F->file, "integrator_state", H5T_NATIVE_DOUBLE, (int)n, state));
  PetscCall(MPMH5WriteAttr(F->file, "collider_elapsed", H5T_NATIVE_DOUBLE, 1, &c->elapsed));
  PetscCall(MPMH5WriteAttr(F->file, "collider_last_report", H5T_NATIVE_DOUBLE, nc, c->last));
  PetscCall(MPMH5WriteAttr(F->file, "collider_totals", H5T_NATIVE_DOUBLE, MPM_COLLIDER_TOTALS * (int)c->nobj, c->total));
  PetscCall(MPMH5WriteArray(&R, "collider_impulse", H5T_NATIVE_DOUBLE, nc, c->impulse));
  if (c->ndynamic > 0) { /* the dynamic bodies' frames and velocities, the same on every rank */
    double *b;
    PetscCall(PetscMalloc1(18 * c->nobj, &b));
    for (PetscInt o = 0; o < c->nobj; o++) BodyState(&c->obj[o].ps, b + 18 * o, PETSC_TRUE);
    PetscCall(MPMH5WriteAttr(F->file, "bodies", H5T_NATIVE_DOUBLE, 18 * (int)c->nobj, b));
    PetscCall(PetscFree(b));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The owned rows of grid field gf in natural (rank-independent) node
 * order: a vector to fill or read, its first row and its row count. */
static PetscErrorCode NaturalRows(MPMGridField *gf, Vec *nat, MPMH5File *R)
{
  PetscInt lo, hi, N;

  PetscFunctionBeginUser;
  PetscCall(DMDACreateNaturalVector(gf->da, nat));
  PetscCall(VecGetOwnershipRange(*nat, &lo, &hi));
  PetscCall(VecGetSize(*nat, &N));
  R->offset = lo / gf->dof;
  R->n      = (hi - lo) / gf->dof;
  R->total  = N / gf->dof;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Persistent grid fields (warm starts) as grid/<name>, one row per node in
 * natural order, so any rank count can read them back. */
PetscErrorCode MPMCheckpointGridFieldsWrite(MPMSim sim, MPMH5File *F)
{
  char      name[2 * MPM_NAME_LEN];
  PetscBool any = PETSC_FALSE;

  PetscFunctionBeginUser;
  for (PetscInt i = 0; i < sim->ngf; i++) any = any || sim->gf[i]->persistent;
  if (!any) PetscFunctionReturn(PETSC_SUCCESS);
  hid_t grp;
  H5CALL(grp = H5Gcreate2(F->file, "grid", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5CALL(H5Gclose(grp));
  for (PetscInt i = 0; i < sim->ngf; i++) {
    MPMGridField      *gf = sim->gf[i];
    MPMH5File          R  = *F;
    Vec                nat;
    const PetscScalar *a;
    if (!gf->persistent) continue;
    PetscCall(NaturalRows(gf, &nat, &R));
    PetscCall(DMDAGlobalToNaturalBegin(gf->da, gf->global, INSERT_VALUES, nat));
    PetscCall(DMDAGlobalToNaturalEnd(gf->da, gf->global, INSERT_VALUES, nat));
    PetscCall(PetscSNPrintf(name, sizeof(name), "grid/%s", gf->name));
    PetscCall(VecGetArrayRead(nat, &a));
    PetscCall(MPMH5WriteArray(&R, name, H5T_NATIVE_DOUBLE, (int)gf->dof, a));
    PetscCall(VecRestoreArrayRead(nat, &a));
    PetscCall(VecDestroy(&nat));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMCheckpointGridFieldsRead(MPMSim sim, MPMH5File *F, const char *what)
{
  char name[2 * MPM_NAME_LEN];

  PetscFunctionBeginUser;
  for (PetscInt i = 0; i < sim->ngf; i++) {
    MPMGridField *gf = sim->gf[i];
    MPMH5File     R  = *F;
    Vec           nat;
    PetscScalar  *a;
    if (!gf->persistent) continue;
    PetscCall(NaturalRows(gf, &nat, &R));
    PetscCall(PetscSNPrintf(name, sizeof(name), "grid/%s", gf->name));
    PetscCall(VecGetArray(nat, &a));
    PetscCall(MPMH5ReadArray(&R, name, H5T_NATIVE_DOUBLE, (int)gf->dof, a, what));
    PetscCall(VecRestoreArray(nat, &a));
    PetscCall(DMDANaturalToGlobalBegin(gf->da, nat, INSERT_VALUES, gf->global));
    PetscCall(DMDANaturalToGlobalEnd(gf->da, nat, INSERT_VALUES, gf->global));
    PetscCall(VecDestroy(&nat));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The step of a file named exactly ckpt_<digits>.h5, or -1 (temporaries and
 * anything else are ignored). */
static int CheckpointStep(const char *name)
{
  const size_t len = strlen(name);
  int          step = 0;
  if (len < 9 || strncmp(name, "ckpt_", 5) || strcmp(name + len - 3, ".h5")) return -1;
  for (size_t i = 5; i < len - 3; i++) {
    if (name[i] < '0' || name[i] > '9') return -1;
    step = 10 * step + (name[i] - '0');
  }
  return step;
}

/* Rank 0: delete all but the newest `keep` checkpoints. */
static PetscErrorCode PruneRank0(MPMSim sim)
{
  char           dir[PETSC_MAX_PATH_LEN], path[PETSC_MAX_PATH_LEN];
  DIR           *d;
  struct dirent *e;
  int            steps[4096], n = 0;

  PetscFunctionBeginUser;
  PetscCall(PetscSNPrintf(dir, sizeof(dir), "%s/checkpoints", sim->outdir));
  d = opendir(dir);
  PetscCheck(d, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "Cannot list %s: %s", dir, strerror(errno));
  while ((e = readdir(d)) && n < 4096)
    if (CheckpointStep(e->d_name) >= 0) steps[n++] = CheckpointStep(e->d_name);
  closedir(d);
  PetscCall(PetscSortInt(n, steps));
  for (int k = 0; k + sim->ckpt_keep < n; k++) {
    PetscCall(PetscSNPrintf(path, sizeof(path), "%s/ckpt_%08d.h5", dir, steps[k]));
    PetscCheck(unlink(path) == 0 || errno == ENOENT, PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE, "Cannot delete %s: %s", path, strerror(errno));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Force a file (or directory) to stable storage, so that after a node crash
 * the renamed checkpoint is never a name without its data. */
static PetscErrorCode SyncPath(const char *path, int flags)
{
  int fd = open(path, flags);

  PetscFunctionBeginUser;
  PetscCheck(fd >= 0, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "Cannot open %s to sync it: %s", path, strerror(errno));
  const int rc = fsync(fd), err = errno;
  close(fd);
  PetscCheck(rc == 0 || err == EINVAL, PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE, "Cannot sync %s: %s", path, strerror(err));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode FinishRank0(MPMSim sim, const char *tmp, const char *path, const char *dir)
{
  PetscFunctionBeginUser;
  PetscCall(SyncPath(tmp, O_RDONLY));
  PetscCheck(rename(tmp, path) == 0, PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE, "Cannot rename %s: %s", tmp, strerror(errno));
  PetscCall(SyncPath(dir, O_RDONLY | O_DIRECTORY)); /* the rename itself */
  PetscCall(PruneRank0(sim));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMCheckpointWrite(MPMSim sim)
{
  char           dir[PETSC_MAX_PATH_LEN], path[PETSC_MAX_PATH_LEN], tmp[PETSC_MAX_PATH_LEN];
  MPMH5File      F;
  PetscLogDouble t0, t1;

  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_CHECKPOINT, 0, 0, 0, 0));
  PetscCall(PetscTime(&t0));
  PetscCall(PetscSNPrintf(dir, sizeof(dir), "%s/checkpoints", sim->outdir));
  PetscCall(PetscSNPrintf(path, sizeof(path), "%s/ckpt_%08" PetscInt_FMT ".h5", dir, sim->step));
  PetscCall(PetscSNPrintf(tmp, sizeof(tmp), "%s.tmp", path));
  PetscCall(MPMOutputMakeDir(sim, dir));
  PetscCall(MPMH5Create(sim->comm, tmp, &F));
  for (PetscInt s = 0; s < sim->nspecies; s++) PetscCall(WriteParticles(sim, s, &F));
  PetscCall(WriteState(sim, F.file));
  PetscCall(WriteMethodState(sim, &F));
  PetscCall(MPMCheckpointGridFieldsWrite(sim, &F));
  PetscCall(MPMH5Close(&F));
  PetscCall(MPMBarrier(sim->comm));
  PetscCall(MPMRank0Outcome(sim, sim->rank == 0 ? FinishRank0(sim, tmp, path, dir) : PETSC_SUCCESS, "naming or pruning checkpoints"));
  PetscCall(PetscTime(&t1));
  sim->ckpt_last_wall = t1;
  sim->ckpt_seconds += t1 - t0;
  sim->ckpt_count++;
  PetscCall(PetscInfo(NULL, "Checkpoint %s: %lld particles in %.3f s\n", path, (long long)sim->n_global, t1 - t0));
  PetscCall(PetscLogEventEnd(MPM_EVENT_CHECKPOINT, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMCheckpointAfterStep(MPMSim sim, PetscBool *stop)
{
  const PetscBool signal = (sim->step_flags & MPM_FLAG_SIGNAL) ? PETSC_TRUE : PETSC_FALSE;
  const PetscBool due    = (sim->ckpt_interval && sim->step % sim->ckpt_interval == 0) || (sim->step_flags & MPM_FLAG_WALL) || signal;

  PetscFunctionBeginUser;
  *stop = signal;
  if (!due) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(MPMCheckpointWrite(sim));
  if (signal) {
    sim->exit_code = MPM_EXIT_CHECKPOINTED;
    PetscCall(PetscPrintf(sim->comm, "signal received: checkpoint at step %" PetscInt_FMT " (t = %g s) written to %s/checkpoints; exiting with code %d (restart with -restart latest)\n",
                          sim->step, sim->t, sim->outdir, MPM_EXIT_CHECKPOINTED));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------------- restart */
/* Rank 0: can this checkpoint be read?  Opened serially: an HDF5 file
 * with the run state and the particle ids (a truncated or overwritten file
 * fails here).  why: the reason when not. */
static PetscBool IntactRank0(const char *path, char *why, size_t len)
{
  hid_t     f;
  PetscBool ok;

  H5E_BEGIN_TRY { f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT); }
  H5E_END_TRY;
  if (f < 0) {
    snprintf(why, len, "not a readable HDF5 file");
    return PETSC_FALSE;
  }
  H5E_BEGIN_TRY { ok = H5Aexists(f, "step_frame_n_deleted_emitted_dim_ranks_seed") > 0 && H5Lexists(f, "particles", H5P_DEFAULT) > 0 && H5Lexists(f, "particles/id", H5P_DEFAULT) > 0; }
  H5E_END_TRY;
  if (!ok) snprintf(why, len, "no run state or particle ids");
  H5Fclose(f);
  return ok;
}

static int CompareDescending(const void *a, const void *b) { return *(const int *)b - *(const int *)a; }

/* Rank 0: the newest intact checkpoint in OUTDIR/checkpoints ("" if none);
 * damaged newer ones are skipped, saying which and why. */
static void LatestRank0(MPMSim sim, char *path, size_t len, int *found)
{
  char           dir[PETSC_MAX_PATH_LEN + 16], why[128];
  DIR           *d;
  struct dirent *e;
  int            steps[4096], n = 0;

  path[0] = 0;
  *found  = 0;
  snprintf(dir, sizeof(dir), "%s/checkpoints", sim->outdir);
  if (!(d = opendir(dir))) return;
  while ((e = readdir(d)) && n < 4096)
    if (CheckpointStep(e->d_name) >= 0) steps[n++] = CheckpointStep(e->d_name);
  closedir(d);
  *found = n;
  qsort(steps, (size_t)n, sizeof(int), CompareDescending);
  for (int k = 0; k < n; k++) {
    if ((size_t)snprintf(path, len, "%s/ckpt_%08d.h5", dir, steps[k]) >= len) break; /* too long: treat as none */
    if (IntactRank0(path, why, sizeof(why))) return;
    fprintf(stderr, "granular-mpm: -restart latest: skipping %s (%s)\n", path, why);
  }
  path[0] = 0;
}

static PetscErrorCode ReadState(MPMSim sim, hid_t file, const char *what, int64_t *ranks)
{
  double  r[8];
  int64_t i[8], nodes[3], layers[MPM_MAX_NAMES];

  PetscFunctionBeginUser;
  PetscCall(MPMH5ReadAttr(file, "step_frame_n_deleted_emitted_dim_ranks_seed", H5T_NATIVE_INT64, 8, i, what));
  PetscCheck(i[5] == sim->dim, sim->comm, PETSC_ERR_USER_INPUT, "%s is %lldD but the deck is %" PetscInt_FMT "D (-dim)", what, (long long)i[5], sim->dim);
  PetscCall(MPMH5ReadAttr(file, "grid_nodes", H5T_NATIVE_INT64, 3, nodes, what));
  PetscCheck(nodes[0] == sim->layout.N[0] && nodes[1] == sim->layout.N[1] && nodes[2] == sim->layout.N[2], sim->comm, PETSC_ERR_USER_INPUT,
             "%s was written on a grid of %lld x %lld x %lld nodes, the deck gives %" PetscInt_FMT " x %" PetscInt_FMT " x %" PetscInt_FMT " (-domain_lo/-domain_hi/-dx)", what,
             (long long)nodes[0], (long long)nodes[1], (long long)nodes[2], sim->layout.N[0], sim->layout.N[1], sim->layout.N[2]);
  PetscCall(MPMH5ReadAttr(file, "emitter_layers_and_count", H5T_NATIVE_INT64, (int)sim->nem + 1, layers, what));
  for (PetscInt e = 0; e < sim->nem; e++) sim->em[e].layers = layers[e];
  PetscCall(MPMH5ReadAttr(file, "time_dt_dtlo_dthi_tnext_tlastframe_psteps_wallsteps", H5T_NATIVE_DOUBLE, 8, r, what));
  sim->t              = r[0];
  sim->dt             = r[1];
  sim->dt_lo          = r[2];
  sim->dt_hi          = r[3];
  sim->t_next_output  = r[4];
  sim->t_last_frame   = r[5];
  sim->particle_steps = r[6];
  sim->wall_steps     = r[7];
  sim->step           = (PetscInt)i[0];
  sim->frame          = (PetscInt)i[1];
  sim->n_global       = i[2];
  sim->n_deleted      = i[3];
  sim->n_emitted      = i[4];
  *ranks              = i[6];
  sim->rank_seconds_steps = sim->wall_steps * (double)i[6]; /* checkpoints before 2026-11-27 (fifth session): one rank count so far, assumed */
  if (H5Aexists(file, "rank_seconds_stepping") > 0) PetscCall(MPMH5ReadAttr(file, "rank_seconds_stepping", H5T_NATIVE_DOUBLE, 1, &sim->rank_seconds_steps, what));
  if (H5Aexists(file, "particles_split_merged") > 0) { /* checkpoints before 2026-11-26 have none: nothing was split */
    int64_t sm[2];
    PetscCall(MPMH5ReadAttr(file, "particles_split_merged", H5T_NATIVE_INT64, 2, sm, what));
    sim->n_split  = sm[0];
    sim->n_merged = sm[1];
  }
  if (H5Aexists(file, "dt_limit_takenmin_counts") > 0) { /* checkpoints before 2026-11-26 have none: the counts restart at 0 */
    double lim[MPM_DT_NREASONS + 2];
    PetscCall(MPMH5ReadAttr(file, "dt_limit_takenmin_counts", H5T_NATIVE_DOUBLE, MPM_DT_NREASONS + 2, lim, what));
    sim->dt_limit    = (MPMDtLimit)lim[0];
    sim->dt_taken_lo = lim[1];
    for (int k = 0; k < MPM_DT_NREASONS; k++) sim->dt_count[k] = lim[k + 2];
  }
  if (H5Aexists(file, "energy0_set_workramp") > 0) { /* checkpoints before 2026-11-26: the budget starts at the restart */
    double e[3];
    PetscCall(MPMH5ReadAttr(file, "energy0_set_workramp", H5T_NATIVE_DOUBLE, 3, e, what));
    sim->energy0     = e[0];
    sim->energy0_set = e[1] != 0;
    sim->work_ramp   = e[2];
  }
  PetscCall(ReadTotals(sim, file, what));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode ReadFrameList(MPMSim sim, MPMH5File *F, const char *what)
{
  hid_t     d, sp;
  hsize_t   n = 0;
  MPMH5File R = *F;
  double   *t;
  int64_t  *np, *num;

  PetscFunctionBeginUser;
  PetscCheck(MPMH5Exists(F->file, "frame_time"), sim->comm, PETSC_ERR_USER_INPUT, "%s has no dataset frame_time", what);
  H5CALL(d = H5Dopen2(F->file, "frame_time", H5P_DEFAULT));
  H5CALL(sp = H5Dget_space(d));
  H5CALL(H5Sget_simple_extent_dims(sp, &n, NULL));
  H5CALL(H5Sclose(sp));
  H5CALL(H5Dclose(d));
  R.offset = 0;
  R.total  = (int64_t)n;
  R.n      = sim->rank == 0 ? (int64_t)n : 0;
  PetscCall(PetscMalloc3(n + 1, &t, n + 1, &np, n + 1, &num));
  PetscCall(MPMH5ReadArray(&R, "frame_time", H5T_NATIVE_DOUBLE, 1, t, what));
  PetscCall(MPMH5ReadArray(&R, "frame_number", H5T_NATIVE_INT64, 1, num, what));
  sim->nframes = 0;
  for (int64_t f = 0; f < R.n; f++) {
    const int64_t none[MPM_MAX_SPECIES] = {0};
    PetscCall(MPMOutputRecordFrame(sim, t[f], none, (PetscInt)num[f]));
  }
  for (PetscInt s = 0; s < sim->nspecies; s++) {
    char name[MPM_NAME_LEN + 32];
    SpeciesName(sim, s, "frame_particles", name, sizeof(name));
    PetscCall(MPMH5ReadArray(&R, name, H5T_NATIVE_INT64, 1, np, what));
    for (int64_t f = 0; f < R.n; f++) sim->frames[f].n[s] = np[f];
  }
  PetscCall(PetscFree3(t, np, num));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Checkpoints from before the integrators have neither: explicit, no impulses. */
static PetscErrorCode ReadMethodState(MPMSim sim, MPMH5File *F, int64_t ranks, const char *what)
{
  const MPMColliders c  = sim->colliders;
  const int          nc = 6 * (int)c->nobj;
  char              *type = NULL;
  double            *rows;
  MPMH5File          R = *F;

  PetscFunctionBeginUser;
  if (H5Aexists(F->file, "integrator") > 0) {
    PetscBool same;
    PetscCall(MPMH5ReadString(F->file, "integrator", &type, what));
    PetscCall(PetscStrcmp(type, sim->integ->type, &same));
    PetscCheck(same, sim->comm, PETSC_ERR_USER_INPUT, "%s was written by -integrator %s; the deck uses -integrator %s", what, type, sim->integ->type);
    PetscCall(PetscFree(type));
  }
  if (H5Aexists(F->file, "integrator_state") > 0) {
    double   state[MPM_MAX_INTEGRATOR_STATE];
    hid_t    a, sp;
    hssize_t n;
    H5CALL(a = H5Aopen(F->file, "integrator_state", H5P_DEFAULT));
    H5CALL(sp = H5Aget_space(a));
    H5CALL(n = H5Sget_simple_extent_npoints(sp));
    H5CALL(H5Sclose(sp));
    H5CALL(H5Aclose(a));
    PetscCheck(n <= MPM_MAX_INTEGRATOR_STATE && sim->integ->ops.set_state, sim->comm, PETSC_ERR_USER_INPUT, "%s: integrator state of %lld values does not fit -integrator %s", what,
               (long long)n, sim->integ->type);
    PetscCall(MPMH5ReadAttr(F->file, "integrator_state", H5T_NATIVE_DOUBLE, (int)n, state, what));
    PetscCall(sim->integ->ops.set_state(sim->integ, (PetscInt)n, state));
  }
  if (!MPMH5Exists(F->file, "collider_impulse")) PetscFunctionReturn(PETSC_SUCCESS);
  /* same rank count: this rank's row; otherwise rank 0 takes the sum of all rows */
  R.total  = ranks;
  R.offset = ranks == sim->size ? sim->rank : 0;
  R.n      = ranks == sim->size ? 1 : (sim->rank == 0 ? ranks : 0);
  PetscCall(PetscCalloc1(nc * (R.n + 1), &rows));
  PetscCall(MPMH5ReadArray(&R, "collider_impulse", H5T_NATIVE_DOUBLE, nc, rows, what));
  for (int i = 0; i < nc; i++) {
    c->impulse[i] = 0;
    for (int64_t r = 0; r < R.n; r++) c->impulse[i] += rows[r * nc + i];
  }
  PetscCall(MPMH5ReadAttr(F->file, "collider_elapsed", H5T_NATIVE_DOUBLE, 1, &c->elapsed, what));
  PetscCall(MPMH5ReadAttr(F->file, "collider_last_report", H5T_NATIVE_DOUBLE, nc, c->last, what));
  if (H5Aexists(F->file, "collider_totals") > 0) /* checkpoints before 2026-11-26 have none: the totals restart at 0 */
    PetscCall(MPMH5ReadAttr(F->file, "collider_totals", H5T_NATIVE_DOUBLE, MPM_COLLIDER_TOTALS * (int)c->nobj, c->total, what));
  PetscCall(PetscFree(rows));
  if (c->ndynamic > 0) {
    double *b;
    PetscCheck(H5Aexists(F->file, "bodies") > 0, sim->comm, PETSC_ERR_USER_INPUT, "%s has no dynamic bodies; this deck has %" PetscInt_FMT, what, c->ndynamic);
    PetscCall(PetscMalloc1(18 * c->nobj, &b));
    PetscCall(MPMH5ReadAttr(F->file, "bodies", H5T_NATIVE_DOUBLE, 18 * (int)c->nobj, b, what));
    for (PetscInt o = 0; o < c->nobj; o++)
      if (c->obj[o].dynamic) BodyState(&c->obj[o].ps, b + 18 * o, PETSC_FALSE);
    PetscCall(PetscFree(b));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* This rank's rows of species s: its own block on the same rank count, an
 * equal share otherwise; returns the species' total. */
static PetscErrorCode ReadParticles(MPMSim sim, PetscInt s, MPMH5File *F, int64_t ranks, const char *what, int64_t *total)
{
  char          group[MPM_NAME_LEN + 16], name[3 * MPM_NAME_LEN];
  int64_t      *ppr;
  PetscInt      start;
  MPMH5File     R = *F;
  MPMSpecies   *sp = sim->species[s];
  MPMParticles *p  = &sp->p;

  PetscFunctionBeginUser;
  SpeciesName(sim, s, "particles_per_rank", name, sizeof(name));
  PetscCheck(MPMH5Exists(F->file, name), sim->comm, PETSC_ERR_USER_INPUT, "%s has no particles of species %s (written by another -integrator?)", what, sp->name);
  PetscCall(PetscMalloc1(ranks, &ppr)); /* every rank reads every rank's count: the species' total */
  R.offset = 0;
  R.n      = ranks;
  R.total  = ranks;
  PetscCall(MPMH5ReadArray(&R, name, H5T_NATIVE_INT64, 1, ppr, what));
  *total = 0;
  for (int64_t r = 0; r < ranks; r++) *total += ppr[r];
  F->total = *total;
  if (ranks == sim->size) {
    F->n = ppr[sim->rank];
    PetscCall(MPMGlobalOffset(sim->comm, F->n, &F->offset, &R.total));
  } else {
    F->offset = *total * sim->rank / sim->size;
    F->n      = *total * (sim->rank + 1) / sim->size - F->offset;
  }
  PetscCall(PetscFree(ppr));
  SpeciesName(sim, s, "particles", group, sizeof(group));
  PetscCall(MPMParticlesAppend(p, (PetscInt)F->n, &start)); /* every checkpointed field must be in the file */
  for (PetscInt f = 0; f < p->nfield; f++) {
    const MPMField *fd = &p->field[f];
    if (!(fd->flags & MPM_FIELD_CHECKPOINT)) continue;
    PetscCall(PetscSNPrintf(name, sizeof(name), "%s/%s", group, fd->name));
    PetscCall(MPMH5ReadArray(F, name, FieldType(fd), fd->ncomp, (char *)fd->data + MPMFieldSize(fd) * (size_t)start, what));
  }
  int64_t        bad = 0; /* counted over all ranks: an error on one rank alone would leave the others in a collective */
  const int32_t *mat = MPMFieldInt32(p, p->f_mat);
  for (PetscInt q = 0; q < p->n; q++) bad += !(mat[q] >= 0 && mat[q] < sp->nmat);
  PetscCall(MPMGlobalSumInt64(sim->comm, &bad, 1));
  PetscCheck(bad == 0, sim->comm, PETSC_ERR_USER_INPUT, "%s: %lld particles have a material index beyond the %" PetscInt_FMT " listed in -materials", what, (long long)bad, sp->nmat);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The same rank count and decomposition: take the checkpoint's parts
 * (load balancing may have moved them), since each rank's particle block
 * belongs to its slab or block; *kept then.  Otherwise (another rank
 * count, or slabs against blocks) the particles go to their owners after
 * reading.  Checkpoints written before blocks existed hold slabs along the
 * slab axis and "slab_start" only. */
static PetscErrorCode RestoreLayout(MPMSim sim, MPMH5File *F, int64_t ranks, const char *what, PetscBool *kept)
{
  MPMLayout *l = &sim->layout;
  int64_t    parts[3] = {1, 1, 1}, *s;
  PetscInt  *start[3];
  PetscBool  same = PETSC_TRUE, blocks = PETSC_FALSE;
  MPMH5File  R = *F;

  PetscFunctionBeginUser;
  *kept = PETSC_FALSE;
  if (ranks != sim->size) PetscFunctionReturn(PETSC_SUCCESS);
  if (H5Aexists(F->file, "decomposition_parts") > 0) {
    PetscCall(MPMH5ReadAttr(F->file, "decomposition_parts", H5T_NATIVE_INT64, 3, parts, what));
    blocks = H5Lexists(F->file, "part_start", H5P_DEFAULT) > 0;
  } else if (l->decomposition == MPM_DECOMP_SLABS) parts[l->slab_axis] = sim->size; /* slabs along the axis this run cuts (-slab_axis); checked below */
  else parts[0] = 0; /* slabs along an axis this run does not know: not the blocks' grid */
  for (PetscInt a = 0; a < 3; a++) same = same && parts[a] == l->parts[a];
  if (!same) {
    if (parts[0]) PetscCall(PetscPrintf(sim->comm, "%s: its ranks form a %lld x %lld x %lld grid, this run's %" PetscInt_FMT " x %" PetscInt_FMT " x %" PetscInt_FMT ": the particles go to their owners\n", what,
                                        (long long)parts[0], (long long)parts[1], (long long)parts[2], l->parts[0], l->parts[1], l->parts[2]));
    else PetscCall(PetscPrintf(sim->comm, "%s: written on slabs before blocks existed, this run has blocks: the particles go to their owners\n", what));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(PetscMalloc1(3 * sim->size, &s));
  R.offset = 0;
  R.n      = sim->size;
  R.total  = sim->size;
  if (blocks) PetscCall(MPMH5ReadArray(&R, "part_start", H5T_NATIVE_INT64, 3, s, what));
  else {
    PetscCall(MPMH5ReadArray(&R, "slab_start", H5T_NATIVE_INT64, 1, s + 2 * sim->size, what));
    for (PetscMPIInt r = 0; r < sim->size; r++)
      for (PetscInt a = 0; a < 3; a++) s[3 * r + a] = a == l->slab_axis ? s[2 * sim->size + r] : 0;
  }
  for (PetscInt a = 0; a < 3; a++) { /* part c of axis a starts where a rank with coordinate c along it starts */
    PetscCall(PetscMalloc1(l->parts[a] + 1, &start[a]));
    start[a][l->parts[a]] = l->N[a];
    for (PetscMPIInt r = 0; r < sim->size; r++) start[a][MPMLayoutRankCoord(l, r, a)] = (PetscInt)s[3 * r + a];
    for (PetscInt c = 0; c < l->parts[a] && l->parts[a] > 1; c++)
      PetscCheck(start[a][c + 1] - start[a][c] >= 2, sim->comm, PETSC_ERR_USER_INPUT, "%s: its layout does not fit this grid (-slab_axis, -decomposition or -dx changed?)", what);
  }
  same = PETSC_TRUE;
  for (PetscInt a = 0; a < 3; a++)
    for (PetscInt c = 0; c <= l->parts[a]; c++) same = same && start[a][c] == l->start[a][c];
  if (!same) {
    PetscCall(MPMLayoutSetParts(sim, start));
    PetscCall(MPMGridFieldsRebuild(sim));
  }
  for (PetscInt a = 0; a < 3; a++) PetscCall(PetscFree(start[a]));
  PetscCall(PetscFree(s));
  *kept = PETSC_TRUE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMCheckpointRestart(MPMSim sim, PetscBool *restarted)
{
  char             path[PETSC_MAX_PATH_LEN], what[PETSC_MAX_PATH_LEN + 32];
  MPMH5File        F;
  PetscBool        ok, latest;
  int64_t          ranks = 0;
  MPMStepReduction red;
  PetscBool        kept;

  PetscFunctionBeginUser;
  *restarted = PETSC_FALSE;
  if (!sim->restart[0]) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscStrcmp(sim->restart, "latest", &latest));
  if (latest) {
    int found = 0;
    if (sim->rank == 0) LatestRank0(sim, path, sizeof(path), &found);
    PetscCall(MPMBroadcastString(sim->comm, path, sizeof(path)));
    PetscCall(MPMBroadcastInt(sim->comm, &found));
    PetscCheck(path[0] || !found, sim->comm, PETSC_ERR_USER_INPUT, "-restart latest: all %d checkpoints in %s/checkpoints are damaged (see above); give one with -restart FILE or remove them",
               found, sim->outdir);
    if (!path[0]) {
      PetscCall(PetscPrintf(sim->comm, "-restart latest: no checkpoint in %s/checkpoints, starting from the beginning\n", sim->outdir));
      PetscFunctionReturn(PETSC_SUCCESS);
    }
  } else PetscCall(PetscStrncpy(path, sim->restart, sizeof(path)));
  PetscCall(PetscSNPrintf(what, sizeof(what), "checkpoint %s", path));
  PetscCheck(access(path, R_OK) == 0, sim->comm, PETSC_ERR_USER_INPUT, "-restart: cannot read %s", path);
  PetscCall(MPMH5Open(sim->comm, path, &F, &ok));
  PetscCheck(ok, sim->comm, PETSC_ERR_USER_INPUT, "-restart: %s is damaged or not an HDF5 checkpoint (truncated or overwritten?)", path);
  PetscCall(ReadState(sim, F.file, what, &ranks));
  PetscCall(RestoreLayout(sim, &F, ranks, what, &kept));
  {
    int64_t all = 0, ns = 0;
    for (PetscInt s = 0; s < sim->nspecies; s++) {
      PetscCall(ReadParticles(sim, s, &F, ranks, what, &ns));
      all += ns;
    }
    PetscCheck(all == sim->n_global, sim->comm, PETSC_ERR_USER_INPUT, "%s: the species hold %lld particles, the run's count is %lld", what, (long long)all, (long long)sim->n_global);
  }
  PetscCall(ReadFrameList(sim, &F, what));
  PetscCall(ReadMethodState(sim, &F, ranks, what));
  PetscCall(MPMCheckpointGridFieldsRead(sim, &F, what)); /* after the slabs are restored */
  PetscCall(MPMH5Close(&F));
  if (!kept) { /* slabs or blocks on the particles' work, the particles to their owners, then into cache order */
    PetscCall(MPMBalanceInitial(sim, PETSC_TRUE));
    PetscCall(MPMMigrate(sim, &red));
    red.dt    = sim->dt;
    red.flags = 0;
    red.wmax  = MPMBalanceRankWork(sim);
    PetscCall(MPMGlobalStepReduce(sim->comm, &red));
    PetscCheck(red.n == sim->n_global && red.outside == 0, sim->comm, PETSC_ERR_PLIB, "%s: %lld particles after redistribution (%lld outside), expected %lld", what,
               (long long)red.n, (long long)red.outside, (long long)sim->n_global);
    if (sim->sort_interval) PetscCall(MPMSortParticles(sim));
  }
  *restarted = PETSC_TRUE;
  PetscCall(PetscPrintf(sim->comm, "restarted from %s: step %" PetscInt_FMT ", t = %g s, %lld particles, written on %lld rank%s\n", path, sim->step, sim->t,
                        (long long)sim->n_global, (long long)ranks, ranks > 1 ? "s" : ""));
  PetscFunctionReturn(PETSC_SUCCESS);
}
