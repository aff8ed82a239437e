/* Signed distance functions of the collision objects and seeding regions,
 * and the grid-node collision response of Klar et al. 2016, section 8. */
#include <mpm/kernels.h>

static double dot(int d, const double *a, const double *b)
{
  double s = 0;
  for (int i = 0; i < d; i++) s += a[i] * b[i];
  return s;
}

static double sdf_box(int d, const double *a, const double *x, double *g)
{
  double q[3], out2 = 0, inside = -INFINITY;
  int    kmax = 0;
  for (int k = 0; k < d; k++) {
    q[k] = fabs(x[k]) - a[k];
    if (q[k] > 0) out2 += q[k] * q[k];
    if (q[k] > inside) {
      inside = q[k];
      kmax   = k;
    }
  }
  if (out2 > 0) {
    const double o = sqrt(out2);
    for (int k = 0; k < d; k++) g[k] = (q[k] > 0 ? q[k] / o : 0.0) * (x[k] >= 0 ? 1.0 : -1.0);
    return o;
  }
  for (int k = 0; k < d; k++) g[k] = (k == kmax) ? (x[k] >= 0 ? 1.0 : -1.0) : 0.0;
  return inside;
}

static double sdf_sphere(int d, double r, const double *x, double *g)
{
  const double len = sqrt(dot(d, x, x));
  for (int k = 0; k < d; k++) g[k] = len > 0 ? x[k] / len : (k == 0);
  return len - r;
}

/* Capped (half length a0 > 0) or infinite cylinder around unit axis n. */
static double sdf_cylinder3(const double *n, double r, double a0, const double *x, double *g)
{
  const double along = dot(3, x, n);
  double       rho[3], rlen, er[3];
  for (int k = 0; k < 3; k++) rho[k] = x[k] - along * n[k];
  rlen = sqrt(dot(3, rho, rho));
  if (rlen > 0) for (int k = 0; k < 3; k++) er[k] = rho[k] / rlen;
  else { /* on the axis: any radial direction perpendicular to n */
    const double t[3] = {fabs(n[0]) < 0.9 ? 1.0 : 0.0, fabs(n[0]) < 0.9 ? 0.0 : 1.0, 0.0};
    const double tn   = dot(3, t, n);
    double       l    = 0;
    for (int k = 0; k < 3; k++) l += (t[k] - tn * n[k]) * (t[k] - tn * n[k]);
    for (int k = 0; k < 3; k++) er[k] = (t[k] - tn * n[k]) / sqrt(l);
  }
  const double dr = rlen - r, sa = along >= 0 ? 1.0 : -1.0;
  if (a0 <= 0) {
    for (int k = 0; k < 3; k++) g[k] = er[k];
    return dr;
  }
  const double da = fabs(along) - a0;
  if (dr > 0 || da > 0) {
    const double pr = dr > 0 ? dr : 0, pa = da > 0 ? da : 0, o = sqrt(pr * pr + pa * pa);
    for (int k = 0; k < 3; k++) g[k] = (pr * er[k] + pa * sa * n[k]) / o;
    return o;
  }
  if (dr > da) {
    for (int k = 0; k < 3; k++) g[k] = er[k];
    return dr;
  }
  for (int k = 0; k < 3; k++) g[k] = sa * n[k];
  return da;
}

double mpm_sdf(const MPMShape *s, const double *x, double *g)
{
  const int d = s->dim;
  double    phi;
  switch (s->type) {
  case MPM_SHAPE_HALF_SPACE:
    phi = dot(d, s->n, x);
    for (int k = 0; k < d; k++) g[k] = s->n[k];
    break;
  case MPM_SHAPE_BOX: phi = sdf_box(d, s->a, x, g); break;
  case MPM_SHAPE_SPHERE: phi = sdf_sphere(d, s->r, x, g); break;
  case MPM_SHAPE_CYLINDER:
  default: phi = (d == 2) ? sdf_sphere(d, s->r, x, g) : sdf_cylinder3(s->n, s->r, s->a[0], x, g); break;
  }
  if (s->inside_out) {
    phi = -phi;
    for (int k = 0; k < d; k++) g[k] = -g[k];
  }
  return phi;
}

int mpm_shape_bbox(const MPMShape *s, double *lo, double *hi)
{
  const int d = s->dim;
  if (s->inside_out || s->type == MPM_SHAPE_HALF_SPACE) return 0;
  if (s->type == MPM_SHAPE_CYLINDER && d == 3 && s->a[0] <= 0) return 0;
  for (int k = 0; k < d; k++) {
    double e;
    if (s->type == MPM_SHAPE_BOX) e = s->a[k];
    else if (s->type == MPM_SHAPE_SPHERE || d == 2) e = s->r;
    else e = fabs(s->n[k]) * s->a[0] + s->r * sqrt(fmax(0.0, 1.0 - s->n[k] * s->n[k]));
    lo[k] = -e;
    hi[k] = e;
  }
  return 1;
}

MPMContact mpm_collide_node(int d, MPMBCMode mode, double mu, double phi, const double *n, const double *vb, double dt, double tol, double *v)
{
  double vrel[3], vt[3], vn, vn_new, tn = 0;
  if (mode == MPM_BC_NONE) return MPM_CONTACT_NONE;
  const int contact = phi <= tol; /* nodes on the surface count as touching it */
  if (mode == MPM_BC_STICKY) {
    if (!contact) return MPM_CONTACT_NONE;
    for (int k = 0; k < d; k++) v[k] = vb[k];
    return MPM_CONTACT_HELD;
  }
  for (int k = 0; k < d; k++) vrel[k] = v[k] - vb[k];
  vn = dot(d, vrel, n);
  if (mode == MPM_BC_SLIP) {
    if (!contact) return MPM_CONTACT_NONE;
    vn_new = 0.0; /* stay at the current depth */
  } else {
    /* separating: phi(x + dt v) >= min(phi(x), 0) */
    const double vmin = contact ? 0.0 : -phi / dt;
    if (vn >= vmin) return MPM_CONTACT_NONE;
    vn_new = vmin;
  }
  const double dv = fabs(vn_new - vn); /* impulse per unit mass, |j|/m */
  for (int k = 0; k < d; k++) {
    vt[k] = vrel[k] - vn * n[k];
    tn += vt[k] * vt[k];
  }
  tn = sqrt(tn);
  const double scale = (tn <= mu * dv) ? 0.0 : 1.0 - mu * dv / tn; /* Coulomb (K 8.1) */
  for (int k = 0; k < d; k++) v[k] = vb[k] + vn_new * n[k] + scale * vt[k];
  return scale == 0.0 && mu > 0 ? MPM_CONTACT_HELD : MPM_CONTACT_MOVED;
}
