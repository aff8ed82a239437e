/* Two-way coupled rigid bodies (Daviet and Bertails-Descoubes 2016 s. 6.1):
 * a collision object with -<name>_dynamic moves under gravity, an applied
 * torque and the grains' reaction.  Its frame and velocities live in its
 * placed shape (ps.c, ps.R, ps.vel, ps.omega), so every collision already
 * sees the body's velocity at each node.
 *
 * One step (the nonsmooth integrator drives it):
 *   1. MPMCollidersBodiesPredict: the free velocities, gravity and torque
 *      (and the gyroscopic term in 3D), explicit;
 *   2. after each Gauss-Seidel colour or APGD operator application, MPMCollidersBodiesRelax:
 *      the grains' impulse on the body from the trial collisions (summed
 *      over ranks) gives the body's target velocity; the body moves towards
 *      it by M / (M + m_c), m_c the mass of the nodes in contact (the
 *      exact step when every contact sticks, so a light body on heavy sand
 *      does not overshoot);
 *   3. MPMCollidersBodiesSettle: after the final collision, the body's
 *      velocity is its free velocity plus the impulse the grains really
 *      took, so momentum is exchanged exactly;
 *   4. MPMCollidersAdvance: the frame moves with those velocities. */
#include "colliders.h"

/* Mass [kg] (per unit depth in 2D) and body-frame inertia of the shape. */
static PetscErrorCode BodyMass(MPI_Comm comm, PetscInt d, const char *prefix, double rho, MPMCollider *o)
{
  const MPMShape *s = &o->ps.shape;
  double          V = 0, Ip[3] = {0, 0, 0}, axis = 0, perp = 0;

  PetscFunctionBeginUser;
  PetscCall(PetscArrayzero(o->Ib, 9));
  PetscCheck(!s->inside_out, comm, PETSC_ERR_USER_INPUT, "-%sdynamic: a dynamic body cannot be inside out (a container)", prefix);
  if (s->type == MPM_SHAPE_SPHERE || (s->type == MPM_SHAPE_CYLINDER && d == 2)) { /* a 2D cylinder is a disk */
    V = d == 2 ? PETSC_PI * s->r * s->r : 4.0 / 3.0 * PETSC_PI * s->r * s->r * s->r;
    for (int a = 0; a < 3; a++) Ip[a] = (d == 2 ? 0.5 : 0.4) * rho * V * s->r * s->r;
  } else if (s->type == MPM_SHAPE_BOX) { /* a[]: half widths */
    V = d == 2 ? 4 * s->a[0] * s->a[1] : 8 * s->a[0] * s->a[1] * s->a[2];
    if (d == 2) Ip[0] = rho * V * (s->a[0] * s->a[0] + s->a[1] * s->a[1]) / 3.0;
    else
      for (int a = 0; a < 3; a++) Ip[a] = rho * V * (s->a[(a + 1) % 3] * s->a[(a + 1) % 3] + s->a[(a + 2) % 3] * s->a[(a + 2) % 3]) / 3.0;
  } else if (s->type == MPM_SHAPE_CYLINDER && d == 3 && s->a[0] > 0) { /* axis n, radius r, half length a[0] */
    V    = PETSC_PI * s->r * s->r * 2 * s->a[0];
    axis = 0.5 * rho * V * s->r * s->r;
    perp = rho * V * (3 * s->r * s->r + 4 * s->a[0] * s->a[0]) / 12.0;
  } else
    SETERRQ(comm, PETSC_ERR_USER_INPUT, "-%sdynamic: a dynamic body must be a bounded shape; allowed -%sshape: sphere, box, cylinder%s", prefix, prefix, d == 3 ? " (with -half_length > 0)" : "");
  o->mass = rho * V;
  if (d == 2) o->Ib[0] = s->type == MPM_SHAPE_BOX ? Ip[0] : Ip[2];
  else if (s->type == MPM_SHAPE_CYLINDER)
    for (int a = 0; a < 3; a++)
      for (int b = 0; b < 3; b++) o->Ib[a * 3 + b] = (a == b ? perp : 0) + (axis - perp) * s->n[a] * s->n[b];
  else
    for (int a = 0; a < 3; a++) o->Ib[a * 4] = Ip[a];
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Ibinv: the inverse of the body-frame inertia, once (symmetric positive
 * definite 3 x 3: the adjugate over the determinant, of Ib / s so that
 * nothing overflows) */
static void InvertInertia(PetscInt d, MPMCollider *o)
{
  if (d == 2) return; /* WorldInertia divides by Ib[0] */
  const double sc = (o->Ib[0] + o->Ib[4] + o->Ib[8]) / 3.0;
  double       m[9], *B = o->Ibinv;
  for (int a = 0; a < 9; a++) m[a] = o->Ib[a] / sc;
  const double c0 = m[4] * m[8] - m[5] * m[7], c1 = m[5] * m[6] - m[3] * m[8], c2 = m[3] * m[7] - m[4] * m[6];
  const double det = sc * (m[0] * c0 + m[1] * c1 + m[2] * c2);
  B[0] = c0 / det, B[1] = (m[2] * m[7] - m[1] * m[8]) / det, B[2] = (m[1] * m[5] - m[2] * m[4]) / det;
  B[3] = c1 / det, B[4] = (m[0] * m[8] - m[2] * m[6]) / det, B[5] = (m[2] * m[3] - m[0] * m[5]) / det;
  B[6] = c2 / det, B[7] = (m[1] * m[6] - m[0] * m[7]) / det, B[8] = (m[0] * m[4] - m[1] * m[3]) / det;
}

/* -<name>_dynamic, -<name>_density, -<name>_torque (inside the object's
 * options block). */
PetscErrorCode MPMBodyOptions(MPMSim sim, MPMCollider *o, const char *prefix, PetscOptionItems *PetscOptionsObject)
{
  double rho = 0;

  PetscFunctionBeginUser;
  o->dynamic = PETSC_FALSE;
  PetscCall(PetscOptionsBool("-dynamic", "A two-way coupled rigid body: moves under gravity, -torque and the grains' reaction from its -center, -rotation, -velocity, -angular_velocity (-integrator nonsmooth)",
                             NULL, o->dynamic, &o->dynamic, NULL));
  PetscCall(MPMOptionsReal("-density", "Density of a dynamic body [kg/m^3]", NULL, rho, &rho, NULL));
  PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-torque", "Torque applied to a dynamic body (one value in 2D) [N m]", sim->dim == 2 ? 1 : 3, sim->dim == 2 ? &o->torque[2] : o->torque, NULL));
  if (!o->dynamic) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCheck(rho > 0, sim->comm, PETSC_ERR_USER_INPUT, "-%sdensity must be > 0 kg/m^3 for a dynamic body, got %g", prefix, rho);
  PetscCheck(o->mode == MPM_BC_SEPARATE, sim->comm, PETSC_ERR_USER_INPUT, "-%smode: a dynamic body needs mode separate (the grains may leave it)", prefix);
  PetscCall(BodyMass(sim->comm, sim->dim, prefix, rho, o));
  PetscCheck(o->mass > 0 && PetscIsNormalReal(o->mass) && PetscIsNormalReal(o->Ib[0]) && o->Ib[0] > 0, sim->comm, PETSC_ERR_USER_INPUT,
             "-%sdensity %g and the shape give a dynamic body of mass %g kg and inertia %g kg m^2; both must be positive and finite", prefix, rho, o->mass, o->Ib[0]);
  InvertInertia(sim->dim, o);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* y = A x, A = R Ib R^T or its inverse (inv): the world inertia of body o */
static void WorldInertia(const MPMCollider *o, PetscInt d, PetscBool inv, const double *x, double *y)
{
  const double *Ib = inv ? o->Ibinv : o->Ib;
  double        A[3], t[3];
  if (d == 2) {
    y[0] = y[1] = 0;
    y[2] = inv ? x[2] / o->Ib[0] : x[2] * o->Ib[0];
    return;
  }
  for (int a = 0; a < 3; a++) { /* t = R^T x, then R Ib t */
    t[a] = 0;
    for (int b = 0; b < 3; b++) t[a] += o->ps.R[b * 3 + a] * x[b];
  }
  for (int a = 0; a < 3; a++) {
    A[a] = 0;
    for (int b = 0; b < 3; b++) A[a] += Ib[a * 3 + b] * t[b];
  }
  for (int a = 0; a < 3; a++) {
    y[a] = 0;
    for (int b = 0; b < 3; b++) y[a] += o->ps.R[a * 3 + b] * A[b];
  }
}

/* The free velocities of the step: v + dt g, omega + dt I^-1 (tau - omega x I omega) */
void MPMCollidersBodiesPredict(MPMColliders c, const double *g, double dt)
{
  const PetscInt d = c->dim;
  for (PetscInt k = c->nwalls; k < c->nobj; k++) {
    MPMCollider *o = &c->obj[k];
    double       Iw[3], rhs[3], dw[3], *w = o->ps.omega;
    if (!o->dynamic) continue;
    for (PetscInt a = 0; a < d; a++) o->vfree[a] = o->ps.vel[a] + dt * g[a];
    WorldInertia(o, d, PETSC_FALSE, w, Iw);
    rhs[0] = o->torque[0] - (w[1] * Iw[2] - w[2] * Iw[1]);
    rhs[1] = o->torque[1] - (w[2] * Iw[0] - w[0] * Iw[2]);
    rhs[2] = o->torque[2] - (w[0] * Iw[1] - w[1] * Iw[0]);
    WorldInertia(o, d, PETSC_TRUE, rhs, dw);
    for (int a = 0; a < 3; a++) o->wfree[a] = w[a] + dt * dw[a];
    for (PetscInt a = 0; a < d; a++) o->ps.vel[a] = o->vfree[a];
    for (int a = 0; a < 3; a++) o->ps.omega[a] = o->wfree[a];
  }
}

/* Collective.  Every body's velocity towards its free velocity plus the
 * trial impulse of the grains (c->trial, summed over ranks; reset). */
PetscErrorCode MPMCollidersBodiesRelax(MPMColliders c, MPI_Comm comm)
{
  const PetscInt d = c->dim;

  PetscFunctionBeginUser;
  if (c->ndynamic == 0) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(MPMGlobalSum(comm, c->trial, 8 * c->nobj));
  for (PetscInt k = c->nwalls; k < c->nobj; k++) {
    MPMCollider  *o = &c->obj[k];
    const double *J = c->trial + 8 * k;
    double        dw[3];
    if (!o->dynamic) continue;
    const double Is = d == 2 ? o->Ib[0] : (o->Ib[0] + o->Ib[4] + o->Ib[8]) / 3.0;
    const double al = o->mass / (o->mass + J[6]), ar = Is / (Is + J[7]);
    WorldInertia(o, d, PETSC_TRUE, J + 3, dw);
    for (PetscInt a = 0; a < d; a++) o->ps.vel[a] += al * (o->vfree[a] + J[a] / o->mass - o->ps.vel[a]);
    for (int a = 0; a < 3; a++) o->ps.omega[a] += ar * (o->wfree[a] + dw[a] - o->ps.omega[a]);
  }
  PetscCall(PetscArrayzero(c->trial, 8 * c->nobj));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Before the step's final collision: the report's impulses so far. */
void MPMCollidersBodiesMark(MPMColliders c)
{
  for (PetscInt i = 0; i < 6 * c->nobj; i++) c->mark[i] = c->impulse[i];
}

/* Collective.  After the final collision: each body's velocity is its free
 * velocity plus the impulse the grains took in it (summed over ranks), so
 * the momentum the grains lose the body gains. */
PetscErrorCode MPMCollidersBodiesSettle(MPMColliders c, MPI_Comm comm)
{
  const PetscInt d = c->dim;
  double        *J = c->mark;

  PetscFunctionBeginUser;
  if (c->ndynamic == 0) PetscFunctionReturn(PETSC_SUCCESS);
  for (PetscInt i = 0; i < 6 * c->nobj; i++) J[i] = c->impulse[i] - c->mark[i];
  PetscCall(MPMGlobalSum(comm, J, 6 * c->nobj));
  for (PetscInt k = c->nwalls; k < c->nobj; k++) {
    MPMCollider *o = &c->obj[k];
    double       dw[3];
    if (!o->dynamic) continue;
    WorldInertia(o, d, PETSC_TRUE, J + 6 * k + 3, dw);
    for (PetscInt a = 0; a < d; a++) o->ps.vel[a] = o->vfree[a] + J[6 * k + a] / o->mass;
    for (int a = 0; a < 3; a++) o->ps.omega[a] = o->wfree[a] + dw[a];
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The fastest dynamic body's centre [m/s] (the step's CFL). */
double MPMCollidersBodiesSpeed(MPMColliders c)
{
  double vmax = 0;
  for (PetscInt k = c->nwalls; k < c->nobj; k++) {
    double v2 = 0;
    if (!c->obj[k].dynamic) continue;
    for (PetscInt a = 0; a < c->dim; a++) v2 += c->obj[k].ps.vel[a] * c->obj[k].ps.vel[a];
    vmax = PetscMax(vmax, sqrt(v2));
  }
  return vmax;
}
