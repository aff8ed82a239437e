/* Particle <-> grid transfers on plain arrays (no PETSc, no MPI).
 *
 * The grid is a rectangular box of nodes (a rank's owned nodes plus ghosts)
 * stored node-major with `dof` doubles per node:
 *   [0]               mass
 *   [1 .. dim]        momentum after P2G, velocity after the grid update
 *   [1+dim .. 2 dim]  (FLIP only) the force impulse after P2G, the velocity
 *                     before forces after the grid update
 *   [7]               (3D FLIP, padding) unused: 8 doubles are two SIMD
 *                     vectors (mpm_transfer_dof)
 * Node (i,j,k) lives at ((k-gs[2])*gn[1] + (j-gs[1]))*gn[0] + (i-gs[0]). */
#ifndef MPM_TRANSFER_H
#define MPM_TRANSFER_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  int    dim, order, dof;
  double h, origin[3]; /* node (i,j,k) is at origin + h (i,j,k) */
  int    gs[3], gn[3]; /* first node index and node count per axis (gn[2] = 1 in 2D) */
} MPMGridBox;

/* The values per node of a transfer grid: 1 + dim (APIC), 1 + 2 dim
 * (PIC/FLIP), padded to 8 in 3D PIC/FLIP for the vectorized transfers
 * (a node of 7 runs too, at about half the speed). */
static inline int mpm_transfer_dof(int dim, int flip) { return !flip ? 1 + dim : dim == 3 ? 8 : 1 + 2 * dim; }

/* Particle state read and written by the transfers (structure of arrays;
 * vectors dim per particle, matrices dim*dim). */
typedef struct {
  int     n;
  double *x, *v, *C, *Fe, *tau, *m, *V0;
} MPMParticleView;

/* P2G (K7, K9) fused with the explicit force (K23): adds to the grid
 *   mass      w m
 *   momentum  w m (v + C (x_i - x_p)) - dt V0 tau grad w
 * C is the APIC velocity gradient B D^-1 (APIC and affine FLIP); pass
 * C = NULL for plain PIC/FLIP. */
void mpm_p2g(const MPMGridBox *g, const MPMParticleView *p, double dt, double *grid);

/* G2P (K11-K15): new particle velocity (APIC when flip < 0, otherwise the
 * PIC/FLIP blend with FLIP fraction `flip`: v = v_grid + flip (v_p - v_grid^n)),
 * C = B D^-1 when C is given (APIC; with flip >= 0 that is affine FLIP,
 * Fei et al. 2021), except C = 0 for particles at rest (moving at most
 * `rest` cells this step, |v| dt <= rest h) that reach a node held by
 * friction (grid slot 0 is no longer the mass here but that flag, 1 or 0,
 * set by the grid update),
 * position x += dt v_grid, F_E <- (I + dt grad v) F_E.  Returns the
 * largest particle speed squared (for the CFL time step). */
double mpm_g2p(const MPMGridBox *g, const double *grid, double dt, double flip, double rest, MPMParticleView *p);

/* The implicit integrator's operators, on nodes with `dof` values of which
 * slots off .. off+dim-1 hold a velocity (or receive a force); positions X
 * (dim per particle), matrices dim*dim per particle:
 *   gradient:   G_p = sum_i v_i (grad w_ip)^T                     (K15)
 *   divergence: node i += sum_p A_p grad w_ip   (A_p = -dt V0 P F^T gives dt f, K23)
 *   diagonal:   node i, component a += sum_{c,f} D_p[a][c][f] y_c y_f,
 *               y = F_p^T grad w_ip, D dim^3 per particle: the diagonal of
 *               the stiffness dt^2 V0 dP/dF contracted on both sides.
 * The gradient and divergence on 3D nodes of 4 values with off = 0 (the
 * semi-implicit velocity field; the divergence adds 0 to the fourth slot)
 * run in SIMD: the same sums, reassociated. */
void mpm_grid_gradient(const MPMGridBox *g, int n, const double *X, const double *grid, int off, double *G);
/* A scalar per particle to the nodes: slot off of node i += sum_p w_ip s_p
 * (the sand's volume for the mixture's porosity). */
void mpm_p2g_scalar(const MPMGridBox *g, int n, const double *X, const double *s, double *grid, int off);
/* A node scalar to the particles: s_p = sum_i w_ip (slot off of node i). */
void mpm_g2p_scalar(const MPMGridBox *g, int n, const double *X, const double *grid, int off, double *s);
void mpm_p2g_divergence(const MPMGridBox *g, int n, const double *X, const double *A, double *grid, int off);
/* The two above fused, one particle at a time (the stencil is evaluated
 * once): G_p = sum_i in_i grad w_ip^T, A_p = op(p, G_p), out_i += sum_p A_p
 * grad w_ip, on grids of dim values per node (offset 0).  The same sums in
 * the same order as mpm_grid_gradient, op over all particles, then
 * mpm_p2g_divergence: bit for bit.  For the implicit Jacobian's action. */
typedef void (*MPMPointOp)(int p, const double *G, double *A, void *ctx);
void mpm_gradient_divergence(const MPMGridBox *g, int n, const double *X, const double *in, MPMPointOp op, void *ctx, double *out);
void mpm_p2g_diagonal(const MPMGridBox *g, int n, const double *X, const double *F, const double *D, double *grid, int off);
/* The semi-implicit stiffness action with a symmetric linear map per
 * particle: G_p = sum_i in_i grad w_ip^T, A_p = S_p vec(G_p), out_i +=
 * sum_p A_p grad w_ip, on grids of dim values per node (3D: or 4, the
 * fourth a padding slot that stays 0, for the vectorized body).  S_p is dim^2 x dim^2
 * (vec(G)[a dim + b] = G_ab), symmetric, stored per particle in
 * mpm_sym_map_size(dim) values: in 2D its upper triangle row by row (10),
 * in 3D its principal-frame factors (27, mpm_iso_sym_factors).  Specialized
 * for dim and the kernel order: the same sums as mpm_gradient_divergence
 * with the pointwise map applied as a matrix, reassociated (agrees to
 * roundoff). */
static inline int mpm_sym_map_size(int dim) { return dim == 3 ? 27 : 10; }
void mpm_gradient_divergence_sym(const MPMGridBox *g, int n, const double *X, const double *S, const double *in, double *out);
/* Its diagonal: node i, component a += scale sum_p sum_bc S_p[(a,b),(a,c)] gw_b gw_c. */
void mpm_p2g_sym_diagonal(const MPMGridBox *g, int n, const double *X, const double *S, double scale, double *grid);

/* For the implicit integrator's assembled preconditioner: the nodes particle
 * x reaches (indices into the box's nodes, not doubles) and y = F^T grad w
 * there (dim per node), with the kernel's B-spline weights.  Returns the
 * node count (at most MPM_MAX_STENCIL^dim). */
int mpm_stencil_y(const MPMGridBox *g, const double *x, const double *F, int *node, double *y);

/* Particle coordinate in grid units along axis a.  The stencil, the owner
 * of a particle and the inside-the-domain test all use this one expression,
 * so they agree to the last bit at cell boundaries. */
static inline double mpm_grid_coord(const MPMGridBox *g, int a, double x)
{
  return (x - g->origin[a]) * (1.0 / g->h);
}

/* Node index of particle coordinate x along axis a: the cell containing it. */
static inline int mpm_cell_index(const MPMGridBox *g, int a, double x)
{
  return (int)floor(mpm_grid_coord(g, a, x));
}

#ifdef __cplusplus
}
#endif
#endif
