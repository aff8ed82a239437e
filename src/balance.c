/* Dynamic load balancing of the slabs.
 *
 * The step's one reduction already carries the largest per-rank particle
 * count, so watching the imbalance max/mean costs nothing.  When it exceeds
 * -balance_threshold, the slab boundaries move to the particle-count
 * quantiles along the slab axis (one histogram reduction over the node
 * planes), the DMDA is rebuilt with the new ownership ranges and the
 * particles migrate to their new owners.  Everything depends only on the
 * particle positions, so it is deterministic; a restart on the same rank
 * count restores the layout from the checkpoint. */
#include "mpm_impl.h"

PetscErrorCode MPMBalanceSetUp(MPMSim sim)
{
  PetscFunctionBeginUser;
  sim->balance_threshold = 1.2;
  PetscOptionsBegin(sim->comm, NULL, "Load balancing", NULL);
  PetscCall(PetscOptionsReal("-balance_threshold", "Rebalance the slabs when max/mean particles per rank exceeds this (0: never) [-]", NULL, sim->balance_threshold,
                             &sim->balance_threshold, NULL));
  PetscOptionsEnd();
  PetscCheck(sim->balance_threshold == 0 || sim->balance_threshold > 1, sim->comm, PETSC_ERR_USER_INPUT, "-balance_threshold must be 0 (off) or > 1, got %g",
             sim->balance_threshold);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Particles per node plane along the slab axis, summed over all ranks. */
static PetscErrorCode PlaneHistogram(MPMSim sim, int64_t *hist)
{
  const MPMGrid *g = &sim->grid;
  const PetscInt N = g->N[g->slab_axis];

  PetscFunctionBeginUser;
  for (PetscInt c = 0; c < N; c++) hist[c] = 0;
  for (PetscInt q = 0; q < sim->p.n; q++) hist[PetscClipInterval(MPMGridParticleCell(g, sim->p.x + q * sim->dim), 0, N - 1)]++;
  PetscCall(MPMGlobalSumInt64(sim->comm, hist, N));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Slab r starts at the first plane where the cumulative count reaches
 * r/P of the total; every slab keeps at least 2 planes (the ghost width). */
static void QuantileSlabs(const int64_t *hist, PetscInt N, PetscInt P, PetscInt *start)
{
  int64_t total = 0, cum = 0;
  for (PetscInt c = 0; c < N; c++) total += hist[c];
  start[0] = 0;
  start[P] = N;
  for (PetscInt r = 1, c = 0; r < P; r++) {
    while (c < N && (double)cum < (double)total * r / P) cum += hist[c++];
    start[r] = c;
  }
  for (PetscInt r = 1; r < P; r++) start[r] = PetscMax(start[r], start[r - 1] + 2);
  for (PetscInt r = P - 1; r > 0; r--) start[r] = PetscMin(start[r], start[r + 1] - 2);
}

static PetscErrorCode Rebalance(MPMSim sim, PetscBool *moved)
{
  MPMGrid         *g = &sim->grid;
  const PetscInt   N = g->N[g->slab_axis], P = sim->size;
  int64_t         *hist;
  PetscInt        *start;
  MPMStepReduction red;
  const double     before = sim->imbalance;

  PetscFunctionBeginUser;
  PetscCall(PetscMalloc2(N, &hist, P + 1, &start));
  PetscCall(PlaneHistogram(sim, hist));
  QuantileSlabs(hist, N, P, start);
  *moved = PETSC_FALSE;
  for (PetscInt r = 0; r <= P; r++) *moved = *moved || start[r] != g->slab_start[r];
  if (*moved) {
    PetscCall(MPMGridSetSlabs(sim, start));
    PetscCall(MPMMigrate(sim, &red));
    red.dt    = sim->dt;
    red.flags = 0;
    PetscCall(MPMGlobalStepReduce(sim->comm, &red));
    PetscCheck(red.n == sim->n_global && red.outside == 0, sim->comm, PETSC_ERR_PLIB, "Rebalancing changed the particle count from %lld to %lld", (long long)sim->n_global,
               (long long)red.n);
    sim->imbalance = (double)red.nmax * P / (double)PetscMax(red.n, 1);
    if (sim->sort_interval) PetscCall(MPMSortParticles(sim));
    sim->rebalances++;
    PetscCall(PetscPrintf(sim->comm, "rebalanced at step %" PetscInt_FMT ": particles per rank max/mean %.3f -> %.3f\n", sim->step, before, sim->imbalance));
  }
  PetscCall(PetscFree2(hist, start));
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
