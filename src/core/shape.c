/* Shapes placed in the world: a signed distance function (kernels/sdf.c)
 * in its own frame, the frame's prescribed motion (linear and angular
 * velocity) and the options that describe it.  Seeding regions (seed.c)
 * and collision objects (colliders/) are both placed shapes, so the shape
 * lives here, below both. */
#include "core.h"

static const char *const ShapeNames[] = {"half_space", "box", "sphere", "cylinder", "MPMShapeType", "MPM_SHAPE_", NULL};

static PetscErrorCode Normalize(const char *prefix, const char *opt, PetscInt d, double *n)
{
  double len = 0;

  PetscFunctionBeginUser;
  PetscCall(MPMVectorTame(d, n));
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
  PetscCall(MPMOptionsEList("-shape", "Shape", NULL, ShapeNames, 4, ShapeNames[type], &type, NULL));
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
    PetscCall(MPMOptionsReal("-radius", "Radius [m]", NULL, s->r, &s->r, NULL));
    PetscCheck(s->r > 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%sradius must be > 0 m, got %g", prefix, s->r);
  }
  if (type == MPM_SHAPE_CYLINDER && d == 3) {
    s->n[2] = 1;
    PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-axis", "Cylinder axis [-]", d, s->n, NULL));
    PetscCall(Normalize(prefix, "axis", d, s->n));
    s->a[0] = 0;
    PetscCall(MPMOptionsReal("-half_length", "Cylinder half length, <= 0 for infinite [m]", NULL, s->a[0], &s->a[0], NULL));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

static void RotationExp(PetscInt d, const double *w, double *R);

PetscErrorCode MPMShapeFromOptions(MPI_Comm comm, PetscInt d, const char *prefix, const char *title, PetscBool allow_half_space, PetscBool allow_motion,
                                   MPMPlacedShape *ps)
{
  PetscFunctionBeginUser;
  PetscCall(PetscMemzero(ps, sizeof(*ps)));
  PetscOptionsBegin(comm, prefix, title, NULL);
  PetscCall(ShapeOptions(PetscOptionsObject, d, prefix, allow_half_space, ps));
  {
    double rot[3] = {0, 0, 0}; /* degrees */
    PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-rotation", "Initial rotation about -center: one angle in 2D, a rotation vector (axis times angle) in 3D [deg]",
                               d == 2 ? 1 : 3, d == 2 ? &rot[2] : rot, NULL));
    for (PetscInt a = 0; a < 3; a++) rot[a] *= PETSC_PI / 180.0;
    RotationExp(d, rot, ps->R0);
  }
  if (allow_motion) {
    PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-velocity", "Velocity of the object: prescribed, or a dynamic body's initial velocity [m/s]", d, ps->vel, NULL));
    PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-angular_velocity", "Angular velocity about -center: prescribed, or a dynamic body's initial one (one value in 2D) [rad/s]", d == 2 ? 1 : 3,
                         d == 2 ? &ps->omega[2] : ps->omega, NULL));
  }
  PetscOptionsEnd();
  MPMPlacedShapeAtTime(ps, d, 0.0);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* R = exp([w]) for a rotation vector w (one angle w[2] in 2D), Rodrigues;
 * R is d x d, row-major. */
static void RotationExp(PetscInt d, const double *w, double *R)
{
  if (d == 2) {
    const double c = cos(w[2]), s = sin(w[2]);
    R[0] = c;
    R[1] = -s;
    R[2] = s;
    R[3] = c;
    return;
  }
  const double th = sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
  const double k[3] = {th > 0 ? w[0] / th : 0, th > 0 ? w[1] / th : 0, th > 0 ? w[2] / th : 0};
  const double c = cos(th), s = sin(th);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) R[i * 3 + j] = (i == j ? c : 0) + (1 - c) * k[i] * k[j];
  /* skew part s [k]x */
  R[1] += -s * k[2];
  R[2] += s * k[1];
  R[3] += s * k[2];
  R[5] += -s * k[0];
  R[6] += -s * k[1];
  R[7] += s * k[0];
}

/* Frame at time t: c = c0 + v t, R = exp(t [omega]) R0. */
void MPMPlacedShapeAtTime(MPMPlacedShape *ps, PetscInt d, double t)
{
  const double wt[3] = {ps->omega[0] * t, ps->omega[1] * t, ps->omega[2] * t};
  double       Rw[9];
  for (PetscInt a = 0; a < 3; a++) ps->c[a] = ps->c0[a] + ps->vel[a] * t;
  RotationExp(d, wt, Rw);
  for (PetscInt i = 0; i < d; i++)
    for (PetscInt j = 0; j < d; j++) {
      double r = 0;
      for (PetscInt k = 0; k < d; k++) r += Rw[i * d + k] * ps->R0[k * d + j];
      ps->R[i * d + j] = r;
    }
}

/* A dynamic body's frame one step on, with its current velocities:
 * c += dt v, R = exp(dt [omega]) R (omega in the world frame). */
void MPMPlacedShapeAdvance(MPMPlacedShape *ps, PetscInt d, double dt)
{
  const double wt[3] = {ps->omega[0] * dt, ps->omega[1] * dt, ps->omega[2] * dt};
  double       Rw[9], R[9];
  for (PetscInt a = 0; a < d; a++) ps->c[a] += dt * ps->vel[a];
  RotationExp(d, wt, Rw);
  for (PetscInt i = 0; i < d; i++)
    for (PetscInt j = 0; j < d; j++) {
      double r = 0;
      for (PetscInt k = 0; k < d; k++) r += Rw[i * d + k] * ps->R[k * d + j];
      R[i * d + j] = r;
    }
  for (PetscInt a = 0; a < d * d; a++) ps->R[a] = R[a];
}

/* World bounding box of the shape at its current frame (FALSE if
 * unbounded): the local box [-e, e] turned by R, |R| e about the centre. */
PetscBool MPMPlacedShapeBBox(const MPMPlacedShape *ps, PetscInt d, double *lo, double *hi)
{
  double el[3], eh[3];
  if (!mpm_shape_bbox(&ps->shape, el, eh)) return PETSC_FALSE;
  for (PetscInt a = 0; a < d; a++) {
    double e = 0;
    for (PetscInt b = 0; b < d; b++) e += fabs(ps->R[a * d + b]) * PetscMax(fabs(el[b]), fabs(eh[b]));
    lo[a] = ps->c[a] - e;
    hi[a] = ps->c[a] + e;
  }
  return PETSC_TRUE;
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

