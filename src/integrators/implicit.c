/* Implicit MPM step of Klar et al. 2016, s. 5.6: backward Euler on the grid
 * velocities, implicit in plasticity (the return map sits inside the force)
 * and explicit in hardening and friction (docs/design/implicit.md).
 *
 * For every species the unknown is the velocity v of the owned grid nodes
 * (a DMDA Vec of dim values per node).  With u = Pi v + c the velocity after
 * the frictionless collision projection the residual in momentum units is
 *   R_i = Pi_i [m_i (u_i - v_i^n) - dt m_i g - dt f_i(u)] + m_i (v_i - u_i)
 *   f_i = -sum_p V0_p P(Z(Fhat_p)) F_p^T grad w_ip,  Fhat_p = (I + dt grad u_p) F_p
 * (F_p the elastic deformation at the step's start), and R_i = v_i on nodes
 * without mass.  PETSc SNES (prefix implicit_) solves R = 0 by Newton with a
 * line search on |R|; the Jacobian is a MatShell whose action is P2G of the
 * stress differential of G2P of the perturbation, and GMRES is
 * preconditioned by its diagonal (PCJACOBI on MATOP_GET_DIAGONAL), or by a
 * matrix assembled on the DMDA at every Newton iterate (-implicit_pmat
 * tangent: the exact Jacobian; elastic: each particle's tangent replaced by
 * a linear-elastic law), with PETSc's PCs (block Jacobi-ILU by default).
 * The contact set is decided once per step, on the explicit predictor
 * (nodes that touch a wall or object, or would move into one): within the
 * solve the projection is then affine, u = Pi v + c, and Newton converges;
 * letting a unilateral ("separate") contact switch between Newton
 * iterations makes it cycle (measured: a collapse on a separating floor
 * halved dt down to below the explicit step).  Contacts that pull after
 * the solve are released by the collision step after it, as in the
 * explicit path.
 * After the solve, friction and the impulses on the objects are applied as
 * in the explicit step, and G2P / the materials' commit move the particles.
 * A failed solve leaves everything untouched and asks for dt / 2.
 * */
#include "integrators.h"
#include <petscsnes.h>

typedef struct {
  MPMSim               sim;
  MPMSpecies          *sp;
  MPMStressFields      f;
  MPMGridField        *vel;  /* <species>_velocity: the layout of the unknowns (dof dim) */
  MPMGridField        *proj; /* <species>_projector: Pi on owned and ghost nodes (dof dim^2), for the assembled preconditioner */
  int                  pmat; /* PMAT_*: the preconditioner's matrix */
  PetscInt             builds; /* the velocity field's build the solver objects were made on (0: none; rebuilt when the slabs move) */
  SNES                 snes;
  Mat                  J, P; /* the Jacobian (shell) and the assembled preconditioner matrix (-implicit_pmat elastic, tangent) */
  MatNullSpace         rigid;  /* near null space of P for PCGAMG: the rigid-body modes of the owned nodes */
  double              *Ke;     /* one particle's assembled stiffness */
  Vec                  x, r, ug, ul, fl, fg, diag; /* iterate, residual, u owned/ghosted, dt f ghosted/owned, Jacobi diagonal */
  double               dt;
  PetscInt             cap; /* particles the scratch arrays hold */
  MPMIsoLinearization *lin; /* per particle, at the Jacobian's point */
  double              *A;   /* per particle dim x dim: grad u, then the stress to scatter */
  PetscInt             nown;
  double              *Pi, *c; /* per owned node: u = Pi v + c, the collision projection with the step's contact set */
} ImplicitSpecies;

/* The matrix PETSc's preconditioner is built from (-implicit_pmat). */
enum { PMAT_DIAGONAL, PMAT_ELASTIC, PMAT_TANGENT };
static const char *const PmatNames[] = {"diagonal", "elastic", "tangent"};

typedef struct {
  MPMHeldPIC      held; /* the static-friction fix in G2P, as explicit */
  double          cfl_elastic; /* read and not used (the explicit integrator's) */
  PetscBool       check_operator; /* -<prefix>check_operator */
  MPMTransfer     transfer;    /* apic only (read so that one deck runs with any integrator) */
  double          flip;        /* -flip_blend: read, not used */
  PetscInt        pmat;
  MPMStepControl  sc;       /* halvings after failed solves, the step cap */
  MPMStepStats    st;
  ImplicitSpecies s[8];
} Implicit;

enum { STAT_NEWTON, STAT_KSP, STAT_HALVINGS, NSTAT };

/* ------------------------------------------------------------ helpers */
static PetscErrorCode Scratch(ImplicitSpecies *is)
{
  const PetscInt n = is->sp->p.n, d = is->sim->dim;

  PetscFunctionBeginUser;
  if (n <= is->cap) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscFree(is->lin));
  PetscCall(PetscFree(is->A));
  is->cap = PetscMax(n, (PetscInt)(1.25 * is->cap));
  PetscCall(PetscMalloc1(is->cap, &is->lin));
  PetscCall(PetscMalloc1(is->cap * d * d, &is->A));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* u = Pi X + c on the owned nodes (0 where there is no mass), gathered to
 * the ghosts. */
static PetscErrorCode Project(ImplicitSpecies *is, Vec X)
{
  const PetscInt     d = is->sim->dim;
  const PetscScalar *x;
  PetscScalar       *u;

  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(X, &x));
  PetscCall(VecGetArray(is->ug, &u));
  for (PetscInt n = 0; n < is->nown; n++) {
    mpm_matvec((int)d, is->Pi + n * d * d, x + n * d, u + n * d);
    for (PetscInt a = 0; a < d; a++) u[n * d + a] += is->c[n * d + a];
  }
  PetscCall(VecRestoreArray(is->ug, &u));
  PetscCall(VecRestoreArrayRead(X, &x));
  PetscCall(MPMGhostGatherVec(is->vel, is->ug, is->ul));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Fhat = (I + dt G) F for particle q; G is overwritten by Fhat. */
static void TrialF(int d, double dt, const double *F, double *G)
{
  double Fh[9];
  for (int a = 0; a < d; a++)
    for (int b = 0; b < d; b++) {
      double t = F[a * d + b];
      for (int c = 0; c < d; c++) t += dt * G[a * d + c] * F[c * d + b];
      Fh[a * d + b] = t;
    }
  for (int k = 0; k < d * d; k++) G[k] = Fh[k];
}

/* fg = sum_p A_p grad w_ip on the owned nodes (ghost contributions summed). */
static PetscErrorCode Divergence(ImplicitSpecies *is)
{
  MPMParticles *p = &is->sp->p;
  PetscScalar  *fl;

  PetscFunctionBeginUser;
  PetscCall(VecZeroEntries(is->fl));
  PetscCall(VecGetArray(is->fl, &fl));
  mpm_p2g_divergence(&is->vel->box, (int)p->n, MPMFieldReal(p, p->f_x), is->A, fl, 0);
  PetscCall(VecRestoreArray(is->fl, &fl));
  PetscCall(MPMGhostScatterAddVec(is->vel, is->fl, is->fg));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The trial deformation of every particle at u, the gathered is->ul:
 * is->A = Fhat = (I + dt grad u) F_E, and 0 where Fhat is inverted or not
 * finite (*bad, this rank only). */
static PetscErrorCode TrialDeformations(ImplicitSpecies *is, PetscBool *bad)
{
  MPMParticles      *p = &is->sp->p;
  const int          d = (int)p->dim, n = (int)p->n;
  const double      *Fe = MPMFieldReal(p, is->f.f_Fe);
  const PetscScalar *ul;

  PetscFunctionBeginUser;
  *bad = PETSC_FALSE;
  PetscCall(Scratch(is));
  PetscCall(VecGetArrayRead(is->ul, &ul));
  mpm_grid_gradient(&is->vel->box, n, MPMFieldReal(p, p->f_x), ul, 0, is->A);
  PetscCall(VecRestoreArrayRead(is->ul, &ul));
  for (int q = 0; q < n; q++) {
    double *A = is->A + q * d * d;
    TrialF(d, is->dt, Fe + q * d * d, A);
    const double J = mpm_det(d, A);
    if (!(J > 0) || !PetscIsNormalReal(J)) {
      *bad = PETSC_TRUE;
      for (int k = 0; k < d * d; k++) A[k] = 0;
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The trial stress of every particle at u, the gathered is->ul (runs of
 * one material at a time): is->A = -dt V0 P F^T, and the linearizations in
 * is->lin.  *bad: some particle's Fhat is inverted or not finite (this
 * rank only; its A stays 0). */
static PetscErrorCode TrialStresses(ImplicitSpecies *is, PetscBool *bad)
{
  MPMSpecies    *sp = is->sp;
  MPMParticles  *p  = &sp->p;
  const int      d  = (int)p->dim, n = (int)p->n;
  const double  *V0 = MPMFieldReal(p, p->f_V0), *Fe = MPMFieldReal(p, is->f.f_Fe);
  const int32_t *mat = MPMFieldInt32(p, p->f_mat);

  PetscFunctionBeginUser;
  PetscCall(TrialDeformations(is, bad));
  for (PetscInt q0 = 0, q1; q0 < n; q0 = q1) {
    const MPMMaterial m = sp->mat[mat[q0]];
    MPMMaterialPoints pts;
    q1 = MPMMaterialRunEnd(mat, q0, n);
    MPMMaterialsPoints(sp, &is->f.mf, is->f.f_tau, q0, &pts);
    for (PetscInt q = q0; q < q1; q++) {
      double *A = is->A + q * d * d, P[9];
      if (!(mpm_det(d, A) > 0)) continue; /* inverted: TrialDeformations left it 0 */
      m->ops.trial_stress(m, &pts, (int)(q - q0), A, P, &is->lin[q]);
      mpm_scaled_pft(d, -is->dt * V0[q], P, Fe + q * d * d, A);
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The Jacobian's pointwise part for particle q: from G = grad du,
 * dFhat = dt G F, A = -dt V0 dP(dFhat) F^T (then d(dt f) = -K du). */
static void JacobianPoint(int q, const double *G, double *A, void *ctx)
{
  const ImplicitSpecies *is = (const ImplicitSpecies *)ctx;
  const MPMParticles    *p  = &is->sp->p;
  const int              d  = (int)p->dim;
  const double          *F = MPMFieldReal(p, is->f.f_Fe) + q * d * d, V0 = MPMFieldReal(p, p->f_V0)[q];
  double                 dF[9] = {0}, dP[9];
  mpm_matmul(d, G, F, dF);
  for (int c = 0; c < d * d; c++) dF[c] *= is->dt;
  mpm_iso_dpiola(&is->lin[q], dF, dP);
  mpm_scaled_pft(d, -is->dt * V0, dP, F, A);
}

/* fg = -K du on the owned nodes (K dt^2 the stiffness at the
 * linearizations in is->lin), du the gathered is->ul: G2P of grad du, the
 * linearized stress and P2G of its divergence in one pass. */
static PetscErrorCode StiffnessAction(ImplicitSpecies *is)
{
  MPMParticles      *p = &is->sp->p;
  const PetscScalar *ul;
  PetscScalar       *fl;

  PetscFunctionBeginUser;
  PetscCall(VecZeroEntries(is->fl));
  PetscCall(VecGetArrayRead(is->ul, &ul));
  PetscCall(VecGetArray(is->fl, &fl));
  mpm_gradient_divergence(&is->vel->box, (int)p->n, MPMFieldReal(p, p->f_x), ul, JacobianPoint, is, fl);
  PetscCall(VecRestoreArray(is->fl, &fl));
  PetscCall(VecRestoreArrayRead(is->ul, &ul));
  PetscCall(MPMGhostScatterAddVec(is->vel, is->fl, is->fg));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* fg = dt f(u) on the owned nodes: the return-mapped stress of the trial
 * deformation. */
static PetscErrorCode Force(ImplicitSpecies *is, PetscBool *bad)
{
  PetscFunctionBeginUser;
  PetscCall(TrialStresses(is, bad));
  PetscCall(Divergence(is));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The rows of the residual (residual = TRUE, u and fg = dt f(u) from
 * Project and Force) or of the Jacobian's action (u = du = Pi x and
 * fg = -K du):
 *   Y_i = Pi_i [m_i u_i - fg_i - b_i] + m_i (X_i - u_i),  b_i = m_i (v^n_i + dt g) or 0,
 * and Y_i = X_i on nodes without mass. */
static PetscErrorCode Rows(ImplicitSpecies *is, Vec X, PetscBool residual, Vec Y)
{
  const MPMSim       sim = is->sim;
  const int          d = (int)sim->dim, dof = (int)is->sp->grid->dof;
  const double       gs = MPMGravityScale(sim);
  const PetscScalar *x, *u, *f, *mv;
  PetscScalar       *y;

  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(X, &x));
  PetscCall(VecGetArrayRead(is->ug, &u));
  PetscCall(VecGetArrayRead(is->fg, &f));
  PetscCall(VecGetArrayRead(is->sp->grid->global, &mv));
  PetscCall(VecGetArray(Y, &y));
  for (PetscInt n = 0; n < is->nown; n++) {
    const double m = mv[n * dof];
    double       t[3];
    if (m <= 0) {
      for (int a = 0; a < d; a++) y[n * d + a] = x[n * d + a];
      continue;
    }
    for (int a = 0; a < d; a++) t[a] = m * u[n * d + a] - f[n * d + a] - (residual ? m * (mv[n * dof + 1 + a] + is->dt * gs * sim->gravity[a]) : 0.0);
    mpm_matvec(d, is->Pi + n * d * d, t, y + n * d);
    for (int a = 0; a < d; a++) y[n * d + a] += m * (x[n * d + a] - u[n * d + a]);
  }
  PetscCall(VecRestoreArray(Y, &y));
  PetscCall(VecRestoreArrayRead(is->sp->grid->global, &mv));
  PetscCall(VecRestoreArrayRead(is->fg, &f));
  PetscCall(VecRestoreArrayRead(is->ug, &u));
  PetscCall(VecRestoreArrayRead(X, &x));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ------------------------------------------------------ SNES callbacks */
static PetscErrorCode FormFunction(SNES snes, Vec X, Vec R, void *ctx)
{
  ImplicitSpecies *is = (ImplicitSpecies *)ctx;
  PetscBool        bad;
  double           nbad;

  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_RESIDUAL, 0, 0, 0, 0));
  PetscCall(Project(is, X));
  PetscCall(Force(is, &bad));
  nbad = bad ? 1.0 : 0.0;
  PetscCall(MPMGlobalMax(is->sim->comm, &nbad, 1)); /* every rank must take the same branch */
  if (nbad > 0) {
    PetscCall(SNESSetFunctionDomainError(snes));
    PetscCall(VecSetInf(R));
  } else PetscCall(Rows(is, X, PETSC_TRUE, R));
  PetscCall(PetscLogEventEnd(MPM_EVENT_RESIDUAL, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The Jacobi diagonal: per particle D[a][c][f] = dt^2 V0 dP_ac/dF_af, P2G'd
 * through y = F^T grad w into the stiffness diagonal K_aa of every node,
 * then diag = (Pi (m + K) Pi)_aa + m (1 - Pi_aa) (K's off-diagonal part
 * within a node is left out where a collision projects it). */
/* diag from K's diagonal in is->fg (owned nodes). */
static PetscErrorCode DiagonalRows(ImplicitSpecies *is)
{
  const int          d = (int)is->sim->dim, dof = (int)is->sp->grid->dof;
  const PetscScalar *k, *mv;
  PetscScalar       *dg;

  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(is->fg, &k));
  PetscCall(VecGetArrayRead(is->sp->grid->global, &mv));
  PetscCall(VecGetArray(is->diag, &dg));
  for (PetscInt nd = 0; nd < is->nown; nd++) {
    const double  m  = mv[nd * dof];
    const double *Pi = is->Pi + nd * d * d;
    for (int a = 0; a < d; a++) {
      double t = m * (1.0 - Pi[a * d + a]);
      for (int b = 0; b < d; b++) t += Pi[a * d + b] * Pi[b * d + a] * (m + k[nd * d + b]);
      dg[nd * d + a] = m <= 0 ? 1.0 : (t > 0 ? t : m); /* empty node: the row is x; never 0 */
    }
  }
  PetscCall(VecRestoreArray(is->diag, &dg));
  PetscCall(VecRestoreArrayRead(is->sp->grid->global, &mv));
  PetscCall(VecRestoreArrayRead(is->fg, &k));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode Diagonal(ImplicitSpecies *is)
{
  MPMParticles *p = &is->sp->p;
  const int     d = (int)p->dim, n = (int)p->n;
  const double *X = MPMFieldReal(p, p->f_x), *V0 = MPMFieldReal(p, p->f_V0), *Fe = MPMFieldReal(p, is->f.f_Fe);
  double       *D;
  PetscScalar  *fl;

  PetscFunctionBeginUser;
  PetscCall(PetscMalloc1((size_t)n * d * d * d, &D));
  for (int q = 0; q < n; q++) {
    double C[81]; /* C[(a d + c) d^2 + j d + f] = dP_ac / dF_jf; the diagonal needs j = a */
    mpm_iso_tangent(&is->lin[q], C);
    for (int a = 0; a < d; a++)
      for (int c = 0; c < d; c++)
        for (int f = 0; f < d; f++) D[(size_t)q * d * d * d + (a * d + c) * d + f] = is->dt * is->dt * V0[q] * C[(a * d + c) * d * d + a * d + f];
  }
  PetscCall(VecZeroEntries(is->fl));
  PetscCall(VecGetArray(is->fl, &fl));
  mpm_p2g_diagonal(&is->vel->box, n, X, Fe, D, fl, 0);
  PetscCall(VecRestoreArray(is->fl, &fl));
  PetscCall(PetscFree(D));
  PetscCall(MPMGhostScatterAddVec(is->vel, is->fl, is->fg));
  PetscCall(DiagonalRows(is));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* One particle's stiffness blocks between the nn nodes of its stencil,
 * row-major (nn d) x (nn d) into Ke, projected by the nodes' Pi:
 *   Pi_a K_ab Pi_b,  K_ab = dt^2 V0 sum_kl C_ikjl ya_k yb_l,  y = F^T grad w,
 * with C the exact tangent of the particle's linearization (tangent), or the
 * linear-elastic law of the moduli it behaves like (elastic: mpm_iso_moduli,
 * softened on the cone, zero at the tip without cohesion).  Returns 0 when
 * the particle adds nothing (elastic with zero moduli). */
static int ParticleBlocks(const ImplicitSpecies *is, PetscInt q, double V, const PetscScalar *pil, int nn, const int *at, const double *y, double *Ke)
{
  const int d = (int)is->sim->dim, nb = d * d;
  double    mu = 0, la = 0, C[81];

  if (is->pmat == PMAT_TANGENT) mpm_iso_tangent(&is->lin[q], C);
  else {
    mpm_iso_moduli(&is->lin[q], &mu, &la);
    if (mu == 0 && la == 0) return 0;
  }
  for (int a = 0; a < nn; a++)
    for (int b = 0; b < nn; b++) {
      double K[9], T[9];
      if (is->pmat == PMAT_TANGENT) mpm_tangent_block(d, V, C, y + a * d, y + b * d, K);
      else mpm_elastic_block(d, V, mu, la, y + a * d, y + b * d, K);
      mpm_matmul(d, pil + (size_t)at[a] * nb, K, T);
      mpm_matmul(d, T, pil + (size_t)at[b] * nb, K);
      for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) Ke[(a * d + i) * nn * d + b * d + j] = K[i * d + j];
    }
  return 1;
}

/* The assembled preconditioner matrix into A: the particles' stiffness
 * blocks (ParticleBlocks) plus, per owned node, m_i Pi_i Pi_i + m_i (I - Pi_i)
 * (I without mass), the rows of (D7) with K assembled.  pattern: zeros on
 * every particle's stencil, for the MATPREALLOCATOR pass (the nonzero
 * pattern of a step must not depend on the values). */
static PetscErrorCode InsertPmat(ImplicitSpecies *is, Mat A, PetscBool pattern)
{
  MPMParticles      *p = &is->sp->p;
  const int          d = (int)p->dim, n = (int)p->n, dof = (int)is->sp->grid->dof, nb = d * d;
  const double      *X = MPMFieldReal(p, p->f_x), *V0 = MPMFieldReal(p, p->f_V0), *Fe = MPMFieldReal(p, is->f.f_Fe), dt2 = is->dt * is->dt;
  const PetscScalar *pil, *mv;
  PetscInt           node[MPM_MAX_STENCIL * MPM_MAX_STENCIL * MPM_MAX_STENCIL], r0;
  int                at[MPM_MAX_STENCIL * MPM_MAX_STENCIL * MPM_MAX_STENCIL];
  double             y[3 * MPM_MAX_STENCIL * MPM_MAX_STENCIL * MPM_MAX_STENCIL];

  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(is->proj->local, &pil));
  for (PetscInt q = 0; q < n; q++) {
    const int nn = mpm_stencil_y(&is->vel->box, X + q * d, Fe + q * d * d, at, y);
    if (pattern) PetscCall(PetscArrayzero(is->Ke, nn * d * nn * d));
    else if (!ParticleBlocks(is, q, dt2 * V0[q], pil, nn, at, y, is->Ke)) continue;
    for (int a = 0; a < nn; a++) node[a] = at[a];
    PetscCall(MatSetValuesBlockedLocal(A, nn, node, nn, node, is->Ke, ADD_VALUES));
  }
  PetscCall(VecRestoreArrayRead(is->proj->local, &pil));
  PetscCall(VecGetOwnershipRange(is->x, &r0, NULL));
  PetscCall(VecGetArrayRead(is->sp->grid->global, &mv));
  for (PetscInt nd = 0; nd < is->nown; nd++) {
    const double  m  = mv[nd * dof];
    const double *Pi = is->Pi + nd * nb;
    double        B[9], PP[9];
    PetscInt      row = r0 / d + nd;
    mpm_matmul(d, Pi, Pi, PP);
    for (int i = 0; i < d; i++)
      for (int j = 0; j < d; j++) B[i * d + j] = m > 0 ? m * (PP[i * d + j] + (i == j) - Pi[i * d + j]) : (double)(i == j);
    PetscCall(MatSetValuesBlocked(A, 1, &row, 1, &row, B, ADD_VALUES));
  }
  PetscCall(VecRestoreArrayRead(is->sp->grid->global, &mv));
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A new preconditioner matrix of the velocity field's layout, of type
 * `type`, block size dim, addressed by the ghosted node numbers. */
static PetscErrorCode PmatCreate(ImplicitSpecies *is, MatType type, Mat *A)
{
  PetscInt nl;

  PetscFunctionBeginUser;
  PetscCall(VecGetLocalSize(is->x, &nl));
  PetscCall(MPMIntegratorPmatCreate(is->sim->comm, is->vel, nl, is->sim->dim, type, A));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Once per step, after Predict: the preconditioner matrix with the step's
 * nonzero pattern (it follows the particles, which stay put during the
 * solve) and the projectors Pi gathered to the ghost nodes; FormJacobian
 * fills in the values at every Newton iterate. */
static PetscErrorCode PmatPrepare(ImplicitSpecies *is)
{
  const PetscInt d = is->sim->dim;
  PetscScalar   *pi;
  Mat            pre, A;

  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_PMAT, 0, 0, 0, 0));
  PetscCall(VecGetArray(is->proj->global, &pi));
  PetscCall(PetscArraycpy(pi, is->Pi, is->nown * d * d));
  PetscCall(VecRestoreArray(is->proj->global, &pi));
  PetscCall(MPMGhostGather(is->proj));
  PetscCall(PmatCreate(is, MATPREALLOCATOR, &pre));
  PetscCall(MatSetUp(pre));
  PetscCall(InsertPmat(is, pre, PETSC_TRUE));
  PetscCall(PmatCreate(is, MATAIJ, &A));
  PetscCall(MatPreallocatorPreallocate(pre, PETSC_TRUE, A));
  PetscCall(MatDestroy(&pre));
  PetscCall(MatSetOption(A, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_TRUE));
  PetscCall(MatSetNearNullSpace(A, is->rigid));
  PetscCall(MatDestroy(&is->P));
  is->P = A;
  PetscCall(SNESSetJacobian(is->snes, NULL, is->P, NULL, NULL)); /* the operator stays (the shell, or -implicit_snes_mf_operator's) */
  PetscCall(PetscLogEventEnd(MPM_EVENT_PMAT, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The values of the preconditioner matrix at the current linearizations. */
static PetscErrorCode PmatFill(ImplicitSpecies *is, Mat P)
{
  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_PMAT, 0, 0, 0, 0));
  PetscCall(MatZeroEntries(P));
  PetscCall(InsertPmat(is, P, PETSC_FALSE));
  PetscCall(PetscLogEventEnd(MPM_EVENT_PMAT, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode FormJacobian(SNES snes, Vec X, Mat J, Mat Pmat, void *ctx)
{
  ImplicitSpecies *is = (ImplicitSpecies *)ctx;
  PetscBool        bad;

  PetscFunctionBeginUser;
  PetscCall(Project(is, X));
  PetscCall(TrialStresses(is, &bad)); /* the linearizations at X (X passed the residual's domain check); the force is not needed */
  if (is->pmat == PMAT_DIAGONAL) {
    PetscCall(Diagonal(is));
    /* a new state, or PCJACOBI keeps the previous diagonal */
    PetscCall(MatAssemblyBegin(Pmat, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(Pmat, MAT_FINAL_ASSEMBLY));
  } else PetscCall(PmatFill(is, Pmat));
  if (J != is->J) { /* -implicit_snes_mf_operator: J is PETSc's finite-difference operator */
    PetscCall(MatAssemblyBegin(J, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(J, MAT_FINAL_ASSEMBLY));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* y = J x: du = Pi x, -K du (StiffnessAction), y = Pi (m du + K du) + m (x - du). */
static PetscErrorCode JacobianMult(Mat J, Vec X, Vec Y)
{
  ImplicitSpecies   *is;
  int                d;
  const PetscScalar *x;
  PetscScalar       *u;

  PetscFunctionBeginUser;
  PetscCall(MatShellGetContext(J, &is));
  PetscCall(PetscLogEventBegin(MPM_EVENT_JACOBIAN_MULT, 0, 0, 0, 0));
  d = (int)is->sim->dim;
  PetscCall(VecGetArrayRead(X, &x));
  PetscCall(VecGetArray(is->ug, &u));
  for (PetscInt nd = 0; nd < is->nown; nd++) mpm_matvec(d, is->Pi + nd * d * d, x + nd * d, u + nd * d);
  PetscCall(VecRestoreArray(is->ug, &u));
  PetscCall(VecRestoreArrayRead(X, &x));
  PetscCall(MPMGhostGatherVec(is->vel, is->ug, is->ul));
  PetscCall(StiffnessAction(is));
  PetscCall(Rows(is, X, PETSC_FALSE, Y));
  PetscCall(PetscLogEventEnd(MPM_EVENT_JACOBIAN_MULT, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode JacobianDiagonal(Mat J, Vec D)
{
  ImplicitSpecies *is;

  PetscFunctionBeginUser;
  PetscCall(MatShellGetContext(J, &is));
  PetscCall(VecCopy(is->diag, D));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* -------------------------------------------------------------- solver */
static PetscErrorCode SolverDestroy(ImplicitSpecies *is)
{
  PetscFunctionBeginUser;
  PetscCall(SNESDestroy(&is->snes));
  PetscCall(MatDestroy(&is->J));
  PetscCall(MatDestroy(&is->P));
  PetscCall(MatNullSpaceDestroy(&is->rigid));
  PetscCall(VecDestroy(&is->x));
  PetscCall(VecDestroy(&is->r));
  PetscCall(VecDestroy(&is->ug));
  PetscCall(VecDestroy(&is->ul));
  PetscCall(VecDestroy(&is->fl));
  PetscCall(VecDestroy(&is->fg));
  PetscCall(VecDestroy(&is->diag));
  PetscCall(PetscFree2(is->Pi, is->c));
  is->builds = 0;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Krylov methods for nonsymmetric systems only (the cone's return map makes
 * the Jacobian nonsymmetric); the matrix-free Jacobian gives PETSc its
 * diagonal and nothing else, so -implicit_pmat diagonal allows only the
 * preconditioners that need no more. */
static PetscErrorCode CheckSolverTypes(ImplicitSpecies *is, const char *prefix)
{
  static const char *const ksps[] = {KSPGMRES, KSPFGMRES, KSPLGMRES, KSPDGMRES, KSPPGMRES, KSPBCGS, KSPIBCGS, KSPFBCGS, KSPBCGSL, KSPGCR, KSPTFQMR, KSPRICHARDSON};
  static const char *const pcs[]  = {PCJACOBI, PCNONE};
  KSP                      ksp;
  PC                       pc;
  KSPType                  kt;
  PCType                   pt;
  PetscBool                ok = PETSC_FALSE, match;

  PetscFunctionBeginUser;
  PetscCall(SNESGetKSP(is->snes, &ksp));
  PetscCall(KSPGetType(ksp, &kt));
  for (size_t i = 0; i < sizeof(ksps) / sizeof(ksps[0]) && !ok; i++) PetscCall(PetscStrcmp(kt, ksps[i], &ok));
  PetscCheck(ok, is->sim->comm, PETSC_ERR_USER_INPUT,
             "-%sksp_type %s: the Newton systems of -integrator implicit are not symmetric; allowed: gmres, fgmres, lgmres, dgmres, pgmres, bcgs, ibcgs, fbcgs, bcgsl, gcr, tfqmr, richardson",
             prefix, kt);
  if (is->pmat != PMAT_DIAGONAL) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCGetType(pc, &pt));
  for (size_t i = 0; i < sizeof(pcs) / sizeof(pcs[0]) && pt; i++) {
    PetscCall(PetscStrcmp(pt, pcs[i], &match));
    if (match) PetscFunctionReturn(PETSC_SUCCESS);
  }
  SETERRQ(is->sim->comm, PETSC_ERR_USER_INPUT, "-%spc_type %s needs an assembled matrix: with -implicit_pmat diagonal allowed: jacobi, none (or assemble one with -implicit_pmat tangent or elastic)", prefix, pt ? pt : "(none)");
}

/* The rigid-body modes of the owned nodes' positions: the near null space
 * PCGAMG builds its coarse spaces from. */
static PetscErrorCode RigidBodyModes(ImplicitSpecies *is)
{
  const PetscInt d = is->sim->dim;
  Vec            xy;
  PetscScalar   *c;

  PetscFunctionBeginUser;
  PetscCall(VecDuplicate(is->x, &xy));
  PetscCall(VecSetBlockSize(xy, d));
  PetscCall(VecGetArray(xy, &c));
  for (PetscInt n = 0; n < is->nown; n++) MPMLayoutOwnedNodeX(&is->sim->layout, n, c + n * d);
  PetscCall(VecRestoreArray(xy, &c));
  PetscCall(MatNullSpaceCreateRigidBody(xy, &is->rigid));
  PetscCall(VecDestroy(&xy));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* SNES (Newton, line search on |R|), the MatShell and its
 * work vectors on the velocity field's DMDA; defaults, then the options
 * under the integrator's prefix. */
static PetscErrorCode SolverSetUp(ImplicitSpecies *is, const char *prefix)
{
  const PetscInt d = is->sim->dim;
  PetscInt       nl;
  KSP            ksp;
  PC             pc;

  PetscFunctionBeginUser;
  if (is->builds == is->vel->builds) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(SolverDestroy(is));
  is->builds = is->vel->builds;
  PetscCall(VecDuplicate(is->vel->global, &is->x));
  PetscCall(VecDuplicate(is->vel->global, &is->r));
  PetscCall(VecDuplicate(is->vel->global, &is->ug));
  PetscCall(VecDuplicate(is->vel->global, &is->fg));
  PetscCall(VecDuplicate(is->vel->global, &is->diag));
  PetscCall(VecDuplicate(is->vel->local, &is->ul));
  PetscCall(VecDuplicate(is->vel->local, &is->fl));
  PetscCall(VecGetLocalSize(is->x, &nl));
  is->nown = nl / d;
  PetscCall(PetscMalloc2(is->nown * d * d, &is->Pi, is->nown * d, &is->c));
  PetscCall(MatCreateShell(is->sim->comm, nl, nl, PETSC_DETERMINE, PETSC_DETERMINE, is, &is->J));
  PetscCall(MatShellSetOperation(is->J, MATOP_MULT, (void (*)(void))JacobianMult));
  PetscCall(MatShellSetOperation(is->J, MATOP_GET_DIAGONAL, (void (*)(void))JacobianDiagonal));
  PetscCall(SNESCreate(is->sim->comm, &is->snes));
  PetscCall(SNESSetOptionsPrefix(is->snes, prefix));
  PetscCall(SNESSetFunction(is->snes, is->r, FormFunction, is));
  PetscCall(SNESSetJacobian(is->snes, is->J, is->J, FormJacobian, is));
  PetscCall(SNESGetKSP(is->snes, &ksp));
  PetscCall(SNESSetTolerances(is->snes, PETSC_DEFAULT, 1e-6, PETSC_DEFAULT, 20, PETSC_DEFAULT));
  PetscCall(SNESSetMaxLinearSolveFailures(is->snes, 1000)); /* a Krylov solve stopped at max_it is an inexact Newton step, not a failure */
  PetscCall(KSPSetType(ksp, KSPGMRES));
  PetscCall(KSPSetTolerances(ksp, 1e-4, PETSC_DEFAULT, PETSC_DEFAULT, 30));
  PetscCall(KSPGetPC(ksp, &pc));
  /* the assembled matrix: block Jacobi with ILU(0) on each rank (PETSc's own default for AIJ, which it cannot pick here: at set-up the operator is still the shell) */
  PetscCall(PCSetType(pc, is->pmat == PMAT_DIAGONAL ? PCJACOBI : PCBJACOBI));
  PetscCall(SNESSetFromOptions(is->snes));
  PetscCall(MPMIntegratorMarkLazyOptions(prefix));
  PetscCall(CheckSolverTypes(is, prefix));
  if (is->pmat != PMAT_DIAGONAL) PetscCall(RigidBodyModes(is));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ------------------------------------------------------------- set-up */
/* -<prefix>NAME */
static const char *Opt(const MPMIntegrator integ, const char *name, char *buf, size_t len)
{
  PetscSNPrintf(buf, len, "-%s%s", integ->prefix, name);
  return buf;
}

static PetscErrorCode ImplicitOptions(MPMIntegrator integ, MPMSim sim)
{
  Implicit *im;
  PetscInt  transfer = MPM_TRANSFER_APIC;
  char      title[256], o1[64], o2[64], o6[64];

  PetscFunctionBeginUser;
  PetscCall(PetscNew(&im));
  integ->data      = im;
  MPMStepControlInit(&im->sc, 6);
  im->pmat         = PMAT_DIAGONAL;
  im->flip         = 0.95;
  PetscCall(PetscSNPrintf(title, sizeof(title), "Implicit integrator (Klar et al. 2016 s. 5.6; solver options -%ssnes_*, -%sksp_*, -%spc_*)", integ->prefix, integ->prefix, integ->prefix));
  PetscOptionsBegin(sim->comm, NULL, title, NULL);
  PetscCall(MPMHeldPICOptions(PetscOptionsObject, &im->held));
  PetscCall(MPMOptionsReal("-cfl_elastic", "Explicit integrator only (no elastic limit here): accepted so that one deck runs with either integrator", NULL, im->cfl_elastic, &im->cfl_elastic, NULL));
  PetscCall(MPMOptionsEList("-transfer", "Particle-grid transfer: the implicit integrator has apic only", NULL, MPMTransferNames, 3, MPMTransferNames[transfer], &transfer, NULL));
  PetscCall(MPMOptionsReal("-flip_blend", "Explicit and semi-implicit integrators only: accepted so that one deck runs with either integrator", NULL, im->flip, &im->flip, NULL));
  PetscCall(MPMOptionsEList(Opt(integ, "pmat", o1, sizeof(o1)),
                            "The matrix the linear systems are preconditioned with: diagonal (the operator's exact diagonal, matrix-free; PCJACOBI), tangent (the exact Jacobian assembled; block Jacobi-ILU(0), or -<prefix>pc_type lu, gamg, ...), elastic (the same with each particle's linear-elastic moduli in place of its tangent: symmetric)",
                            NULL, PmatNames, 3, PmatNames[im->pmat], &im->pmat, NULL));
  PetscCall(PetscOptionsInt(Opt(integ, "max_halvings", o2, sizeof(o2)), "Halve dt at most this many times in a row when the solve fails (or let repeated halvings take dt below 2^-N of the step where they began), then stop with an error", NULL, im->sc.max_halvings, &im->sc.max_halvings, NULL));
  PetscCall(PetscOptionsBool(Opt(integ, "check_operator", o6, sizeof(o6)), "Every step, print the operator's symmetry |y'Ax - x'Ay| / |x'Ay| and its smallest Rayleigh quotient x'Ax / x'x on random vectors (tests; a symmetric solver needs both)", NULL, im->check_operator, &im->check_operator, NULL));
  PetscOptionsEnd();
  im->transfer = (MPMTransfer)transfer;
  PetscCheck(im->transfer == MPM_TRANSFER_APIC, sim->comm, PETSC_ERR_USER_INPUT, "-transfer %s: -integrator implicit transfers with apic only (allowed: apic; -integrator semi_implicit has apic, flip, aflip)", MPMTransferNames[transfer]);
  im->flip = -1; /* APIC: the transfers take flip < 0 as APIC; -flip_blend is read and not used */
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode ImplicitCheck(MPMIntegrator integ, MPMSim sim)
{
  Implicit *im = (Implicit *)integ->data;

  PetscFunctionBeginUser;
  PetscCall(MPMHeldPICCheck(sim, &im->held));
  PetscCheck(im->sc.max_halvings >= 0 && im->sc.max_halvings <= 30, sim->comm, PETSC_ERR_USER_INPUT, "-%smax_halvings must be in [0, 30], got %" PetscInt_FMT, integ->prefix, im->sc.max_halvings);
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode ImplicitSetUp(MPMIntegrator integ, MPMSim sim)
{
  Implicit *im = (Implicit *)integ->data;
  char      name[2 * MPM_NAME_LEN], who[2 * MPM_NAME_LEN];

  PetscFunctionBeginUser;
  PetscCall(PetscSNPrintf(who, sizeof(who), "-integrator %s", integ->type));
  PetscCheck(sim->nspecies <= 8, sim->comm, PETSC_ERR_SUP, "%s supports at most 8 species", who);
  for (PetscInt s = 0; s < sim->nspecies; s++) {
    ImplicitSpecies *is = &im->s[s];
    MPMSpecies      *sp = sim->species[s];
    for (PetscInt m = 0; m < sp->nmat; m++) PetscCall(MPMMaterialRequire(sp->mat[m], MPM_MATERIAL_DSTRESS, who));
    is->sim  = sim;
    is->sp   = sp;
    PetscCall(MPMIntegratorStressFields(sp, &is->f));
    PetscCall(PetscSNPrintf(name, sizeof(name), "%s_momentum", sp->name));
    /* m and m v^n, then the held flag and v^{n+1} for G2P (and v^n for FLIP) */
    PetscCall(MPMGridFieldCreate(sim, name, mpm_transfer_dof((int)sim->dim, 0), PETSC_FALSE, &sp->grid));
    PetscCall(PetscSNPrintf(name, sizeof(name), "%s_velocity", sp->name));
    PetscCall(MPMGridFieldCreate(sim, name, sim->dim, PETSC_FALSE, &is->vel));
    is->pmat = (int)im->pmat;
    if (is->pmat != PMAT_DIAGONAL) {
      const size_t nk = MPM_MAX_STENCIL * MPM_MAX_STENCIL * MPM_MAX_STENCIL * 3;
      PetscCall(PetscSNPrintf(name, sizeof(name), "%s_projector", sp->name));
      PetscCall(MPMGridFieldCreate(sim, name, sim->dim * sim->dim, PETSC_FALSE, &is->proj));
      PetscCall(PetscMalloc1(nk * nk, &is->Ke));
    }
    PetscCall(SolverSetUp(is, integ->prefix)); /* reads the -<prefix>* options now, before the unused-option check */
  }
  im->st.n = NSTAT;
  PetscCall(PetscStrncpy(im->st.name[STAT_NEWTON], "newton_its", sizeof(im->st.name[0])));
  PetscCall(PetscStrncpy(im->st.name[STAT_KSP], "ksp_its", sizeof(im->st.name[0])));
  PetscCall(PetscStrncpy(im->st.name[STAT_HALVINGS], "dt_halvings", sizeof(im->st.name[0])));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* CFL on the particle velocity; no elastic wave limit.  This rank's value:
 * the driver takes the minimum over ranks. */
static double ImplicitStableDt(MPMIntegrator integ, const MPMSim sim, double vmax, MPMDtLimit *why)
{
  Implicit *im = (Implicit *)integ->data;
  if (MPMIntegratorFixedDt(sim, why) > 0) return sim->dt_fixed;
  double dt = MPMStepControlDt(&im->sc, sim->dt_max, why);
  if (vmax > 0) dt = MPMDtMin(dt, why, sim->cfl * sim->layout.h / vmax, MPM_DT_CFL);
  return dt;
}

/* ----------------------------------------------------------------- step */
/* P2G of mass and momentum; on the owned nodes: slot 0 m, slots 1..d v^n,
 * the first guess v^n + dt g into the iterate (adding the explicit impulse
 * of the stored stress doubled the Newton iterations at 12x the explicit
 * step: beyond its stability limit it overshoots), and the contact set. */
static PetscErrorCode Predict(const Implicit *im, ImplicitSpecies *is, double dt)
{
  const MPMSim    sim = is->sim;
  MPMSpecies     *sp  = is->sp;
  MPMParticles   *p   = &sp->p;
  const int       d = (int)sim->dim, dof = (int)sp->grid->dof;
  const double    gs = MPMGravityScale(sim);
  MPMParticleView v  = {(int)p->n, MPMFieldReal(p, p->f_x), MPMFieldReal(p, p->f_v), MPMFieldReal(p, is->f.f_C), MPMFieldReal(p, is->f.f_Fe),
                        MPMFieldReal(p, is->f.f_tau), MPMFieldReal(p, p->f_m), MPMFieldReal(p, p->f_V0)};
  PetscScalar    *a, *x;

  PetscFunctionBeginUser;
  is->dt = dt;
  PetscCall(PetscLogEventBegin(MPM_EVENT_P2G, 0, 0, 0, 0));
  PetscCall(VecZeroEntries(sp->grid->local));
  PetscCall(VecGetArray(sp->grid->local, &a));
  mpm_p2g(&sp->grid->box, &v, 0.0, a); /* no stress impulse (tau is finite: 0 tau = 0) */
  PetscCall(VecRestoreArray(sp->grid->local, &a));
  PetscCall(PetscLogEventEnd(MPM_EVENT_P2G, 0, 0, 0, 0));
  PetscCall(MPMGhostScatterAdd(sp->grid));
  PetscCall(VecGetArray(sp->grid->global, &a));
  PetscCall(VecGetArray(is->x, &x));
  for (PetscInt n = 0; n < is->nown; n++) {
    double      *node = a + n * dof, *xn = x + n * d, *Pi = is->Pi + n * d * d, *cn = is->c + n * d, pos[3], u[3], w[3];
    const double m    = node[0];
    for (int c = 0; c < d; c++) {
      node[1 + c] = m > 0 ? node[1 + c] / m : 0.0;
      xn[c]       = m > 0 ? node[1 + c] + dt * gs * sim->gravity[c] : 0.0;
      w[c]        = xn[c]; /* the predictor the contact set is decided on */
      u[c]        = w[c];
    }
    if (m <= 0) { /* no mass: u = 0 */
      for (int k = 0; k < d * d; k++) Pi[k] = 0;
      for (int c = 0; c < d; c++) cn[c] = 0;
      continue;
    }
    /* the contact set of the predictor; the projection is affine in v for a fixed set: c = Pi(u) - Pi u */
    MPMLayoutOwnedNodeX(&sim->layout, n, pos);
    MPMCollidersProject(sim->colliders, 0, pos, dt, u, Pi);
    mpm_matvec(d, Pi, w, cn);
    for (int c = 0; c < d; c++) cn[c] = u[c] - cn[c];
  }
  PetscCall(VecRestoreArray(is->x, &x));
  PetscCall(VecRestoreArray(sp->grid->global, &a));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* After the solve: the velocity without collisions v* = v^n + dt f(u)/m + dt g,
 * then collisions with friction and the impulses on the objects, as in the
 * explicit step; slot 0 the held-by-friction flag, slots 1..d the velocity,
 * gathered for G2P. */
static PetscErrorCode Finish(const Implicit *im, ImplicitSpecies *is)
{
  const MPMSim       sim = is->sim;
  const int          d = (int)sim->dim, dof = (int)is->sp->grid->dof;
  const double       gs = MPMGravityScale(sim);
  PetscBool          bad;
  const PetscScalar *f;
  PetscScalar       *a;

  PetscFunctionBeginUser;
  PetscCall(Project(is, is->x));
  PetscCall(Force(is, &bad));
  PetscCall(PetscLogEventBegin(MPM_EVENT_GRID_UPDATE, 0, 0, 0, 0));
  PetscCall(VecGetArrayRead(is->fg, &f));
  PetscCall(VecGetArray(is->sp->grid->global, &a));
  for (PetscInt n = 0; n < is->nown; n++) {
    double      *node = a + n * dof, pos[3], v[3];
    const double m    = node[0];
    if (m <= 0) {
      for (int c = 0; c < dof; c++) node[c] = 0;
      continue;
    }
    for (int c = 0; c < d; c++) {
      v[c] = node[1 + c] + f[n * d + c] / m + is->dt * gs * sim->gravity[c];
      if (dof > 1 + d) node[1 + d + c] = node[1 + c]; /* FLIP: v^n */
    }
    MPMLayoutOwnedNodeX(&sim->layout, n, pos);
    const int held = MPMCollidersApply(sim->colliders, 0, pos, m, is->dt, v) == MPM_CONTACT_HELD;
    for (int c = 0; c < d; c++) node[1 + c] = v[c];
    node[0] = held && im->held.on ? 1.0 : 0.0;
  }
  PetscCall(VecRestoreArray(is->sp->grid->global, &a));
  PetscCall(VecRestoreArrayRead(is->fg, &f));
  PetscCall(PetscLogEventEnd(MPM_EVENT_GRID_UPDATE, 0, 0, 0, 0));
  PetscCall(MPMGhostGather(is->sp->grid));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode G2P(const Implicit *im, ImplicitSpecies *is, double *vmax)
{
  MPMParticles      *p = &is->sp->p;
  MPMParticleView    v = {(int)p->n, MPMFieldReal(p, p->f_x), MPMFieldReal(p, p->f_v), MPMFieldReal(p, is->f.f_C), MPMFieldReal(p, is->f.f_Fe),
                          MPMFieldReal(p, is->f.f_tau), MPMFieldReal(p, p->f_m), MPMFieldReal(p, p->f_V0)};
  const PetscScalar *a;

  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_G2P, 0, 0, 0, 0));
  PetscCall(VecGetArrayRead(is->sp->grid->local, &a));
  *vmax = sqrt(mpm_g2p(&is->sp->grid->box, a, is->dt, im->flip, im->held.rest, &v));
  PetscCall(VecRestoreArrayRead(is->sp->grid->local, &a));
  PetscCall(PetscLogEventEnd(MPM_EVENT_G2P, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* -<prefix>check_operator: y'Ax against x'Ay and x'Ax / x'x for four random
 * pairs, at the linearization of the step's start (before the solve). */
static PetscErrorCode CheckOperator(ImplicitSpecies *is)
{
  PetscFunctionBeginUser;
  if (is->pmat == PMAT_DIAGONAL) PetscCall(Diagonal(is)); /* MatMult needs nothing else */
  PetscCall(MPMIntegratorCheckOperator(is->sim->comm, is->J, NULL));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode ImplicitStep(MPMIntegrator integ, MPMSim sim, double dt, double *vmax)
{
  Implicit           *im = (Implicit *)integ->data;
  SNESConvergedReason reason = SNES_CONVERGED_ITERATING;
  PetscInt            its_newton = 0, its_ksp = 0;

  PetscFunctionBeginUser;
  *vmax = 0;
  MPMCollidersAtTime(sim->colliders, sim->t);
  /* solve every species before moving any: a failure leaves the step undone */
  for (PetscInt s = 0; s < sim->nspecies && reason >= 0; s++) {
    ImplicitSpecies *is = &im->s[s];
    PetscInt         n, k;
    PetscCall(SolverSetUp(is, integ->prefix));
    PetscCall(Predict(im, is, dt));
    if (is->pmat != PMAT_DIAGONAL) PetscCall(PmatPrepare(is));
    if (im->check_operator) {
      PetscBool bad; /* the Jacobian at the predictor */
      PetscCall(Project(is, is->x));
      PetscCall(TrialStresses(is, &bad));
      PetscCall(CheckOperator(is));
    }
    PetscCall(SNESSolve(is->snes, NULL, is->x));
    PetscCall(SNESGetConvergedReason(is->snes, &reason));
    PetscCall(SNESGetIterationNumber(is->snes, &n));
    PetscCall(SNESGetLinearSolveIterations(is->snes, &k));
    its_newton += n;
    its_ksp += k;
  }
  im->st.value[STAT_NEWTON] = (double)its_newton;
  im->st.value[STAT_KSP]    = (double)its_ksp;
  im->st.total[STAT_NEWTON] += its_newton;
  im->st.total[STAT_KSP] += its_ksp;
  if (reason < 0) {
    const PetscBool retry = MPMStepControlFail(&im->sc, dt);
    im->st.total[STAT_HALVINGS] += 1;
    PetscCheck(retry, sim->comm, PETSC_ERR_NOT_CONVERGED,
               "%s solve failed at t = %g s (step %" PetscInt_FMT ", dt = %g s, %" PetscInt_FMT " halvings in a row, dt down from %g s; SNES: %s): lower -dt_max or -cfl, or raise %s%s%s-%sksp_max_it or -%smax_halvings",
               "Implicit Newton", sim->t, sim->step + 1, dt, im->sc.halvings - 1, im->sc.dt_ref, SNESConvergedReasons[reason], "-", integ->prefix, "snes_max_it, ", integ->prefix, integ->prefix);
    PetscCall(PetscPrintf(sim->comm, "step %" PetscInt_FMT ": %s solve failed (%s), retrying with dt = %g s\n", sim->step + 1, integ->type, SNESConvergedReasons[reason], 0.5 * dt));
    integ->rejected = PETSC_TRUE;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  im->st.value[STAT_HALVINGS] = (double)MPMStepControlAccept(&im->sc, dt);
  for (PetscInt s = 0; s < sim->nspecies; s++) {
    ImplicitSpecies *is = &im->s[s];
    double           vs = 0;
    PetscCall(Finish(im, is));
    PetscCall(G2P(im, is, &vs));
    PetscCall(MPMIntegratorCommit(is->sp, &is->f));
    *vmax = PetscMax(*vmax, vs);
  }
  MPMCollidersAdvance(sim->colliders, dt);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ------------------------------------------------------- bookkeeping */
static PetscErrorCode ImplicitStats(MPMIntegrator integ, MPMStepStats *s)
{
  PetscFunctionBeginUser;
  *s = ((Implicit *)integ->data)->st;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The run totals and the step cap (restarts continue bit for bit). */
static PetscErrorCode ImplicitGetState(MPMIntegrator integ, PetscInt *n, double *state)
{
  const Implicit *im = (const Implicit *)integ->data;

  PetscFunctionBeginUser;
  for (int k = 0; k < NSTAT; k++) state[k] = im->st.total[k];
  MPMStepControlGetState(&im->sc, state + NSTAT);
  *n = NSTAT + 2;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode ImplicitSetState(MPMIntegrator integ, PetscInt n, const double *state)
{
  Implicit *im = (Implicit *)integ->data;

  PetscFunctionBeginUser;
  PetscCheck(n == NSTAT + 1 || n == NSTAT + 2, PETSC_COMM_SELF, PETSC_ERR_USER_INPUT, "the checkpoint's implicit integrator state has %" PetscInt_FMT " values, expected %d", n, NSTAT + 2);
  for (int k = 0; k < NSTAT; k++) im->st.total[k] = state[k];
  MPMStepControlSetState(&im->sc, state + NSTAT, n > NSTAT + 1 ? PETSC_TRUE : PETSC_FALSE);
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode ImplicitView(MPMIntegrator integ, char *buf, size_t len)
{
  const Implicit *im = (const Implicit *)integ->data;
  KSPType         kt;
  PCType          pt;
  KSP             ksp;
  PC              pc;

  PetscFunctionBeginUser;
  PetscCall(SNESGetKSP(im->s[0].snes, &ksp));
  PetscCall(KSPGetType(ksp, &kt));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCGetType(pc, &pt));
  PetscCall(PetscSNPrintf(buf, len, "implicit APIC, Newton-%s/%s (-implicit_snes_*, -implicit_ksp_*)", kt, pt ? pt : "none"));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode ImplicitDestroy(MPMIntegrator integ)
{
  Implicit *im = (Implicit *)integ->data;

  PetscFunctionBeginUser;
  if (!im) PetscFunctionReturn(PETSC_SUCCESS);
  for (int s = 0; s < 8; s++) {
    PetscCall(SolverDestroy(&im->s[s]));
    PetscCall(PetscFree(im->s[s].lin));
    PetscCall(PetscFree(im->s[s].A));
    PetscCall(PetscFree(im->s[s].Ke));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMIntegratorCreate_Implicit(MPMIntegrator integ)
{
  PetscFunctionBeginUser;
  integ->ops.options   = ImplicitOptions;
  integ->ops.check     = ImplicitCheck;
  integ->ops.setup     = ImplicitSetUp;
  integ->ops.stable_dt = ImplicitStableDt;
  integ->ops.step      = ImplicitStep;
  integ->ops.stats     = ImplicitStats;
  integ->ops.get_state = ImplicitGetState;
  integ->ops.set_state = ImplicitSetState;
  integ->ops.view      = ImplicitView;
  integ->ops.destroy   = ImplicitDestroy;
  PetscFunctionReturn(PETSC_SUCCESS);
}
