/* Position-based granular contact and friction (Macklin et al. 2014,
 * "Unified particle physics for real-time applications", s. 6.1; the seed
 * pbd-granular-position-based-friction): the corrections of one contact
 * between two grains, or between a grain and a surface, at one Jacobi
 * iteration.  Pure functions of the positions; the integrator
 * (src/integrators/pbd.c) averages them per grain. */
#include <mpm/kernels.h>

#include <math.h>

/* The tangential part t of the relative displacement rel (normal n) that
 * friction removes: all of it while |t| < mu_s d (static: the contact does
 * not slide), else mu_k d of it (kinetic), d the penetration depth. */
void mpm_pbd_friction(int dim, const double *n, const double *rel, double d, double mu_s, double mu_k, double *t)
{
  double rn = 0, tt = 0;
  for (int a = 0; a < dim; a++) rn += rel[a] * n[a];
  for (int a = 0; a < dim; a++) {
    t[a] = rel[a] - rn * n[a];
    tt += t[a] * t[a];
  }
  const double tn = sqrt(tt);
  if (tn < mu_s * d) return; /* static: remove the whole tangential displacement */
  const double s = tn > 0 ? fmin(mu_k * d / tn, 1.0) : 0.0;
  for (int a = 0; a < dim; a++) t[a] *= s;
}

/* Grains a and b (radii ra, rb, inverse masses wa, wb) at x (this
 * iteration) that were at x0 when the substep began.  Returns the
 * penetration d = ra + rb - |xa - xb| (<= 0: no contact, da = db = 0) and
 * the corrections: the contact C = |xa - xb| - (ra + rb) >= 0 along n =
 * (xa - xb)/|xa - xb|, shared as wa : wb, and the friction of the relative
 * tangential displacement since x0, shared the same way.  The caller
 * passes the pair in one fixed order (the smaller id first) wherever it is
 * evaluated, so both grains' copies see the same bits. */
double mpm_pbd_pair(int dim, const double *xa, const double *xb, const double *x0a, const double *x0b, double ra, double rb, double wa, double wb, double mu_s, double mu_k,
                    double *da, double *db)
{
  double r[3], n[3] = {0, 0, 0}, rel[3] = {0, 0, 0}, t[3], dist2 = 0;
  for (int a = 0; a < dim; a++) {
    r[a] = xa[a] - xb[a];
    dist2 += r[a] * r[a];
    da[a] = db[a] = 0;
  }
  const double dist = sqrt(dist2), d = ra + rb - dist, W = wa + wb;
  if (!(d > 0 && dist > 0 && W > 0)) return fmin(d, 0.0); /* apart (or coincident: no normal) */
  for (int a = 0; a < dim; a++) {
    n[a]   = r[a] / dist;
    rel[a] = (xa[a] - x0a[a]) - (xb[a] - x0b[a]);
  }
  mpm_pbd_friction(dim, n, rel, d, mu_s, mu_k, t);
  for (int a = 0; a < dim; a++) {
    const double c = d * n[a] - t[a]; /* push a out along n, undo its share of the slip */
    da[a]          = wa / W * c;
    db[a]          = -wb / W * c;
  }
  return d;
}

/* A grain of radius r at signed distance phi from a surface with outward
 * normal n that moved by disp relative to the surface since the substep
 * began (its displacement minus the surface's).  Returns the penetration
 * d = r - phi (<= 0: no contact, dx = 0) and the grain's correction: out
 * along n by d and the friction of disp's tangential part (the surface is
 * infinitely heavy). */
double mpm_pbd_wall(int dim, double phi, const double *n, const double *disp, double r, double mu_s, double mu_k, double *dx)
{
  double t[3];
  const double d = r - phi;
  for (int a = 0; a < dim; a++) dx[a] = 0;
  if (!(d > 0)) return d;
  mpm_pbd_friction(dim, n, disp, d, mu_s, mu_k, t);
  for (int a = 0; a < dim; a++) dx[a] = d * n[a] - t[a];
  return d;
}

/* The friction of a contact as a Coulomb projection of its accumulated
 * corrections (-pbd_friction accumulated): lam = [ln, lt] holds what the
 * substep's earlier sweeps applied to the pair's relative position, ln
 * along the normal (>= 0) and lt tangentially.  The seed compares the slip
 * with mu_s times the penetration of the current sweep, which the Jacobi
 * solve drives to zero: a loaded contact resolved in the first sweeps has
 * no friction left in the last ones, and a pile creeps whatever mu_s.
 * Here the bound is mu_s ln, the whole normal correction of the substep
 * (Coulomb's law on the accumulated impulse, as in sequential-impulse
 * solvers).  Given the tangential slip s since the substep began (which
 * already includes lt), the static target is lt - s (no slip); beyond
 * mu_s ln it is cut to mu_k ln along itself (kinetic).  Returns in dt the
 * change of the friction correction; the caller applies weight w of it and
 * of the normal correction, and mpm_pbd_accumulate books them. */
void mpm_pbd_friction_acc(int dim, const double *n, const double *rel, const double *lam, double mu_s, double mu_k, double *dt)
{
  double rn = 0, ltn = 0, tt = 0, lt[3], target[3];
  for (int a = 0; a < dim; a++) {
    rn += rel[a] * n[a];
    ltn += lam[1 + a] * n[a];
  }
  for (int a = 0; a < dim; a++) {
    lt[a]     = lam[1 + a] - ltn * n[a]; /* the accumulated friction, in the current tangent plane */
    target[a] = lt[a] - (rel[a] - rn * n[a]);
    tt += target[a] * target[a];
  }
  const double tn = sqrt(tt), s = tn > mu_s * lam[0] ? (tn > 0 ? mu_k * lam[0] / tn : 0.0) : 1.0;
  for (int a = 0; a < dim; a++) dt[a] = s * target[a] - lt[a];
}

/* Book into lam = [ln, lt] the weight w of a sweep's normal correction d
 * (along n; only a push counts) and friction change dt. */
void mpm_pbd_accumulate(int dim, const double *n, double d, const double *dt, double w, double *lam)
{
  const double ln = lam[0] + (d > 0 ? w * d : 0.0);
  double       nn = 0;
  for (int a = 0; a < dim; a++) nn += lam[1 + a] * n[a];
  lam[0] = ln;
  for (int a = 0; a < dim; a++) lam[1 + a] += w * dt[a] - nn * n[a]; /* keep it tangential */
}

/* A contact's correction c of the relative position at this sweep,
 * weighted by w: the push dn (>= 0) along n and the accumulated friction's
 * change for the slip rel; lam updated.  The bound includes this sweep's
 * push. */
static void AccumulatedCorrection(int dim, const double *n, const double *rel, double dn, double mu_s, double mu_k, double w, double *lam, double *c)
{
  double t[3] = {0, 0, 0}, lam1[4] = {lam[0] + w * dn, lam[1], lam[2], lam[3]};
  mpm_pbd_friction_acc(dim, n, rel, lam1, mu_s, mu_k, t);
  mpm_pbd_accumulate(dim, n, dn, t, w, lam);
  for (int a = 0; a < dim; a++) c[a] = w * (dn * n[a] + t[a]);
}

/* mpm_pbd_pair with the accumulated friction: the pair's corrections at
 * this sweep, weighted by w, and lam updated.  Friction acts while the
 * contact carried a push in this substep (ln > 0), also in sweeps where
 * it is no longer overlapping. */
double mpm_pbd_pair_acc(int dim, const double *xa, const double *xb, const double *x0a, const double *x0b, double ra, double rb, double wa, double wb, double mu_s, double mu_k, double w,
                        double *lam, double *da, double *db)
{
  double r[3], n[3] = {0, 0, 0}, rel[3] = {0, 0, 0}, c[3], dist2 = 0;
  for (int a = 0; a < dim; a++) {
    r[a] = xa[a] - xb[a];
    dist2 += r[a] * r[a];
    da[a] = db[a] = 0;
  }
  const double dist = sqrt(dist2), d = ra + rb - dist, W = wa + wb, dn = d > 0 ? d : 0.0;
  if (!(dist > 0 && W > 0) || (dn == 0 && lam[0] == 0)) return fmin(d, 0.0);
  for (int a = 0; a < dim; a++) {
    n[a]   = r[a] / dist;
    rel[a] = (xa[a] - x0a[a]) - (xb[a] - x0b[a]);
  }
  AccumulatedCorrection(dim, n, rel, dn, mu_s, mu_k, w, lam, c);
  for (int a = 0; a < dim; a++) {
    da[a] = wa / W * c[a];
    db[a] = -wb / W * c[a];
  }
  return d;
}

/* mpm_pbd_wall with the accumulated friction: the grain's correction at
 * this sweep, weighted by w, and lam updated; friction acts while the
 * surface pushed the grain in this substep (ln > 0). */
double mpm_pbd_wall_acc(int dim, double phi, const double *n, const double *disp, double r, double mu_s, double mu_k, double w, double *lam, double *dx)
{
  const double d = r - phi, dn = d > 0 ? d : 0.0;
  for (int a = 0; a < dim; a++) dx[a] = 0;
  if (dn == 0 && lam[0] == 0) return fmin(d, 0.0);
  AccumulatedCorrection(dim, n, disp, dn, mu_s, mu_k, w, lam, dx);
  return d;
}
