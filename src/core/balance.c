/* Dynamic load balancing of the slabs (or blocks).
 *
 * A rank's work per step is its particles plus its grid nodes, the nodes
 * weighted by -balance_node_cost particle-equivalents: a node costs little
 * next to a particle, but a slab that follows the mass by particle count
 * alone would hand the empty rest of a long runway to the last rank, and
 * at many ranks that rank's grid work outweighs everyone's particles.
 * The step's one reduction already carries the largest per-rank work, so
 * watching the imbalance (max/mean work) costs nothing.  When it exceeds
 * -balance_threshold, the slab boundaries move to the work quantiles along
 * the slab axis (one histogram reduction over the node planes), the DMDA
 * is rebuilt with the new ownership ranges and the particles migrate to
 * their new owners.  Everything depends only on the particle positions, so
 * it is deterministic; a restart on the same rank count restores the
 * layout from the checkpoint.
 *
 * A run does not start on even slabs: the particles the regions will seed
 * are counted per plane first (no particle is made), and the slabs start at
 * the work quantiles of that count.  On even slabs a sand column at one end
 * of a long box starts on one rank and rebalances at the first step, a
 * migration of half the particles (0.63 s of an 8.8 s, 45-step run of 1M
 * particles on 2 ranks, docs/scaling.md).
 *
 * Blocks are balanced the same way along each cut axis at once, from the
 * work of the axis's planes (the marginal work): a DMDA's parts are the
 * tensor product of one cut per axis, so a part cannot follow the mass
 * column by column as a recursive bisection would; where the mass is one
 * compact heap this balances as well, where it is two heaps far apart
 * (diagonally) it cannot. */
#include "core.h"

PetscErrorCode MPMBalanceSetUp(MPMSim sim)
{
  PetscFunctionBeginUser;
  sim->balance_threshold = 1.2;
  sim->balance_node_cost = 0.08;
  sim->balance_initial   = PETSC_TRUE;
  PetscOptionsBegin(sim->comm, NULL, "Load balancing", NULL);
  PetscCall(MPMOptionsReal("-balance_threshold", "Rebalance the slabs when max/mean work per rank exceeds this (0: never) [-]", NULL, sim->balance_threshold,
                             &sim->balance_threshold, NULL));
  PetscCall(MPMOptionsReal("-balance_node_cost", "Work of one grid node per step in particle-equivalents (0: balance particles only) [-]", NULL,
                             sim->balance_node_cost, &sim->balance_node_cost, NULL));
  PetscCall(PetscOptionsBool("-balance_initial", "Start with the slabs at the work quantiles of the particles the regions seed, or of a checkpoint's on another rank count (false: even slabs; with -balance_threshold 0 they stay even)", NULL,
                             sim->balance_initial, &sim->balance_initial, NULL));
  PetscOptionsEnd();
  PetscCheck(sim->balance_threshold == 0 || sim->balance_threshold > 1, sim->comm, PETSC_ERR_USER_INPUT, "-balance_threshold must be 0 (off) or > 1, got %g",
             sim->balance_threshold);
  PetscCheck(sim->balance_node_cost >= 0 && sim->balance_node_cost <= 100, sim->comm, PETSC_ERR_USER_INPUT, "-balance_node_cost must be in [0, 100], got %g",
             sim->balance_node_cost);
  PetscFunctionReturn(PETSC_SUCCESS);
}

static double NodesIn(const PetscInt *n, PetscInt dim)
{
  double c = 1;
  for (PetscInt a = 0; a < dim; a++) c *= (double)n[a];
  return c;
}

/* This rank's work per step in particle-equivalents. */
double MPMBalanceRankWork(const MPMSim sim)
{
  return (double)MPMLocalParticles(sim) + sim->balance_node_cost * NodesIn(sim->layout.xm, sim->dim);
}

/* max/mean work per rank, from the step reduction (red->n: all particles). */
double MPMBalanceImbalance(const MPMSim sim, const MPMStepReduction *red)
{
  const double total = (double)red->n + sim->balance_node_cost * NodesIn(sim->layout.N, sim->dim);
  return total > 0 ? red->wmax * sim->size / total : 1.0;
}

/* Work per node plane along each cut axis (parts > 1), summed over all
 * ranks: the particles in the plane (this rank's in hist) plus the
 * weighted nodes of the plane.  hist and work hold the axes one after the
 * other (N[0] + N[1] + N[2] planes, MPMLayoutPlanes). */
static PetscErrorCode PlaneWorkFrom(MPMSim sim, int64_t *hist, double *work)
{
  const MPMLayout *g = &sim->layout;
  const PetscInt   NT = MPMLayoutPlanes(g, 3);

  PetscFunctionBeginUser;
  PetscCall(MPMGlobalSumInt64(sim->comm, hist, NT));
  for (PetscInt a = 0, o = 0; a < 3; o += g->N[a], a++) {
    const double face = NodesIn(g->N, sim->dim) / (double)g->N[a];
    for (PetscInt c = 0; c < g->N[a]; c++) work[o + c] = (double)hist[o + c] + sim->balance_node_cost * face;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode PlaneWork(MPMSim sim, double *work)
{
  const MPMLayout *g = &sim->layout;
  int64_t         *hist;

  PetscFunctionBeginUser;
  PetscCall(PetscCalloc1(MPMLayoutPlanes(g, 3), &hist));
  for (PetscInt s = 0; s < sim->nspecies; s++) {
    const MPMParticles *p = &sim->species[s]->p;
    MPMLayoutPlaneCount(g, p->n, MPMFieldReal(p, p->f_x), hist);
  }
  PetscCall(PlaneWorkFrom(sim, hist, work));
  PetscCall(PetscFree(hist));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* max/mean of the parts' work along one axis. */
static double PartImbalance(const double *work, const PetscInt *start, PetscInt P)
{
  double total = 0, wmax = 0;
  for (PetscInt r = 0; r < P; r++) {
    double w = 0;
    for (PetscInt c = start[r]; c < start[r + 1]; c++) w += work[c];
    total += w;
    wmax = PetscMax(wmax, w);
  }
  return total > 0 ? wmax * P / total : 1.0;
}

/* The largest of PartImbalance over the cut axes (slabs: the slab's; for
 * blocks an estimate from the marginal work of each axis). */
static double Imbalance(const MPMLayout *g, const double *work, PetscInt *const start[3])
{
  double imb = 1.0;
  for (PetscInt a = 0; a < 3; a++)
    if (g->parts[a] > 1) {
      const double i = PartImbalance(work + MPMLayoutPlanes(g, a), start[a], g->parts[a]); /* once: PetscMax is a macro */
      imb            = PetscMax(imb, i);
    }
  return imb;
}

/* Part r starts at the first plane where the cumulative work reaches r/P
 * of the total; every part keeps at least 2 planes (the ghost width). */
static void QuantileParts(const double *work, PetscInt N, PetscInt P, PetscInt *start)
{
  double total = 0, cum = 0;
  for (PetscInt c = 0; c < N; c++) total += work[c];
  start[0] = 0;
  start[P] = N;
  for (PetscInt r = 1, c = 0; r < P; r++) {
    while (c < N && cum < total * r / P) cum += work[c++];
    start[r] = c;
  }
  for (PetscInt r = 1; r < P; r++) start[r] = PetscMax(start[r], start[r - 1] + 2);
  for (PetscInt r = P - 1; r > 0; r--) start[r] = PetscMin(start[r], start[r + 1] - 2);
}

/* Every cut axis at its work quantiles (the blocks are the tensor
 * product of the axes' cuts: a DMDA's ownership); *moved if any start
 * changed. */
static PetscErrorCode QuantileLayout(const MPMLayout *g, const double *work, PetscInt *start[3], PetscBool *moved)
{
  PetscFunctionBeginUser;
  *moved = PETSC_FALSE;
  for (PetscInt a = 0; a < 3; a++) {
    PetscCall(PetscMalloc1(g->parts[a] + 1, &start[a]));
    if (g->parts[a] > 1) QuantileParts(work + MPMLayoutPlanes(g, a), g->N[a], g->parts[a], start[a]);
    else start[a][0] = 0, start[a][1] = g->N[a];
    for (PetscInt r = 0; r <= g->parts[a]; r++) *moved = *moved || start[a][r] != g->start[a][r];
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode FreeStarts(PetscInt *start[3])
{
  PetscFunctionBeginUser;
  for (PetscInt a = 0; a < 3; a++) PetscCall(PetscFree(start[a]));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* MPMMigrate, and what it moved: *mb megabytes sent in all, *gbs the rate
 * of the slowest rank that moved any (sent plus received over its time). */
static PetscErrorCode MigrateMeasured(MPMSim sim, MPMStepReduction *red, double *mb, double *gbs)
{
  double bytes, secs, rate;

  PetscFunctionBeginUser;
  MPMMigrateThroughput(&bytes, &secs); /* zero the counters */
  PetscCall(MPMMigrate(sim, red));
  MPMMigrateThroughput(&bytes, &secs);
  rate = bytes > 0 && secs > 0 ? -bytes / secs : -PETSC_MAX_REAL; /* the largest of -rate is the slowest */
  PetscCall(MPMGlobalSum(sim->comm, &bytes, 1));
  PetscCall(MPMGlobalMax(sim->comm, &rate, 1));
  *mb  = 0.5 * bytes / 1e6; /* every byte counted by its sender and its receiver */
  *gbs = rate > -PETSC_MAX_REAL ? -rate / 1e9 : 0.0;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode Rebalance(MPMSim sim, PetscBool *moved)
{
  MPMLayout       *g = &sim->layout;
  double          *work;
  PetscInt        *start[3];
  MPMStepReduction red;
  const double     before = sim->imbalance;

  PetscFunctionBeginUser;
  PetscCall(PetscMalloc1(MPMLayoutPlanes(g, 3), &work));
  PetscCall(PlaneWork(sim, work));
  PetscCall(QuantileLayout(g, work, start, moved));
  if (*moved) {
    double mb = 0, gbs = 0;
    PetscCall(MPMLayoutSetParts(sim, start));
    PetscCall(MPMGridFieldsRebuild(sim));
    PetscCall(MigrateMeasured(sim, &red, &mb, &gbs));
    red.wmax  = MPMBalanceRankWork(sim);
    red.dt    = sim->dt;
    red.flags = 0;
    PetscCall(MPMGlobalStepReduce(sim->comm, &red));
    PetscCheck(red.n == sim->n_global && red.outside == 0, sim->comm, PETSC_ERR_PLIB, "Rebalancing changed the particle count from %lld to %lld", (long long)sim->n_global,
               (long long)red.n);
    sim->imbalance = MPMBalanceImbalance(sim, &red);
    if (sim->sort_interval) PetscCall(MPMSortParticles(sim));
    sim->rebalances++;
    PetscCall(PetscPrintf(sim->comm, "rebalanced at step %" PetscInt_FMT ": work per rank max/mean %.3f -> %.3f (%.3g MB of particles moved, %.3g GB/s on the slowest rank)\n", sim->step, before,
                          sim->imbalance, mb, gbs));
  }
  PetscCall(FreeStarts(start));
  PetscCall(PetscFree(work));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The parts at the work quantiles before the run starts: of the particles
 * the regions will seed (counted per plane on the even parts, none made),
 * or, restarting on another rank count, of the checkpoint's particles
 * (read, not yet migrated).  Not with -balance_initial false. */
PetscErrorCode MPMBalanceInitial(MPMSim sim, PetscBool restart)
{
  const MPMLayout *g = &sim->layout;
  int64_t         *hist = NULL;
  double          *work, before, after;
  PetscInt        *start[3];
  PetscBool        moved = PETSC_FALSE;

  PetscFunctionBeginUser;
  if (!sim->balance_initial || sim->balance_threshold == 0 || sim->size == 1) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscLogEventBegin(MPM_EVENT_BALANCE, 0, 0, 0, 0));
  PetscCall(PetscMalloc1(MPMLayoutPlanes(g, 3), &work));
  if (restart) PetscCall(PlaneWork(sim, work));
  else {
    PetscCall(PetscCalloc1(MPMLayoutPlanes(g, 3), &hist));
    PetscCall(MPMRegionsPlaneCounts(sim, hist));
    PetscCall(PlaneWorkFrom(sim, hist, work));
  }
  PetscCall(QuantileLayout(g, work, start, &moved));
  before = Imbalance(g, work, g->start);
  after  = Imbalance(g, work, start);
  if (moved && after < before) {
    PetscCall(MPMLayoutSetParts(sim, start));
    PetscCall(MPMGridFieldsRebuild(sim));
    const char *name = MPMLayoutDecompositionName(g);
    PetscCall(PetscPrintf(sim->comm, "%s placed on the %s work: max/mean %.3f (even %s: %.3f)\n", name, restart ? "checkpoint's" : "seeded", after, name, before));
  }
  PetscCall(FreeStarts(start));
  PetscCall(PetscFree(work));
  PetscCall(PetscFree(hist));
  PetscCall(PetscLogEventEnd(MPM_EVENT_BALANCE, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMBalanceAfterStep(MPMSim sim)
{
  PetscBool moved = PETSC_FALSE;

  PetscFunctionBeginUser;
  if (sim->balance_threshold == 0 || sim->size == 1 || sim->imbalance <= sim->balance_threshold || sim->step < sim->balance_next) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscLogEventBegin(MPM_EVENT_BALANCE, 0, 0, 0, 0));
  PetscCall(Rebalance(sim, &moved));
  /* If the quantile split cannot get under the threshold (the particles sit
   * in too few planes), do not try again every step: back off. */
  if (!moved || sim->imbalance > sim->balance_threshold) {
    sim->balance_wait = PetscMin(PetscMax(2 * sim->balance_wait, 10), 1000);
    sim->balance_next = sim->step + sim->balance_wait;
  } else sim->balance_wait = 0;
  PetscCall(PetscLogEventEnd(MPM_EVENT_BALANCE, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}
