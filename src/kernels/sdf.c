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

/* Distance to the polygon's boundary (the nearest edge point) and the
 * crossing-number test for the sign; the gradient points from the
 * nearest boundary point to x (outward on the boundary). */
double mpm_sdf_polygon(int np, const double *p, const double *x, double *g)
{
  double best = INFINITY, q[2] = {x[0], x[1]};
  int    inside = 0;
  for (int i = 0, j = np - 1; i < np; j = i++) {
    const double ax = p[2 * j], ay = p[2 * j + 1], ex = p[2 * i] - ax, ey = p[2 * i + 1] - ay;
    const double l2 = ex * ex + ey * ey;
    double       s  = l2 > 0 ? ((x[0] - ax) * ex + (x[1] - ay) * ey) / l2 : 0;
    s               = s < 0 ? 0 : (s > 1 ? 1 : s);
    const double cx = ax + s * ex, cy = ay + s * ey, d2 = (x[0] - cx) * (x[0] - cx) + (x[1] - cy) * (x[1] - cy);
    if (d2 < best) {
      best = d2;
      q[0] = cx;
      q[1] = cy;
    }
    if ((ay > x[1]) != (p[2 * i + 1] > x[1]) && x[0] < ax + (x[1] - ay) * ex / ey) inside = !inside;
  }
  const double dist = sqrt(best), sign = inside ? -1.0 : 1.0;
  if (dist > 0) {
    g[0] = sign * (x[0] - q[0]) / dist;
    g[1] = sign * (x[1] - q[1]) / dist;
  } else { /* on the boundary: the outward normal of the nearest edge is not needed often; any unit vector */
    g[0] = 1;
    g[1] = 0;
  }
  return sign * dist;
}

/* A 2D signed distance dp (gradient gp) extruded along z with half length
 * a (<= 0: infinite), like a capped cylinder. */
static double sdf_extrude(double dp, const double *gp, double a, const double *x, double *g)
{
  if (a <= 0) {
    g[0] = gp[0];
    g[1] = gp[1];
    g[2] = 0;
    return dp;
  }
  const double dz = fabs(x[2]) - a, sz = x[2] >= 0 ? 1.0 : -1.0;
  if (dp > 0 && dz > 0) {
    const double o = sqrt(dp * dp + dz * dz);
    g[0]           = dp * gp[0] / o;
    g[1]           = dp * gp[1] / o;
    g[2]           = dz * sz / o;
    return o;
  }
  if (dp >= dz) {
    g[0] = gp[0];
    g[1] = gp[1];
    g[2] = 0;
    return dp;
  }
  g[0] = g[1] = 0;
  g[2]        = sz;
  return dz;
}

/* Terrain: height and its gradient (bilinear in the cell of (x, z),
 * clamped to the grid). */
static double height(const MPMShape *s, double x, double z, double *hx, double *hz)
{
  const double u = (x - s->org[0]) / s->dh, w = (z - s->org[1]) / s->dh;
  const double uc = u < 0 ? 0 : (u > s->nx - 1 ? s->nx - 1 : u), wc = w < 0 ? 0 : (w > s->nz - 1 ? s->nz - 1 : w);
  int          i = (int)uc, j = (int)wc;
  if (i > s->nx - 2) i = s->nx - 2;
  if (j > s->nz - 2) j = s->nz - 2;
  if (i < 0) i = 0;
  if (j < 0) j = 0;
  const double fu = s->nx > 1 ? uc - i : 0, fw = s->nz > 1 ? wc - j : 0;
  const int    i1 = s->nx > 1 ? i + 1 : i, j1 = s->nz > 1 ? j + 1 : j;
  const double h00 = s->pts[i + s->nx * j], h10 = s->pts[i1 + s->nx * j], h01 = s->pts[i + s->nx * j1], h11 = s->pts[i1 + s->nx * j1];
  /* outside the grid the edge heights continue: no slope across the edge */
  *hx = (u >= 0 && u <= s->nx - 1) ? ((1 - fw) * (h10 - h00) + fw * (h11 - h01)) / s->dh : 0;
  *hz = (w >= 0 && w <= s->nz - 1) ? ((1 - fu) * (h01 - h00) + fu * (h11 - h10)) / s->dh : 0;
  return (1 - fu) * (1 - fw) * h00 + fu * (1 - fw) * h10 + (1 - fu) * fw * h01 + fu * fw * h11;
}

static double sdf_heightfield(const MPMShape *s, const double *x, double *g)
{
  double       hx, hz;
  const double h = height(s, x[0], x[2], &hx, &hz) + s->r, len = sqrt(1 + hx * hx + hz * hz);
  g[0]           = -hx / len;
  g[1]           = 1 / len;
  g[2]           = -hz / len;
  return (x[1] - h) / len;
}

/* The sample (i, j, k) of a narrow-band sampled shape. */
static inline double sampled_at(const MPMShape *s, int i, int j, int k)
{
  const int b = s->bricks[i / MPM_BRICK + s->nb3[0] * (j / MPM_BRICK + s->nb3[1] * (k / MPM_BRICK))];
  if (b < 0) return b == MPM_BRICK_IN ? -s->band : (b == MPM_BRICK_OUT ? s->band : NAN);
  return s->pts[(long)b * (MPM_BRICK * MPM_BRICK * MPM_BRICK) + i % MPM_BRICK + MPM_BRICK * (j % MPM_BRICK + MPM_BRICK * (k % MPM_BRICK))];
}

/* Trilinear interpolation of sampled phi, its gradient the trilinear
 * field's (normalized); beyond the samples' box, the distance to the box
 * plus the value at the nearest point of it. */
static double sdf_sampled(const MPMShape *s, const double *x, double *g)
{
  double u[3], f[3], out2 = 0, dout[3];
  int    i[3];
  for (int a = 0; a < 3; a++) {
    const double hi = s->lo3[a] + s->dh * (s->n3[a] - 1);
    const double xc = x[a] < s->lo3[a] ? s->lo3[a] : (x[a] > hi ? hi : x[a]);
    dout[a]         = x[a] - xc;
    out2 += dout[a] * dout[a];
    u[a] = (xc - s->lo3[a]) / s->dh;
    i[a] = (int)u[a];
    if (i[a] > s->n3[a] - 2) i[a] = s->n3[a] - 2;
    if (i[a] < 0) i[a] = 0;
    f[a] = u[a] - i[a];
  }
  double c[8], phi = 0, gl[3] = {0, 0, 0};
  for (int k = 0; k < 8; k++) c[k] = sampled_at(s, i[0] + (k & 1), i[1] + ((k >> 1) & 1), i[2] + ((k >> 2) & 1));
  for (int k = 0; k < 8; k++) {
    const double wx = (k & 1) ? f[0] : 1 - f[0], wy = ((k >> 1) & 1) ? f[1] : 1 - f[1], wz = ((k >> 2) & 1) ? f[2] : 1 - f[2];
    phi += wx * wy * wz * c[k];
    gl[0] += ((k & 1) ? 1 : -1) * wy * wz * c[k];
    gl[1] += (((k >> 1) & 1) ? 1 : -1) * wx * wz * c[k];
    gl[2] += (((k >> 2) & 1) ? 1 : -1) * wx * wy * c[k];
  }
  if (out2 > 0) { /* outside the samples: away from their box */
    const double o = sqrt(out2);
    for (int a = 0; a < 3; a++) g[a] = dout[a] / o;
    return phi + o;
  }
  const double len = sqrt(gl[0] * gl[0] + gl[1] * gl[1] + gl[2] * gl[2]);
  for (int a = 0; a < 3; a++) g[a] = len > 0 ? gl[a] / len : (a == 1);
  return phi;
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
  case MPM_SHAPE_POLYGON: {
    double gp[2];
    const double dp = mpm_sdf_polygon(s->np, s->pts, x, gp);
    if (d == 2) {
      g[0] = gp[0];
      g[1] = gp[1];
      phi  = dp;
    } else phi = sdf_extrude(dp, gp, s->a[2], x, g);
  } break;
  case MPM_SHAPE_HEIGHTFIELD: phi = sdf_heightfield(s, x, g); break;
  case MPM_SHAPE_SAMPLED: phi = sdf_sampled(s, x, g); break;
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
  if (s->inside_out || s->type == MPM_SHAPE_HALF_SPACE || s->type == MPM_SHAPE_HEIGHTFIELD) return 0;
  if (s->type == MPM_SHAPE_SAMPLED) { /* the samples' box holds the solid with a margin */
    for (int k = 0; k < 3; k++) {
      lo[k] = s->lo3[k];
      hi[k] = s->lo3[k] + s->dh * (s->n3[k] - 1);
    }
    return 1;
  }
  if (s->type == MPM_SHAPE_POLYGON) {
    if (d == 3 && s->a[2] <= 0) return 0;
    lo[0] = hi[0] = s->pts[0];
    lo[1] = hi[1] = s->pts[1];
    for (int i = 1; i < s->np; i++)
      for (int k = 0; k < 2; k++) {
        lo[k] = fmin(lo[k], s->pts[2 * i + k]);
        hi[k] = fmax(hi[k], s->pts[2 * i + k]);
      }
    if (d == 3) {
      lo[2] = -s->a[2];
      hi[2] = s->a[2];
    }
    return 1;
  }
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
    if (!contact && vn >= 0) return MPM_CONTACT_NONE; /* moving away: vn >= 0 > -phi / dt, without the division */
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
