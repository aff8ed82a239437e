/* Collision objects (Klar et al. 2016, section 8): signed distance
 * functions placed in the world, optionally moving with a prescribed linear
 * and angular velocity, applied to grid-node velocities with sticky, slip
 * or separating constraints and Coulomb friction.  The domain faces are
 * half-space objects built from the -bc_* options. */
#include "mpm_impl.h"

static const char *const ShapeNames[] = {"half_space", "box", "sphere", "cylinder", "MPMShapeType", "MPM_SHAPE_", NULL};
static const char *const BCNames[]    = {"sticky", "slip", "separate", "none", "MPMBCMode", "MPM_BC_", NULL};
static const char *const FaceNames[]  = {"xlo", "xhi", "ylo", "yhi", "zlo", "zhi"};

static PetscErrorCode Normalize(const char *prefix, const char *opt, PetscInt d, double *n)
{
  double len = 0;

  PetscFunctionBeginUser;
  for (PetscInt a = 0; a < d; a++) len += n[a] * n[a];
  len = sqrt(len);
  PetscCheck(len > 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s%s must be a nonzero vector", prefix, opt);
  for (PetscInt a = 0; a < d; a++) n[a] /= len;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Geometry of one shape, read with the given options prefix ("floor_"). */
static PetscErrorCode ShapeOptions(PetscOptionItems *PetscOptionsObject, PetscInt d, const char *prefix, PetscBool allow_half_space, MPMPlacedShape *ps)
{
  MPMShape *s = &ps->shape;
  PetscInt  type = MPM_SHAPE_BOX;
  double    lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  PetscBool set, inside_out = PETSC_FALSE;

  PetscFunctionBeginUser;
  PetscCall(PetscOptionsEList("-shape", "Shape", NULL, ShapeNames, 4, ShapeNames[type], &type, NULL));
  PetscCheck(allow_half_space || type != MPM_SHAPE_HALF_SPACE, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%sshape half_space is unbounded; allowed here: box, sphere, cylinder", prefix);
  s->dim  = (int)d;
  s->type = (MPMShapeType)type;
  PetscCall(PetscOptionsBool("-inside_out", "Solid outside the shape (a container)", NULL, inside_out, &inside_out, NULL));
  s->inside_out = inside_out;
  if (type == MPM_SHAPE_BOX) {
    PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-lo", "Box lower corner [m]", d, lo, &set));
    PetscCheck(set, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%slo is required for a box", prefix);
    PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-hi", "Box upper corner [m]", d, hi, &set));
    PetscCheck(set, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%shi is required for a box", prefix);
    for (PetscInt a = 0; a < d; a++) {
      PetscCheck(hi[a] > lo[a], PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%shi must exceed -%slo in every component", prefix, prefix);
      ps->c0[a] = 0.5 * (lo[a] + hi[a]);
      s->a[a]   = 0.5 * (hi[a] - lo[a]);
    }
  } else {
    PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-center", "Centre (a point on the plane for a half space) [m]", d, ps->c0, &set));
    PetscCheck(set, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%scenter is required for a %s", prefix, ShapeNames[type]);
  }
  if (type == MPM_SHAPE_HALF_SPACE) {
    PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-normal", "Unit normal pointing out of the solid half space [-]", d, s->n, &set));
    PetscCheck(set, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%snormal is required for a half_space", prefix);
    PetscCall(Normalize(prefix, "normal", d, s->n));
  }
  if (type == MPM_SHAPE_SPHERE || type == MPM_SHAPE_CYLINDER) {
    s->r = 0;
    PetscCall(PetscOptionsReal("-radius", "Radius [m]", NULL, s->r, &s->r, NULL));
    PetscCheck(s->r > 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%sradius must be > 0 m, got %g", prefix, s->r);
  }
  if (type == MPM_SHAPE_CYLINDER && d == 3) {
    s->n[2] = 1;
    PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-axis", "Cylinder axis [-]", d, s->n, NULL));
    PetscCall(Normalize(prefix, "axis", d, s->n));
    s->a[0] = 0;
    PetscCall(PetscOptionsReal("-half_length", "Cylinder half length, <= 0 for infinite [m]", NULL, s->a[0], &s->a[0], NULL));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMShapeFromOptions(MPI_Comm comm, PetscInt d, const char *prefix, const char *title, PetscBool allow_half_space, PetscBool allow_motion,
                                   MPMPlacedShape *ps)
{
  PetscFunctionBeginUser;
  PetscCall(PetscMemzero(ps, sizeof(*ps)));
  PetscOptionsBegin(comm, prefix, title, NULL);
  PetscCall(ShapeOptions(PetscOptionsObject, d, prefix, allow_half_space, ps));
  if (allow_motion) {
    PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-velocity", "Prescribed velocity of the object [m/s]", d, ps->vel, NULL));
    PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-angular_velocity", "Angular velocity about -center (one value in 2D) [rad/s]", d == 2 ? 1 : 3,
                         d == 2 ? &ps->omega[2] : ps->omega, NULL));
  }
  PetscOptionsEnd();
  MPMPlacedShapeAtTime(ps, d, 0.0);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Frame at time t: c = c0 + v t, R = exp(t [omega]) (Rodrigues). */
void MPMPlacedShapeAtTime(MPMPlacedShape *ps, PetscInt d, double t)
{
  const double *w = ps->omega;
  const double  wn = sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]), th = wn * t;
  for (PetscInt a = 0; a < 3; a++) ps->c[a] = ps->c0[a] + ps->vel[a] * t;
  if (d == 2) {
    const double c = cos(w[2] * t), s = sin(w[2] * t);
    ps->R[0] = c;
    ps->R[1] = -s;
    ps->R[2] = s;
    ps->R[3] = c;
    return;
  }
  const double k[3] = {wn > 0 ? w[0] / wn : 0, wn > 0 ? w[1] / wn : 0, wn > 0 ? w[2] / wn : 0};
  const double c = cos(th), s = sin(th);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) ps->R[i * 3 + j] = (i == j ? c : 0) + (1 - c) * k[i] * k[j];
  /* skew part s [k]x */
  ps->R[1] += -s * k[2];
  ps->R[2] += s * k[1];
  ps->R[3] += s * k[2];
  ps->R[5] += -s * k[0];
  ps->R[6] += -s * k[1];
  ps->R[7] += s * k[0];
}

/* phi and its gradient at world point x, and the body velocity there. */
double MPMPlacedShapeEval(const MPMPlacedShape *ps, PetscInt d, const double *x, double *grad, double *vb)
{
  double r[3] = {0, 0, 0}, xl[3] = {0, 0, 0}, gl[3] = {0, 0, 0}, phi;
  for (PetscInt a = 0; a < d; a++) r[a] = x[a] - ps->c[a];
  for (PetscInt a = 0; a < d; a++)
    for (PetscInt b = 0; b < d; b++) xl[a] += ps->R[b * d + a] * r[b]; /* R^T r */
  phi = mpm_sdf(&ps->shape, xl, gl);
  for (PetscInt a = 0; a < d; a++) {
    grad[a] = 0;
    for (PetscInt b = 0; b < d; b++) grad[a] += ps->R[a * d + b] * gl[b];
  }
  if (vb) {
    const double *w = ps->omega;
    if (d == 2) {
      vb[0] = ps->vel[0] - w[2] * r[1];
      vb[1] = ps->vel[1] + w[2] * r[0];
    } else {
      vb[0] = ps->vel[0] + w[1] * r[2] - w[2] * r[1];
      vb[1] = ps->vel[1] + w[2] * r[0] - w[0] * r[2];
      vb[2] = ps->vel[2] + w[0] * r[1] - w[1] * r[0];
    }
  }
  return phi;
}

static PetscErrorCode WallsSetUp(MPMSim sim)
{
  const PetscInt d   = sim->dim;
  double         mu0 = 0.0;

  PetscFunctionBeginUser;
  PetscOptionsBegin(sim->comm, NULL, "Domain boundaries", NULL);
  PetscCall(PetscOptionsReal("-bc_friction", "Default Coulomb friction coefficient of the domain faces [-]", NULL, mu0, &mu0, NULL));
  PetscCheck(mu0 >= 0, sim->comm, PETSC_ERR_USER_INPUT, "-bc_friction must be >= 0, got %g", mu0);
  for (PetscInt f = 0; f < 2 * d; f++) {
    MPMCollider *w = &sim->obj[f];
    PetscInt     mode = MPM_BC_SEPARATE;
    char         opt[64], help[128];
    PetscCall(PetscSNPrintf(w->name, sizeof(w->name), "bc_%s", FaceNames[f]));
    PetscCall(PetscSNPrintf(opt, sizeof(opt), "-bc_%s", FaceNames[f]));
    PetscCall(PetscSNPrintf(help, sizeof(help), "Boundary condition on the %s face", FaceNames[f]));
    PetscCall(PetscOptionsEList(opt, help, NULL, BCNames, 4, BCNames[mode], &mode, NULL));
    w->mode     = (MPMBCMode)mode;
    w->friction = mu0;
    PetscCall(PetscSNPrintf(opt, sizeof(opt), "-bc_%s_friction", FaceNames[f]));
    PetscCall(PetscOptionsReal(opt, "Coulomb friction coefficient of this face [-]", NULL, w->friction, &w->friction, NULL));
    PetscCheck(w->friction >= 0, sim->comm, PETSC_ERR_USER_INPUT, "%s must be >= 0, got %g", opt, w->friction);
    PetscCall(PetscMemzero(&w->ps, sizeof(w->ps)));
    w->ps.shape.dim        = (int)d;
    w->ps.shape.type       = MPM_SHAPE_HALF_SPACE;
    w->ps.shape.n[f / 2]   = (f % 2 == 0) ? 1.0 : -1.0; /* out of the wall, into the domain */
    w->ps.c0[f / 2]        = (f % 2 == 0) ? sim->grid.lo[f / 2] : sim->grid.hi[f / 2];
    MPMPlacedShapeAtTime(&w->ps, d, 0.0);
  }
  PetscOptionsEnd();
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
  PetscCall(PetscOptionsEList("-mode", "Collision type", NULL, BCNames, 3, BCNames[mode], &mode, NULL));
  PetscCall(PetscOptionsReal("-friction", "Coulomb friction coefficient [-]", NULL, o->friction, &o->friction, NULL));
  PetscOptionsEnd();
  PetscCheck(o->friction >= 0, sim->comm, PETSC_ERR_USER_INPUT, "-%sfriction must be >= 0, got %g", prefix, o->friction);
  o->mode = (MPMBCMode)mode;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMCollidersSetUp(MPMSim sim)
{
  char    *names[MPM_MAX_NAMES];
  PetscInt n;

  PetscFunctionBeginUser;
  PetscCall(MPMOptionsGetNames(sim->comm, "Collision objects", "-objects", "Names of the collision objects; each reads options -<name>_*", names, &n));
  sim->nwalls = 2 * sim->dim;
  sim->nobj   = sim->nwalls + n;
  PetscCall(PetscCalloc1(sim->nobj, &sim->obj));
  PetscCall(WallsSetUp(sim));
  for (PetscInt i = 0; i < n; i++) PetscCall(ObjectSetUp(sim, &sim->obj[sim->nwalls + i], names[i]));
  PetscCall(MPMOptionsFreeNames(names, n));
  PetscFunctionReturn(PETSC_SUCCESS);
}

void MPMCollidersApply(const MPMSim sim, const double *x, double dt, double *v)
{
  const double tol = 1e-6 * sim->grid.h;
  for (PetscInt o = 0; o < sim->nobj; o++) {
    const MPMCollider *c = &sim->obj[o];
    double             n[3], vb[3];
    if (c->mode == MPM_BC_NONE) continue;
    const double phi = MPMPlacedShapeEval(&c->ps, sim->dim, x, n, vb);
    mpm_collide_node((int)sim->dim, c->mode, c->friction, phi, n, vb, dt, tol, v);
  }
}
