/* One explicit MPM step (Klar et al. 2016, figure 7), the particle sort and
 * the global invariants. */
#include "mpm_impl.h"

/* The stable step: CFL on the fastest particle, the elastic wave limit and
 * the user maximum (or the fixed -dt). */
double MPMStableDt(const MPMSim sim, double vmax)
{
  if (sim->dt_fixed > 0) return sim->dt_fixed;
  double dt = sim->dt_max;
  if (vmax > 0) dt = PetscMin(dt, sim->cfl * sim->grid.h / vmax);
  if (sim->wave_speed > 0) dt = PetscMin(dt, sim->cfl_elastic * sim->grid.h / sim->wave_speed);
  return dt;
}

/* Transfer to the grid (K7, K9) with the explicit force (K23) fused in. */
static PetscErrorCode P2G(MPMSim sim, double dt)
{
  MPMGrid        *g = &sim->grid;
  MPMParticleView v = MPMParticlesView(&sim->p);
  PetscScalar    *a;

  PetscFunctionBeginUser;
  if (sim->transfer == MPM_TRANSFER_FLIP) v.C = NULL; /* no affine part: C stays 0 */
  PetscCall(PetscLogEventBegin(MPM_EVENT_P2G, 0, 0, 0, 0));
  PetscCall(VecZeroEntries(g->local));
  PetscCall(VecGetArray(g->local, &a));
  mpm_p2g(&g->box, &v, dt, a);
  PetscCall(VecRestoreArray(g->local, &a));
  PetscCall(PetscLogEventEnd(MPM_EVENT_P2G, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Transfer to particles (K11-K15); returns the local max particle speed. */
static PetscErrorCode G2P(MPMSim sim, double dt, double *vmax)
{
  MPMGrid        *g = &sim->grid;
  MPMParticleView v = MPMParticlesView(&sim->p);
  const PetscScalar *a;

  PetscFunctionBeginUser;
  if (sim->transfer == MPM_TRANSFER_FLIP) v.C = NULL;
  PetscCall(PetscLogEventBegin(MPM_EVENT_G2P, 0, 0, 0, 0));
  PetscCall(VecGetArrayRead(g->local, &a));
  *vmax = sqrt(mpm_g2p(&g->box, a, dt, sim->flip, &v));
  PetscCall(VecRestoreArrayRead(g->local, &a));
  PetscCall(PetscLogEventEnd(MPM_EVENT_G2P, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Plasticity, hardening (K16-K18, K29) and the stress for the next step.
 * Runs of consecutive particles of one material go to the material's batch
 * update when it has one (Drucker-Prager: the lane-parallel kernel). */
static PetscErrorCode Constitutive(MPMSim sim)
{
  MPMParticles  *p  = &sim->p;
  const PetscInt d2 = p->dim * p->dim;

  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_CONSTITUTIVE, 0, 0, 0, 0));
  for (PetscInt q0 = 0, q1; q0 < p->n; q0 = q1) {
    const MPMMaterial m = sim->mat[p->mat[q0]];
    for (q1 = q0 + 1; q1 < p->n && p->mat[q1] == p->mat[q0]; q1++) {}
    if (m->update_n) m->update_n(m->ctx, (int)(q1 - q0), p->Fe + q0 * d2, p->q + q0, p->Jp + q0, p->tau + q0 * d2, p->pcase + q0);
    else
      for (PetscInt q = q0; q < q1; q++) p->pcase[q] = (uint8_t)m->update(m->ctx, p->Fe + q * d2, &p->q[q], &p->Jp[q], p->tau + q * d2);
  }
  PetscCall(PetscLogEventEnd(MPM_EVENT_CONSTITUTIVE, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* After the reduction: particles outside the domain and the global count. */
static PetscErrorCode CheckInvariants(MPMSim sim, const MPMStepReduction *red, int64_t emitted)
{
  PetscFunctionBeginUser;
  if (red->outside) {
    PetscCheck(sim->delete_outside, sim->comm, PETSC_ERR_USER_INPUT,
               "Particle %lld left the domain at (%g, %g, %g) at step %" PetscInt_FMT ", t = %g s (%lld particle%s outside). Close the boundary (-bc_*), enlarge the domain, or pass -delete_outside to delete and count such particles",
               (long long)red->bad_id, red->bad_x[0], red->bad_x[1], red->bad_x[2], sim->step, sim->t, (long long)red->outside, red->outside > 1 ? "s" : "");
    sim->n_deleted += red->outside;
    PetscCall(PetscInfo(NULL, "Deleted %lld particles outside the domain at step %" PetscInt_FMT "\n", (long long)red->outside, sim->step));
  }
  const int64_t expect = sim->n_global + emitted - red->outside;
  PetscCheck(red->n == expect, sim->comm, PETSC_ERR_PLIB, "Particle count changed from %lld to %lld at step %" PetscInt_FMT " (expected %lld): particles were lost in migration",
             (long long)sim->n_global, (long long)red->n, sim->step, (long long)expect);
  sim->n_global  = red->n;
  sim->imbalance = MPMBalanceImbalance(sim, red);
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMStep(MPMSim sim)
{
  MPMStepReduction red;
  double           dt = sim->dt, vmax = 0;
  int64_t          emitted;

  PetscFunctionBeginUser;
  /* land exactly on output times and on t_end */
  dt = PetscMin(dt, sim->t_next_output - sim->t);
  dt = PetscMin(dt, sim->t_end - sim->t);
  sim->dt = dt;
  for (PetscInt o = sim->nwalls; o < sim->nobj; o++) MPMPlacedShapeAtTime(&sim->obj[o].ps, sim->dim, sim->t);
  PetscCall(P2G(sim, dt));
  PetscCall(MPMGhostScatterAdd(&sim->grid));
  PetscCall(MPMGridUpdate(sim, dt));
  PetscCall(MPMGhostGather(&sim->grid));
  PetscCall(G2P(sim, dt, &vmax));
  PetscCall(Constitutive(sim));
  sim->t += dt;
  sim->step++;
  sim->dt_lo = sim->step == 1 ? dt : PetscMin(sim->dt_lo, dt);
  sim->dt_hi = PetscMax(sim->dt_hi, dt);
  sim->particle_steps += (double)sim->n_global;
  PetscCall(MPMEmittersStep(sim, sim->t, &emitted));
  for (PetscInt e = 0; e < sim->nem; e++) vmax = PetscMax(vmax, sim->em[e].speed);
  PetscCall(MPMMigrate(sim, &red));
  if (sim->sort_interval && sim->step % sim->sort_interval == 0) PetscCall(MPMSortParticles(sim));
  red.dt    = MPMStableDt(sim, vmax);
  red.flags = MPMCheckpointLocalFlags(sim);
  PetscCall(MPMGlobalStepReduce(sim->comm, &red));
  sim->step_flags = red.flags;
  PetscCall(CheckInvariants(sim, &red, emitted));
  sim->n_emitted += emitted;
  sim->dt = red.dt;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Counting sort by grid cell: neighbouring particles touch the same nodes,
 * so P2G and G2P stay in cache. */
PetscErrorCode MPMSortParticles(MPMSim sim)
{
  MPMParticles     *p = &sim->p;
  const MPMGridBox *b = &sim->grid.box;
  const PetscInt    d = p->dim, ncell = (PetscInt)b->gn[0] * b->gn[1] * b->gn[2];
  PetscInt         *key, *count, *perm;

  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_SORT, 0, 0, 0, 0));
  PetscCall(PetscMalloc2(p->n, &key, p->n, &perm));
  PetscCall(PetscCalloc1(ncell + 1, &count));
  for (PetscInt q = 0; q < p->n; q++) {
    PetscInt c[3] = {0, 0, 0};
    for (PetscInt a = 0; a < d; a++) c[a] = PetscClipInterval(mpm_cell_index(b, (int)a, p->x[q * d + a]) - b->gs[a], 0, b->gn[a] - 1);
    key[q] = (c[2] * b->gn[1] + c[1]) * b->gn[0] + c[0];
    count[key[q] + 1]++;
  }
  for (PetscInt c = 0; c < ncell; c++) count[c + 1] += count[c];
  for (PetscInt q = 0; q < p->n; q++) perm[count[key[q]]++] = q; /* stable */
  PetscCall(MPMParticlesPermute(p, perm));
  PetscCall(PetscFree2(key, perm));
  PetscCall(PetscFree(count));
  PetscCall(PetscLogEventEnd(MPM_EVENT_SORT, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Global invariants: count, mass, momentum, kinetic and elastic energy. */
PetscErrorCode MPMComputeDiagnostics(MPMSim sim, MPMDiagnostics *out)
{
  const MPMParticles *p = &sim->p;
  const PetscInt      d = p->dim;
  double              s[7] = {0}, vmax = 0;

  PetscFunctionBeginUser;
  for (PetscInt q = 0; q < p->n; q++) {
    const MPMMaterial m  = sim->mat[p->mat[q]];
    double            v2 = 0;
    s[0] += 1;
    s[1] += p->m[q];
    for (PetscInt a = 0; a < d; a++) {
      s[2 + a] += p->m[q] * p->v[q * d + a];
      v2 += p->v[q * d + a] * p->v[q * d + a];
    }
    s[5] += 0.5 * p->m[q] * v2;
    s[6] += p->V0[q] * m->energy(m->ctx, p->Fe + q * d * d); /* (K20) */
    vmax = PetscMax(vmax, v2);
  }
  vmax = sqrt(vmax);
  PetscCall(MPMGlobalSum(sim->comm, s, 7));
  PetscCall(MPMGlobalMax(sim->comm, &vmax, 1));
  out->n    = (int64_t)s[0];
  out->mass = s[1];
  for (PetscInt a = 0; a < 3; a++) out->mom[a] = s[2 + a];
  out->ke   = s[5];
  out->ee   = s[6];
  out->vmax = vmax;
  PetscFunctionReturn(PETSC_SUCCESS);
}
