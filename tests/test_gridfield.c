/* Grid fields on the layout, slabs or blocks (src/core/gridfield.c): after
 * the parts move (load balancing), every grid field is rebuilt on the new layout and
 * a persistent one keeps every node value, wherever the node now lives;
 * written to a checkpoint file and read back on yet another layout, it is
 * the same again (src/io/checkpoint.c).  The ghost-layer verbs of
 * parallel.c (MPMGhostLayers*) agree with the full ghost exchange.  Run at
 * several rank counts (tests/CMakeLists.txt). */
#include "io/io.h"

/* The value stored at node (i, j, k), component c: unique per entry. */
static double NodeValue(const MPMLayout *l, PetscInt i, PetscInt j, PetscInt k, PetscInt c) { return 1.0 + c + 10.0 * (i + l->N[0] * (j + l->N[1] * k)); }

static PetscErrorCode Fill(MPMSim sim, MPMGridField *gf)
{
  const MPMLayout *l = &sim->layout;
  PetscScalar     *a;

  PetscFunctionBeginUser;
  PetscCall(VecGetArray(gf->global, &a));
  for (PetscInt k = l->xs[2], n = 0; k < l->xs[2] + l->xm[2]; k++)
    for (PetscInt j = l->xs[1]; j < l->xs[1] + l->xm[1]; j++)
      for (PetscInt i = l->xs[0]; i < l->xs[0] + l->xm[0]; i++)
        for (PetscInt c = 0; c < gf->dof; c++) a[n++] = NodeValue(l, i, j, k, c);
  PetscCall(VecRestoreArray(gf->global, &a));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Wrong owned entries on this rank (and wrong ghosts after a gather). */
static PetscErrorCode Check(MPMSim sim, MPMGridField *gf, double *bad)
{
  const MPMLayout   *l = &sim->layout;
  const PetscScalar *a;
  PetscInt           n = 0, size;

  PetscFunctionBeginUser;
  PetscCall(VecGetLocalSize(gf->global, &size));
  *bad += size != l->xm[0] * l->xm[1] * l->xm[2] * gf->dof;
  PetscCall(VecGetArrayRead(gf->global, &a));
  for (PetscInt k = l->xs[2]; k < l->xs[2] + l->xm[2]; k++)
    for (PetscInt j = l->xs[1]; j < l->xs[1] + l->xm[1]; j++)
      for (PetscInt i = l->xs[0]; i < l->xs[0] + l->xm[0]; i++)
        for (PetscInt c = 0; c < gf->dof; c++) *bad += a[n++] != NodeValue(l, i, j, k, c);
  PetscCall(VecRestoreArrayRead(gf->global, &a));
  PetscCall(MPMGhostGather(gf));
  PetscCall(VecGetArrayRead(gf->local, &a));
  n = 0;
  for (PetscInt k = gf->box.gs[2]; k < gf->box.gs[2] + gf->box.gn[2]; k++)
    for (PetscInt j = gf->box.gs[1]; j < gf->box.gs[1] + gf->box.gn[1]; j++)
      for (PetscInt i = gf->box.gs[0]; i < gf->box.gs[0] + gf->box.gn[0]; i++)
        for (PetscInt c = 0; c < gf->dof; c++) *bad += a[n++] != NodeValue(l, i, j, k, c);
  PetscCall(VecRestoreArrayRead(gf->local, &a));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The ghost-layer verbs against the full exchange, on the current layout:
 * gather fills exactly the ghost entries (the owned ones are the caller's);
 * scatter-add sets the owned entries that are ghosts elsewhere to the sum of
 * those copies and leaves every other entry alone. */
static PetscErrorCode CheckLayers(MPMSim sim, MPMGridField *gf, double *bad)
{
  const MPMLayout   *l = &sim->layout;
  MPMGhostLayers     gl;
  Vec                ones, full, part;
  const PetscScalar *g, *a, *b;
  PetscScalar       *loc;
  PetscInt           n = 0, size;

  PetscFunctionBeginUser;
  PetscCall(MPMGhostLayersCreate(gf, &gl));
  /* gather: owned entries copied by hand, ghosts by the verb */
  PetscCall(VecSet(gf->local, -1.0));
  PetscCall(VecGetArrayRead(gf->global, &g));
  PetscCall(VecGetArray(gf->local, &loc));
  for (PetscInt k = l->xs[2]; k < l->xs[2] + l->xm[2]; k++)
    for (PetscInt j = l->xs[1]; j < l->xs[1] + l->xm[1]; j++)
      for (PetscInt i = l->xs[0]; i < l->xs[0] + l->xm[0]; i++, n++) {
        const PetscInt L = ((k - gf->box.gs[2]) * gf->box.gn[1] + (j - gf->box.gs[1])) * gf->box.gn[0] + (i - gf->box.gs[0]);
        for (PetscInt c = 0; c < gf->dof; c++) loc[L * gf->dof + c] = g[n * gf->dof + c];
      }
  PetscCall(VecRestoreArray(gf->local, &loc));
  PetscCall(VecRestoreArrayRead(gf->global, &g));
  PetscCall(MPMGhostLayersGather(&gl, gf->global, gf->local));
  PetscCall(VecGetArrayRead(gf->local, &a));
  n = 0;
  for (PetscInt k = gf->box.gs[2]; k < gf->box.gs[2] + gf->box.gn[2]; k++)
    for (PetscInt j = gf->box.gs[1]; j < gf->box.gs[1] + gf->box.gn[1]; j++)
      for (PetscInt i = gf->box.gs[0]; i < gf->box.gs[0] + gf->box.gn[0]; i++)
        for (PetscInt c = 0; c < gf->dof; c++) *bad += a[n++] != NodeValue(l, i, j, k, c);
  PetscCall(VecRestoreArrayRead(gf->local, &a));
  /* scatter-add of ones: the full exchange counts 1 + the ghost copies */
  PetscCall(VecDuplicate(gf->local, &ones));
  PetscCall(VecDuplicate(gf->global, &full));
  PetscCall(VecDuplicate(gf->global, &part));
  PetscCall(VecSet(ones, 1.0));
  PetscCall(MPMGhostScatterAddVec(gf, ones, full));
  PetscCall(VecSet(part, 7.0));
  PetscCall(MPMGhostLayersScatterAdd(&gl, ones, part));
  PetscCall(VecGetLocalSize(part, &size));
  PetscCall(VecGetArrayRead(full, &a));
  PetscCall(VecGetArrayRead(part, &b));
  for (PetscInt e = 0; e < size; e++) *bad += a[e] > 1 ? b[e] != a[e] - 1 : b[e] != 7.0;
  PetscCall(VecRestoreArrayRead(part, &b));
  PetscCall(VecRestoreArrayRead(full, &a));
  PetscCall(VecDestroy(&ones));
  PetscCall(VecDestroy(&full));
  PetscCall(VecDestroy(&part));
  PetscCall(MPMGhostLayersDestroy(&gl));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  MPMSim        sim;
  MPMGridField *keep, *scratch;
  PetscInt     *start[3];
  double        bad[5] = {0, 0, 0, 0, 0};
  MPMH5File     F;
  PetscBool     ok;
  char          path[64];

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(PetscOptionsSetValue(NULL, "-dim", "3"));
  PetscCall(PetscOptionsSetValue(NULL, "-domain_hi", "1,0.5,0.25"));
  PetscCall(PetscOptionsSetValue(NULL, "-dx", "0.125"));
  PetscCall(MPMCreate(PETSC_COMM_WORLD, &sim));
  PetscCall(MPMRunOptionsRead(sim));
  PetscCall(MPMLayoutSetUp(sim));
  PetscCall(MPMGridFieldCreate(sim, "unknowns", 3, PETSC_TRUE, &keep));
  PetscCall(MPMGridFieldCreate(sim, "momentum", 4, PETSC_FALSE, &scratch));
  PetscCall(Fill(sim, keep));
  PetscCall(Check(sim, keep, &bad[0]));
  PetscCall(CheckLayers(sim, keep, &bad[3]));
  /* new parts along every cut axis: the first thin (2 planes each), the last takes the rest */
  for (PetscInt a = 0; a < 3; a++) {
    const PetscInt P = sim->layout.parts[a];
    PetscCall(PetscMalloc1(P + 1, &start[a]));
    for (PetscInt r = 0; r < P; r++) start[a][r] = 2 * r;
    start[a][P] = sim->layout.N[a];
  }
  PetscCall(MPMLayoutSetParts(sim, start));
  PetscCall(MPMGridFieldsRebuild(sim));
  PetscCall(Check(sim, keep, &bad[1]));
  PetscCall(CheckLayers(sim, keep, &bad[4])); /* thin slabs: a node can be a ghost on two other ranks */
  PetscCall(VecZeroEntries(scratch->global));
  PetscCall(MPMGhostScatterAdd(scratch)); /* the rebuilt transient field works on the new layout */
  /* checkpoint, forget, move the slabs the other way (the last ranks thin), read back */
  PetscCall(PetscSNPrintf(path, sizeof(path), "test_gridfield_%d.h5", sim->size));
  PetscCall(MPMH5Create(PETSC_COMM_WORLD, path, &F));
  PetscCall(MPMCheckpointGridFieldsWrite(sim, &F));
  PetscCall(MPMH5Close(&F));
  PetscCall(VecZeroEntries(keep->global));
  for (PetscInt a = 0; a < 3; a++)
    for (PetscInt r = 1, P = sim->layout.parts[a]; r < P; r++) start[a][r] = start[a][P] - 2 * (P - r);
  PetscCall(MPMLayoutSetParts(sim, start));
  PetscCall(MPMGridFieldsRebuild(sim));
  PetscCall(MPMH5Open(PETSC_COMM_WORLD, path, &F, &ok));
  PetscCheck(ok, PETSC_COMM_WORLD, PETSC_ERR_FILE_OPEN, "Cannot read back %s", path);
  PetscCall(MPMCheckpointGridFieldsRead(sim, &F, path));
  PetscCall(MPMH5Close(&F));
  PetscCall(Check(sim, keep, &bad[2]));
  PetscCall(MPMGlobalSum(PETSC_COMM_WORLD, bad, 5));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%d ranks as %" PetscInt_FMT " x %" PetscInt_FMT " x %" PetscInt_FMT ": wrong entries before moving the parts %g, after %g, after a checkpoint read on other parts %g\n", sim->size,
                        sim->layout.parts[0], sim->layout.parts[1], sim->layout.parts[2], bad[0], bad[1], bad[2]));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%d ranks: ghost-layer gather and scatter-add against the full exchange, wrong entries: equal parts %g, thin parts %g\n", sim->size, bad[3], bad[4]));
  {
    int passed = 0;
    for (int k = 0; k < 5; k++) passed += bad[k] == 0;
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%d passed, %d failed\n", passed, 5 - passed));
  }
  for (PetscInt a = 0; a < 3; a++) PetscCall(PetscFree(start[a]));
  PetscCall(MPMDestroy(&sim));
  PetscCall(PetscFinalize());
  return bad[0] != 0 || bad[1] != 0 || bad[2] != 0 || bad[3] != 0 || bad[4] != 0;
}
