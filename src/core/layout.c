/* The slab layout of the background grid: the physical domain padded by
 * two cells on every side (so that the kernel stencil of any particle
 * within one cell of the domain stays on the grid), cut into slabs of node
 * planes along one axis, one slab per rank.  Grid fields (gridfield.c)
 * build their DMDAs on this layout. */
#include "core.h"

static const char *const AxisNames[]   = {"x", "y", "z", "auto", "MPMAxis", "MPM_AXIS_", NULL};
static const char *const KernelNames[] = {"quadratic", "cubic", "MPMKernel", "MPM_KERNEL_", NULL};

typedef struct {
  double   lo[3], hi[3], dx;
  PetscInt axis, kernel;
} LayoutOptions;

static PetscErrorCode LayoutReadOptions(MPMSim sim, LayoutOptions *o)
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
  PetscCall(MPMOptionsReal("-dx", "Grid cell size, the same along every axis [m]", NULL, o->dx, &o->dx, NULL));
  PetscCall(MPMOptionsEList("-kernel", "Interpolation kernel (B-spline)", NULL, KernelNames, 2, KernelNames[o->kernel], &o->kernel, NULL));
  PetscCall(MPMOptionsEList("-slab_axis", "Axis the domain is cut into slabs along (auto: the longest)", NULL, AxisNames, 4, AxisNames[o->axis], &o->axis, NULL));
  PetscOptionsEnd();
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode LayoutCheckOptions(MPMSim sim, LayoutOptions *o, MPMLayout *l)
{
  const PetscInt d = sim->dim;

  PetscFunctionBeginUser;
  PetscCheck(o->dx > 0, sim->comm, PETSC_ERR_USER_INPUT, "-dx must be > 0 m, got %g", o->dx);
  for (PetscInt a = 0; a < d; a++) {
    const double L = o->hi[a] - o->lo[a], c = L / o->dx;
    PetscCheck(L > 0, sim->comm, PETSC_ERR_USER_INPUT, "-domain_hi must exceed -domain_lo along %s (got %g <= %g)", AxisNames[a], o->hi[a], o->lo[a]);
    PetscCheck(c < 1e8, sim->comm, PETSC_ERR_USER_INPUT, "-dx %g gives %g cells along %s: too many (at most 1e8 per axis)", o->dx, c, AxisNames[a]);
    PetscCheck(PetscAbs(c - round(c)) < 1e-6 * PetscMax(1.0, c), sim->comm, PETSC_ERR_USER_INPUT, "-dx %g does not divide the domain length %g along %s into whole cells (%g cells)",
               o->dx, L, AxisNames[a], c);
    l->cells[a] = (PetscInt)round(c);
    PetscCheck(l->cells[a] >= 2, sim->comm, PETSC_ERR_USER_INPUT, "-dx %g leaves fewer than 2 cells along %s", o->dx, AxisNames[a]);
  }
  PetscCheck(o->axis == 3 || o->axis < d, sim->comm, PETSC_ERR_USER_INPUT, "-slab_axis %s does not exist in %" PetscInt_FMT "D; allowed: x, y%s, auto", AxisNames[o->axis], d,
             d == 3 ? ", z" : "");
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Equal split of the N nodes along the slab axis; every slab must hold at
 * least the ghost width. */
static PetscErrorCode LayoutEqualSlabs(MPMSim sim, MPMLayout *l, PetscInt *start)
{
  const PetscInt N = l->N[l->slab_axis], P = sim->size;

  PetscFunctionBeginUser;
  PetscCheck(N / P >= 2, sim->comm, PETSC_ERR_USER_INPUT,
             "%d ranks are too many for %" PetscInt_FMT " grid nodes along the slab axis %s (each slab needs >= 2 node planes): use fewer ranks or a smaller -dx", sim->size, N,
             AxisNames[l->slab_axis]);
  start[0] = 0;
  for (PetscInt r = 0; r < P; r++) start[r + 1] = start[r] + N / P + (r < N % P ? 1 : 0);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Slab r owns node planes [start[r], start[r+1]) along the slab axis and
 * every node across it; its ghosted box reaches MPM_GHOST_WIDTH planes
 * further on each side (what the DMDAs of the grid fields report). */
PetscErrorCode MPMLayoutSetSlabs(MPMSim sim, const PetscInt *start)
{
  MPMLayout     *l = &sim->layout;
  const PetscInt ax = l->slab_axis;

  PetscFunctionBeginUser;
  for (PetscInt r = 0; r <= sim->size; r++) l->slab_start[r] = start[r];
  for (PetscInt a = 0; a < 3; a++) {
    l->xs[a]     = a == ax ? start[sim->rank] : 0;
    l->xm[a]     = a == ax ? start[sim->rank + 1] - start[sim->rank] : l->N[a];
    l->box.gs[a] = (int)(a == ax ? PetscMax(0, l->xs[a] - MPM_GHOST_WIDTH) : 0);
    l->box.gn[a] = (int)(a == ax ? PetscMin(l->N[a], l->xs[a] + l->xm[a] + MPM_GHOST_WIDTH) - l->box.gs[a] : l->N[a]);
  }
  l->own_lo = l->xs[ax];
  l->own_hi = l->xs[ax] + l->xm[ax];
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMLayoutSetUp(MPMSim sim)
{
  MPMLayout    *l = &sim->layout;
  LayoutOptions o;
  PetscInt     *start;

  PetscFunctionBeginUser;
  PetscCall(LayoutReadOptions(sim, &o));
  PetscCall(LayoutCheckOptions(sim, &o, l));
  l->dim   = sim->dim;
  l->order = o.kernel == 0 ? MPM_KERNEL_QUADRATIC : MPM_KERNEL_CUBIC;
  l->pad   = 2;
  l->h     = o.dx;
  for (PetscInt a = 0; a < 3; a++) {
    l->lo[a] = a < l->dim ? o.lo[a] : 0.0;
    l->hi[a] = a < l->dim ? o.hi[a] : 0.0;
    l->N[a]  = a < l->dim ? l->cells[a] + 1 + 2 * l->pad : 1;
  }
  l->slab_axis = o.axis;
  if (o.axis == 3) { /* the longest axis */
    l->slab_axis = 0;
    for (PetscInt a = 1; a < l->dim; a++)
      if (l->cells[a] > l->cells[l->slab_axis]) l->slab_axis = a;
  }
  l->box.dim   = (int)l->dim;
  l->box.order = (int)l->order;
  l->box.dof   = 1;
  l->box.h     = l->h;
  for (PetscInt a = 0; a < 3; a++) l->box.origin[a] = l->lo[a] - l->pad * l->h * (a < l->dim);
  l->nslab = sim->size;
  PetscCall(PetscMalloc1(sim->size + 1, &l->slab_start));
  PetscCall(PetscMalloc1(sim->size + 1, &start));
  PetscCall(LayoutEqualSlabs(sim, l, start));
  PetscCall(MPMLayoutSetSlabs(sim, start));
  PetscCall(PetscFree(start));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMLayoutDestroy(MPMLayout *l)
{
  PetscFunctionBeginUser;
  PetscCall(PetscFree(l->slab_start));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Rank whose slab holds the given node/cell index along the slab axis. */
PetscInt MPMLayoutSlabOwner(const MPMLayout *l, PetscInt cell)
{
  PetscInt lo = 0, hi = l->nslab;
  while (hi - lo > 1) {
    const PetscInt mid = (lo + hi) / 2;
    if (l->slab_start[mid] <= cell) lo = mid;
    else hi = mid;
  }
  return lo;
}


void MPMLayoutOwnedNodeX(const MPMLayout *l, PetscInt n, double *x)
{
  const PetscInt i[3] = {l->xs[0] + n % l->xm[0], l->xs[1] + (n / l->xm[0]) % l->xm[1], l->xs[2] + n / (l->xm[0] * l->xm[1])};
  for (PetscInt a = 0; a < l->dim; a++) x[a] = l->box.origin[a] + l->h * i[a];
}
