/* The background grid: a PETSc DMDA decomposed into slabs along one axis,
 * padded by two cells around the physical domain so that the kernel
 * stencil of any particle within one cell of the domain stays on the grid. */
#include "mpm_impl.h"

static const char *const AxisNames[]   = {"x", "y", "z", "auto", "MPMAxis", "MPM_AXIS_", NULL};
static const char *const KernelNames[] = {"quadratic", "cubic", "MPMKernel", "MPM_KERNEL_", NULL};

typedef struct {
  double    lo[3], hi[3], dx;
  PetscInt  axis, kernel;
} GridOptions;

static PetscErrorCode GridReadOptions(MPMSim sim, GridOptions *o)
{
  const PetscInt d = sim->dim;

  PetscFunctionBeginUser;
  for (PetscInt a = 0; a < 3; a++) {
    o->lo[a] = 0.0;
    o->hi[a] = 1.0;
  }
  o->axis   = 3;
  o->kernel = 0;
  PetscOptionsBegin(sim->comm, NULL, "Domain and grid", NULL);
  PetscCall(MPMOptionsVector(PetscOptionsObject, "", "-domain_lo", "Lower corner of the physical domain [m]", d, o->lo, NULL));
  PetscCall(MPMOptionsVector(PetscOptionsObject, "", "-domain_hi", "Upper corner of the physical domain [m]", d, o->hi, NULL));
  o->dx = 0;
  for (PetscInt a = 0; a < d; a++) o->dx = PetscMax(o->dx, (o->hi[a] - o->lo[a]) / 64);
  PetscCall(PetscOptionsReal("-dx", "Grid cell size, the same along every axis [m]", NULL, o->dx, &o->dx, NULL));
  PetscCall(PetscOptionsEList("-kernel", "Interpolation kernel (B-spline)", NULL, KernelNames, 2, KernelNames[o->kernel], &o->kernel, NULL));
  PetscCall(PetscOptionsEList("-slab_axis", "Axis the domain is cut into slabs along (auto: the longest)", NULL, AxisNames, 4, AxisNames[o->axis], &o->axis, NULL));
  PetscOptionsEnd();
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode GridCheckOptions(MPMSim sim, GridOptions *o, MPMGrid *g)
{
  const PetscInt d = sim->dim;

  PetscFunctionBeginUser;
  PetscCheck(o->dx > 0, sim->comm, PETSC_ERR_USER_INPUT, "-dx must be > 0 m, got %g", o->dx);
  for (PetscInt a = 0; a < d; a++) {
    const double L = o->hi[a] - o->lo[a], c = L / o->dx;
    PetscCheck(L > 0, sim->comm, PETSC_ERR_USER_INPUT, "-domain_hi must exceed -domain_lo along %s (got %g <= %g)", AxisNames[a], o->hi[a], o->lo[a]);
    PetscCheck(c < 1e8, sim->comm, PETSC_ERR_USER_INPUT, "-dx %g gives %g cells along %s: too many (at most 1e8 per axis)", o->dx, c, AxisNames[a]);
    PetscCheck(PetscAbs(c - round(c)) < 1e-6 * PetscMax(1.0, c), sim->comm, PETSC_ERR_USER_INPUT,
               "-dx %g does not divide the domain length %g along %s into whole cells (%g cells)", o->dx, L, AxisNames[a], c);
    g->cells[a] = (PetscInt)round(c);
    PetscCheck(g->cells[a] >= 2, sim->comm, PETSC_ERR_USER_INPUT, "-dx %g leaves fewer than 2 cells along %s", o->dx, AxisNames[a]);
  }
  PetscCheck(o->axis == 3 || o->axis < d, sim->comm, PETSC_ERR_USER_INPUT, "-slab_axis %s does not exist in %" PetscInt_FMT "D; allowed: x, y%s, auto",
             AxisNames[o->axis], d, d == 3 ? ", z" : "");
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Equal split of the N nodes along the slab axis; every slab must hold at
 * least the ghost width. */
static PetscErrorCode GridEqualSlabs(MPMSim sim, MPMGrid *g, PetscInt *start)
{
  const PetscInt N = g->N[g->slab_axis], P = sim->size;

  PetscFunctionBeginUser;
  PetscCheck(N / P >= 2, sim->comm, PETSC_ERR_USER_INPUT,
             "%d ranks are too many for %" PetscInt_FMT " grid nodes along the slab axis %s (each slab needs >= 2 node planes): use fewer ranks or a smaller -dx",
             sim->size, N, AxisNames[g->slab_axis]);
  start[0] = 0;
  for (PetscInt r = 0; r < P; r++) start[r + 1] = start[r] + N / P + (r < N % P ? 1 : 0);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The DMDA with slab r owning node planes [start[r], start[r+1]) along the
 * slab axis, its vectors, and the ghosted box the kernels see. */
static PetscErrorCode GridLayout(MPMSim sim, MPMGrid *g, const PetscInt *start)
{
  const PetscInt  s = 2; /* ghost width: the stencil of a particle in the last owned cell reaches 2 nodes past it */
  PetscInt        procs[3] = {1, 1, 1}, *count, gs[3], gn[3];
  const PetscInt *l[3]     = {NULL, NULL, NULL};

  PetscFunctionBeginUser;
  PetscCall(PetscMalloc1(sim->size, &count));
  for (PetscInt r = 0; r < sim->size; r++) {
    count[r]          = start[r + 1] - start[r];
    g->slab_start[r]  = start[r];
  }
  g->slab_start[sim->size] = start[sim->size];
  procs[g->slab_axis]      = sim->size;
  l[g->slab_axis]          = count;
  if (g->dim == 2)
    PetscCall(DMDACreate2d(sim->comm, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_BOX, g->N[0], g->N[1], procs[0], procs[1], g->dof, s, l[0], l[1], &g->da));
  else
    PetscCall(DMDACreate3d(sim->comm, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_BOX, g->N[0], g->N[1], g->N[2], procs[0], procs[1], procs[2], g->dof, s,
                           l[0], l[1], l[2], &g->da));
  PetscCall(PetscFree(count));
  PetscCall(DMSetUp(g->da));
  PetscCall(DMCreateGlobalVector(g->da, &g->global));
  PetscCall(DMCreateLocalVector(g->da, &g->local));
  PetscCall(DMDAGetCorners(g->da, &g->xs[0], &g->xs[1], &g->xs[2], &g->xm[0], &g->xm[1], &g->xm[2]));
  PetscCall(DMDAGetGhostCorners(g->da, &gs[0], &gs[1], &gs[2], &gn[0], &gn[1], &gn[2]));
  g->own_lo = g->xs[g->slab_axis];
  g->own_hi = g->xs[g->slab_axis] + g->xm[g->slab_axis];
  for (PetscInt a = 0; a < 3; a++) {
    g->box.gs[a] = (int)gs[a];
    g->box.gn[a] = (int)(a < g->dim ? gn[a] : 1);
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Move the slab boundaries (load balancing, restart): a new DMDA; the
 * caller migrates the particles to their new owners. */
PetscErrorCode MPMGridSetSlabs(MPMSim sim, const PetscInt *start)
{
  MPMGrid *g = &sim->grid;

  PetscFunctionBeginUser;
  PetscCall(VecDestroy(&g->global));
  PetscCall(VecDestroy(&g->local));
  PetscCall(DMDestroy(&g->da));
  PetscCall(GridLayout(sim, g, start));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMGridSetUp(MPMSim sim)
{
  MPMGrid    *g = &sim->grid;
  GridOptions o;
  PetscInt   *start;

  PetscFunctionBeginUser;
  PetscCall(GridReadOptions(sim, &o));
  PetscCall(GridCheckOptions(sim, &o, g));
  g->dim   = sim->dim;
  g->order = o.kernel == 0 ? MPM_KERNEL_QUADRATIC : MPM_KERNEL_CUBIC;
  g->dof   = 1 + (sim->transfer == MPM_TRANSFER_FLIP ? 2 : 1) * g->dim;
  g->pad   = 2;
  g->h     = o.dx;
  for (PetscInt a = 0; a < 3; a++) {
    g->lo[a] = a < g->dim ? o.lo[a] : 0.0;
    g->hi[a] = a < g->dim ? o.hi[a] : 0.0;
    g->N[a]  = a < g->dim ? g->cells[a] + 1 + 2 * g->pad : 1;
  }
  g->slab_axis = o.axis;
  if (o.axis == 3) { /* the longest axis */
    g->slab_axis = 0;
    for (PetscInt a = 1; a < g->dim; a++)
      if (g->cells[a] > g->cells[g->slab_axis]) g->slab_axis = a;
  }
  g->box.dim   = (int)g->dim;
  g->box.order = (int)g->order;
  g->box.dof   = (int)g->dof;
  g->box.h     = g->h;
  for (PetscInt a = 0; a < 3; a++) g->box.origin[a] = g->lo[a] - g->pad * g->h * (a < g->dim);
  g->nslab = sim->size;
  PetscCall(PetscMalloc1(sim->size + 1, &g->slab_start));
  PetscCall(PetscMalloc1(sim->size + 1, &start));
  PetscCall(GridEqualSlabs(sim, g, start));
  PetscCall(GridLayout(sim, g, start));
  PetscCall(PetscFree(start));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMGridDestroy(MPMGrid *g)
{
  PetscFunctionBeginUser;
  PetscCall(VecDestroy(&g->global));
  PetscCall(VecDestroy(&g->local));
  PetscCall(DMDestroy(&g->da));
  PetscCall(PetscFree(g->slab_start));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Rank whose slab holds the given node/cell index along the slab axis. */
PetscInt MPMGridSlabOwner(const MPMGrid *g, PetscInt cell)
{
  PetscInt lo = 0, hi = g->nslab;
  while (hi - lo > 1) {
    const PetscInt mid = (lo + hi) / 2;
    if (g->slab_start[mid] <= cell) lo = mid;
    else hi = mid;
  }
  return lo;
}

PetscInt MPMGridParticleCell(const MPMGrid *g, const double *x)
{
  return (PetscInt)mpm_cell_index(&g->box, (int)g->slab_axis, x[g->slab_axis]);
}

/* Node velocities from momenta, gravity, then collisions and friction
 * (K10, K section 8) on the owned nodes. */
PetscErrorCode MPMGridUpdate(MPMSim sim, double dt)
{
  MPMGrid       *g = &sim->grid;
  const PetscInt d = g->dim, dof = g->dof;
  const int      flip = dof > 1 + d;
  const double   gs   = sim->gravity_ramp > 0 ? PetscMin(1.0, sim->t / sim->gravity_ramp) : 1.0; /* -gravity_ramp */
  PetscScalar   *a;

  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_GRID_UPDATE, 0, 0, 0, 0));
  PetscCall(VecGetArray(g->global, &a));
  for (PetscInt k = g->xs[2]; k < g->xs[2] + g->xm[2]; k++)
    for (PetscInt j = g->xs[1]; j < g->xs[1] + g->xm[1]; j++)
      for (PetscInt i = g->xs[0]; i < g->xs[0] + g->xm[0]; i++) {
        double        *node = a + dof * (((k - g->xs[2]) * g->xm[1] + (j - g->xs[1])) * g->xm[0] + (i - g->xs[0]));
        const double   m    = node[0];
        const PetscInt idx[3] = {i, j, k};
        double         x[3], v[3];
        if (m <= 0) {
          for (PetscInt c = 1; c < dof; c++) node[c] = 0;
          continue;
        }
        for (PetscInt c = 0; c < d; c++) {
          x[c] = g->box.origin[c] + g->h * idx[c];
          v[c] = (node[1 + c] + (flip ? node[1 + d + c] : 0.0)) / m + dt * gs * sim->gravity[c];
          if (flip) node[1 + d + c] = node[1 + c] / m; /* v^n, before forces */
        }
        MPMCollidersApply(sim, x, dt, v);
        for (PetscInt c = 0; c < d; c++) node[1 + c] = v[c];
      }
  PetscCall(VecRestoreArray(g->global, &a));
  PetscCall(PetscLogEventEnd(MPM_EVENT_GRID_UPDATE, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}
