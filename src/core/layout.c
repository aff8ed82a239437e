/* The layout of the background grid: the physical domain padded by two
 * cells on every side (so that the kernel stencil of any particle within
 * one cell of the domain stays on the grid), cut into one box of node
 * planes per rank: slabs along one axis (-decomposition slabs, the
 * default), or blocks, a grid of ranks along two or three axes
 * (-decomposition blocks), whose faces grow as P^(1/2) or P^(1/3) instead
 * of staying whole cross-sections.  Grid fields (gridfield.c) build their
 * DMDAs on this layout with the same ownership ranges. */
#include "core.h"

static const char *const AxisNames[]   = {"x", "y", "z", "auto", "MPMAxis", "MPM_AXIS_", NULL};
static const char *const KernelNames[] = {"quadratic", "cubic", "MPMKernel", "MPM_KERNEL_", NULL};
static const char *const DecompNames[] = {"slabs", "blocks", "MPMDecomposition", "MPM_DECOMP_", NULL};

typedef struct {
  double   lo[3], hi[3], dx;
  PetscInt  axis, kernel, decomp, parts[3], nparts;
  PetscBool parts_set;
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
  o->decomp = MPM_DECOMP_SLABS;
  PetscCall(MPMOptionsEList("-decomposition", "How the grid is cut among the ranks: slabs along -slab_axis, or blocks along two or three axes (for many ranks)", NULL, DecompNames, 2,
                            DecompNames[o->decomp], &o->decomp, NULL));
  o->nparts = 3;
  for (PetscInt a = 0; a < 3; a++) o->parts[a] = 0;
  PetscCall(PetscOptionsIntArray("-decomposition_parts", "With -decomposition blocks: ranks along x,y[,z], their product the rank count (default: the cut of least face area)", NULL, o->parts, &o->nparts, &o->parts_set));
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
  if (o->parts_set) {
    PetscInt prod = 1;
    PetscCheck(o->decomp == MPM_DECOMP_BLOCKS, sim->comm, PETSC_ERR_USER_INPUT, "-decomposition_parts needs -decomposition blocks (slabs are cut along -slab_axis)");
    PetscCheck(o->nparts == d, sim->comm, PETSC_ERR_USER_INPUT, "-decomposition_parts takes %" PetscInt_FMT " values (ranks along x,y%s), got %" PetscInt_FMT, d, d == 3 ? ",z" : "", o->nparts);
    for (PetscInt a = 0; a < d; a++) {
      PetscCheck(o->parts[a] >= 1, sim->comm, PETSC_ERR_USER_INPUT, "-decomposition_parts: %" PetscInt_FMT " ranks along %s; each must be >= 1", o->parts[a], AxisNames[a]);
      prod *= o->parts[a];
    }
    PetscCheck(prod == sim->size, sim->comm, PETSC_ERR_USER_INPUT, "-decomposition_parts gives %" PetscInt_FMT " ranks in all; the run has %d", prod, sim->size);
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Blocks: of the factorizations p0 p1 p2 = P that leave every part >= 2
 * node planes, the one whose cuts have the least face area (nodes on the
 * cut planes), the first found in x-fastest order on a tie. */
static PetscErrorCode LayoutBlockParts(MPMSim sim, MPMLayout *l, PetscInt *parts)
{
  const PetscInt P = sim->size, d = l->dim;
  double         best = PETSC_MAX_REAL;

  PetscFunctionBeginUser;
  parts[0] = parts[1] = parts[2] = 0;
  for (PetscInt p0 = 1; p0 <= P; p0++)
    for (PetscInt p1 = 1; p0 * p1 <= P; p1++) {
      const PetscInt p2 = P / (p0 * p1), q[3] = {p0, p1, p2};
      double         face = 0;
      PetscBool      fits = PETSC_TRUE;
      if (p0 * p1 * p2 != P || (d == 2 && p2 != 1)) continue;
      for (PetscInt a = 0; a < d; a++) {
        fits = fits && l->N[a] / q[a] >= 2;
        face += (double)(q[a] - 1) * (double)l->N[0] * l->N[1] * l->N[2] / (double)l->N[a];
      }
      if (!fits || face >= best) continue;
      best = face;
      for (PetscInt a = 0; a < 3; a++) parts[a] = q[a];
    }
  PetscCheck(parts[0], sim->comm, PETSC_ERR_USER_INPUT, "%d ranks are too many for a grid of %" PetscInt_FMT " x %" PetscInt_FMT " x %" PetscInt_FMT " nodes (each block needs >= 2 node planes per axis): use fewer ranks or a smaller -dx",
             sim->size, l->N[0], l->N[1], l->N[2]);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Equal split of the N nodes along axis a into parts[a]; every part must
 * hold at least the ghost width. */
static PetscErrorCode LayoutEqualParts(MPMSim sim, MPMLayout *l, PetscInt a, PetscInt *start)
{
  const PetscInt N = l->N[a], P = l->parts[a];

  PetscFunctionBeginUser;
  PetscCheck(P == 1 || N / P >= 2, sim->comm, PETSC_ERR_USER_INPUT,
             "%" PetscInt_FMT " parts are too many for %" PetscInt_FMT " grid nodes along %s (each needs >= 2 node planes): use fewer ranks or a smaller -dx%s", P, N, AxisNames[a],
             l->decomposition == MPM_DECOMP_SLABS ? ", or -decomposition blocks" : "");
  start[0] = 0;
  for (PetscInt r = 0; r < P; r++) start[r + 1] = start[r] + N / P + (r < N % P ? 1 : 0);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Part c of axis a owns node planes [start[a][c], start[a][c+1]) and the
 * particle cells there; this rank's ghosted box reaches MPM_GHOST_WIDTH
 * planes further on each side (what the DMDAs of the grid fields report). */
PetscErrorCode MPMLayoutSetParts(MPMSim sim, PetscInt *const start[3])
{
  MPMLayout *l = &sim->layout;

  PetscFunctionBeginUser;
  for (PetscInt a = 0; a < 3; a++) {
    const PetscInt c = l->coord[a];
    if (start[a] != l->start[a])
      for (PetscInt r = 0; r <= l->parts[a]; r++) l->start[a][r] = start[a][r];
    l->xs[a]     = l->start[a][c];
    l->xm[a]     = l->start[a][c + 1] - l->start[a][c];
    l->box.gs[a] = (int)PetscMax(0, l->xs[a] - (a < l->dim ? MPM_GHOST_WIDTH : 0));
    l->box.gn[a] = (int)(PetscMin(l->N[a], l->xs[a] + l->xm[a] + (a < l->dim ? MPM_GHOST_WIDTH : 0)) - l->box.gs[a]);
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMLayoutSetUp(MPMSim sim)
{
  MPMLayout    *l = &sim->layout;
  LayoutOptions o;

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
  l->decomposition = o.decomp;
  for (PetscInt a = 0; a < 3; a++) l->parts[a] = 1;
  if (o.decomp == MPM_DECOMP_SLABS) l->parts[l->slab_axis] = sim->size;
  else if (o.parts_set)
    for (PetscInt a = 0; a < l->dim; a++) l->parts[a] = o.parts[a];
  else PetscCall(LayoutBlockParts(sim, l, l->parts));
  if (o.decomp == MPM_DECOMP_BLOCKS)
    for (PetscInt a = 0; a < l->dim; a++)
      if (l->parts[a] > l->parts[l->slab_axis]) l->slab_axis = a;
  for (PetscInt a = 0; a < 3; a++) {
    l->coord[a] = MPMLayoutRankCoord(l, sim->rank, a);
    PetscCall(PetscMalloc1(l->parts[a] + 1, &l->start[a]));
    PetscCall(LayoutEqualParts(sim, l, a, l->start[a]));
  }
  PetscCall(MPMLayoutSetParts(sim, l->start));
  PetscFunctionReturn(PETSC_SUCCESS);
}

const char *MPMLayoutDecompositionName(const MPMLayout *l) { return DecompNames[l->decomposition]; }

PetscErrorCode MPMLayoutDestroy(MPMLayout *l)
{
  PetscFunctionBeginUser;
  for (PetscInt a = 0; a < 3; a++) PetscCall(PetscFree(l->start[a]));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The part of axis a that holds node plane (or cell) c, clamped to the
 * first and last. */
static PetscInt PartOf(const MPMLayout *l, PetscInt a, PetscInt c)
{
  PetscInt lo = 0, hi = l->parts[a];
  while (hi - lo > 1) {
    const PetscInt mid = (lo + hi) / 2;
    if (l->start[a][mid] <= c) lo = mid;
    else hi = mid;
  }
  return lo;
}

PetscMPIInt MPMLayoutOwner(const MPMLayout *l, const PetscInt *c)
{
  PetscInt r = 0;
  for (PetscInt a = 2; a >= 0; a--) r = r * l->parts[a] + (l->parts[a] > 1 ? PartOf(l, a, c[a]) : 0);
  return (PetscMPIInt)r;
}

void MPMLayoutPlaneCount(const MPMLayout *l, PetscInt n, const double *x, int64_t *hist)
{
  for (PetscInt a = 0; a < l->dim; a++) {
    int64_t *h = hist + MPMLayoutPlanes(l, a);
    if (l->parts[a] == 1) continue;
    for (PetscInt q = 0; q < n; q++) {
      const PetscInt cell = MPMLayoutParticleCell(l, a, x + q * l->dim); /* once: PetscClipInterval is a macro */
      h[PetscClipInterval(cell, 0, l->N[a] - 1)]++;
    }
  }
}

void MPMLayoutOwnedNodeX(const MPMLayout *l, PetscInt n, double *x)
{
  const PetscInt i[3] = {l->xs[0] + n % l->xm[0], l->xs[1] + (n / l->xm[0]) % l->xm[1], l->xs[2] + n / (l->xm[0] * l->xm[1])};
  for (PetscInt a = 0; a < l->dim; a++) x[a] = l->box.origin[a] + l->h * i[a];
}
