/* Particle <-> grid transfers (Klar et al. 2016 sections 5.1, 5.3, 5.4, 6.2).
 *
 * The generic bodies are written once for any (dim, order) and forced
 * inline into four specialised entry points, so the compiler sees constant
 * trip counts and unrolls the stencil loops. */
#include <mpm/kernels.h>
#include <mpm/transfer.h>

#define ALWAYS_INLINE static inline __attribute__((always_inline))

typedef struct {
  int    base[3];
  double w[3][MPM_MAX_STENCIL], dw[3][MPM_MAX_STENCIL], dx[3][MPM_MAX_STENCIL];
} Stencil;

/* Weights, physical weight gradients and node offsets x_i - x_p per axis. */
ALWAYS_INLINE void stencil_eval(const MPMGridBox *g, int dim, int order, const double *xp, Stencil *s)
{
  const double ih = 1.0 / g->h;
  for (int a = 0; a < dim; a++) {
    const double xr = (xp[a] - g->origin[a]) * ih;
    mpm_bspline_weights(order, xr, &s->base[a], s->w[a], s->dw[a]);
    for (int k = 0; k <= order; k++) {
      s->dw[a][k] *= ih;
      s->dx[a][k] = (s->base[a] + k - xr) * g->h;
    }
  }
  if (dim == 2) {
    s->base[2]  = 0;
    s->w[2][0]  = 1.0;
    s->dw[2][0] = 0.0;
    s->dx[2][0] = 0.0;
  }
}

ALWAYS_INLINE long node_offset(const MPMGridBox *g, int i, int j, int k)
{
  return ((long)(k - g->gs[2]) * g->gn[1] + (j - g->gs[1])) * g->gn[0] + (i - g->gs[0]);
}

ALWAYS_INLINE void p2g_generic(int dim, int order, const MPMGridBox *g, const MPMParticleView *p, double dt, double *grid)
{
  const int S = order + 1, Sz = dim == 3 ? S : 1, dof = g->dof, split = dof > 1 + dim;
  for (int q = 0; q < p->n; q++) {
    Stencil      s;
    double       mv[3], mC[9] = {0}, A[9];
    const double m = p->m[q];
    stencil_eval(g, dim, order, p->x + q * dim, &s);
    for (int a = 0; a < dim; a++) mv[a] = m * p->v[q * dim + a];
    if (p->C)
      for (int a = 0; a < dim * dim; a++) mC[a] = m * p->C[q * dim * dim + a];
    for (int a = 0; a < dim * dim; a++) A[a] = dt * p->V0[q] * p->tau[q * dim * dim + a];
    for (int kz = 0; kz < Sz; kz++)
      for (int ky = 0; ky < S; ky++) {
        const double wyz = s.w[1][ky] * s.w[2][kz];
        double      *row = grid + dof * node_offset(g, s.base[0], s.base[1] + ky, s.base[2] + kz);
        for (int kx = 0; kx < S; kx++) {
          const double w     = s.w[0][kx] * wyz;
          const double gw[3] = {s.dw[0][kx] * wyz, s.w[0][kx] * s.dw[1][ky] * s.w[2][kz], s.w[0][kx] * s.w[1][ky] * s.dw[2][kz]};
          const double dx[3] = {s.dx[0][kx], s.dx[1][ky], s.dx[2][kz]};
          double      *node  = row + dof * kx;
          node[0] += w * m;
          for (int a = 0; a < dim; a++) {
            double mom = mv[a], f = 0;
            for (int b = 0; b < dim; b++) {
              mom += mC[a * dim + b] * dx[b];
              f += A[a * dim + b] * gw[b];
            }
            if (split) { /* FLIP keeps the force apart to recover v^n on the grid */
              node[1 + a] += w * mom;
              node[1 + dim + a] -= f;
            } else node[1 + a] += w * mom - f;
          }
        }
      }
  }
}

ALWAYS_INLINE double g2p_generic(int dim, int order, const MPMGridBox *g, const double *grid, double dt, double flip, MPMParticleView *p)
{
  const int    S = order + 1, Sz = dim == 3 ? S : 1, dof = g->dof;
  const double dinv = mpm_apic_dinv(order, g->h);
  double       vmax2 = 0;
  for (int q = 0; q < p->n; q++) {
    Stencil s;
    double  vp[3] = {0}, vo[3] = {0}, B[9] = {0}, gv[9] = {0};
    double *x = p->x + q * dim, *v = p->v + q * dim, *Fe = p->Fe + q * dim * dim;
    stencil_eval(g, dim, order, x, &s);
    for (int kz = 0; kz < Sz; kz++)
      for (int ky = 0; ky < S; ky++) {
        const double  wyz = s.w[1][ky] * s.w[2][kz];
        const double *row = grid + dof * node_offset(g, s.base[0], s.base[1] + ky, s.base[2] + kz);
        for (int kx = 0; kx < S; kx++) {
          const double  w     = s.w[0][kx] * wyz;
          const double  gw[3] = {s.dw[0][kx] * wyz, s.w[0][kx] * s.dw[1][ky] * s.w[2][kz], s.w[0][kx] * s.w[1][ky] * s.dw[2][kz]};
          const double  dx[3] = {s.dx[0][kx], s.dx[1][ky], s.dx[2][kz]};
          const double *node  = row + dof * kx;
          for (int a = 0; a < dim; a++) {
            const double vi = node[1 + a];
            vp[a] += w * vi;
            for (int b = 0; b < dim; b++) {
              B[a * dim + b] += w * vi * dx[b];
              gv[a * dim + b] += vi * gw[b];
            }
            if (flip >= 0) vo[a] += w * node[1 + dim + a];
          }
        }
      }
    double sp2 = 0;
    for (int a = 0; a < dim; a++) {
      const double vnew = flip < 0 ? vp[a] : flip * (v[a] + vp[a] - vo[a]) + (1.0 - flip) * vp[a];
      x[a] += dt * vp[a]; /* (K13): nodes move with the grid velocity */
      v[a] = vnew;
      sp2 += vnew * vnew;
    }
    if (sp2 > vmax2) vmax2 = sp2;
    if (p->C)
      for (int a = 0; a < dim * dim; a++) p->C[q * dim * dim + a] = flip < 0 ? B[a] * dinv : 0.0;
    /* (K14, K16): F_E <- (I + dt grad v) F_E */
    double Fn[9];
    for (int a = 0; a < dim; a++)
      for (int b = 0; b < dim; b++) {
        double t = Fe[a * dim + b];
        for (int c = 0; c < dim; c++) t += dt * gv[a * dim + c] * Fe[c * dim + b];
        Fn[a * dim + b] = t;
      }
    for (int a = 0; a < dim * dim; a++) Fe[a] = Fn[a];
  }
  return vmax2;
}

void mpm_p2g(const MPMGridBox *g, const MPMParticleView *p, double dt, double *grid)
{
  if (g->dim == 2 && g->order == 2) p2g_generic(2, 2, g, p, dt, grid);
  else if (g->dim == 2) p2g_generic(2, 3, g, p, dt, grid);
  else if (g->order == 2) p2g_generic(3, 2, g, p, dt, grid);
  else p2g_generic(3, 3, g, p, dt, grid);
}

double mpm_g2p(const MPMGridBox *g, const double *grid, double dt, double flip, MPMParticleView *p)
{
  if (g->dim == 2 && g->order == 2) return g2p_generic(2, 2, g, grid, dt, flip, p);
  if (g->dim == 2) return g2p_generic(2, 3, g, grid, dt, flip, p);
  if (g->order == 2) return g2p_generic(3, 2, g, grid, dt, flip, p);
  return g2p_generic(3, 3, g, grid, dt, flip, p);
}
