/* Every MPI call of the solver lives in this file, behind a few verbs:
 *
 *   MPMGhostScatterAdd   P2G: ghost-node contributions of a grid field
 *                        summed into their owners
 *   MPMGhostGather       before G2P: a grid field's ghost nodes refreshed
 *                        from their owners
 *   MPMGhostLayers*      the same two restricted to the ghost nodes, for
 *                        solvers that keep their unknowns on a subset of
 *                        the owned nodes and copy those themselves
 *   MPMMigrate           particles of every species that left the rank's
 *                        slab or block move to their owner
 *   MPMHalo*             particle halos (-integrator pbd): copies of the
 *                        particles within a reach of another rank's
 *                        particles, sent forward from their owners
 *   MPMGlobalStepReduce  the one reduction per step: time step, particle
 *                        count, particles that left the domain
 *   MPMGlobalSum/Max/Offset, MPMAllGatherInt64, MPMAllGatherVInt64 (split
 *                        particles' ids), MPMBarrier, MPMBroadcastInt: bookkeeping at
 *                        set-up and output time
 *
 * Ghost exchange uses the DMDA's scatters (PETSc does the MPI); migration
 * is explicit. */
#include "core.h"

static MPI_Datatype step_type = MPI_DATATYPE_NULL;
static MPI_Op       step_op   = MPI_OP_NULL;

static void step_combine(void *in_, void *inout_, int *len, MPI_Datatype *type)
{
  const MPMStepReduction *in    = (const MPMStepReduction *)in_;
  MPMStepReduction       *inout = (MPMStepReduction *)inout_;
  for (int i = 0; i < *len; i++) {
    if (in[i].dt < inout[i].dt || (in[i].dt == inout[i].dt && in[i].dt_limit < inout[i].dt_limit)) inout[i].dt_limit = in[i].dt_limit;
    inout[i].dt   = PetscMin(inout[i].dt, in[i].dt);
    inout[i].vmax = PetscMax(inout[i].vmax, in[i].vmax);
    inout[i].n += in[i].n;
    inout[i].outside += in[i].outside;
    inout[i].split += in[i].split;
    inout[i].merged += in[i].merged;
    inout[i].flags |= in[i].flags;
    inout[i].wmax = PetscMax(inout[i].wmax, in[i].wmax);
    if (in[i].bad_id < inout[i].bad_id) {
      inout[i].bad_id = in[i].bad_id;
      for (int a = 0; a < 3; a++) inout[i].bad_x[a] = in[i].bad_x[a];
    }
    inout[i].nonfinite += in[i].nonfinite;
    if (in[i].nf_id < inout[i].nf_id) {
      inout[i].nf_id      = in[i].nf_id;
      inout[i].nf_species = in[i].nf_species;
      inout[i].nf_mat     = in[i].nf_mat;
      for (int a = 0; a < 3; a++) {
        inout[i].nf_x[a] = in[i].nf_x[a];
        inout[i].nf_v[a] = in[i].nf_v[a];
      }
    }
  }
}

PetscErrorCode MPMParallelSetUp(MPMSim sim)
{
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(sim->comm, &sim->rank));
  PetscCallMPI(MPI_Comm_size(sim->comm, &sim->size));
  if (step_type == MPI_DATATYPE_NULL) {
    PetscCallMPI(MPI_Type_contiguous((int)sizeof(MPMStepReduction), MPI_BYTE, &step_type));
    PetscCallMPI(MPI_Type_commit(&step_type));
    PetscCallMPI(MPI_Op_create(step_combine, 1, &step_op));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMParallelFinalize(void)
{
  PetscFunctionBeginUser;
  if (step_type != MPI_DATATYPE_NULL) {
    PetscCallMPI(MPI_Type_free(&step_type));
    PetscCallMPI(MPI_Op_free(&step_op));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Sum the ghosted values `local` of a field's layout into the owned nodes
 * `global` (overwritten).  Implicit solvers pass their own Vecs (the
 * solver's iterate, work vectors) created on g->da. */
PetscErrorCode MPMGhostScatterAddVec(MPMGridField *g, Vec local, Vec global)
{
  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_GHOST, 0, 0, 0, 0));
  PetscCall(VecZeroEntries(global));
  PetscCall(DMLocalToGlobal(g->da, local, ADD_VALUES, global));
  PetscCall(PetscLogEventEnd(MPM_EVENT_GHOST, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Copy the owned values `global` to every rank that has them as ghosts. */
PetscErrorCode MPMGhostGatherVec(MPMGridField *g, Vec global, Vec local)
{
  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_GHOST, 0, 0, 0, 0));
  PetscCall(DMGlobalToLocal(g->da, global, INSERT_VALUES, local));
  PetscCall(PetscLogEventEnd(MPM_EVENT_GHOST, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMGhostScatterAdd(MPMGridField *g) { return MPMGhostScatterAddVec(g, g->local, g->global); }
PetscErrorCode MPMGhostGather(MPMGridField *g) { return MPMGhostGatherVec(g, g->global, g->local); }

/* The ghost layers of grid field g: every ghost entry of its local vector
 * and the global entry it copies (PETSc's local-to-global map of the DMDA),
 * one scatter between them; recv: the owned entries (offsets into this
 * rank's part of the global vector) that are ghosts on some other rank,
 * found by a reverse scatter of ones. */
PetscErrorCode MPMGhostLayersCreate(MPMGridField *g, MPMGhostLayers *gl)
{
  const MPMGridBox      *b = &g->box;
  const PetscInt         dof = g->dof;
  PetscInt               xs[3], xm[3], ng = 0, *from, *to, lo, n;
  ISLocalToGlobalMapping ltog;
  const PetscInt        *bl;
  IS                     isf, ist;
  Vec                    ones, mark;
  const PetscScalar     *m;

  PetscFunctionBeginUser;
  PetscCall(PetscMemzero(gl, sizeof(*gl)));
  PetscCall(DMDAGetCorners(g->da, &xs[0], &xs[1], &xs[2], &xm[0], &xm[1], &xm[2]));
  PetscCall(DMGetLocalToGlobalMapping(g->da, &ltog));
  PetscCall(ISLocalToGlobalMappingGetBlockIndices(ltog, &bl));
  const PetscInt nloc = (PetscInt)b->gn[0] * b->gn[1] * b->gn[2];
  PetscCall(PetscMalloc2(nloc * dof, &from, nloc * dof, &to));
  for (PetscInt L = 0; L < nloc; L++) {
    const PetscInt i[3] = {b->gs[0] + L % b->gn[0], b->gs[1] + (L / b->gn[0]) % b->gn[1], b->gs[2] + L / (b->gn[0] * b->gn[1])};
    PetscBool      owned = PETSC_TRUE;
    for (int a = 0; a < 3; a++) owned = owned && i[a] >= xs[a] && i[a] < xs[a] + xm[a];
    if (owned) continue;
    for (PetscInt c = 0; c < dof; c++, ng++) {
      from[ng] = bl[L] * dof + c;
      to[ng]   = L * dof + c;
    }
  }
  PetscCall(ISLocalToGlobalMappingRestoreBlockIndices(ltog, &bl));
  PetscCall(ISCreateGeneral(PETSC_COMM_SELF, ng, from, PETSC_COPY_VALUES, &isf));
  PetscCall(ISCreateGeneral(PETSC_COMM_SELF, ng, to, PETSC_COPY_VALUES, &ist));
  PetscCall(PetscFree2(from, to));
  PetscCall(VecScatterCreate(g->global, isf, g->local, ist, &gl->sc));
  PetscCall(ISDestroy(&isf));
  PetscCall(ISDestroy(&ist));
  PetscCall(VecDuplicate(g->local, &ones));
  PetscCall(VecDuplicate(g->global, &mark));
  PetscCall(VecSet(ones, 1.0));
  PetscCall(VecZeroEntries(mark));
  PetscCall(VecScatterBegin(gl->sc, ones, mark, ADD_VALUES, SCATTER_REVERSE));
  PetscCall(VecScatterEnd(gl->sc, ones, mark, ADD_VALUES, SCATTER_REVERSE));
  PetscCall(VecGetOwnershipRange(mark, &lo, NULL));
  PetscCall(VecGetLocalSize(mark, &n));
  PetscCall(VecGetArrayRead(mark, &m));
  for (PetscInt k = 0; k < n; k++) gl->nrecv += m[k] != 0;
  PetscCall(PetscMalloc1(gl->nrecv, &gl->recv));
  gl->nrecv = 0;
  for (PetscInt k = 0; k < n; k++)
    if (m[k] != 0) gl->recv[gl->nrecv++] = k;
  PetscCall(VecRestoreArrayRead(mark, &m));
  PetscCall(VecDestroy(&ones));
  PetscCall(VecDestroy(&mark));
  gl->da = g->da;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMGhostLayersDestroy(MPMGhostLayers *gl)
{
  PetscFunctionBeginUser;
  PetscCall(VecScatterDestroy(&gl->sc));
  PetscCall(PetscFree(gl->recv));
  gl->nrecv = 0;
  gl->da    = NULL;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The ghost entries of `local` from their owners' entries of `global`; the
 * owned entries of `local` are left alone. */
PetscErrorCode MPMGhostLayersGather(MPMGhostLayers *gl, Vec global, Vec local)
{
  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_GHOST, 0, 0, 0, 0));
  PetscCall(VecScatterBegin(gl->sc, global, local, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(gl->sc, global, local, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(PetscLogEventEnd(MPM_EVENT_GHOST, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The owned entries of `global` that are ghosts elsewhere become the sum of
 * those ghost copies of `local` (the caller adds its own part); the other
 * entries of `global` are not touched. */
PetscErrorCode MPMGhostLayersScatterAdd(MPMGhostLayers *gl, Vec local, Vec global)
{
  PetscScalar *y;

  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_GHOST, 0, 0, 0, 0));
  PetscCall(VecGetArray(global, &y));
  for (PetscInt k = 0; k < gl->nrecv; k++) y[gl->recv[k]] = 0;
  PetscCall(VecRestoreArray(global, &y));
  PetscCall(VecScatterBegin(gl->sc, local, global, ADD_VALUES, SCATTER_REVERSE));
  PetscCall(VecScatterEnd(gl->sc, local, global, ADD_VALUES, SCATTER_REVERSE));
  PetscCall(PetscLogEventEnd(MPM_EVENT_GHOST, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A particle whose position went NaN or infinite stays where it is (it
 * has no owner) and is counted; the lowest id is reported. */
static PetscBool NonFinite(MPMParticles *p, PetscInt s, PetscInt q, MPMStepReduction *red)
{
  const double *x      = MPMFieldReal(p, p->f_x) + q * p->dim;
  PetscBool     finite = PETSC_TRUE;
  for (PetscInt a = 0; a < p->dim; a++) finite = finite && isfinite(x[a]);
  if (finite) return PETSC_FALSE; /* the common case reads nothing but x */
  const double *v  = MPMFieldReal(p, p->f_v) + q * p->dim;
  const int64_t id = MPMFieldInt64(p, p->f_id)[q];
  red->nonfinite++;
  if (id < red->nf_id) {
    red->nf_id      = id;
    red->nf_species = s;
    red->nf_mat     = MPMFieldInt32(p, p->f_mat)[q];
    for (PetscInt a = 0; a < 3; a++) {
      red->nf_x[a] = a < p->dim ? x[a] : 0.0;
      red->nf_v[a] = a < p->dim ? v[a] : 0.0;
    }
  }
  return PETSC_TRUE;
}

/* Where particle q goes: *dest -1 stays, -2 left the domain, else the
 * rank whose slab or block holds it. */
static inline void classify_one(MPMParticles *p, PetscInt s, PetscInt q, const MPMLayout *g, const int64_t *id, PetscInt *dest, PetscMPIInt *sendcount, MPMStepReduction *red)
{
  const double *x = MPMFieldReal(p, p->f_x) + q * p->dim;
  if (NonFinite(p, s, q, red)) {
    *dest = -1;
    return;
  }
  if (!MPMLayoutInside(g, x)) {
    *dest = -2;
    red->outside++;
    if (id[q] < red->bad_id) {
      red->bad_id = id[q];
      for (PetscInt a = 0; a < 3; a++) red->bad_x[a] = a < p->dim ? x[a] : 0.0;
    }
    return;
  }
  const PetscMPIInt owner = MPMLayoutOwnerOf(g, x);
  *dest                   = owner;
  if (owner >= 0) sendcount[owner]++;
}

/* Every local particle classified; those that do not stay (leavers and
 * particles outside the domain) listed in gone[] in increasing order, with
 * their dest.  One pass that reads the positions and writes only the
 * list, as every particle of every step comes through here. */
static PetscInt classify(MPMSim sim, MPMParticles *p, PetscInt s, PetscInt *gone, PetscInt *gdest, PetscMPIInt *sendcount, MPMStepReduction *red)
{
  const MPMLayout *g  = &sim->layout;
  const int64_t   *id = MPMFieldInt64(p, p->f_id);
  PetscInt         ngone = 0, dest;
  for (PetscInt q = 0; q < p->n; q++) {
    classify_one(p, s, q, g, id, &dest, sendcount, red);
    if (dest == -1) continue;
    gone[ngone]    = q;
    gdest[ngone++] = dest;
  }
  return ngone;
}

/* Bytes of particle data this rank sent and received in migrations, and
 * the time they took (MPMMigrateThroughput). */
static double migrate_bytes = 0, migrate_seconds = 0;

/* The ranks this one sends to (scount[r] > 0) and those that send to it,
 * with their counts, in increasing rank order: PETSc's sparse two-sided
 * set-up (no all-to-all over the communicator). */
static PetscErrorCode Partners(MPMSim sim, const PetscMPIInt *scount, PetscMPIInt *nto, PetscMPIInt *to, PetscMPIInt *tocount, PetscMPIInt *nfrom,
                               PetscMPIInt **from, PetscMPIInt **fromcount)
{
  PetscMPIInt *fr, *fc;

  PetscFunctionBeginUser;
  *nto = 0;
  for (PetscMPIInt r = 0; r < sim->size; r++)
    if (scount[r]) {
      to[*nto]        = r;
      tocount[(*nto)++] = scount[r];
    }
  PetscCall(PetscCommBuildTwoSided(sim->comm, 1, MPI_INT, *nto, to, tocount, nfrom, &fr, &fc));
  /* in rank order, so the received particles land in the same order on any run */
  PetscCall(PetscSortMPIIntWithArray(*nfrom, fr, fc));
  *from      = fr;
  *fromcount = fc;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* One species: particles outside the domain are dropped and counted, the
 * others that left this slab are sent to their owner.  In bulk, one
 * message per field and partner, field by field: the field's leavers,
 * sorted by destination, are packed into one of two buffers in turn (each
 * the size of the largest field's leavers, not of all their fields) and
 * sent; then the field's kept particles are compacted and its arrivals are
 * received straight into the array next to them.  So the arrays never hold
 * the leavers and the arrivals at once: a rank needs room for the larger of
 * the particles it had and those it ends with, not for both (a restart on
 * another rank count has a rank read a block of particles that it may
 * mostly give away, receiving as many).  Packing a field overlaps the
 * transfer of the one before. */
static PetscErrorCode MigrateSpecies(MPMSim sim, MPMParticles *p, PetscInt s, MPMStepReduction *red)
{
  const size_t   B = p->mbytes;
  PetscInt      *gone, *gdest, *order, ngone, nsend = 0, nrecv = 0, nkeep, n0 = p->n;
  PetscMPIInt   *scount, *to, *tocount, nto, nfrom, *from = NULL, *fromcount = NULL, nreq = 0;
  PetscInt      *soff, *roff;
  char          *sbuf;
  size_t         half = 0; /* bytes of the largest field's leavers */
  MPI_Request   *req, *sent;
  MPI_Datatype  *type;
  PetscLogDouble t0, t1;

  PetscFunctionBeginUser;
  PetscCall(PetscTime(&t0));
  PetscCall(PetscCalloc3(sim->size, &scount, sim->size, &to, sim->size, &tocount));
  PetscCall(PetscMalloc2(p->n + 1, &gone, p->n + 1, &gdest));
  ngone = classify(sim, p, s, gone, gdest, scount, red);
  nkeep = p->n - ngone;
  PetscCall(Partners(sim, scount, &nto, to, tocount, &nfrom, &from, &fromcount));
  PetscCall(PetscMalloc2(nto + 1, &soff, nfrom + 1, &roff));
  soff[0] = roff[0] = 0;
  for (PetscMPIInt j = 0; j < nto; j++) soff[j + 1] = soff[j] + tocount[j];
  for (PetscMPIInt j = 0; j < nfrom; j++) roff[j + 1] = roff[j] + fromcount[j];
  nsend = soff[nto];
  nrecv = roff[nfrom];
  /* the leavers by destination, each group in particle order (scount becomes the slot of rank r's group) */
  for (PetscMPIInt j = 0; j < nto; j++) scount[to[j]] = (PetscMPIInt)soff[j];
  PetscCall(PetscMalloc1(nsend + 1, &order));
  for (PetscInt k = 0; k < ngone; k++)
    if (gdest[k] >= 0) order[scount[gdest[k]]++] = gone[k];
  {
    const PetscInt need = PetscMax(n0, nkeep + nrecv); /* once: PetscMax is a macro */
    if (need > p->cap) PetscCall(MPMParticlesReserve(p, PetscMax(need, (p->cap * 3) / 2 + 16)));
  }
  for (PetscInt f = 0; f < p->nfield; f++) {
    const size_t bytes = MPMFieldSize(&p->field[f]) * (size_t)nsend;
    half               = PetscMax(half, bytes);
  }
  PetscCall(PetscMalloc4(2 * half + 1, &sbuf, (size_t)nfrom * p->nfield + 1, &req, 2 * (size_t)nto + 1, &sent, p->nfield, &type));
  for (PetscMPIInt j = 0; j < 2 * nto; j++) sent[j] = MPI_REQUEST_NULL;
  for (PetscInt f = 0; f < p->nfield; f++) { /* an element of each field as one MPI unit, the counts in particles */
    type[f] = MPI_DATATYPE_NULL;
    if (!(p->field[f].flags & MPM_FIELD_MIGRATE) || (!nto && !nfrom)) continue;
    PetscCallMPI(MPI_Type_contiguous((int)MPMFieldSize(&p->field[f]), MPI_BYTE, &type[f]));
    PetscCallMPI(MPI_Type_commit(&type[f]));
  }
  {
    for (PetscInt f = 0, k = 0; f < p->nfield; f++) {
      const size_t sz = MPMFieldSize(&p->field[f]);
      if (type[f] != MPI_DATATYPE_NULL && nto) { /* two halves of sbuf in turn: before packing into one, its last sends must be done */
        char *buf = sbuf + (k % 2) * half;
        if (k >= 2) PetscCallMPI(MPI_Waitall(nto, sent + (k % 2) * nto, MPI_STATUSES_IGNORE));
        MPMParticlesPackField(p, f, order, nsend, buf);
        for (PetscMPIInt j = 0; j < nto; j++) PetscCallMPI(MPI_Isend(buf + sz * (size_t)soff[j], tocount[j], type[f], to[j], 7 + (int)f, sim->comm, &sent[(k % 2) * nto + j]));
        k++;
      }
      MPMParticlesRemoveField(p, f, gone, ngone); /* slots below nkeep only: the leavers of f are packed */
      if (type[f] == MPI_DATATYPE_NULL) continue;
      char *dst = (char *)p->field[f].data + sz * (size_t)nkeep;
      for (PetscMPIInt j = 0; j < nfrom; j++) PetscCallMPI(MPI_Irecv(dst + sz * (size_t)roff[j], fromcount[j], type[f], from[j], 7 + (int)f, sim->comm, &req[nreq++]));
    }
  }
  PetscCallMPI(MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE));
  PetscCallMPI(MPI_Waitall(2 * nto, sent, MPI_STATUSES_IGNORE));
  if (nrecv) MPMParticlesDefaultArrivals(p, nkeep, nrecv);
  p->n = nkeep + nrecv;
  red->n += p->n;
  PetscCall(PetscTime(&t1));
  migrate_bytes += (double)B * (double)(nsend + nrecv);
  migrate_seconds += t1 - t0;
  for (PetscInt f = 0; f < p->nfield; f++)
    if (type[f] != MPI_DATATYPE_NULL) PetscCallMPI(MPI_Type_free(&type[f]));
  PetscCall(PetscFree4(sbuf, req, sent, type));
  PetscCall(PetscFree(order));
  PetscCall(PetscFree2(soff, roff));
  PetscCall(PetscFree(from));
  PetscCall(PetscFree(fromcount));
  PetscCall(PetscFree2(gone, gdest));
  PetscCall(PetscFree3(scount, to, tocount));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* This rank's particle bytes sent plus received by migrations, and the
 * seconds they took, since the last call (then zeroed). */
void MPMMigrateThroughput(double *bytes, double *seconds)
{
  *bytes          = migrate_bytes;
  *seconds        = migrate_seconds;
  migrate_bytes   = 0;
  migrate_seconds = 0;
}

/* Every species.  Fills red->n (local particles), the particles outside
 * the domain (red->outside, bad_id, bad_x) and those with a non-finite
 * position (red->nonfinite, nf_*); the caller fills the rest before the
 * reduction. */
PetscErrorCode MPMMigrate(MPMSim sim, MPMStepReduction *red)
{
  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_MIGRATE, 0, 0, 0, 0));
  red->n       = 0;
  red->outside = 0;
  red->split   = 0;
  red->merged  = 0;
  red->bad_id  = INT64_MAX;
  red->nonfinite = 0;
  red->nf_id     = INT64_MAX;
  for (PetscInt s = 0; s < sim->nspecies; s++) PetscCall(MigrateSpecies(sim, &sim->species[s]->p, s, red));
  PetscCall(PetscLogEventEnd(MPM_EVENT_MIGRATE, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMGlobalStepReduce(MPI_Comm comm, MPMStepReduction *red)
{
  MPMStepReduction out;

  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_REDUCE, 0, 0, 0, 0));
  PetscCallMPI(MPI_Allreduce(red, &out, 1, step_type, step_op, comm));
  *red = out;
  PetscCall(PetscLogEventEnd(MPM_EVENT_REDUCE, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMGlobalSum(MPI_Comm comm, double *buf, PetscInt n)
{
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_DOUBLE, MPI_SUM, comm));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMGlobalSumInt64(MPI_Comm comm, int64_t *buf, PetscInt n)
{
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_INT64_T, MPI_SUM, comm));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMGlobalMax(MPI_Comm comm, double *buf, PetscInt n)
{
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_DOUBLE, MPI_MAX, comm));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* offset = sum of `local` over lower ranks; total = global sum. */
PetscErrorCode MPMGlobalOffset(MPI_Comm comm, int64_t local, int64_t *offset, int64_t *total)
{
  PetscMPIInt rank;

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  *offset = 0;
  PetscCallMPI(MPI_Exscan(&local, offset, 1, MPI_INT64_T, MPI_SUM, comm));
  if (rank == 0) *offset = 0; /* MPI_Exscan leaves rank 0's result undefined */
  PetscCallMPI(MPI_Allreduce(&local, total, 1, MPI_INT64_T, MPI_SUM, comm));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* all[r] = value on rank r, on every rank (all has the communicator's size). */
PetscErrorCode MPMAllGatherInt64(MPI_Comm comm, int64_t value, int64_t *all)
{
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Allgather(&value, 1, MPI_INT64_T, all, 1, MPI_INT64_T, comm));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Every rank's n values, rank by rank, in *all (PetscMalloc'd, *total
 * values; the caller frees it). */
PetscErrorCode MPMAllGatherVInt64(MPI_Comm comm, PetscInt n, const int64_t *values, int64_t *total, int64_t **all)
{
  PetscMPIInt size, *counts, *displs, mine = (PetscMPIInt)n;
  int64_t     sum = 0;

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(PetscMalloc2(size, &counts, size, &displs));
  PetscCallMPI(MPI_Allgather(&mine, 1, MPI_INT, counts, 1, MPI_INT, comm));
  for (PetscMPIInt r = 0; r < size; r++) {
    displs[r] = (PetscMPIInt)sum;
    sum += counts[r];
  }
  PetscCheck(sum < INT32_MAX, comm, PETSC_ERR_SUP, "MPMAllGatherVInt64: %lld values overflow MPI's counts", (long long)sum);
  PetscCall(PetscMalloc1(sum + 1, all));
  PetscCallMPI(MPI_Allgatherv(values, mine, MPI_INT64_T, *all, counts, displs, MPI_INT64_T, comm));
  *total = sum;
  PetscCall(PetscFree2(counts, displs));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Every rank's n doubles, rank by rank, on rank 0 in *all (PetscMalloc'd
 * there, *total values; NULL and 0 elsewhere; the caller frees it). */
PetscErrorCode MPMGatherVDouble(MPI_Comm comm, PetscInt n, const double *values, int64_t *total, double **all)
{
  PetscMPIInt size, rank, *counts = NULL, *displs = NULL, mine = (PetscMPIInt)n;
  int64_t     sum = 0;

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCheck(n < INT32_MAX, PETSC_COMM_SELF, PETSC_ERR_SUP, "MPMGatherVDouble: %" PetscInt_FMT " values overflow MPI's counts", n);
  if (!rank) PetscCall(PetscMalloc2(size, &counts, size, &displs));
  PetscCallMPI(MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, comm));
  *all   = NULL;
  *total = 0;
  if (!rank) {
    for (PetscMPIInt r = 0; r < size; r++) {
      displs[r] = (PetscMPIInt)sum;
      sum += counts[r];
    }
  }
  int over = sum >= INT32_MAX; /* every rank must learn it, or they would hang in the gather */
  PetscCallMPI(MPI_Bcast(&over, 1, MPI_INT, 0, comm));
  PetscCheck(!over, comm, PETSC_ERR_SUP, "MPMGatherVDouble: more values than MPI's counts hold");
  if (!rank) PetscCall(PetscMalloc1(sum + 1, all));
  PetscCallMPI(MPI_Gatherv(values, mine, MPI_DOUBLE, *all, counts, displs, MPI_DOUBLE, 0, comm));
  if (!rank) *total = sum;
  PetscCall(PetscFree2(counts, displs));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMBarrier(MPI_Comm comm)
{
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Barrier(comm));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMBroadcastString(MPI_Comm comm, char *buf, size_t len)
{
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Bcast(buf, (int)len, MPI_CHAR, 0, comm));
  buf[len - 1] = 0;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMBroadcastInt(MPI_Comm comm, int *value)
{
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Bcast(value, 1, MPI_INT, 0, comm));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* How many ranks of comm share this rank's node (its memory). */
PetscErrorCode MPMRanksOnNode(MPI_Comm comm, int *n)
{
  MPI_Comm node;

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  PetscCallMPI(MPI_Comm_size(node, n));
  PetscCallMPI(MPI_Comm_free(&node));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ------------------------------------------------------- particle halos */
/* Is x within reach of the box [lo, hi] (n axes listed in ax)? */
static inline PetscBool HaloNear(const double *x, const PetscInt *ax, PetscInt n, const double *lo, const double *hi, double reach)
{
  for (PetscInt k = 0; k < n; k++)
    if (x[ax[k]] < lo[k] - reach || x[ax[k]] > hi[k] + reach) return PETSC_FALSE;
  return PETSC_TRUE;
}

/* Every rank's particle bounding box along the cut axes (n of them: the
 * slab axis, or the blocks' axes); the ranks whose box, expanded by the
 * reach, overlaps this rank's: the only ones a halo can come from or go
 * to.  box[r]: lo (n values) then hi (n values). */
static PetscErrorCode HaloPartners(MPI_Comm comm, PetscMPIInt size, PetscMPIInt rank, PetscInt n, const double *mine, double reach, double *box, PetscMPIInt *partner,
                                   PetscMPIInt *npartner)
{
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Allgather(mine, 2 * (int)n, MPI_DOUBLE, box, 2 * (int)n, MPI_DOUBLE, comm));
  *npartner = 0;
  for (PetscMPIInt r = 0; r < size; r++) {
    const double *o = box + 2 * n * r;
    PetscBool     near = r != rank;
    for (PetscInt k = 0; k < n && near; k++) near = o[k] <= o[n + k] && mine[k] <= mine[n + k] && o[k] - reach <= mine[n + k] && o[n + k] + reach >= mine[k]; /* both hold particles, and overlap */
    if (near) partner[(*npartner)++] = r;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Collective.  Decide which of this rank's n particles (positions x, dim
 * values each) other ranks need: those within `reach`, along every cut
 * axis, of the bounding box of that rank's particles (so every pair closer
 * than reach has both grains on both ranks), and how many this rank
 * receives.  The halo is a list of local indices per destination rank, in
 * ascending order; received copies arrive in rank order. */
PetscErrorCode MPMHaloSetUp(MPMSim sim, PetscInt n, const double *x, double reach, MPMHalo *h)
{
  const MPMLayout *l = &sim->layout;
  const PetscInt   d = sim->dim;
  PetscInt         ax[3], na = 0;
  double           mine[6], *box;
  PetscMPIInt     *partner, np;

  PetscFunctionBeginUser;
  if (!h->scount) PetscCall(PetscCalloc4(sim->size, &h->scount, sim->size, &h->rcount, sim->size + 1, &h->soff, sim->size + 1, &h->roff));
  for (PetscInt a = 0; a < d; a++)
    if (l->parts[a] > 1) ax[na++] = a;
  for (PetscInt k = 0; k < na; k++) {
    mine[k]      = PETSC_MAX_REAL;
    mine[na + k] = -PETSC_MAX_REAL;
  }
  for (PetscInt q = 0; q < n; q++)
    for (PetscInt k = 0; k < na; k++) {
      mine[k]      = PetscMin(mine[k], x[q * d + ax[k]]);
      mine[na + k] = PetscMax(mine[na + k], x[q * d + ax[k]]);
    }
  PetscCall(PetscMalloc2(2 * na * sim->size + 1, &box, sim->size, &partner));
  PetscCall(HaloPartners(sim->comm, sim->size, sim->rank, na, mine, reach, box, partner, &np));
  for (PetscMPIInt r = 0; r < sim->size; r++) h->scount[r] = 0;
  for (PetscMPIInt k = 0; k < np; k++) {
    const PetscMPIInt r = partner[k];
    const double     *o = box + 2 * na * r;
    for (PetscInt q = 0; q < n; q++) h->scount[r] += HaloNear(x + q * d, ax, na, o, o + na, reach);
  }
  PetscCallMPI(MPI_Alltoall(h->scount, 1, MPI_INT, h->rcount, 1, MPI_INT, sim->comm));
  for (PetscMPIInt r = 0; r < sim->size; r++) {
    h->soff[r + 1] = h->soff[r] + h->scount[r];
    h->roff[r + 1] = h->roff[r] + h->rcount[r];
  }
  h->nsend = h->soff[sim->size];
  h->nrecv = h->roff[sim->size];
  if (h->nsend > h->capsend) {
    PetscCall(PetscFree(h->send));
    h->capsend = h->nsend + h->nsend / 4;
    PetscCall(PetscMalloc1(h->capsend, &h->send));
  }
  for (PetscMPIInt k = 0; k < np; k++) {
    const PetscMPIInt r = partner[k];
    const double     *o = box + 2 * na * r;
    PetscInt          c = h->soff[r];
    for (PetscInt q = 0; q < n; q++)
      if (HaloNear(x + q * d, ax, na, o, o + na, reach)) h->send[c++] = q;
  }
  PetscCall(PetscFree2(box, partner));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Collective.  Start sending record send[k] of src (bytes each) to its
 * rank; the received records land in dst (nrecv of them, in rank order)
 * once MPMHaloForwardEnd returns.  src may change after Begin (it is
 * packed), dst must not be read before End.  Between the two the caller
 * may compute on what does not need dst, calling MPMHaloForwardProgress
 * now and then so large messages move meanwhile.  Counts the bytes this
 * rank sent in h->bytes. */
PetscErrorCode MPMHaloForwardBegin(MPMSim sim, MPMHalo *h, const void *src, size_t bytes, void *dst)
{
  const char *in  = (const char *)src;
  char       *out = (char *)dst;

  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_GHOST, 0, 0, 0, 0));
  if (h->nsend * bytes > h->capbuf) {
    PetscCall(PetscFree(h->buf));
    h->capbuf = h->nsend * bytes + h->nsend * bytes / 4;
    PetscCall(PetscMalloc1(h->capbuf, &h->buf));
  }
  if (!h->req) PetscCall(PetscMalloc1(2 * sim->size, &h->req));
  for (PetscInt k = 0; k < h->nsend; k++) PetscCall(PetscMemcpy(h->buf + bytes * (size_t)k, in + bytes * (size_t)h->send[k], bytes));
  PetscCallMPI(MPI_Type_contiguous((int)bytes, MPI_BYTE, &h->rec));
  PetscCallMPI(MPI_Type_commit(&h->rec));
  h->nreq = 0;
  for (PetscMPIInt r = 0; r < sim->size; r++) { /* counts in records, so no int overflow in bytes */
    if (h->rcount[r]) PetscCallMPI(MPI_Irecv(out + bytes * (size_t)h->roff[r], h->rcount[r], h->rec, r, 11, sim->comm, &h->req[h->nreq++]));
    if (h->scount[r]) PetscCallMPI(MPI_Isend(h->buf + bytes * (size_t)h->soff[r], h->scount[r], h->rec, r, 11, sim->comm, &h->req[h->nreq++]));
  }
  h->bytes += (double)bytes * (double)h->nsend;
  PetscCall(PetscLogEventEnd(MPM_EVENT_GHOST, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Let the messages of a MPMHaloForwardBegin move (MPI progresses large
 * messages only inside its calls). */
PetscErrorCode MPMHaloForwardProgress(MPMHalo *h)
{
  int done;

  PetscFunctionBeginUser;
  if (h->nreq) PetscCallMPI(MPI_Testall(h->nreq, h->req, &done, MPI_STATUSES_IGNORE));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Wait for the records of MPMHaloForwardBegin. */
PetscErrorCode MPMHaloForwardEnd(MPMHalo *h)
{
  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_GHOST, 0, 0, 0, 0));
  PetscCallMPI(MPI_Waitall(h->nreq, h->req, MPI_STATUSES_IGNORE));
  PetscCallMPI(MPI_Type_free(&h->rec));
  h->nreq = 0;
  PetscCall(PetscLogEventEnd(MPM_EVENT_GHOST, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Collective.  Send record send[k] of src (bytes each) to its rank; the
 * received records land in dst (nrecv of them, in rank order). */
PetscErrorCode MPMHaloForward(MPMSim sim, MPMHalo *h, const void *src, size_t bytes, void *dst)
{
  PetscFunctionBeginUser;
  PetscCall(MPMHaloForwardBegin(sim, h, src, bytes, dst));
  PetscCall(MPMHaloForwardEnd(h));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMHaloDestroy(MPMHalo *h)
{
  PetscFunctionBeginUser;
  PetscCall(PetscFree4(h->scount, h->rcount, h->soff, h->roff));
  PetscCall(PetscFree(h->send));
  PetscCall(PetscFree(h->buf));
  PetscCall(PetscFree(h->req));
  PetscFunctionReturn(PETSC_SUCCESS);
}
