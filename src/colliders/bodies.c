/* Two-way coupled rigid bodies (Daviet and Bertails-Descoubes 2016 s. 6.1):
 * a collision object with -<name>_dynamic moves under gravity, an applied
 * torque and the grains' reaction.  Its frame and velocities live in its
 * placed shape (ps.c, ps.R, ps.vel, ps.omega), so every collision already
 * sees the body's velocity at each node.
 *
 * One step of the nonsmooth integrator (the position-based one moves
 * bodies substep by substep, MPMCollidersBodiesAhead below):
 *   1. MPMCollidersBodiesPredict: the free velocities, gravity and torque
 *      (and the gyroscopic term in 3D), explicit;
 *   2. after each Gauss-Seidel colour or APGD operator application,
 * MPMCollidersBodiesRelax: the grains' impulse on the body from the trial
 * collisions (summed over ranks) gives the body's target velocity; the body
 * moves towards it by M / (M + m_c), m_c the mass of the nodes in contact (the
 *      exact step when every contact sticks, so a light body on heavy sand
 *      does not overshoot);
 *   3. MPMCollidersBodiesSettle: after the final collision, the body's
 *      velocity is its free velocity plus the impulse the grains really
 *      took, so momentum is exchanged exactly;
 *   4. MPMCollidersBodiesWalls: the domain's faces, the other objects and
 *      the other bodies stop it (contact and Coulomb friction by sequential
 *      impulses);
 *   5. MPMCollidersAdvance: the frame moves with those velocities. */
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
  PetscCall(PetscOptionsBool("-dynamic", "A two-way coupled rigid body: moves under gravity, -torque and the grains' reaction from its -center, -rotation, -velocity, -angular_velocity (-integrator nonsmooth or pbd)",
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
static void BodiesTake(MPMColliders c, const double *J)
{
  for (PetscInt k = c->nwalls; k < c->nobj; k++) {
    MPMCollider *o = &c->obj[k];
    double       dw[3];
    if (!o->dynamic) continue;
    WorldInertia(o, c->dim, PETSC_TRUE, J + 6 * k + 3, dw);
    for (PetscInt a = 0; a < c->dim; a++) o->ps.vel[a] = o->vfree[a] + J[6 * k + a] / o->mass;
    for (int a = 0; a < 3; a++) o->ps.omega[a] = o->wfree[a] + dw[a];
  }
}

PetscErrorCode MPMCollidersBodiesSettle(MPMColliders c, MPI_Comm comm)
{
  double *J = c->mark;

  PetscFunctionBeginUser;
  if (c->ndynamic == 0) PetscFunctionReturn(PETSC_SUCCESS);
  for (PetscInt i = 0; i < 6 * c->nobj; i++) J[i] = c->impulse[i] - c->mark[i];
  PetscCall(MPMGlobalSum(comm, J, 6 * c->nobj));
  BodiesTake(c, J);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The quanta of the exact impulse sums: a body's velocity change in units
 * of 2^-44 m/s (6e-14 m/s, up to 5e5 m/s in a substep), its angular one
 * in 2^-44 rad/s (through a scalar inertia). */
static void BodyQuanta(const MPMCollider *o, PetscInt d, double *ql, double *qa)
{
  const double Is = d == 2 ? o->Ib[0] : (o->Ib[0] + o->Ib[4] + o->Ib[8]) / 3.0;
  *ql             = o->mass * 0x1p-44;
  *qa             = Is * 0x1p-44;
}

/* The position-based integrator's share of a grain (mass m at x, velocity
 * change dv from body o) in the body's impulse, added to acc (6 integers
 * per object) in fixed point.  Integer sums do not depend on their order,
 * so the body's velocities come out the same to the bit whichever ranks
 * hold its grains (the grains' own shares are rank invariant). */
void MPMCollidersBodiesBookGrain(MPMColliders c, PetscInt k, const double *x, double m, const double *dv, int64_t *acc)
{
  const MPMCollider *o = &c->obj[k];
  double             J[6] = {0, 0, 0, 0, 0, 0}, r[3] = {0, 0, 0}, ql, qa;
  if (!o->dynamic) return;
  for (PetscInt a = 0; a < c->dim; a++) {
    J[a] = -m * dv[a];
    r[a] = x[a] - o->ps.c[a];
  }
  J[3] = r[1] * J[2] - r[2] * J[1]; /* the moment about the centre */
  J[4] = r[2] * J[0] - r[0] * J[2];
  J[5] = r[0] * J[1] - r[1] * J[0];
  BodyQuanta(o, c->dim, &ql, &qa);
  for (int a = 0; a < 6; a++) {
    const double u = J[a] / (a < 3 ? ql : qa);
    if (fabs(u) < 0x1p60) acc[6 * k + a] += llround(u);
    else acc[6 * c->nobj] += 1; /* out of range: counted, refused after the sum (MPMCollidersBodiesSettleExact) */
  }
}

/* Collective.  The bodies' velocities: free velocities plus the impulses
 * booked in acc (this rank's, 6 per object and a count of shares out of
 * range; sum: their sum over ranks, scratch).  A share out of range is an
 * error on every rank alike. */
PetscErrorCode MPMCollidersBodiesSettleExact(MPMColliders c, MPI_Comm comm, const int64_t *acc, int64_t *sum)
{
  double *J = c->mark;

  PetscFunctionBeginUser;
  if (c->ndynamic == 0) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscArraycpy(sum, acc, 6 * c->nobj + 1));
  PetscCall(MPMGlobalSumInt64(comm, sum, 6 * c->nobj + 1));
  PetscCheck(sum[6 * c->nobj] == 0, comm, PETSC_ERR_USER_INPUT,
             "A grain's impulse on a dynamic body changed its velocity by more than 6e4 m/s in one substep (%lld times): the body is far too light for its grains; give it a larger -<object>_density",
             (long long)sum[6 * c->nobj]);
  for (PetscInt k = 0; k < c->nobj; k++) {
    double ql = 0, qa = 0;
    if (c->obj[k].dynamic) BodyQuanta(&c->obj[k], c->dim, &ql, &qa);
    for (int a = 0; a < 6; a++) J[6 * k + a] = (double)sum[6 * k + a] * (a < 3 ? ql : qa);
  }
  BodiesTake(c, J);
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

/* The position-based integrator (-integrator pbd) moves a body as it moves
 * its grains: the grains' contacts are solved against the body where its
 * free velocities take it by the substep's end (MPMCollidersBodiesAhead,
 * after MPMCollidersBodiesPredict), as the grains are solved from their
 * predicted positions; once the grains' impulses have given it its
 * velocities (MPMCollidersBodiesSettleExact, MPMCollidersBodiesWalls), the
 * body goes back to where the substep began and on with them
 * (MPMCollidersBodiesCommit): symplectic Euler, as the grains'. */
void MPMCollidersBodiesAhead(MPMColliders c, double dt)
{
  for (PetscInt k = c->nwalls; k < c->nobj; k++) {
    MPMCollider *o = &c->obj[k];
    if (!o->dynamic) continue;
    for (int a = 0; a < 3; a++) o->csave[a] = o->ps.c[a];
    for (int a = 0; a < 9; a++) o->Rsave[a] = o->ps.R[a];
    MPMPlacedShapeAdvance(&o->ps, c->dim, dt);
  }
}

void MPMCollidersBodiesCommit(MPMColliders c, double dt)
{
  for (PetscInt k = c->nwalls; k < c->nobj; k++) {
    MPMCollider *o = &c->obj[k];
    if (!o->dynamic) continue;
    for (int a = 0; a < 3; a++) o->ps.c[a] = o->csave[a];
    for (int a = 0; a < 9; a++) o->ps.R[a] = o->Rsave[a];
    MPMPlacedShapeAdvance(&o->ps, c->dim, dt);
  }
}

/* ------------------------------------------------- a body on the walls */
/* The points of body o that can touch a plane with inward normal n: the
 * shape's extreme points along -n (a sphere's one; a box's 2^d corners,
 * of which the plane's sequential impulses keep those that reach it; a
 * cylinder's two rims, four points each when it stands on an end).
 * Returns their number, at most 8, in world coordinates. */
static int ContactPoints(const MPMCollider *o, PetscInt d, const double *n, double (*p)[3])
{
  const MPMShape *s = &o->ps.shape;
  const double   *R = o->ps.R, *c = o->ps.c;
  int             np = 0;

  if (s->type == MPM_SHAPE_SPHERE || (s->type == MPM_SHAPE_CYLINDER && d == 2)) {
    for (PetscInt a = 0; a < 3; a++) p[0][a] = a < d ? c[a] - s->r * n[a] : 0.0;
    return 1;
  }
  if (s->type == MPM_SHAPE_BOX) {
    for (int k = 0; k < (1 << d); k++, np++) {
      double l[3];
      for (PetscInt a = 0; a < d; a++) l[a] = (k >> a & 1 ? 1.0 : -1.0) * s->a[a];
      for (PetscInt a = 0; a < 3; a++) {
        p[np][a] = a < d ? c[a] : 0.0;
        for (PetscInt b = 0; b < d && a < d; b++) p[np][a] += R[a * d + b] * l[b];
      }
    }
    return np;
  }
  { /* a 3D cylinder: axis e, radius r, half length h */
    double e[3], q[3], m = 0, t1[3], t2[3];
    for (int a = 0; a < 3; a++) e[a] = R[a * 3] * s->n[0] + R[a * 3 + 1] * s->n[1] + R[a * 3 + 2] * s->n[2];
    const double en = e[0] * n[0] + e[1] * n[1] + e[2] * n[2];
    for (int a = 0; a < 3; a++) { /* -n across the axis */
      q[a] = -(n[a] - en * e[a]);
      m += q[a] * q[a];
    }
    m = sqrt(m);
    if (m > 1e-6) { /* one rim point per end */
      for (int end = -1; end <= 1; end += 2, np++)
        for (int a = 0; a < 3; a++) p[np][a] = c[a] + end * s->a[0] * e[a] + s->r * q[a] / m;
      return np;
    }
    { /* on an end: four points of each rim */
      const int    k = fabs(e[0]) < 0.9 ? 0 : 1; /* a direction not along e */
      const double f[3] = {k == 0, k == 1, 0};
      t1[0] = e[1] * f[2] - e[2] * f[1], t1[1] = e[2] * f[0] - e[0] * f[2], t1[2] = e[0] * f[1] - e[1] * f[0];
      const double l = sqrt(t1[0] * t1[0] + t1[1] * t1[1] + t1[2] * t1[2]);
      for (int a = 0; a < 3; a++) t1[a] /= l;
      t2[0] = e[1] * t1[2] - e[2] * t1[1], t2[1] = e[2] * t1[0] - e[0] * t1[2], t2[2] = e[0] * t1[1] - e[1] * t1[0];
      for (int end = -1; end <= 1; end += 2)
        for (int j = 0; j < 4; j++, np++) {
          const double cs = j == 0 ? 1 : j == 2 ? -1 : 0, sn = j == 1 ? 1 : j == 3 ? -1 : 0;
          for (int a = 0; a < 3; a++) p[np][a] = c[a] + end * s->a[0] * e[a] + s->r * (cs * t1[a] + sn * t2[a]);
        }
    }
    return np;
  }
}

/* Velocity at arm r (from the centre) of a body moving with u and spinning with w */
static void ArmVelocity(PetscInt d, const double *u, const double *w, const double *r, double *v)
{
  if (d == 2) {
    v[0] = u[0] - w[2] * r[1], v[1] = u[1] + w[2] * r[0], v[2] = 0;
    return;
  }
  v[0] = u[0] + w[1] * r[2] - w[2] * r[1];
  v[1] = u[1] + w[2] * r[0] - w[0] * r[2];
  v[2] = u[2] + w[0] * r[1] - w[1] * r[0];
}

static void PointVelocity(const MPMCollider *o, PetscInt d, const double *r, double *v) { ArmVelocity(d, o->ps.vel, o->ps.omega, r, v); }

/* What impulse P at arm r does to body o: its velocity changes by
 * dv = P/M, its spin by dw = I^-1 (r x P) */
static void ImpulseResponse(const MPMCollider *o, PetscInt d, const double *r, const double *P, double *dv, double *dw)
{
  double L[3] = {r[1] * P[2] - r[2] * P[1], r[2] * P[0] - r[0] * P[2], r[0] * P[1] - r[1] * P[0]};
  for (int a = 0; a < 3; a++) dv[a] = a < d ? P[a] / o->mass : 0.0;
  WorldInertia(o, d, PETSC_TRUE, L, dw);
}

static void ApplyImpulse(MPMCollider *o, PetscInt d, const double *r, const double *P)
{
  double dv[3], dw[3];
  ImpulseResponse(o, d, r, P, dv, dw);
  for (PetscInt a = 0; a < d; a++) o->ps.vel[a] += dv[a];
  for (int a = 0; a < 3; a++) o->ps.omega[a] += dw[a];
}

/* 1/K: the change of the point's velocity along e that a unit impulse
 * along e at arm r makes (the effective mass along e is K) */
static double Compliance(const MPMCollider *o, PetscInt d, const double *r, const double *e)
{
  double dv[3], dw[3], v[3], k = 0;
  ImpulseResponse(o, d, r, e, dv, dw);
  ArmVelocity(d, dv, dw, r, v);
  for (PetscInt a = 0; a < d; a++) k += v[a] * e[a];
  return k;
}

/* The other side of a contact: a surface that moves with vs at the
 * point, or another body b touched at arm rb (then vs is not used). */
typedef struct {
  const double *vs;
  MPMCollider  *b;
  const double *rb;
} ContactPartner;

/* The point's velocity at arm r relative to its partner there. */
static void RelativeVelocity(const MPMCollider *o, PetscInt d, const double *r, const ContactPartner *w, double *v)
{
  double vb[3];
  PointVelocity(o, d, r, v);
  if (w->b) PointVelocity(w->b, d, w->rb, vb);
  for (PetscInt a = 0; a < d; a++) v[a] -= w->b ? vb[a] : w->vs[a];
}

/* Impulse P on body o at arm r, and -P on the partner body if any. */
static void ApplyPair(MPMCollider *o, PetscInt d, const double *r, const ContactPartner *w, const double *P)
{
  double mP[3] = {-P[0], -P[1], -P[2]};
  ApplyImpulse(o, d, r, P);
  if (w->b) ApplyImpulse(w->b, d, w->rb, mP);
}

/* The pair's compliance along e: the body's, plus the partner body's. */
static double PairCompliance(const MPMCollider *o, PetscInt d, const double *r, const ContactPartner *w, const double *e)
{
  return Compliance(o, d, r, e) + (w->b ? Compliance(w->b, d, w->rb, e) : 0.0);
}

/* One sequential-impulse update of a contact point at arm r, gap from a
 * surface of outward normal n moving with vs there, and friction mu: the
 * accumulated normal impulse lam (>= 0) brings the point's normal
 * velocity relative to the surface to -gap/dt (it lands on the surface,
 * never pulls), then the accumulated tangential impulse lt removes its
 * sliding on it, within |lt| <= mu lam.  A point clear of the surface and
 * never pushed is left alone. */
static void ContactImpulse(MPMCollider *o, PetscInt d, const double *n, const ContactPartner *w, double mu, const double *r, double gap, double dt, double *lam, double *lt)
{
  double v[3], vn = 0, P[3] = {0, 0, 0}, vt[3], st = 0, e[3] = {0, 0, 0};
  RelativeVelocity(o, d, r, w, v);
  for (PetscInt a = 0; a < d; a++) vn += n[a] * v[a];
  if (gap + dt * vn >= 0 && *lam == 0) return;
  for (PetscInt a = 0; a < d; a++) e[a] = n[a];
  const double dl = PetscMax(*lam + (-gap / dt - vn) / PairCompliance(o, d, r, w, e), 0.0) - *lam;
  *lam += dl;
  for (PetscInt a = 0; a < d; a++) P[a] = dl * n[a];
  ApplyPair(o, d, r, w, P);
  RelativeVelocity(o, d, r, w, v);
  vn = 0;
  for (PetscInt a = 0; a < d; a++) vn += n[a] * v[a];
  for (PetscInt a = 0; a < d; a++) {
    vt[a] = v[a] - vn * n[a];
    st += vt[a] * vt[a];
  }
  st = sqrt(st);
  if (st == 0) return;
  double old[3], nl = 0;
  for (PetscInt a = 0; a < d; a++) e[a] = vt[a] / st;
  const double kt = PairCompliance(o, d, r, w, e), lim = mu * *lam;
  for (PetscInt a = 0; a < d; a++) old[a] = lt[a], lt[a] -= st / kt * e[a];
  for (PetscInt a = 0; a < d; a++) nl += lt[a] * lt[a];
  nl = sqrt(nl);
  if (nl > lim)
    for (PetscInt a = 0; a < d; a++) lt[a] *= lim / nl;
  for (PetscInt a = 0; a < d; a++) P[a] = lt[a] - old[a];
  ApplyPair(o, d, r, w, P);
}

/* One contact point of a body: on a surface (f: the object, which books
 * the reaction) or on another body (f < 0; the partner takes the opposite
 * impulses). */
typedef struct {
  MPMCollider   *o;
  PetscInt       f;
  ContactPartner w;
  double         p[3], r[3], rb[3], n[3], vs[3], gap, mu, lam, lt[3];
} BodyContact;

/* The object's point nearest start (the body's centre, or an end that
 * EdgePoints found; phic and nc the object's distance and normal there) as
 * a contact: a box's face or a cylinder's side resting on a convex object
 * (a ball, a ridge) touches it between the corners and rims ContactPoints
 * gives, at that point.  The start is moved by -phi along the normal, three times at
 * most, and the point is kept only if it then lies on the surface (|phi|
 * <= tol): exact distances land there at once; a mesh's samples clamped
 * to their band, or a CSG intersection's lower bound, would otherwise give
 * a point away from the object, inside the body, and a push from nothing.
 * Its gap is the body's signed distance there; on a flat object it
 * repeats the corners'.  Returns 0 when no point is kept. */
static int ObjectPoint(MPMCollider *o, const MPMCollider *w, PetscInt d, const double *start, double phic, const double *nc, double tol, BodyContact *b)
{
  double no[3], phi = phic;
  int    it = 0;
  for (PetscInt a = 0; a < d; a++) {
    b->p[a] = start[a];
    b->n[a] = nc[a];
  }
  for (; it < 3 && !(PetscAbsReal(phi) <= tol); it++) { /* each step leaves the object's normal and velocity at the new point in b */
    for (PetscInt a = 0; a < d; a++) b->p[a] -= phi * b->n[a];
    phi = MPMPlacedShapeEval(&w->ps, d, b->p, b->n, b->vs);
  }
  if (!(PetscAbsReal(phi) <= tol)) return 0;
  if (it == 0) MPMPlacedShapeEval(&w->ps, d, b->p, b->n, b->vs); /* the centre itself on the surface */
  b->gap = MPMPlacedShapeEval(&o->ps, d, b->p, no, NULL);
  for (PetscInt a = 0; a < d; a++) {
    b->r[a]  = b->p[a] - o->ps.c[a];
    b->rb[a] = b->p[a] - w->ps.c[a];
  }
  b->w = (ContactPartner){.vs = b->vs, .b = NULL, .rb = b->rb};
  return 1;
}

/* phi_w at fraction t of the segment a -> b (the point into x). */
static double SegmentPhi(const MPMCollider *w, PetscInt d, const double *a, const double *b, double t, double *x)
{
  double n[3], vs[3];
  for (int k = 0; k < 3; k++) x[k] = a[k] + t * (b[k] - a[k]);
  return MPMPlacedShapeEval(&w->ps, d, x, n, vs);
}

/* Where a box's edge crosses an object's edge (a face lying on a bar, a
 * face tilted onto a step's corner, two edges crossing in 3D) the contact is
 * inside the box's edge, where neither a corner nor the object's point
 * nearest the centre is: a box dropped tilted onto a bar hung on the point
 * under its centre with the bar's corner 3.5 mm inside it.  Along each
 * edge of the box the object's signed distance is sampled (EDGE_SAMPLES
 * segments); where its smallest sample lies inside the edge, below both
 * ends and within a cell (h) of the object:
 * - the minimum itself, by golden section between the neighbouring
 *   samples (a corner, two edges crossing), unless its neighbours are as
 *   low to a thousandth of a cell (a flat stretch: the golden section would
 *   land anywhere on it, from step to step, and the box would chatter);
 * - the ends of the stretch within margin of it, by bisection, unless the
 *   stretch reaches a corner of the box, moved onto the object (the
 *   object's point nearest them, as ObjectPoint does from the centre):
 *   where a face lies on a flat top they land on the top's edges, tilted
 *   a little or not (0.25 h: up to 3.6 deg over a bar 4 cells wide); with
 *   the minimum alone the box rocked from one edge of a bar to the other
 *   and never settled.  A point clear of the object takes no impulse
 *   (ContactImpulse).
 * A feature narrower than a sample (1/32 of the edge) can be missed.
 * Returns the number of points written to p (at most 3 per edge: 12 in 2D,
 * 36 in 3D), onobj[k] 1 for a stretch's end (to move onto the object),
 * 0 for a minimum (a point of the box); none for shapes other than boxes. */
#define EDGE_SAMPLES 32
static int EdgePoints(const MPMCollider *o, const MPMCollider *w, PetscInt d, double h, double (*p)[3], int *onobj)
{
  const double g = 0.5 * (sqrt(5.0) - 1.0), nc[3] = {0, 1, 0}, margin = 0.25 * h, flat = 1e-3 * h;
  double       corner[8][3], x[3];
  int          np = 0;

  if (o->ps.shape.type != MPM_SHAPE_BOX) return 0;
  (void)ContactPoints(o, d, nc, corner); /* a box's 2^d corners, whatever the normal */
  for (int k = 0; k < (1 << d); k++)
    for (PetscInt e = 0; e < d; e++) {
      const double *a = corner[k], *b = corner[k | 1 << e];
      double        phi[EDGE_SAMPLES + 1], lo = PETSC_MAX_REAL, t0, t1;
      int           m = 0, k0, k1;
      if (k >> e & 1) continue; /* each edge once, from its corner with bit e clear */
      for (int j = 0; j <= EDGE_SAMPLES; j++) {
        phi[j] = SegmentPhi(w, d, a, b, (double)j / EDGE_SAMPLES, x);
        if (phi[j] < lo) lo = phi[j], m = j;
      }
      if (!(lo < h) || m == 0 || m == EDGE_SAMPLES) continue;
      t0 = (double)(m - 1) / EDGE_SAMPLES, t1 = (double)(m + 1) / EDGE_SAMPLES;
      if (!(phi[m - 1] <= lo + flat && phi[m + 1] <= lo + flat)) { /* not on a flat stretch, whose ends stand for it */
        for (int it = 0; it < 60; it++) {                               /* golden section on [t_{m-1}, t_{m+1}] */
          const double ta = t1 - g * (t1 - t0), tb = t0 + g * (t1 - t0);
          if (SegmentPhi(w, d, a, b, ta, x) <= SegmentPhi(w, d, a, b, tb, x)) t1 = tb;
          else t0 = ta;
        }
        onobj[np] = 0;
        (void)SegmentPhi(w, d, a, b, 0.5 * (t0 + t1), p[np++]);
      }
      for (k0 = m; k0 > 0 && phi[k0 - 1] <= lo + margin; k0--) {}
      for (k1 = m; k1 < EDGE_SAMPLES && phi[k1 + 1] <= lo + margin; k1++) {}
      if (k0 == 0 || k1 == EDGE_SAMPLES) continue; /* the stretch reaches a corner: the corners are contacts already */
      for (int end = 0; end < 2; end++) { /* bisect between the stretch's last sample and the one past it */
        double tin = (double)(end ? k1 : k0) / EDGE_SAMPLES, tout = (double)(end ? k1 + 1 : k0 - 1) / EDGE_SAMPLES;
        for (int it = 0; it < 30; it++) {
          const double tm = 0.5 * (tin + tout);
          if (SegmentPhi(w, d, a, b, tm, x) <= lo + margin) tin = tm;
          else tout = tm;
        }
        onobj[np] = 1;
        (void)SegmentPhi(w, d, a, b, tin, p[np++]);
      }
    }
  return np;
}

/* A point p of body o as a contact on object f (w; a dynamic body: the
 * partner, with the smaller friction coefficient of the two, whichever is
 * solved first): its gap phi_f, f's normal and velocity there, the arms. */
static void BodyPoint(MPMCollider *o, MPMCollider *w, PetscInt f, PetscInt d, const double *p, BodyContact *b)
{
  const double muw = MPMColliderFriction(w), muo = MPMColliderFriction(o); /* once each: PetscMin is a macro */

  PetscMemzero(b, sizeof(*b));
  b->o  = o;
  b->f  = w->dynamic ? -1 : f;
  b->mu = w->dynamic ? PetscMin(muw, muo) : muw;
  for (int a = 0; a < 3; a++) b->p[a] = p[a];
  b->gap = MPMPlacedShapeEval(&w->ps, d, b->p, b->n, b->vs);
  for (PetscInt a = 0; a < d; a++) {
    b->r[a]  = b->p[a] - o->ps.c[a];
    b->rb[a] = b->p[a] - w->ps.c[a];
  }
  b->w = (ContactPartner){.vs = b->vs, .b = w->dynamic ? w : NULL, .rb = b->rb};
}

/* ObjectPoint from start as a contact of body o on the static object f
 * (w), kept on the surface to a thousandth of a cell; 0 when not kept. */
static int ObjectContact(MPMColliders c, MPMCollider *o, MPMCollider *w, PetscInt f, const double *start, double phi, const double *n, BodyContact *b)
{
  PetscMemzero(b, sizeof(*b));
  b->o  = o;
  b->f  = f;
  b->mu = MPMColliderFriction(w);
  return ObjectPoint(o, w, c->dim, start, phi, n, 1e3 * c->tol, b);
}

/* Append body o's contact points on object f (a domain face, an object, or
 * another dynamic body) to bc: its candidate points (ContactPoints, for
 * f's normal at the body's centre), each with its gap phi_f and f's normal
 * and velocity there; on an object (not a face, not a body), for a body with
 * more than one candidate, also the object's point nearest its centre
 * (ObjectPoint). */
static void BodyContacts(MPMColliders c, MPMCollider *o, PetscInt f, BodyContact *bc, PetscInt *n)
{
  const PetscInt d = c->dim;
  MPMCollider   *w = &c->obj[f];
  double         p[36][3], nc[3] = {0, 0, 0};
  int            np;

  if (w->mode == MPM_BC_NONE) return;
  const double phic = MPMPlacedShapeEval(&w->ps, d, o->ps.c, nc, NULL); /* the surface's normal where the body is */
  np = ContactPoints(o, d, nc, p);
  for (int q = 0; q < np; q++) BodyPoint(o, w, f, d, p[q], &bc[(*n)++]);
  if (w->dynamic || f < c->nwalls) return; /* the rest is for objects that are not bodies */
  { /* a box's edge across an object's edge */
    int       onobj[36];
    const int ne = EdgePoints(o, w, d, 1e6 * c->tol, p, onobj); /* c->tol is a millionth of a cell */
    for (int q = 0; q < ne; q++) {
      double nrm[3] = {0, 0, 0}, phie;
      if (!onobj[q]) { /* a minimum: a point of the box */
        BodyPoint(o, w, f, d, p[q], &bc[(*n)++]);
        continue;
      }
      phie = MPMPlacedShapeEval(&w->ps, d, p[q], nrm, NULL); /* a stretch's end: the object's point nearest it */
      if (ObjectContact(c, o, w, f, p[q], phie, nrm, &bc[*n])) (*n)++;
    }
  }
  if (np > 1 && ObjectContact(c, o, w, f, o->ps.c, phic, nc, &bc[*n])) (*n)++; /* a flat face or side on a convex object */
}

/* Every rank alike (the bodies are replicated; book: this rank books the
 * surfaces' reaction, rank 0 only, as a report is summed over ranks).
 * After the grains have acted on the dynamic bodies
 * (MPMCollidersBodiesSettle) and before they move, every contact point of
 * every body on the domain's faces, on the objects that are not bodies and
 * on the other bodies (BodyContacts) takes part in sequential impulses with
 * accumulated clamping, 20 passes over all of them together (a body on
 * another on the floor, a body in a V: a contact solved alone would be
 * undone by the next): a point that would end the step inside gets the
 * normal impulse that lands it on the surface and a Coulomb friction
 * impulse.  A surface books the opposite impulse, so history.csv's forces
 * carry the bodies' load; between two bodies the impulses are equal and
 * opposite and not booked. */
PetscErrorCode MPMCollidersBodiesWalls(MPMColliders c, PetscBool book, double dt)
{
  BodyContact *bc;
  PetscInt     n = 0;

  PetscFunctionBeginUser;
  if (c->ndynamic == 0) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscMalloc1(45 * c->ndynamic * c->nobj + 1, &bc)); /* 8 candidates, 36 edge points (EdgePoints) and the object's point */
  for (PetscInt k = c->nwalls; k < c->nobj; k++) {
    if (!c->obj[k].dynamic) continue;
    for (PetscInt f = 0; f < c->nobj; f++) /* a pair of bodies: the points of each on the other */
      if (f != k) BodyContacts(c, &c->obj[k], f, bc, &n);
  }
  for (int pass = 0; pass < 20; pass++)
    for (PetscInt q = 0; q < n; q++) ContactImpulse(bc[q].o, c->dim, bc[q].n, &bc[q].w, bc[q].mu, bc[q].r, bc[q].gap, dt, &bc[q].lam, bc[q].lt);
  for (PetscInt q = 0; q < n; q++) /* the surface takes the opposite of what it gave */
    if (book && bc[q].f >= 0 && (bc[q].lam != 0 || bc[q].lt[0] != 0 || bc[q].lt[1] != 0 || bc[q].lt[2] != 0)) {
      double J[3];
      for (int a = 0; a < 3; a++) J[a] = -(bc[q].lam * bc[q].n[a] + bc[q].lt[a]);
      MPMCollidersBookImpulse(c, bc[q].f, bc[q].p, J);
    }
  PetscCall(PetscFree(bc));
  PetscFunctionReturn(PETSC_SUCCESS);
}
