/* Collision objects (Klar et al. 2016, section 8): signed distance
 * functions placed in the world, optionally moving with a prescribed linear
 * and angular velocity, applied to grid-node velocities with sticky, slip
 * or separating constraints and Coulomb friction.  The domain faces are
 * half-space objects built from the -bc_* options. */
#include "colliders.h"

static const char *const BCNames[]   = {"sticky", "slip", "separate", "none", "MPMBCMode", "MPM_BC_", NULL};
static const char *const FaceNames[] = {"xlo", "xhi", "ylo", "yhi", "zlo", "zhi"};

static PetscErrorCode WallsSetUp(MPMSim sim, MPMColliders c)
{
  const PetscInt d   = sim->dim;
  double         mu0 = 0.0;

  PetscFunctionBeginUser;
  PetscOptionsBegin(sim->comm, NULL, "Domain boundaries", NULL);
  PetscCall(MPMOptionsReal("-bc_friction", "Default Coulomb friction coefficient of the domain faces [-]", NULL, mu0, &mu0, NULL));
  PetscCheck(mu0 >= 0, sim->comm, PETSC_ERR_USER_INPUT, "-bc_friction must be >= 0, got %g", mu0);
  for (PetscInt f = 0; f < 2 * d; f++) {
    MPMCollider *w = &c->obj[f];
    PetscInt     mode = MPM_BC_SEPARATE;
    char         opt[64], help[128];
    PetscCall(PetscSNPrintf(w->name, sizeof(w->name), "bc_%s", FaceNames[f]));
    PetscCall(PetscSNPrintf(opt, sizeof(opt), "-bc_%s", FaceNames[f]));
    PetscCall(PetscSNPrintf(help, sizeof(help), "Boundary condition on the %s face", FaceNames[f]));
    PetscCall(MPMOptionsEList(opt, help, NULL, BCNames, 4, BCNames[mode], &mode, NULL));
    w->mode     = (MPMBCMode)mode;
    w->friction = mu0;
    PetscCall(PetscSNPrintf(opt, sizeof(opt), "-bc_%s_friction", FaceNames[f]));
    PetscCall(MPMOptionsReal(opt, "Coulomb friction coefficient of this face [-]", NULL, w->friction, &w->friction, NULL));
    PetscCheck(w->friction >= 0, sim->comm, PETSC_ERR_USER_INPUT, "%s must be >= 0, got %g", opt, w->friction);
    w->species = -1;
    PetscCall(PetscMemzero(&w->ps, sizeof(w->ps)));
    w->ps.shape.dim        = (int)d;
    w->ps.shape.type       = MPM_SHAPE_HALF_SPACE;
    w->ps.shape.n[f / 2]   = (f % 2 == 0) ? 1.0 : -1.0; /* out of the wall, into the domain */
    w->ps.c0[f / 2]        = (f % 2 == 0) ? sim->layout.lo[f / 2] : sim->layout.hi[f / 2];
    for (PetscInt a = 0; a < d; a++) w->ps.R0[a * d + a] = 1.0;
    MPMPlacedShapeAtTime(&w->ps, d, 0.0);
  }
  PetscOptionsEnd();
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* -<name>_species: "all", or the one species the object acts on.  A
 * screen that holds the sand and lets the water through (the porous floor
 * of a seepage test) is -<name>_species sand. */
static PetscErrorCode ObjectSpecies(MPMSim sim, MPMCollider *o, const char *prefix, PetscOptionItems *PetscOptionsObject)
{
  char      sp[MPM_NAME_LEN] = "all", allowed[MPM_NAME_LEN * 4] = "all";
  PetscBool all;

  PetscFunctionBeginUser;
  PetscCall(PetscOptionsString("-species", "Species the object acts on: all, or one species' name (sand or water with -integrator mixture)", NULL, sp, sp, sizeof(sp), NULL));
  o->species = -1;
  for (PetscInt s = 0; s < sim->nspecies; s++) {
    PetscBool match;
    PetscCall(PetscStrcmp(sp, sim->species[s]->name, &match));
    if (match) o->species = s;
    PetscCall(PetscStrlcat(allowed, ", ", sizeof(allowed)));
    PetscCall(PetscStrlcat(allowed, sim->species[s]->name, sizeof(allowed)));
  }
  PetscCall(PetscStrcmp(sp, "all", &all));
  PetscCheck(all || o->species >= 0, sim->comm, PETSC_ERR_USER_INPUT, "-%sspecies %s: no such species in this run; allowed: %s", prefix, sp, allowed);
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode ObjectSetUp(MPMSim sim, MPMCollider *o, const char *name)
{
  char     prefix[MPM_NAME_LEN + 1], title[2 * MPM_NAME_LEN];
  PetscInt mode = MPM_BC_SEPARATE;

  PetscFunctionBeginUser;
  PetscCall(PetscStrncpy(o->name, name, sizeof(o->name)));
  PetscCall(PetscSNPrintf(prefix, sizeof(prefix), "%s_", name));
  PetscCall(PetscSNPrintf(title, sizeof(title), "Collision object '%s'", name));
  PetscCall(MPMShapeFromOptions(sim->comm, sim->dim, prefix, title, PETSC_TRUE, PETSC_TRUE, &o->ps));
  o->friction = 0;
  PetscCall(PetscStrlcat(title, ": contact", sizeof(title))); /* -help prints one block per title */
  PetscOptionsBegin(sim->comm, prefix, title, NULL);
  PetscCall(MPMOptionsEList("-mode", "Collision type", NULL, BCNames, 3, BCNames[mode], &mode, NULL));
  o->mode = (MPMBCMode)mode;
  PetscCall(MPMOptionsReal("-friction", "Coulomb friction coefficient [-]", NULL, o->friction, &o->friction, NULL));
  PetscCall(ObjectSpecies(sim, o, prefix, PetscOptionsObject));
  PetscCall(MPMBodyOptions(sim, o, prefix, PetscOptionsObject));
  PetscOptionsEnd();
  PetscCheck(o->friction >= 0, sim->comm, PETSC_ERR_USER_INPUT, "-%sfriction must be >= 0, got %g", prefix, o->friction);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Plausibility (a warning): an object that stands still wholly outside
 * the domain never touches a particle; a half space that covers the
 * whole domain leaves no room for one. */
static PetscErrorCode WarnPlacement(MPMSim sim, const MPMCollider *o)
{
  const MPMLayout *l = &sim->layout;
  const PetscInt   d = sim->dim;
  const double     tol = 2 * l->h; /* nodes this close to a surface still feel it */
  double           lo[3], hi[3], n[3];
  int              in = 0, out = 0;

  PetscFunctionBeginUser;
  for (PetscInt a = 0; a < 3; a++)
    if (o->ps.vel[a] != 0 || o->ps.omega[a] != 0 || o->dynamic) PetscFunctionReturn(PETSC_SUCCESS); /* it may come in */
  if (MPMPlacedShapeBBox(&o->ps, d, lo, hi)) {
    for (PetscInt a = 0; a < d && !o->ps.shape.inside_out; a++)
      if (hi[a] < l->lo[a] - tol || lo[a] > l->hi[a] + tol) {
        PetscCall(MPMWarn(sim->comm, "object '%s' lies wholly outside the domain along %c ([%g, %g] m against the domain's [%g, %g] m): it never touches a particle", o->name, "xyz"[a], lo[a],
                          hi[a], l->lo[a], l->hi[a]));
        break;
      }
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (o->sliced) PetscFunctionReturn(PETSC_SUCCESS); /* a rank holds its mesh only near its slab, not at the corners (a half space cut by a mesh) */
  for (int k = 0; k < (1 << d); k++) { /* the domain's corners */
    double x[3] = {0, 0, 0};
    for (PetscInt a = 0; a < d; a++) x[a] = (k >> a) & 1 ? l->hi[a] : l->lo[a];
    const double phi = MPMPlacedShapeEval(&o->ps, d, x, n, NULL);
    in += phi < tol;
    out += phi > 0;
  }
  if (!in) PetscCall(MPMWarn(sim->comm, "object '%s' (a half space) lies wholly outside the domain: it never touches a particle (check -%s_center and -%s_normal)", o->name, o->name, o->name));
  if (!out) PetscCall(MPMWarn(sim->comm, "object '%s' (a half space) fills the whole domain: every particle starts inside it (check -%s_center and -%s_normal)", o->name, o->name, o->name));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The first solid object (of the deck's, not the domain faces) that holds
 * point x inside it, or -1: seeding reports particles placed in a wall. */
PetscInt MPMCollidersSolidAt(MPMColliders c, PetscInt species, const double *x)
{
  double n[3];
  for (PetscInt o = c->nwalls; o < c->nobj; o++) {
    const MPMCollider *obj = &c->obj[o];
    if (obj->mode == MPM_BC_NONE || (obj->species >= 0 && obj->species != species)) continue;
    if (MPMPlacedShapeEval(&obj->ps, c->dim, x, n, NULL) < 0) return o;
  }
  return -1;
}

PetscErrorCode MPMCollidersCreate(MPMSim sim)
{
  char        *names[MPM_MAX_NAMES];
  PetscInt     n;
  MPMColliders c;

  PetscFunctionBeginUser;
  PetscCall(MPMOptionsGetNames(sim->comm, "Collision objects", "-objects", "Names of the collision objects; each reads options -<name>_*", names, &n));
  PetscCall(PetscNew(&c));
  sim->colliders = c;
  c->dim         = sim->dim;
  c->tol         = 1e-6 * sim->layout.h;
  c->nwalls      = 2 * sim->dim;
  c->nobj        = c->nwalls + n;
  PetscCall(PetscCalloc1(c->nobj, &c->obj));
  PetscCall(PetscCalloc1(6 * c->nobj, &c->impulse));
  PetscCall(PetscCalloc1(6 * c->nobj, &c->last));
  PetscCall(PetscCalloc1(MPM_COLLIDER_TOTALS * c->nobj, &c->total));
  PetscCall(PetscCalloc1(8 * c->nobj, &c->trial));
  PetscCall(PetscCalloc1(6 * c->nobj, &c->mark));
  PetscCall(WallsSetUp(sim, c));
  for (PetscInt i = 0; i < n; i++) {
    PetscCall(ObjectSetUp(sim, &c->obj[c->nwalls + i], names[i]));
    if (c->obj[c->nwalls + i].dynamic) c->ndynamic++;
  }
  for (PetscInt o = c->nwalls; o < c->nobj; o++) { /* the meshes: whole, or around the slab */
    MPMCollider *obj = &c->obj[o];
    PetscBool    still = PETSC_TRUE;
    for (PetscInt a = 0; a < 3; a++)
      if (obj->ps.vel[a] != 0 || obj->ps.omega[a] != 0) still = PETSC_FALSE;
    obj->sliced = still && !obj->dynamic && c->ndynamic == 0 && sim->size > 1 && sim->slice_objects && MPMPlacedShapeHasMesh(&obj->ps);
    if (!obj->sliced) PetscCall(MPMPlacedShapeKeep(&obj->ps, sim->dim, -1, 0, 0)); /* the sliced ones: at the first MPMCollidersFitSlab, on the slabs as balanced */
  }
  PetscCall(MPMOptionsFreeNames(names, n));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The world interval of rank r's slab (or block) along the slab axis (for
 * blocks, the axis cut into the most parts), unbounded at the first and
 * last part (they take the grid's padding and beyond). */
void MPMCollidersSlabInterval(const MPMSim sim, PetscInt r, double *lo, double *hi)
{
  const MPMLayout *l = &sim->layout;
  const PetscInt   a = l->slab_axis, c = MPMLayoutRankCoord(l, (PetscMPIInt)r, a);
  *lo                = c == 0 ? -INFINITY : l->box.origin[a] + l->h * l->start[a][c];
  *hi                = c == l->parts[a] - 1 ? INFINITY : l->box.origin[a] + l->h * l->start[a][c + 1];
}

/* The lattice an object's picture is traced on: the domain cut to the
 * object's bounding box (one cell more), spacing half a cell (a sphere of
 * a few cells stays round) doubled while it would take more than 2e7
 * samples.  Returns the spacing. */
double MPMCollidersTraceLattice(const MPMSim sim, const MPMCollider *o, double *lo, double *hi)
{
  const PetscInt d = sim->dim;
  double         bl[3], bh[3], h = 0.5 * sim->layout.h, nodes = 1;
  PetscBool      bounded = MPMPlacedShapeBBox(&o->ps, d, bl, bh);
  for (PetscInt a = 0; a < d; a++) {
    lo[a] = sim->layout.lo[a];
    hi[a] = sim->layout.hi[a];
    if (bounded) {
      lo[a] = PetscMax(lo[a], bl[a] - sim->layout.h);
      hi[a] = PetscMin(hi[a], bh[a] + sim->layout.h);
    }
  }
  for (PetscInt a = 0; a < d; a++) nodes *= PetscMax(0.0, floor((hi[a] - lo[a]) / h)) + 2;
  while (nodes > 2e7) {
    h *= 2;
    nodes /= d == 3 ? 8 : 4;
  }
  return h;
}

/* Each sliced object holds its meshes on the bricks that reach this
 * rank's slab widened by a margin: the ghost nodes (the stencil's 2 cells)
 * and one cell more (particles cross at most a cell a step before they
 * migrate), or a cell of the picture's lattice and one more.  When the
 * slab moves past what is held, or away from it by more than twice what
 * it spares, it is sampled again with an eighth of the slab's width to
 * spare, so that small moves of a rebalance cost nothing.
 * Also the guard: no evaluation may have met a brick not held. */
PetscErrorCode MPMCollidersFitSlab(MPMSim sim)
{
  MPMColliders c = sim->colliders;
  const double h = sim->layout.h;
  double       lo, hi, x[3];

  PetscFunctionBeginUser;
  const int64_t misses = MPMPlacedShapeMisses(x);
  PetscCheck(!misses, PETSC_COMM_SELF, PETSC_ERR_PLIB, "rank %d: %lld evaluations of an object at points outside the part of its mesh this rank holds, the first at (%g, %g, %g); rerun with -slice_objects false and report it",
             sim->rank, (long long)misses, x[0], x[1], x[2]);
  MPMCollidersSlabInterval(sim, sim->rank, &lo, &hi);
  for (PetscInt o = c->nwalls; o < c->nobj; o++) {
    MPMCollider *obj = &c->obj[o];
    double       bl[3], bh[3], klo, khi;
    PetscInt     axis;
    if (!obj->sliced) continue;
    const double ht = MPMCollidersTraceLattice(sim, obj, bl, bh);
    const double m  = PetscMax((MPM_GHOST_WIDTH + 1) * h, ht + h);
    const double need_lo = lo - m, need_hi = hi + m, spare = PetscMax(h, 0.125 * (isfinite(hi - lo) ? hi - lo : 0.0));
    if (MPMPlacedShapePartial(&obj->ps, &axis, &klo, &khi) && axis == sim->layout.slab_axis && need_lo - 2 * spare <= klo && klo <= need_lo && need_hi <= khi && khi <= need_hi + 2 * spare)
      continue; /* covered, and not by far more than needed */
    PetscCall(PetscInfo(NULL, "object %s: slab [%g, %g], keeps [%g, %g] along %c\n", obj->name, lo, hi, need_lo - spare, need_hi + spare, "xyz"[sim->layout.slab_axis]));
    PetscCall(MPMPlacedShapeKeep(&obj->ps, sim->dim, sim->layout.slab_axis, need_lo - spare, need_hi + spare));
  }
  if (!c->placed) { /* after the sampling: a half space's test evaluates it */
    for (PetscInt o = c->nwalls; o < c->nobj; o++) PetscCall(WarnPlacement(sim, &c->obj[o]));
    c->placed = PETSC_TRUE;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMCollidersDestroy(MPMColliders *c)
{
  PetscFunctionBeginUser;
  if (!*c) PetscFunctionReturn(PETSC_SUCCESS);
  for (PetscInt o = 0; o < (*c)->nobj; o++) {
    PetscCall(MPMPlacedShapeDestroy(&(*c)->obj[o].ps));
    PetscCall(PetscFree((*c)->obj[o].trace));
  }
  PetscCall(PetscFree((*c)->obj));
  PetscCall(PetscFree((*c)->impulse));
  PetscCall(PetscFree((*c)->last));
  PetscCall(PetscFree((*c)->total));
  PetscCall(PetscFree((*c)->trial));
  PetscCall(PetscFree((*c)->mark));
  PetscCall(PetscFree(*c));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The deck's objects at time t (the walls do not move; dynamic bodies move
 * by MPMCollidersAdvance). */
void MPMCollidersAtTime(MPMColliders c, double t)
{
  for (PetscInt o = c->nwalls; o < c->nobj; o++)
    if (!c->obj[o].dynamic) MPMPlacedShapeAtTime(&c->obj[o].ps, c->dim, t);
}

/* Add impulse J (dim values) applied at x to imp (impulse, then its moment
 * about the centre c); returns |x - c|^2. */
static double AddImpulse(double *imp, PetscInt d, const double *x, const double *c, const double *J)
{
  double r[3] = {0, 0, 0}, r2 = 0;
  for (PetscInt a = 0; a < d; a++) {
    r[a] = x[a] - c[a];
    imp[a] += J[a];
    r2 += r[a] * r[a];
  }
  imp[3] += r[1] * J[2] - r[2] * J[1];
  imp[4] += r[2] * J[0] - r[0] * J[2];
  imp[5] += r[0] * J[1] - r[1] * J[0];
  return r2;
}

/* A domain face's signed distance at x, its normal and velocity (zero):
 * what MPMPlacedShapeEval computes for the face's half space (an
 * axis-aligned frame at rest: the frame's transforms multiply by 1 and
 * add zeros), the same values without the transforms, which were most of
 * the grid update's time on the many nodes away from every object. */
static double FaceEval(const MPMCollider *w, PetscInt f, PetscInt d, const double *x, double *n, double *vb)
{
  const PetscInt a = f / 2;
  for (PetscInt k = 0; k < d; k++) {
    n[k]  = w->ps.shape.n[k];
    vb[k] = 0.0;
  }
  return w->ps.shape.n[a] * (x[a] - w->ps.c[a]);
}

/* Object o's signed distance at x, normal and velocity there (vb given). */
static double ObjectEval(const MPMColliders c, PetscInt o, const double *x, double *n, double *vb)
{
  return o < c->nwalls ? FaceEval(&c->obj[o], o, c->dim, x, n, vb) : MPMPlacedShapeEval(&c->obj[o].ps, c->dim, x, n, vb);
}

/* Every object acting on `species` in turn on the node velocity v at x;
 * when impulse is given, each object's impulse (the node's momentum change
 * reversed, -m dv) and its moment about the object's centre are added to
 * it.  Returns the strongest MPMContact (held by friction wins). */
/* geo (or NULL): the geometry MPMCollidersGeometry kept at x, used for
 * every object but the dynamic bodies, which move during a solve */
static MPMContact CollideNode(MPMColliders c, PetscInt species, const double *x, double m, double dt, double *v, double *impulse, PetscBool trial, const double *geo)
{
  const PetscInt d       = c->dim;
  MPMContact     contact = MPM_CONTACT_NONE;
  for (PetscInt o = 0; o < c->nobj; o++) {
    const MPMCollider *obj = &c->obj[o];
    double             nl[3], vbl[3], before[3], J[3] = {0, 0, 0};
    const double      *g = geo && !obj->dynamic ? geo + o * (1 + 2 * d) : NULL, *n = g ? g + 1 : nl, *vb = g ? g + 1 + d : vbl;
    if (obj->mode == MPM_BC_NONE || (obj->species >= 0 && obj->species != species)) continue;
    const double phi = g ? g[0] : ObjectEval(c, o, x, nl, vbl);
    for (PetscInt a = 0; a < d; a++) before[a] = v[a];
    const MPMContact acted = mpm_collide_node((int)d, obj->mode, obj->friction, phi, n, vb, dt, c->tol, v);
    if (acted == MPM_CONTACT_NONE) continue;
    if (acted > contact) contact = acted; /* the enum is ordered: held > moved > none */
    if (!impulse && !(trial && obj->dynamic)) continue;
    double *imp = impulse ? impulse + 6 * o : c->trial + 8 * o;
    for (PetscInt a = 0; a < d; a++) J[a] = -m * (v[a] - before[a]);
    const double r2 = AddImpulse(imp, d, x, obj->ps.c, J);
    if (!impulse) { /* the contact's mass, for the body's relaxation */
      imp[6] += m;
      imp[7] += m * r2;
    }
  }
  return contact;
}

/* Collide one grid node of species `species` (position x, mass m, velocity
 * v after forces) with every object that acts on that species in turn, and
 * book the impulse each object took. */
MPMContact MPMCollidersApply(MPMColliders c, PetscInt species, const double *x, double m, double dt, double *v) { return CollideNode(c, species, x, m, dt, v, c->impulse, PETSC_FALSE, NULL); }

/* The same collision, friction included, at a trial state of a solve (the
 * nonsmooth Gauss-Seidel's walls): nothing goes to the report; at owned
 * nodes, the impulses on dynamic bodies go to c->trial for their update.
 * geo (or NULL): the node's geometry kept by MPMCollidersGeometry for the
 * objects that stand still during the solve (the same collisions in the
 * same order); dynamic bodies, which move between its colours, are
 * evaluated at x as they stand. */
MPMContact MPMCollidersVelocity(MPMColliders c, PetscInt species, const double *geo, const double *x, double m, double dt, PetscBool owned, double *v)
{
  return CollideNode(c, species, x, m, dt, v, NULL, owned && c->ndynamic > 0 ? PETSC_TRUE : PETSC_FALSE, geo);
}

PetscInt MPMCollidersGeometrySize(MPMColliders c) { return c->nobj * (1 + 2 * c->dim); }

void MPMCollidersGeometry(MPMColliders c, PetscInt species, const double *x, double *geo)
{
  for (PetscInt o = 0; o < c->nobj; o++) {
    const MPMCollider *obj = &c->obj[o];
    double            *g   = geo + o * (1 + 2 * c->dim);
    if (obj->mode == MPM_BC_NONE || (obj->species >= 0 && obj->species != species) || obj->dynamic) continue;
    g[0] = ObjectEval(c, o, x, g + 1, g + 1 + c->dim);
  }
}

/* How many objects acting on the species are within `reach` of x (phi <=
 * reach); with first, stop at the first. */
static PetscInt Near(MPMColliders c, PetscInt species, const double *x, double reach, PetscBool bodies_only, PetscBool first)
{
  PetscInt k = 0;
  for (PetscInt o = 0; o < c->nobj; o++) {
    const MPMCollider *obj = &c->obj[o];
    double             n[3], vb[3];
    if ((bodies_only && !obj->dynamic) || obj->mode == MPM_BC_NONE || (obj->species >= 0 && obj->species != species)) continue;
    if (ObjectEval(c, o, x, n, vb) > reach) continue;
    k++;
    if (first) break;
  }
  return k;
}

/* The number of objects acting on the species within `reach` of x. */
PetscInt MPMCollidersNearCount(MPMColliders c, PetscInt species, const double *x, double reach) { return Near(c, species, x, reach, PETSC_FALSE, PETSC_FALSE); }

/* The objects acting on the species within `reach` of a grain of the
 * position-based solver (-integrator pbd) at x that was at x0 when the
 * substep of length dt began: the contact's geometry, the grain's
 * displacement relative to the object, and the friction coefficient the
 * contact uses as both static and kinetic one (mode separate: the
 * object's, the Coulomb limit; slip: none; sticky: unbounded).  Returns
 * how many; in the order of the objects.  Books nothing
 * (MPMCollidersBookGrain does). */
PetscInt MPMCollidersGrainContacts(MPMColliders c, PetscInt species, const double *x0, const double *x, double reach, double dt, MPMGrainContact *gc)
{
  const PetscInt d = c->dim;
  PetscInt       k = 0;
  for (PetscInt o = 0; o < c->nobj; o++) {
    const MPMCollider *obj = &c->obj[o];
    MPMGrainContact   *g   = &gc[k];
    double             vb[3];
    if (obj->mode == MPM_BC_NONE || (obj->species >= 0 && obj->species != species)) continue;
    g->phi = ObjectEval(c, o, x, g->n, vb);
    if (g->phi >= reach) continue;
    g->o  = o;
    g->mu = MPMColliderFriction(obj);
    for (PetscInt a = 0; a < d; a++) g->disp[a] = (x[a] - x0[a]) - vb[a] * dt;
    k++;
  }
  return k;
}

/* Book on object o the impulse of a grain of mass m at x whose velocity
 * the object changed by dv: -m dv, and its moment about the centre. */
void MPMCollidersBookGrain(MPMColliders c, PetscInt o, const double *x, double m, const double *dv)
{
  double J[3] = {0, 0, 0};
  for (PetscInt a = 0; a < c->dim; a++) J[a] = -m * dv[a];
  MPMCollidersBookImpulse(c, o, x, J);
}

/* Impulse J [N s] on object o at x, into its report */
void MPMCollidersBookImpulse(MPMColliders c, PetscInt o, const double *x, const double *J) { AddImpulse(c->impulse + 6 * o, c->dim, x, c->obj[o].ps.c, J); }

/* Position-based sweeps accelerated by Chebyshev (-pbd_chebyshev_rho): a
 * grain moves by omega (its sweep's correction) + (omega - 1) (its move in
 * the sweep before), so what the objects gave it is recombined alike.
 * snap: the impulses (6 per object) before the sweep booked its own; prev:
 * the objects' recombined share of the sweep before (zero at the first),
 * updated. */
void MPMCollidersImpulseRecombine(MPMColliders c, const double *snap, double omega, double *prev)
{
  for (PetscInt k = 0; k < 6 * c->nobj; k++) {
    const double e = omega * (c->impulse[k] - snap[k]) + (omega - 1) * prev[k];
    c->impulse[k]  = snap[k] + e;
    prev[k]        = e;
  }
}

/* The impulses booked so far, 6 per object (this rank's share). */
const double *MPMCollidersImpulses(MPMColliders c) { return c->impulse; }

/* Whether a dynamic body acting on the species is within `reach` of x. */
PetscBool MPMCollidersNearBody(MPMColliders c, PetscInt species, const double *x, double reach) { return Near(c, species, x, reach, PETSC_TRUE, PETSC_TRUE) > 0; }

/* Whether an object acting on the species is within `reach` of x (phi <= reach). */
PetscBool MPMCollidersNear(MPMColliders c, PetscInt species, const double *x, double reach) { return Near(c, species, x, reach, PETSC_FALSE, PETSC_TRUE) > 0; }

/* The collisions of the implicit solve (Klar et al. s. 5.6, "projection
 * method"): project node velocity v like MPMCollidersApply but without
 * friction and without booking an impulse (the solve evaluates many
 * trial velocities), and return in Pi (dim x dim) the linear part of the
 * projection at v: 0 where a sticky object holds the node, I - n n^T per
 * object that removed a normal component, I where nothing acted. */
void MPMCollidersProject(MPMColliders c, PetscInt species, const double *x, double dt, double *v, double *Pi)
{
  const PetscInt d = c->dim;
  for (PetscInt a = 0; a < d * d; a++) Pi[a] = (a % (d + 1) == 0) ? 1.0 : 0.0;
  for (PetscInt o = 0; o < c->nobj; o++) {
    const MPMCollider *obj = &c->obj[o];
    double             n[3], vb[3], Q[9];
    if (obj->mode == MPM_BC_NONE || (obj->species >= 0 && obj->species != species)) continue;
    const double     phi   = ObjectEval(c, o, x, n, vb);
    const MPMContact acted = mpm_collide_node((int)d, obj->mode, 0.0, phi, n, vb, dt, c->tol, v);
    if (acted == MPM_CONTACT_NONE) continue;
    if (obj->mode == MPM_BC_STICKY) {
      for (PetscInt a = 0; a < d * d; a++) Pi[a] = 0;
      continue;
    }
    for (PetscInt a = 0; a < d; a++) /* Pi <- (I - n n^T) Pi */
      for (PetscInt b = 0; b < d; b++) {
        double t = Pi[a * d + b];
        for (PetscInt k = 0; k < d; k++) t -= n[a] * n[k] * Pi[k * d + b];
        Q[a * d + b] = t;
      }
    for (PetscInt a = 0; a < d * d; a++) Pi[a] = Q[a];
  }
}

/* The fraction of the cube of side h centred on x that is outside every
 * object acting on the species: per object clamp(1/2 + phi / h, 0, 1) of
 * its signed distance phi, multiplied (exact for the domain's walls and
 * their corners, a first-order estimate for curved objects).  The room the
 * nonsmooth integrator's dual cells leave the grains (Daviet and
 * Bertails-Descoubes 2016 s. 6.1, the rigid bodies' volume fraction). */
double MPMCollidersFreeFraction(MPMColliders c, PetscInt species, const double *x, double h)
{
  double f = 1.0;
  for (PetscInt o = 0; o < c->nobj; o++) {
    const MPMCollider *obj = &c->obj[o];
    double             n[3], vb[3];
    if (obj->mode == MPM_BC_NONE || (obj->species >= 0 && obj->species != species)) continue;
    const double phi = ObjectEval(c, o, x, n, vb); /* once: PetscClipInterval is a macro */
    f *= PetscClipInterval(0.5 + phi / h, 0.0, 1.0);
  }
  return f;
}

/* Time passes for the report, the bodies having been moved already (the
 * position-based integrator moves them substep by substep). */
void MPMCollidersElapse(MPMColliders c, double dt) { c->elapsed += dt; }

/* One step of length dt was applied: dynamic bodies move with their
 * velocities of the step. */
void MPMCollidersAdvance(MPMColliders c, double dt)
{
  c->elapsed += dt;
  for (PetscInt o = c->nwalls; o < c->nobj; o++)
    if (c->obj[o].dynamic) MPMPlacedShapeAdvance(&c->obj[o].ps, c->dim, dt);
}

/* The Coulomb coefficient of a contact with object o as one number:
 * slip none, sticky unbounded, separate its -<o>_friction (the grains'
 * contacts and the bodies' alike). */
double MPMColliderFriction(const MPMCollider *o) { return o->mode == MPM_BC_SLIP ? 0.0 : (o->mode == MPM_BC_STICKY ? PETSC_MAX_REAL : o->friction); }

/* Objects with a column in history.csv: all but those switched off (mode none). */
PetscBool MPMColliderReported(const MPMCollider *o) { return o->mode != MPM_BC_NONE ? PETSC_TRUE : PETSC_FALSE; }

/* The run totals of one report over `elapsed` seconds ending at t.  The
 * peak is taken over reports at least half as long as the longest so far:
 * a row cut short to land on a frame time can span a small fraction of a
 * step, and an impulse over so short a time is not a sustained load. */
static void BookTotals(MPMColliders c, const double *ft, double elapsed, double t)
{
  for (PetscInt o = 0; o < c->nobj; o++) {
    const double *f   = ft + 6 * o;
    double       *tot = c->total + MPM_COLLIDER_TOTALS * o;
    const double  F   = sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]);
    const double *v = c->obj[o].ps.vel, *w = c->obj[o].ps.omega;
    for (int k = 0; k < 6; k++) tot[k] += f[k] * elapsed;
    tot[8] -= elapsed * (f[0] * v[0] + f[1] * v[1] + f[2] * v[2] + f[3] * w[0] + f[4] * w[1] + f[5] * w[2]);
    tot[9] = PetscMax(tot[9], elapsed);
    if (F > tot[6] && elapsed >= 0.5 * tot[9]) {
      tot[6] = F;
      tot[7] = t;
    }
  }
}

/* Collective.  ft[6 o ..]: the mean force and torque on object o over the
 * time since the last report (impulse / elapsed time, summed over ranks);
 * starts a new accumulation.  A second report at the same time (a history
 * row and the final frame at one step) repeats the first
 * (and adds nothing to the totals). */
PetscErrorCode MPMCollidersReport(MPMColliders c, MPI_Comm comm, double t, double *ft)
{
  PetscFunctionBeginUser;
  if (c->elapsed == 0) { /* the same on every rank: no reduction on any */
    for (PetscInt i = 0; i < 6 * c->nobj; i++) ft[i] = c->last[i];
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  for (PetscInt i = 0; i < 6 * c->nobj; i++) ft[i] = c->impulse[i];
  PetscCall(MPMGlobalSum(comm, ft, 6 * c->nobj));
  for (PetscInt i = 0; i < 6 * c->nobj; i++) {
    ft[i]         = ft[i] / c->elapsed;
    c->impulse[i] = 0;
    c->last[i]    = ft[i];
  }
  BookTotals(c, ft, c->elapsed, t);
  c->elapsed = 0;
  PetscFunctionReturn(PETSC_SUCCESS);
}
