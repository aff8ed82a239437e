/* -integrator semi_implicit: the semi-implicit step of Stomakhin et al.
 * 2013 (eq. 9, section 9), one symmetric linear solve per step.
 *
 * The elastic force is linearized once, at the step's start (F_E^n, each
 * particle's stiffness made positive semidefinite unless
 * -semi_implicit_definite false), and the grid velocities solve
 *   (M + beta dt^2 K) v = M (v^n + dt g) + dt f^n
 * on the nodes with mass, with the contact set's projection u = Pi v + c
 * folded in as in the implicit integrator:
 *   R_i(v) = Pi_i [m_i u_i - dt f_i(u) - m_i (v^n_i + dt g)] + m_i (v_i - u_i),
 *   dt f(u) = dt f^n - beta dt^2 K u.
 * KSP (prefix semi_implicit_) solves R = 0 from the predictor v^n + dt g
 * (a guess near the solution: PETSc's test stays relative to |b|, so it
 * only shortens the solve; 39 % fewer iterations on the 2D snowball than
 * from 0, the same accuracy against a tight solve): KSPCR by default
 * (the seed's conjugate residual; MINRES and CG apply, the system being
 * symmetric and, with the definiteness fix, positive definite), Jacobi
 * preconditioned with the operator's exact diagonal.  After the solve, the
 * friction and the impulses on the objects are applied as in the explicit
 * step, G2P moves the particles (APIC, PIC/FLIP or affine FLIP) and the
 * materials' commit does plasticity and hardening.  A solve that fails, or
 * whose solution would invert a particle, is refused and dt halves.
 *
 * Where the work is.  The unknowns are the velocities of the owned nodes
 * with mass only (the "active set", rebuilt every step): the seed's grid
 * operations "only on nodes where particles' interpolation radii
 * overlapped".  The Krylov vectors are that long, the operator writes its
 * values into the ghosted field itself and exchanges only the ghost layers
 * (MPMGhostLayers*), and the particle pass applies each particle's
 * linearization as a symmetric dim^2 x dim^2 map built once per step
 * (mpm_gradient_divergence_sym): packed in 2D, in 3D as its factors in the
 * principal frame of F_E (27 values instead of 45; mpm_iso_sym_factors).
 * A snowball in a box 10x its volume no longer pays for the empty box at
 * every Krylov iteration. */
#include "integrators.h"
#include <petscksp.h>

typedef struct _SemiSpecies {
  struct _Semi   *semi;
  MPMSim          sim;
  MPMSpecies     *sp;
  PetscInt        species;
  MPMStressFields f;
  MPMGridField   *vel;  /* <species>_velocity (dof dim; 4 in 3D, the last slot 0): u on the nodes (local: ghosted) */
  MPMGhostLayers  gl;   /* its ghost-layer exchange */
  Vec             ug, fg, fl; /* owned u for the neighbours' ghosts; the ghosts' force sums; the force on the local box */
  PetscInt        builds; /* the velocity field's build the vectors were made on (0: none) */
  /* per particle */
  PetscInt             cap;
  MPMIsoLinearization *lin;
  double              *A; /* dim x dim: -dt V0 P F^T (the explicit force), then grad u */
  double              *S; /* the map grad du -> -beta dt^2 V0 dP(grad du F) F^T, symmetric: packed in 2D, its principal-frame factors in 3D (SymSize) */
  PetscBool            bad0; /* this rank: some particle's F_E is inverted at the step's start */
  /* per active node (owned, with mass), k = 0 .. nact-1 */
  PetscInt  nact, cap_act;
  PetscInt *own, *loc; /* its index among the owned nodes, and in the ghosted box */
  double   *m, *w, *Pi, *c, *f0, *fk, *u; /* mass; v^n + dt g; projection u = Pi v + c; dt f^n; a force; a velocity */
  PetscInt  ntouch, cap_touch;
  PetscInt *touch; /* nodes of the ghosted box this rank's particles reach */
  Vec       x, b, diag;
  Mat       J;
  Mat       P;           /* -semi_implicit_stiff_ratio: the stiff nodes' block (this rank's, sequential) */
  Vec       rs, zs;      /* its right-hand side and solution */
  PetscInt *kof, cap_kof; /* per node of the ghosted box: its active index if it is an owned stiff node, else -1 */
  char     *near;        /* per node of the ghosted box: within a stencil's reach of a stiff node */
  PetscInt *sidx;        /* the stiff nodes' active indices, in order */
  PetscInt  nstiff;
  PetscBool built;    /* this step has the stiff block (on every rank, though some may have no stiff node) */
  PetscInt  last_its; /* the last accepted solve's iterations */
  double    dt;
} SemiSpecies;

typedef struct _Semi {
  MPMHeldPIC     held;
  double         cfl_elastic;  /* read and not used (the explicit integrator's) */
  double         beta;         /* -semi_implicit_beta */
  PetscBool      definite;     /* -semi_implicit_definite */
  PetscBool      check_operator;
  double         cfl_hardened; /* -semi_implicit_cfl_elastic */
  double         stiff_ratio;  /* -semi_implicit_stiff_ratio (0: Jacobi alone) */
  KSP            sksp;         /* with it: the stiff block's solver (-semi_implicit_stiff_ksp_*, -semi_implicit_stiff_pc_*: Cholesky) */
  double         wave_speed;
  MPMTransfer    transfer;
  double         flip;
  KSP            ksp;
  MPMStepControl sc;
  MPMStepStats   st;
  SemiSpecies    s[8];
} Semi;

enum { STAT_SOLVES, STAT_KSP, STAT_HALVINGS, NSTAT };
#define STIFF_AFTER_ITS 10 /* -semi_implicit_stiff_ratio: the block is built after a solve of this many iterations or more */

/* ---------------------------------------------------------- helpers */
static PetscInt SymSize(PetscInt d)
{
  return mpm_sym_map_size((int)d);
}

/* Owned node n (x fastest in the owned box) in the ghosted box. */
static PetscInt LocalIndex(const MPMLayout *l, PetscInt n)
{
  const PetscInt  i = l->xs[0] + n % l->xm[0], j = l->xs[1] + (n / l->xm[0]) % l->xm[1], k = l->xs[2] + n / (l->xm[0] * l->xm[1]);
  const MPMGridBox *b = &l->box;
  return ((k - b->gs[2]) * b->gn[1] + (j - b->gs[1])) * b->gn[0] + (i - b->gs[0]);
}

static PetscErrorCode ParticleScratch(SemiSpecies *ss)
{
  const PetscInt n = ss->sp->p.n, d = ss->sim->dim;

  PetscFunctionBeginUser;
  if (n <= ss->cap) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscFree3(ss->lin, ss->A, ss->S));
  ss->cap = PetscMax(n, (PetscInt)(1.25 * ss->cap));
  PetscCall(PetscMalloc3(ss->cap, &ss->lin, ss->cap * d * d, &ss->A, ss->cap * SymSize(d), &ss->S));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode NodeScratch(SemiSpecies *ss, PetscInt nact, PetscInt ntouch)
{
  const PetscInt d = ss->sim->dim;

  PetscFunctionBeginUser;
  if (nact > ss->cap_act) {
    PetscCall(PetscFree2(ss->own, ss->loc));
    PetscCall(PetscFree7(ss->m, ss->w, ss->Pi, ss->c, ss->f0, ss->fk, ss->u));
    ss->cap_act = PetscMax(nact, (PetscInt)(1.25 * ss->cap_act));
    PetscCall(PetscMalloc2(ss->cap_act, &ss->own, ss->cap_act, &ss->loc));
    PetscCall(PetscMalloc7(ss->cap_act, &ss->m, ss->cap_act * d, &ss->w, ss->cap_act * d * d, &ss->Pi, ss->cap_act * d, &ss->c, ss->cap_act * d, &ss->f0, ss->cap_act * d, &ss->fk, ss->cap_act * d, &ss->u));
  }
  if (ntouch > ss->cap_touch) {
    PetscCall(PetscFree(ss->touch));
    ss->cap_touch = PetscMax(ntouch, (PetscInt)(1.25 * ss->cap_touch));
    PetscCall(PetscMalloc1(ss->cap_touch, &ss->touch));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The grid vectors and the ghost layers on the velocity field's layout
 * (rebuilt when the slabs move). */
static PetscErrorCode GridSetUp(SemiSpecies *ss)
{
  PetscFunctionBeginUser;
  if (ss->builds == ss->vel->builds) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(MPMGhostLayersDestroy(&ss->gl));
  PetscCall(VecDestroy(&ss->ug));
  PetscCall(VecDestroy(&ss->fg));
  PetscCall(VecDestroy(&ss->fl));
  PetscCall(MPMGhostLayersCreate(ss->vel, &ss->gl));
  PetscCall(VecDuplicate(ss->vel->global, &ss->ug));
  PetscCall(VecDuplicate(ss->vel->global, &ss->fg));
  PetscCall(VecDuplicate(ss->vel->local, &ss->fl));
  ss->builds = ss->vel->builds;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ------------------------------------------------------ the operator */
/* u on the active nodes into the ghosted field (and the owned copy the
 * neighbours read), then the ghost layers.  Nodes without mass hold 0: the
 * vectors are zeroed once per step and only active entries are written. */
static PetscErrorCode SetVelocity(SemiSpecies *ss, const double *u)
{
  const PetscInt d = ss->sim->dim, dof = ss->vel->dof;
  PetscScalar   *ul, *ug;

  PetscFunctionBeginUser;
  PetscCall(VecGetArray(ss->vel->local, &ul));
  PetscCall(VecGetArray(ss->ug, &ug));
  for (PetscInt k = 0; k < ss->nact; k++)
    for (PetscInt a = 0; a < d; a++) ul[ss->loc[k] * dof + a] = ug[ss->own[k] * dof + a] = u[k * d + a];
  PetscCall(VecRestoreArray(ss->ug, &ug));
  PetscCall(VecRestoreArray(ss->vel->local, &ul));
  PetscCall(MPMGhostLayersGather(&ss->gl, ss->ug, ss->vel->local));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The force of the particles' values in ss->fl summed over ranks onto the
 * active nodes: f[k] = own part + the neighbours' ghost parts; fl is zeroed
 * again on the nodes the particles reach. */
static PetscErrorCode GatherForce(SemiSpecies *ss, double *f)
{
  const PetscInt     d = ss->sim->dim, dof = ss->vel->dof;
  PetscScalar       *fl;
  const PetscScalar *fg;

  PetscFunctionBeginUser;
  PetscCall(MPMGhostLayersScatterAdd(&ss->gl, ss->fl, ss->fg));
  PetscCall(VecGetArray(ss->fl, &fl));
  PetscCall(VecGetArrayRead(ss->fg, &fg));
  for (PetscInt k = 0; k < ss->nact; k++)
    for (PetscInt a = 0; a < d; a++) f[k * d + a] = fl[ss->loc[k] * dof + a] + fg[ss->own[k] * dof + a];
  for (PetscInt t = 0; t < ss->ntouch; t++)
    for (PetscInt a = 0; a < d; a++) fl[ss->touch[t] * dof + a] = 0;
  PetscCall(VecRestoreArrayRead(ss->fg, &fg));
  PetscCall(VecRestoreArray(ss->fl, &fl));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Floating-point operations of one particle's pass, for -log_view (an
 * estimate from the kernel's loops): the weights, 6 d; per stencil node,
 * (order + 1)^d of them, the gradient's and the divergence's 2 FMAs on d
 * components, 8 d; the symmetric map, 2 (d^2)^2. */
static PetscLogDouble OperatorFlops(const MPMGridBox *b)
{
  const int d = b->dim, w = b->order + 1, nodes = d == 2 ? w * w : w * w * w;
  return 6.0 * d + nodes * 8.0 * d + 2.0 * d * d * d * d;
}

/* f = -beta dt^2 K u on the active nodes, u set by SetVelocity. */
static PetscErrorCode Stiffness(SemiSpecies *ss, double *f)
{
  MPMParticles      *p = &ss->sp->p;
  const PetscScalar *ul;
  PetscScalar       *fl;

  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(ss->vel->local, &ul));
  PetscCall(VecGetArray(ss->fl, &fl));
  mpm_gradient_divergence_sym(&ss->vel->box, (int)p->n, MPMFieldReal(p, p->f_x), ss->S, ul, fl);
  PetscCall(PetscLogFlops(OperatorFlops(&ss->vel->box) * p->n));
  PetscCall(VecRestoreArray(ss->fl, &fl));
  PetscCall(VecRestoreArrayRead(ss->vel->local, &ul));
  PetscCall(GatherForce(ss, f));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* y = J x = Pi (m + beta dt^2 K) Pi x + m (I - Pi) x on the active nodes. */
static PetscErrorCode OperatorMult(Mat J, Vec X, Vec Y)
{
  SemiSpecies       *ss;
  PetscInt           d;
  const PetscScalar *x;
  PetscScalar       *y;
  double            *u;

  PetscFunctionBeginUser;
  PetscCall(MatShellGetContext(J, &ss));
  PetscCall(PetscLogEventBegin(MPM_EVENT_JACOBIAN_MULT, 0, 0, 0, 0));
  d = ss->sim->dim;
  u = ss->u;
  PetscCall(VecGetArrayRead(X, &x));
  for (PetscInt k = 0; k < ss->nact; k++) mpm_matvec((int)d, ss->Pi + k * d * d, x + k * d, u + k * d);
  PetscCall(SetVelocity(ss, u));
  PetscCall(Stiffness(ss, ss->fk));
  PetscCall(VecGetArray(Y, &y));
  for (PetscInt k = 0; k < ss->nact; k++) {
    double t[3];
    for (PetscInt a = 0; a < d; a++) t[a] = ss->m[k] * u[k * d + a] - ss->fk[k * d + a];
    mpm_matvec((int)d, ss->Pi + k * d * d, t, y + k * d);
    for (PetscInt a = 0; a < d; a++) y[k * d + a] += ss->m[k] * (x[k * d + a] - u[k * d + a]);
  }
  PetscCall(VecRestoreArray(Y, &y));
  PetscCall(VecRestoreArrayRead(X, &x));
  PetscCall(PetscLogEventEnd(MPM_EVENT_JACOBIAN_MULT, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode OperatorDiagonal(Mat J, Vec D)
{
  SemiSpecies *ss;

  PetscFunctionBeginUser;
  PetscCall(MatShellGetContext(J, &ss));
  PetscCall(VecCopy(ss->diag, D));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ------------------------------------------------- the linearization */
/* At F_E^n, every particle (runs of one material): the stress P and its
 * linearization (the materials' trial_stress at Fhat = F_E, a run at once
 * where the material has trial_stress_n), the explicit force's A = -dt V0
 * P F^T and the symmetric map S.  P is written into A first.  An inverted
 * or non-finite F_E sets bad0 (the step is refused) and contributes
 * nothing. */
static PetscErrorCode Linearize(SemiSpecies *ss, double beta, PetscBool definite)
{
  MPMSpecies    *sp = ss->sp;
  MPMParticles  *p  = &sp->p;
  const int      d = (int)p->dim, n = (int)p->n, ns = (int)SymSize(d);
  const double  *V0 = MPMFieldReal(p, p->f_V0), *Fe = MPMFieldReal(p, ss->f.f_Fe);
  const int32_t *mat = MPMFieldInt32(p, p->f_mat);

  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_LINEARIZE, 0, 0, 0, 0));
  PetscCall(ParticleScratch(ss));
  ss->bad0 = PETSC_FALSE;
  for (PetscInt q0 = 0, q1; q0 < n; q0 = q1) {
    const MPMMaterial m = sp->mat[mat[q0]];
    MPMMaterialPoints pts;
    q1 = MPMMaterialRunEnd(mat, q0, n);
    MPMMaterialsPoints(sp, &ss->f.mf, ss->f.f_tau, q0, &pts);
    if (m->ops.trial_stress_n) m->ops.trial_stress_n(m, &pts, 0, (int)(q1 - q0), Fe + q0 * d * d, ss->A + q0 * d * d, ss->lin + q0);
    else
      for (PetscInt q = q0; q < q1; q++) m->ops.trial_stress(m, &pts, (int)(q - q0), Fe + q * d * d, ss->A + q * d * d, &ss->lin[q]);
    for (PetscInt q = q0; q < q1; q++) {
      const double *F = Fe + q * d * d, J = mpm_det(d, F);
      double       *A = ss->A + q * d * d, *S = ss->S + q * ns, P[9];
      if (!(J > 0) || !PetscIsNormalReal(J)) {
        ss->bad0 = PETSC_TRUE;
        for (int k = 0; k < d * d; k++) A[k] = 0;
        for (int k = 0; k < ns; k++) S[k] = 0;
        continue;
      }
      for (int k = 0; k < d * d; k++) P[k] = A[k];
      if (definite) mpm_iso_definite(&ss->lin[q]);
      mpm_scaled_pft(d, -ss->dt * V0[q], P, F, A);
      if (d == 3) mpm_iso_sym_factors(&ss->lin[q], ss->dt, -beta * ss->dt * V0[q], S); /* G -> -beta dt V0 dP(dt G F) F^T */
      else mpm_iso_sym_map(&ss->lin[q], ss->dt, -beta * ss->dt * V0[q], S);
    }
  }
  PetscCall(PetscLogEventEnd(MPM_EVENT_LINEARIZE, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------- the step */
/* The nodes this rank's particles reach (the P2G's partial mass, before the
 * ghost sums) and the active set: owned nodes with mass, their v^n (into
 * the momentum field's slots 1..d, for FLIP and the finish), the predictor
 * w = v^n + dt g and the contact set decided on it, not on v* = v^n +
 * dt (g + f^n / m) as in the seed's section 8: a snowball pressed into a
 * wall pushes its nodes off it in v*, they leave the set, the solve moves
 * them back in, the collision after it stops them and compacts the snow,
 * step after step; at dt = 5e-4 s (dx 1 cm) the snow near the wall
 * compacted to J_P = 0.35 and the run blew up, which it does not with this
 * set (docs/validation.md, "Snow"). */
static PetscErrorCode ActiveSet(SemiSpecies *ss)
{
  const MPMSim   sim = ss->sim;
  MPMGridField  *g   = ss->sp->grid;
  const PetscInt d = sim->dim, dof = g->dof, nloc = (PetscInt)g->box.gn[0] * g->box.gn[1] * g->box.gn[2];
  const double   gs = MPMGravityScale(sim);
  PetscInt       nown, nact = 0, ntouch = 0;
  PetscScalar   *a;

  PetscFunctionBeginUser;
  PetscCall(VecGetArray(g->local, &a));
  for (PetscInt L = 0; L < nloc; L++) ntouch += a[L * dof] > 0;
  PetscCall(NodeScratch(ss, 0, ntouch));
  ss->ntouch = 0;
  for (PetscInt L = 0; L < nloc; L++)
    if (a[L * dof] > 0) ss->touch[ss->ntouch++] = L;
  PetscCall(VecRestoreArray(g->local, &a));
  PetscCall(MPMGhostScatterAdd(g));
  PetscCall(VecGetLocalSize(g->global, &nown));
  nown /= dof;
  PetscCall(VecGetArray(g->global, &a));
  for (PetscInt n = 0; n < nown; n++) nact += a[n * dof] > 0;
  PetscCall(NodeScratch(ss, nact, ntouch));
  ss->nact = 0;
  for (PetscInt n = 0; n < nown; n++) {
    double      *node = a + n * dof, pos[3], u[3];
    const double m    = node[0];
    PetscInt     k    = ss->nact;
    if (!(m > 0)) continue;
    ss->own[k] = n;
    ss->loc[k] = LocalIndex(&sim->layout, n);
    ss->m[k]   = m;
    for (PetscInt c = 0; c < d; c++) {
      node[1 + c]       = node[1 + c] / m;
      ss->w[k * d + c]  = node[1 + c] + ss->dt * gs * sim->gravity[c];
      u[c]              = ss->w[k * d + c];
    }
    /* the projection is affine in v for a fixed contact set: c = Pi(w) - Pi w */
    MPMLayoutOwnedNodeX(&sim->layout, n, pos);
    MPMCollidersProject(sim->colliders, ss->species, pos, ss->dt, u, ss->Pi + k * d * d);
    mpm_matvec((int)d, ss->Pi + k * d * d, ss->w + k * d, ss->c + k * d);
    for (PetscInt c = 0; c < d; c++) ss->c[k * d + c] = u[c] - ss->c[k * d + c];
    ss->nact++;
  }
  PetscCall(VecRestoreArray(g->global, &a));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The Krylov vectors and the shell operator, sized to the active set:
 * made again when the size changed on any rank (collectively). */
static PetscErrorCode SystemSetUp(SemiSpecies *ss)
{
  const PetscInt nl = ss->nact * ss->sim->dim;
  PetscInt       old = -1;
  double         changed;

  PetscFunctionBeginUser;
  if (ss->x) PetscCall(VecGetLocalSize(ss->x, &old));
  changed = old != nl ? 1.0 : 0.0;
  PetscCall(MPMGlobalMax(ss->sim->comm, &changed, 1));
  if (changed == 0) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(VecDestroy(&ss->x));
  PetscCall(VecDestroy(&ss->b));
  PetscCall(VecDestroy(&ss->diag));
  PetscCall(MatDestroy(&ss->J));
  PetscCall(VecCreateMPI(ss->sim->comm, nl, PETSC_DETERMINE, &ss->x));
  PetscCall(VecSetBlockSize(ss->x, ss->sim->dim));
  PetscCall(VecDuplicate(ss->x, &ss->b));
  PetscCall(VecDuplicate(ss->x, &ss->diag));
  PetscCall(MatCreateShell(ss->sim->comm, nl, nl, PETSC_DETERMINE, PETSC_DETERMINE, ss, &ss->J));
  PetscCall(MatShellSetOperation(ss->J, MATOP_MULT, (void (*)(void))OperatorMult));
  PetscCall(MatShellSetOperation(ss->J, MATOP_GET_DIAGONAL, (void (*)(void))OperatorDiagonal));
  PetscCall(MatSetOption(ss->J, MAT_SYMMETRIC, PETSC_TRUE));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The Jacobi diagonal: K's diagonal from the symmetric maps, then
 * (Pi (m + K) Pi)_aa + m (1 - Pi_aa) (K's off-diagonal part within a node
 * is left out where a collision projects it). */
static PetscErrorCode Diagonal(SemiSpecies *ss)
{
  MPMParticles  *p = &ss->sp->p;
  const PetscInt d = ss->sim->dim;
  PetscScalar   *fl, *dg;

  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_LINEARIZE, 0, 0, 0, 0));
  PetscCall(VecGetArray(ss->fl, &fl));
  mpm_p2g_sym_diagonal(&ss->vel->box, (int)p->n, MPMFieldReal(p, p->f_x), ss->S, -1.0, fl); /* S = -beta dt^2 V0 (...): K = -S */
  PetscCall(VecRestoreArray(ss->fl, &fl));
  PetscCall(GatherForce(ss, ss->fk));
  PetscCall(VecGetArray(ss->diag, &dg));
  for (PetscInt k = 0; k < ss->nact; k++) {
    const double  m = ss->m[k], *Pi = ss->Pi + k * d * d;
    for (PetscInt a = 0; a < d; a++) {
      double t = m * (1.0 - Pi[a * d + a]);
      for (PetscInt b = 0; b < d; b++) t += Pi[a * d + b] * Pi[b * d + a] * (m + ss->fk[k * d + b]);
      dg[k * d + a] = t > 0 ? t : m;
    }
  }
  PetscCall(VecRestoreArray(ss->diag, &dg));
  PetscCall(PetscLogEventEnd(MPM_EVENT_LINEARIZE, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* -semi_implicit_stiff_ratio R: a preconditioner for compacted snow.
 * Jacobi is slow where a node's stiffness outweighs its mass: the slowest
 * modes of the Jacobi-scaled operator each live on a few such nodes (on
 * the 3D snowball at dx = 2 cm after the impact, the 20 slowest on nodes
 * of under a thousandth of the median node mass at the compacted snow's
 * stencil edges; docs/performance.md, "Snow").  The nodes whose Jacobi
 * diagonal exceeds R times their mass ("stiff") get their block of the
 * operator assembled exactly from this rank's particles, as a sequential
 * matrix factored by Cholesky (-semi_implicit_stiff_pc_*; CHOLMOD where
 * PETSc has it); the preconditioner is Jacobi with the stiff nodes' values
 * replaced by the block's solution (PCSHELL).  A stiff node next to another
 * rank's particles misses their share: the block stays symmetric positive
 * definite, only less exact, and the solution the same within the solver's
 * tolerance.  The block is built only after a solve that took 10 or more
 * iterations: in free flight the predictor is the solution (0-4
 * iterations), and the block would cost more than it saves. */
static void StiffNodes(SemiSpecies *ss, double R, const PetscScalar *dg)
{
  const PetscInt d = ss->sim->dim, nloc = (PetscInt)ss->vel->box.gn[0] * ss->vel->box.gn[1] * ss->vel->box.gn[2];
  for (PetscInt L = 0; L < nloc; L++) ss->kof[L] = -1;
  ss->nstiff = 0;
  for (PetscInt k = 0; k < ss->nact; k++) {
    double r = 0;
    for (PetscInt a = 0; a < d; a++) r = PetscMax(r, dg[k * d + a] / ss->m[k]);
    if (r > R) ss->kof[ss->loc[k]] = k, ss->nstiff++;
  }
}

/* The particle's map S (packed, or in 3D its factors) as a full dim^2 x dim^2 matrix. */
static void UnpackMap(PetscInt d, const double *S, double *Sf)
{
  const PetscInt nb = d * d;
  double         packed[45];
  if (d == 3) mpm_sym_factors_expand(S, packed);
  else
    for (PetscInt i = 0; i < 10; i++) packed[i] = S[i];
  for (PetscInt i = 0, n = 0; i < nb; i++)
    for (PetscInt j = i; j < nb; j++, n++) Sf[i * nb + j] = Sf[j * nb + i] = packed[n];
}

/* The stiff nodes' block is accumulated per stiff node (slot) and per
 * neighbour offset (the nodes two particles' stencils can join lie within
 * +-order nodes on every axis: (2 order + 1)^dim offsets), upper triangle
 * only (the neighbour's box index not below the node's), then inserted row
 * by row: no search per value. */
typedef struct {
  PetscInt  span, noff;  /* 2 order + 1; span^dim */
  PetscInt *slot;        /* per active node: its slot, or -1 */
  double   *acc;         /* per slot and offset: a dim x dim block */
  char     *used;        /* per slot and offset */
} StiffAcc;

/* One particle's share between its stiff nodes: stencil positions pos
 * (x fastest, S per axis), slots, grad w (gw) and projections Pi.  Row t,
 * column u (box index of u not below t's): Pi_t K_tu Pi_u with K_tu[c][a]
 * = -sum_{e,b} gw_t[e] S[(c,e),(a,b)] gw_u[b] (the operator's force is
 * f = S vec(grad u) . grad w = -K u). */
static void StiffShare(StiffAcc *sa, PetscInt d, PetscInt S, PetscInt ns, const PetscInt *pos, const PetscInt *slot, const double *gw, const double *Sf, const double *Pi, const PetscBool *eye)
{
  const PetscInt nb = d * d, h = sa->span / 2;
  for (PetscInt u = 0; u < ns; u++) {
    double W[9][3];
    for (PetscInt ce = 0; ce < nb; ce++)
      for (PetscInt a = 0; a < d; a++) {
        double w = 0;
        for (PetscInt b = 0; b < d; b++) w += Sf[ce * nb + a * d + b] * gw[u * d + b];
        W[ce][a] = w;
      }
    for (PetscInt t = 0; t < ns; t++) {
      if (pos[u] < pos[t]) continue; /* the lower triangle (stencil order is box order) */
      const PetscInt du = pos[u] % S - pos[t] % S, dv = (pos[u] / S) % S - (pos[t] / S) % S, dw = d == 3 ? pos[u] / (S * S) - pos[t] / (S * S) : 0;
      const PetscInt o = ((d == 3 ? (dw + h) * sa->span : 0) + dv + h) * sa->span + du + h;
      double         K[9] = {0}, KP[9], *acc = sa->acc + (slot[t] * sa->noff + o) * nb;
      for (PetscInt c = 0; c < d; c++)
        for (PetscInt e = 0; e < d; e++)
          for (PetscInt a = 0; a < d; a++) K[c * d + a] -= gw[t * d + e] * W[c * d + e][a];
      if (!eye[u]) {
        mpm_matmul((int)d, K, Pi + u * nb, KP);
        for (PetscInt i = 0; i < nb; i++) K[i] = KP[i];
      }
      if (!eye[t]) {
        mpm_matmul((int)d, Pi + t * nb, K, KP);
        for (PetscInt i = 0; i < nb; i++) K[i] = KP[i];
      }
      for (PetscInt i = 0; i < nb; i++) acc[i] += K[i];
      sa->used[slot[t] * sa->noff + o] = 1;
    }
  }
}

/* Accumulate every particle's share. */
static PetscErrorCode StiffAccumulate(SemiSpecies *ss, StiffAcc *sa)
{
  MPMParticles     *p   = &ss->sp->p;
  const MPMGridBox *box = &ss->vel->box;
  const PetscInt    d = ss->sim->dim, nb = d * d, S = box->order + 1, nmap = SymSize(d);
  const double     *X = MPMFieldReal(p, p->f_x), eye3[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, eye2[4] = {1, 0, 0, 1};
  double            Pi[64 * 9], gw[64 * 3], Sf[81], y[64 * 3];
  PetscInt          pos[64], slot[64];
  PetscBool         eye[64];
  int               node[64];

  PetscFunctionBeginUser;
  for (PetscInt q = 0; q < p->n; q++) {
    PetscInt L = 0;
    for (PetscInt a = d - 1; a >= 0; a--) L = L * box->gn[a] + mpm_cell_index(box, (int)a, X[q * d + a]) - box->gs[a];
    if (!ss->near[L]) continue; /* its cell is out of every stiff node's reach */
    const int nn = mpm_stencil_y(box, X + q * d, d == 3 ? eye3 : eye2, node, y);
    PetscInt  ns = 0;
    for (int i = 0; i < nn; i++) {
      const PetscInt k = ss->kof[node[i]];
      if (k < 0) continue;
      pos[ns]  = i;
      slot[ns] = sa->slot[k];
      eye[ns]  = PETSC_TRUE;
      for (PetscInt a = 0; a < d; a++) gw[ns * d + a] = y[i * d + a];
      for (PetscInt a = 0; a < nb; a++) {
        Pi[ns * nb + a] = ss->Pi[k * nb + a];
        if (Pi[ns * nb + a] != (d == 3 ? eye3[a] : eye2[a])) eye[ns] = PETSC_FALSE;
      }
      ns++;
    }
    if (!ns) continue;
    UnpackMap(d, ss->S + q * nmap, Sf);
    StiffShare(sa, d, S, ns, pos, slot, gw, Sf, Pi, eye);
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Mark the nodes within a stencil's reach (+-order) of a stiff node. */
static void StiffReach(SemiSpecies *ss)
{
  const MPMGridBox *box = &ss->vel->box;
  const PetscInt    o = box->order, nx = box->gn[0], ny = box->gn[1], nz = box->gn[2];
  for (PetscInt L = 0; L < nx * ny * nz; L++) ss->near[L] = 0;
  for (PetscInt t = 0; t < ss->nstiff; t++) {
    const PetscInt L = ss->loc[ss->sidx[t]], i = L % nx, j = (L / nx) % ny, k = L / (nx * ny);
    for (PetscInt c = PetscMax(k - o, 0); c <= PetscMin(k + o, nz - 1); c++)
      for (PetscInt b = PetscMax(j - o, 0); b <= PetscMin(j + o, ny - 1); b++)
        for (PetscInt a = PetscMax(i - o, 0); a <= PetscMin(i + o, nx - 1); a++) ss->near[(c * ny + b) * nx + a] = 1;
  }
}

/* The box index of the node at offset o from the node at box index L. */
static PetscInt OffsetNode(const StiffAcc *sa, const MPMGridBox *box, PetscInt d, PetscInt L, PetscInt o)
{
  const PetscInt dx = o % sa->span - sa->span / 2, dy = (o / sa->span) % sa->span - sa->span / 2, dz = d == 3 ? o / (sa->span * sa->span) - sa->span / 2 : 0;
  return L + (dz * box->gn[1] + dy) * box->gn[0] + dx;
}

/* The sequential matrix of the stiff nodes (slot order), both triangles,
 * preallocated exactly: the accumulated blocks, and on the diagonal the
 * mass part Pi m Pi + m (I - Pi). */
static PetscErrorCode StiffMatrix(SemiSpecies *ss, const StiffAcc *sa)
{
  const MPMGridBox *box = &ss->vel->box;
  const PetscInt    d = ss->sim->dim, nb = d * d, h = (sa->noff - 1) / 2; /* h: the centre offset, the node itself */
  const double     *eye = d == 3 ? (const double[]){1, 0, 0, 0, 1, 0, 0, 0, 1} : (const double[]){1, 0, 0, 1};
  PetscInt         *cnt, *nnz;
  double            PP[9], B[9], Bt[9];

  PetscFunctionBeginUser;
  PetscCall(PetscCalloc2(ss->nstiff, &cnt, ss->nstiff * d, &nnz));
  for (PetscInt t = 0; t < ss->nstiff; t++) {
    cnt[t]++;
    for (PetscInt o = h + 1; o < sa->noff; o++)
      if (sa->used[t * sa->noff + o]) cnt[t]++, cnt[sa->slot[ss->kof[OffsetNode(sa, box, d, ss->loc[ss->sidx[t]], o)]]]++;
  }
  for (PetscInt t = 0; t < ss->nstiff; t++)
    for (PetscInt a = 0; a < d; a++) nnz[t * d + a] = cnt[t] * d;
  PetscCall(MatCreateSeqAIJ(PETSC_COMM_SELF, ss->nstiff * d, ss->nstiff * d, 0, nnz, &ss->P));
  PetscCall(MatSetBlockSize(ss->P, d));
  PetscCall(MatSetOption(ss->P, MAT_SYMMETRIC, PETSC_TRUE));
  PetscCall(MatSetOption(ss->P, MAT_SPD, PETSC_TRUE));
  PetscCall(PetscFree2(cnt, nnz));
  for (PetscInt t = 0; t < ss->nstiff; t++) {
    const PetscInt k = ss->sidx[t];
    const double  *P = ss->Pi + k * nb, m = ss->m[k];
    mpm_matmul((int)d, P, P, PP);
    for (PetscInt o = h; o < sa->noff; o++) {
      const double *acc = sa->acc + (t * sa->noff + o) * nb;
      PetscInt      u;
      if (o > h && !sa->used[t * sa->noff + o]) continue;
      u = sa->slot[ss->kof[OffsetNode(sa, box, d, ss->loc[k], o)]];
      for (PetscInt i = 0; i < nb; i++) B[i] = acc[i] + (o == h ? m * (PP[i] + eye[i] - P[i]) : 0);
      PetscCall(MatSetValuesBlocked(ss->P, 1, &t, 1, &u, B, INSERT_VALUES));
      if (o == h) continue;
      for (PetscInt a = 0; a < d; a++)
        for (PetscInt c = 0; c < d; c++) Bt[c * d + a] = B[a * d + c];
      PetscCall(MatSetValuesBlocked(ss->P, 1, &u, 1, &t, Bt, INSERT_VALUES));
    }
  }
  PetscCall(MatAssemblyBegin(ss->P, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(ss->P, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The stiff nodes, their block accumulated from the particles, the matrix
 * and its factorization (the stiff KSP's set-up). */
static PetscErrorCode StiffBlock(Semi *se, SemiSpecies *ss, double R)
{
  const MPMGridBox  *box = &ss->vel->box;
  const PetscInt     d = ss->sim->dim, nloc = (PetscInt)box->gn[0] * box->gn[1] * box->gn[2];
  const PetscScalar *dg;
  StiffAcc           sa;

  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_LINEARIZE, 0, 0, 0, 0));
  if (nloc > ss->cap_kof) {
    PetscCall(PetscFree2(ss->kof, ss->near));
    ss->cap_kof = nloc;
    PetscCall(PetscMalloc2(nloc, &ss->kof, nloc, &ss->near));
  }
  PetscCall(MatDestroy(&ss->P));
  PetscCall(VecDestroy(&ss->rs));
  PetscCall(VecDestroy(&ss->zs));
  PetscCall(VecGetArrayRead(ss->diag, &dg));
  StiffNodes(ss, R, dg);
  PetscCall(VecRestoreArrayRead(ss->diag, &dg));
  PetscCall(PetscFree(ss->sidx));
  PetscCall(PetscMalloc1(ss->nstiff + 1, &ss->sidx));
  sa.span = 2 * box->order + 1;
  sa.noff = d == 3 ? sa.span * sa.span * sa.span : sa.span * sa.span;
  PetscCall(PetscMalloc1(ss->nact, &sa.slot));
  for (PetscInt k = 0, n = 0; k < ss->nact; k++) {
    sa.slot[k] = ss->kof[ss->loc[k]] >= 0 ? n : -1;
    if (sa.slot[k] >= 0) ss->sidx[n++] = k;
  }
  if (ss->nstiff > 0) {
    StiffReach(ss);
    PetscCall(PetscCalloc2(ss->nstiff * sa.noff * d * d, &sa.acc, ss->nstiff * sa.noff, &sa.used));
    PetscCall(StiffAccumulate(ss, &sa));
    PetscCall(StiffMatrix(ss, &sa));
    PetscCall(PetscFree2(sa.acc, sa.used));
    PetscCall(MatCreateVecs(ss->P, &ss->rs, &ss->zs));
    PetscCall(KSPReset(se->sksp)); /* its size changes every step */
    PetscCall(KSPSetOperators(se->sksp, ss->P, ss->P));
    PetscCall(KSPSetUp(se->sksp)); /* the factorization */
  }
  PetscCall(PetscFree(sa.slot));
  PetscCall(PetscLogEventEnd(MPM_EVENT_LINEARIZE, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The preconditioner with the stiff block: Jacobi, then the stiff nodes'
 * values replaced by the block's solution. */
static PetscErrorCode StiffApply(PC pc, Vec r, Vec z)
{
  Semi              *se;
  SemiSpecies       *ss;
  const PetscScalar *rr, *dg;
  PetscScalar       *zz, *rs;
  PetscInt           d;

  PetscFunctionBeginUser;
  PetscCall(PCShellGetContext(pc, &ss));
  se = ss->semi;
  d  = ss->sim->dim;
  PetscCall(VecPointwiseDivide(z, r, ss->diag));
  if (!ss->nstiff) PetscFunctionReturn(PETSC_SUCCESS); /* Jacobi alone on this rank */
  PetscCall(VecGetArrayRead(r, &rr));
  PetscCall(VecGetArray(ss->rs, &rs));
  for (PetscInt t = 0; t < ss->nstiff; t++)
    for (PetscInt a = 0; a < d; a++) rs[t * d + a] = rr[ss->sidx[t] * d + a];
  PetscCall(VecRestoreArray(ss->rs, &rs));
  PetscCall(VecRestoreArrayRead(r, &rr));
  PetscCall(KSPSolve(se->sksp, ss->rs, ss->zs));
  PetscCall(VecGetArray(z, &zz));
  PetscCall(VecGetArrayRead(ss->zs, &dg));
  for (PetscInt t = 0; t < ss->nstiff; t++)
    for (PetscInt a = 0; a < d; a++) zz[ss->sidx[t] * d + a] = dg[t * d + a];
  PetscCall(VecRestoreArrayRead(ss->zs, &dg));
  PetscCall(VecRestoreArray(z, &zz));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* R(v) on the active nodes for u = Pi v + c given (the velocity set with
 * SetVelocity): R = Pi [m u - (dt f^n - beta dt^2 K u) - m w] + m (v - u). */
static PetscErrorCode Residual(SemiSpecies *ss, const double *v, const double *u, double *R)
{
  const PetscInt d = ss->sim->dim;

  PetscFunctionBeginUser;
  PetscCall(Stiffness(ss, ss->fk));
  for (PetscInt k = 0; k < ss->nact; k++) {
    double t[3];
    for (PetscInt a = 0; a < d; a++) t[a] = ss->m[k] * (u[k * d + a] - ss->w[k * d + a]) - ss->f0[k * d + a] - ss->fk[k * d + a];
    mpm_matvec((int)d, ss->Pi + k * d * d, t, R + k * d);
    for (PetscInt a = 0; a < d; a++) R[k * d + a] += ss->m[k] * ((v ? v[k * d + a] : 0.0) - u[k * d + a]);
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Everything the solve needs: the linearization, P2G, the active set, the
 * explicit force, the diagonal and the right-hand side b = -R(0). */
static PetscErrorCode Predict(const Semi *se, SemiSpecies *ss, double dt)
{
  MPMSpecies     *sp = ss->sp;
  MPMParticles   *p  = &sp->p;
  MPMParticleView v  = MPMIntegratorView(sp, &ss->f, se->transfer != MPM_TRANSFER_FLIP);
  PetscScalar    *fl, *b;

  PetscFunctionBeginUser;
  ss->dt = dt;
  PetscCall(GridSetUp(ss));
  PetscCall(Linearize(ss, se->beta, se->definite));
  PetscCall(MPMIntegratorP2G(sp, &v, 0.0)); /* mass and momentum (no stress impulse) */
  PetscCall(ActiveSet(ss));
  PetscCall(SystemSetUp(ss));
  PetscCall(VecZeroEntries(ss->vel->local)); /* once per step: afterwards only active / reached entries are written */
  PetscCall(VecZeroEntries(ss->ug));
  PetscCall(VecZeroEntries(ss->fg));
  PetscCall(VecZeroEntries(ss->fl));
  PetscCall(VecGetArray(ss->fl, &fl));
  mpm_p2g_divergence(&ss->vel->box, (int)p->n, MPMFieldReal(p, p->f_x), ss->A, fl, 0);
  PetscCall(VecRestoreArray(ss->fl, &fl));
  PetscCall(GatherForce(ss, ss->f0));
  PetscCall(Diagonal(ss));
  ss->nstiff = 0;
  ss->built  = se->stiff_ratio > 0 && ss->last_its >= STIFF_AFTER_ITS ? PETSC_TRUE : PETSC_FALSE; /* the same on every rank */
  if (ss->built) PetscCall(StiffBlock((Semi *)se, ss, se->stiff_ratio));
  PetscCall(SetVelocity(ss, ss->c));
  PetscCall(VecGetArray(ss->b, &b));
  PetscCall(Residual(ss, NULL, ss->c, b));
  for (PetscInt k = 0; k < ss->nact * ss->sim->dim; k++) b[k] = -b[k];
  PetscCall(VecRestoreArray(ss->b, &b));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* u = Pi x + c into ss->u and the ghosted field. */
static PetscErrorCode Velocity(SemiSpecies *ss)
{
  const PetscInt     d = ss->sim->dim;
  const PetscScalar *x;

  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(ss->x, &x));
  for (PetscInt k = 0; k < ss->nact; k++) {
    mpm_matvec((int)d, ss->Pi + k * d * d, x + k * d, ss->u + k * d);
    for (PetscInt a = 0; a < d; a++) ss->u[k * d + a] += ss->c[k * d + a];
  }
  PetscCall(VecRestoreArrayRead(ss->x, &x));
  PetscCall(SetVelocity(ss, ss->u));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A linear solve cannot refuse a velocity that inverts a particle, whose
 * clamp would flip the sign of its J_P: (I + dt grad u) F_E must keep
 * det > 0 everywhere (this rank). */
static PetscErrorCode Inverts(SemiSpecies *ss, PetscBool *bad)
{
  MPMParticles      *p = &ss->sp->p;
  const int          d = (int)p->dim, n = (int)p->n;
  const double      *Fe = MPMFieldReal(p, ss->f.f_Fe);
  const PetscScalar *ul;

  PetscFunctionBeginUser;
  *bad = ss->bad0;
  PetscCall(VecGetArrayRead(ss->vel->local, &ul));
  mpm_grid_gradient(&ss->vel->box, n, MPMFieldReal(p, p->f_x), ul, 0, ss->A);
  PetscCall(VecRestoreArrayRead(ss->vel->local, &ul));
  for (int q = 0; q < n && !*bad; q++) {
    const double *G = ss->A + q * d * d, *F = Fe + q * d * d;
    double        Fh[9];
    for (int a = 0; a < d; a++)
      for (int b = 0; b < d; b++) {
        double t = F[a * d + b];
        for (int c = 0; c < d; c++) t += ss->dt * G[a * d + c] * F[c * d + b];
        Fh[a * d + b] = t;
      }
    const double J = mpm_det(d, Fh);
    *bad = !(J > 0) || !PetscIsNormalReal(J);
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The Krylov method's first iterate: the predictor w = v^n + dt g, unless
 * -semi_implicit_ksp_initial_guess_nonzero false (then 0).  PETSc's test
 * stays relative to |b| (the momentum), so a guess near the solution only
 * shortens the solve. */
static PetscErrorCode FirstGuess(Semi *se, SemiSpecies *ss)
{
  PetscBool    nonzero;
  PetscScalar *x;

  PetscFunctionBeginUser;
  PetscCall(KSPGetInitialGuessNonzero(se->ksp, &nonzero));
  if (!nonzero) {
    PetscCall(VecZeroEntries(ss->x));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(VecGetArray(ss->x, &x));
  for (PetscInt k = 0; k < ss->nact * ss->sim->dim; k++) x[k] = ss->w[k];
  PetscCall(VecRestoreArray(ss->x, &x));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The solve for one species; *ok false when it failed or the solution
 * would invert a particle (any rank). */
static PetscErrorCode Solve(Semi *se, SemiSpecies *ss, PetscInt *its, PetscBool *ok)
{
  KSPConvergedReason reason;
  PetscBool          bad;
  double             nbad;

  PetscFunctionBeginUser;
  nbad = ss->bad0 ? 1.0 : 0.0;
  PetscCall(MPMGlobalMax(ss->sim->comm, &nbad, 1));
  *its = 0;
  *ok  = PETSC_FALSE;
  if (nbad > 0) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(KSPReset(se->ksp)); /* the active set, and with it the system's size, changes every step */
  PetscCall(KSPSetOperators(se->ksp, ss->J, ss->J));
  if (se->stiff_ratio > 0) {
    PC pc;
    PetscCall(KSPGetPC(se->ksp, &pc));
    PetscCall(PCSetType(pc, ss->built ? PCSHELL : PCJACOBI));
    if (ss->built) {
      PetscCall(PCShellSetContext(pc, ss));
      PetscCall(PCShellSetApply(pc, StiffApply));
      PetscCall(PCShellSetName(pc, "Jacobi with the stiff nodes' block"));
    }
  }
  PetscCall(FirstGuess(se, ss));
  PetscCall(KSPSolve(se->ksp, ss->b, ss->x));
  PetscCall(KSPGetConvergedReason(se->ksp, &reason));
  PetscCall(KSPGetIterationNumber(se->ksp, its));
  ss->last_its = *its;
  if (reason < 0) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(Velocity(ss));
  PetscCall(Inverts(ss, &bad));
  nbad = bad ? 1.0 : 0.0;
  PetscCall(MPMGlobalMax(ss->sim->comm, &nbad, 1));
  *ok = nbad > 0 ? PETSC_FALSE : PETSC_TRUE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* After the solve (u set by Velocity): the force there, dt f(u) = dt f^n -
 * beta dt^2 K u, the velocity without collisions v* = v^n + dt f(u) / m +
 * dt g, then collisions with friction and the impulses on the objects as in
 * the explicit step; slot 0 the held-by-friction flag, slots 1..d the
 * velocity (FLIP: 1+d..2d v^n), gathered for G2P.  Nodes without mass hold
 * zeros from P2G. */
static PetscErrorCode Finish(const Semi *se, SemiSpecies *ss)
{
  const MPMSim   sim = ss->sim;
  const PetscInt d = sim->dim, dof = ss->sp->grid->dof;
  const double   gs = MPMGravityScale(sim);
  PetscScalar   *a;

  PetscFunctionBeginUser;
  PetscCall(Stiffness(ss, ss->fk));
  PetscCall(PetscLogEventBegin(MPM_EVENT_GRID_UPDATE, 0, 0, 0, 0));
  PetscCall(VecGetArray(ss->sp->grid->global, &a));
  for (PetscInt k = 0; k < ss->nact; k++) {
    double      *node = a + ss->own[k] * dof, pos[3], v[3];
    const double m    = node[0];
    for (PetscInt c = 0; c < d; c++) {
      v[c] = node[1 + c] + (ss->f0[k * d + c] + ss->fk[k * d + c]) / m + ss->dt * gs * sim->gravity[c];
      if (dof > 1 + d) node[1 + d + c] = node[1 + c]; /* FLIP: v^n */
    }
    MPMLayoutOwnedNodeX(&sim->layout, ss->own[k], pos);
    const int held = MPMCollidersApply(sim->colliders, ss->species, pos, m, ss->dt, v) == MPM_CONTACT_HELD;
    for (PetscInt c = 0; c < d; c++) node[1 + c] = v[c];
    node[0] = held && se->held.on ? 1.0 : 0.0;
  }
  PetscCall(VecRestoreArray(ss->sp->grid->global, &a));
  PetscCall(PetscLogEventEnd(MPM_EVENT_GRID_UPDATE, 0, 0, 0, 0));
  PetscCall(MPMGhostGather(ss->sp->grid));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode SemiStep(MPMIntegrator integ, MPMSim sim, double dt, double *vmax)
{
  Semi     *se = (Semi *)integ->data;
  PetscBool ok = PETSC_TRUE;
  PetscInt  solves = 0, its_all = 0;

  PetscFunctionBeginUser;
  *vmax = 0;
  MPMCollidersAtTime(sim->colliders, sim->t);
  /* solve every species before moving any: a failure leaves the step undone */
  for (PetscInt s = 0; s < sim->nspecies && ok; s++) {
    SemiSpecies *ss = &se->s[s];
    PetscInt     its;
    PetscCall(Predict(se, ss, dt));
    if (se->check_operator) PetscCall(MPMIntegratorCheckOperator(sim->comm, ss->J, NULL));
    PetscCall(Solve(se, ss, &its, &ok));
    solves++;
    its_all += its;
  }
  se->st.value[STAT_SOLVES] = (double)solves;
  se->st.value[STAT_KSP]    = (double)its_all;
  se->st.total[STAT_SOLVES] += solves;
  se->st.total[STAT_KSP] += its_all;
  if (!ok) {
    const PetscBool retry = MPMStepControlFail(&se->sc, dt);
    se->st.total[STAT_HALVINGS] += 1;
    PetscCheck(retry, sim->comm, PETSC_ERR_NOT_CONVERGED,
               "Semi-implicit linear solve failed at t = %g s (step %" PetscInt_FMT ", dt = %g s, %" PetscInt_FMT " halvings in a row, dt down from %g s): lower -dt_max or -cfl, or raise -%sksp_max_it or -%smax_halvings",
               sim->t, sim->step + 1, dt, se->sc.halvings - 1, se->sc.dt_ref, integ->prefix, integ->prefix);
    PetscCall(PetscPrintf(sim->comm, "step %" PetscInt_FMT ": %s solve failed (or would invert a particle), retrying with dt = %g s\n", sim->step + 1, integ->type, 0.5 * dt));
    integ->rejected = PETSC_TRUE;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  se->st.value[STAT_HALVINGS] = (double)MPMStepControlAccept(&se->sc, dt);
  for (PetscInt s = 0; s < sim->nspecies; s++) {
    SemiSpecies    *ss = &se->s[s];
    MPMParticleView v  = MPMIntegratorView(ss->sp, &ss->f, se->transfer != MPM_TRANSFER_FLIP);
    double          vs = 0;
    PetscCall(Finish(se, ss));
    PetscCall(MPMIntegratorG2P(ss->sp, &v, dt, se->flip, se->held.rest, &vs));
    PetscCall(MPMIntegratorCommit(ss->sp, &ss->f));
    *vmax = PetscMax(*vmax, vs);
  }
  MPMCollidersAdvance(sim->colliders, dt);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ------------------------------------------------------------- set-up */
static const char *Opt(const MPMIntegrator integ, const char *name, char *buf, size_t len)
{
  PetscSNPrintf(buf, len, "-%s%s", integ->prefix, name);
  return buf;
}

static PetscErrorCode SemiOptions(MPMIntegrator integ, MPMSim sim)
{
  Semi    *se;
  PetscInt transfer = MPM_TRANSFER_APIC;
  char     title[256], o1[64], o2[64], o3[64], o4[64], o5[64], o6[64];

  PetscFunctionBeginUser;
  PetscCall(PetscNew(&se));
  integ->data = se;
  MPMStepControlInit(&se->sc, 6);
  se->beta         = 1.0;
  se->flip         = 0.95;
  se->definite     = PETSC_TRUE;
  se->cfl_hardened = 16.0;
  PetscCall(PetscSNPrintf(title, sizeof(title), "Semi-implicit integrator (Stomakhin et al. 2013 eq. 9; solver options -%sksp_*, -%spc_*)", integ->prefix, integ->prefix));
  PetscOptionsBegin(sim->comm, NULL, title, NULL);
  PetscCall(MPMHeldPICOptions(PetscOptionsObject, &se->held));
  PetscCall(MPMOptionsReal("-cfl_elastic", "Explicit integrator only (no elastic limit here): accepted so that one deck runs with either integrator", NULL, se->cfl_elastic, &se->cfl_elastic, NULL));
  PetscCall(MPMOptionsEList("-transfer", "Particle-grid transfer: apic, flip (PIC/FLIP blend, the seed's), aflip (APIC's C with the FLIP blend)", NULL, MPMTransferNames, 3, MPMTransferNames[transfer], &transfer, NULL));
  PetscCall(MPMOptionsReal("-flip_blend", "FLIP fraction of the blend (with -transfer flip or aflip) [-]", NULL, se->flip, &se->flip, NULL));
  PetscCall(PetscOptionsInt(Opt(integ, "max_halvings", o1, sizeof(o1)), "Halve dt at most this many times in a row when the solve fails (or let repeated halvings take dt below 2^-N of the step where they began), then stop with an error", NULL, se->sc.max_halvings, &se->sc.max_halvings, NULL));
  PetscCall(PetscOptionsBool(Opt(integ, "check_operator", o2, sizeof(o2)), "Every step, print the operator's symmetry |y'Ax - x'Ay| / |x'Ay| and its smallest Rayleigh quotient x'Ax / x'x on random vectors (tests; a symmetric solver needs both)", NULL, se->check_operator, &se->check_operator, NULL));
  PetscCall(PetscOptionsBool(Opt(integ, "definite", o3, sizeof(o3)), "Make each particle's stiffness positive semidefinite (Teran et al. 2005): compressed snow's negative rotational stiffness, linearized, blows up at large dt (false: the seed's exact Hessian)", NULL, se->definite, &se->definite, NULL));
  PetscCall(MPMOptionsReal(Opt(integ, "cfl_elastic", o4, sizeof(o4)), "dt <= this dx / (c_p sqrt(h)), h the materials' largest stiffening (snow's hardening exp(xi (1 - J_P))); 0: no limit.  Measured: 2D snowballs at dx = 1 cm and dt_max = 1e-3 s ran with 16, one blew up without (docs/validation.md, \"Snow\") [-]", NULL, se->cfl_hardened, &se->cfl_hardened, NULL));
  PetscCall(MPMOptionsReal(Opt(integ, "stiff_ratio", o6, sizeof(o6)), "Precondition the nodes whose Jacobi diagonal exceeds this many times their mass (compacted snow) by their block of the operator, assembled from the particles and factored (-semi_implicit_stiff_pc_*: Cholesky, CHOLMOD where PETSc has it), the others by their diagonal; built after a solve of 10 or more iterations; 0: Jacobi alone, matrix-free.  Measured on the 3D snowball through its impact at dx = 5 mm: R = 10 cuts the iterations by 25 %% and the time by 9 %% (docs/performance.md) [-]", NULL, se->stiff_ratio, &se->stiff_ratio, NULL));
  PetscCall(MPMOptionsReal(Opt(integ, "beta", o5, sizeof(o5)), "Implicitness of the linearized force: 0 explicit, 0.5 trapezoidal, 1 backward Euler (the seed's eq. 9; default 1, the stablest) [-]", NULL, se->beta, &se->beta, NULL));
  PetscOptionsEnd();
  se->transfer = (MPMTransfer)transfer;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode SemiCheck(MPMIntegrator integ, MPMSim sim)
{
  Semi *se = (Semi *)integ->data;

  PetscFunctionBeginUser;
  PetscCall(MPMHeldPICCheck(sim, &se->held));
  PetscCheck(se->sc.max_halvings >= 0 && se->sc.max_halvings <= 30, sim->comm, PETSC_ERR_USER_INPUT, "-%smax_halvings must be in [0, 30], got %" PetscInt_FMT, integ->prefix, se->sc.max_halvings);
  PetscCheck(se->cfl_hardened >= 0, sim->comm, PETSC_ERR_USER_INPUT, "-%scfl_elastic must be >= 0 (0: no limit), got %g", integ->prefix, se->cfl_hardened);
  PetscCheck(se->stiff_ratio == 0 || se->stiff_ratio >= 1, sim->comm, PETSC_ERR_USER_INPUT, "-%sstiff_ratio must be 0 (Jacobi alone) or >= 1 (a node's diagonal over its mass is at least 1), got %g", integ->prefix, se->stiff_ratio);
  PetscCheck(se->beta >= 0 && se->beta <= 1, sim->comm, PETSC_ERR_USER_INPUT, "-%sbeta must be in [0, 1] (0 explicit, 0.5 trapezoidal, 1 backward Euler), got %g", integ->prefix, se->beta);
  PetscCheck(se->flip >= 0 && se->flip <= 1, sim->comm, PETSC_ERR_USER_INPUT, "-flip_blend must be in [0, 1], got %g", se->flip);
  /* plausibility (warnings) */
  PetscCall(MPMWarnUnusual(sim->comm, "-semi_implicit_beta", se->beta, 0.5, 1, "", "below 0.5 the linearized step is not unconditionally stable (the seed: 1)"));
  if (se->cfl_hardened > 0) PetscCall(MPMWarnUnusual(sim->comm, "-semi_implicit_cfl_elastic", se->cfl_hardened, 1, 64, "", "multiples of the explicit limit on hardened material (16 measured stable; above, steps fail and halve)"));
  if (se->transfer == MPM_TRANSFER_APIC) se->flip = -1; /* the transfers take flip < 0 as APIC */
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The conjugate residual method of the seed on the symmetric system, Jacobi
 * preconditioned; the operator is matrix-free, so only preconditioners that
 * need its diagonal alone apply (-semi_implicit_pc_type jacobi or none).
 * With -semi_implicit_stiff_ratio the steps that build the stiff block
 * replace it by Jacobi with that block (PCSHELL, set in Solve), and the
 * block's own solver is the KSP se->sksp. */
static PetscErrorCode KrylovSetUp(Semi *se, MPMSim sim, const char *prefix)
{
  static const char *const pcs[] = {PCJACOBI, PCNONE};
  PC                       pc;
  PCType                   pt;
  PetscBool                match = PETSC_FALSE, has;
  char                     name[128];

  PetscFunctionBeginUser;
  PetscCall(KSPCreate(sim->comm, &se->ksp));
  PetscCall(KSPSetOptionsPrefix(se->ksp, prefix));
  PetscCall(KSPSetType(se->ksp, KSPCR));
  PetscCall(KSPSetTolerances(se->ksp, 1e-4, PETSC_DEFAULT, PETSC_DEFAULT, 500)); /* 2D snowball against a wall: 36 iterations per step (50 at 1e-6), its mean position 5e-5 m (dx / 200) from that at 1e-8 */
  PetscCall(KSPSetInitialGuessNonzero(se->ksp, PETSC_TRUE));
  PetscCall(KSPGetPC(se->ksp, &pc));
  PetscCall(PCSetType(pc, PCJACOBI));
  PetscCall(KSPSetFromOptions(se->ksp));
  PetscCall(MPMIntegratorMarkLazyOptions(prefix));
  if (se->stiff_ratio > 0) {
    PC spc;
    PetscCall(PetscSNPrintf(name, sizeof(name), "%sstiff_", prefix));
    PetscCall(KSPCreate(PETSC_COMM_SELF, &se->sksp));
    PetscCall(KSPSetOptionsPrefix(se->sksp, name));
    PetscCall(KSPSetType(se->sksp, KSPPREONLY));
    PetscCall(KSPGetPC(se->sksp, &spc));
    PetscCall(PCSetType(spc, PCCHOLESKY));
    PetscCall(PCFactorSetMatOrderingType(spc, MATORDERINGND));
    PetscCall(MatSolverTypeGet(MATSOLVERCHOLMOD, MATSEQAIJ, MAT_FACTOR_CHOLESKY, &has, NULL, NULL));
    if (has) PetscCall(PCFactorSetMatSolverType(spc, MATSOLVERCHOLMOD)); /* PETSc's own Cholesky (ND ordering) broke down on the 3D snowball at dx = 5 mm: 9 halved steps */
    PetscCall(KSPSetFromOptions(se->sksp));
    PetscCall(MPMIntegratorMarkLazyOptions(name));
  }
  PetscCall(PCGetType(pc, &pt));
  for (size_t i = 0; i < sizeof(pcs) / sizeof(pcs[0]) && pt && !match; i++) PetscCall(PetscStrcmp(pt, pcs[i], &match));
  PetscCheck(match, sim->comm, PETSC_ERR_USER_INPUT, "-%spc_type %s needs an assembled matrix, which the matrix-free semi-implicit operator does not have; allowed: jacobi, none", prefix, pt ? pt : "(none)");
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode SemiSetUp(MPMIntegrator integ, MPMSim sim)
{
  Semi *se = (Semi *)integ->data;
  char  name[2 * MPM_NAME_LEN], who[2 * MPM_NAME_LEN];

  PetscFunctionBeginUser;
  PetscCall(PetscSNPrintf(who, sizeof(who), "-integrator %s", integ->type));
  PetscCheck(sim->nspecies <= 8, sim->comm, PETSC_ERR_SUP, "%s supports at most 8 species", who);
  for (PetscInt s = 0; s < sim->nspecies; s++) {
    SemiSpecies *ss = &se->s[s];
    MPMSpecies  *sp = sim->species[s];
    for (PetscInt m = 0; m < sp->nmat; m++) PetscCall(MPMMaterialRequire(sp->mat[m], MPM_MATERIAL_DSTRESS, who));
    ss->semi    = se;
    ss->sim     = sim;
    ss->sp      = sp;
    ss->species = s;
    PetscCall(MPMIntegratorStressFields(sp, &ss->f));
    PetscCall(PetscSNPrintf(name, sizeof(name), "%s_momentum", sp->name));
    /* m and m v^n, then the held flag and v^{n+1} for G2P (and v^n for FLIP) */
    PetscCall(MPMGridFieldCreate(sim, name, mpm_transfer_dof((int)sim->dim, se->transfer != MPM_TRANSFER_APIC), PETSC_FALSE, &sp->grid));
    PetscCall(PetscSNPrintf(name, sizeof(name), "%s_velocity", sp->name));
    /* 3D: 4 values per node, the last one 0, so that the operator's kernel holds a node in one SIMD vector */
    PetscCall(MPMGridFieldCreate(sim, name, sim->dim == 3 ? 4 : sim->dim, PETSC_FALSE, &ss->vel));
  }
  PetscCall(KrylovSetUp(se, sim, integ->prefix)); /* reads the -<prefix>* options now, before the unused-option check */
  if (se->cfl_hardened > 0) se->wave_speed = MPMIntegratorWaveSpeed(sim);
  se->st.n = NSTAT;
  PetscCall(PetscStrncpy(se->st.name[STAT_SOLVES], "linear_solves", sizeof(se->st.name[0])));
  PetscCall(PetscStrncpy(se->st.name[STAT_KSP], "ksp_its", sizeof(se->st.name[0])));
  PetscCall(PetscStrncpy(se->st.name[STAT_HALVINGS], "dt_halvings", sizeof(se->st.name[0])));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* CFL on the particle velocity and the limit on hardened material
 * (-semi_implicit_cfl_elastic).  This rank's value: the driver takes the
 * minimum over ranks. */
static double SemiStableDt(MPMIntegrator integ, const MPMSim sim, double vmax, MPMDtLimit *why)
{
  Semi *se = (Semi *)integ->data;
  if (MPMIntegratorFixedDt(sim, why) > 0) return sim->dt_fixed;
  double dt = MPMStepControlDt(&se->sc, sim->dt_max, why);
  if (vmax > 0) dt = MPMDtMin(dt, why, sim->cfl * sim->layout.h / vmax, MPM_DT_CFL);
  if (se->wave_speed > 0) {
    double stiff = 0; /* 0: no hardening material, no limit */
    for (PetscInt s = 0; s < sim->nspecies; s++) {
      const double st = MPMIntegratorStiffening(sim->species[s], &se->s[s].f); /* once: PetscMax is a macro */
      stiff           = PetscMax(stiff, st);
    }
    if (stiff > 0) dt = MPMDtMin(dt, why, se->cfl_hardened * sim->layout.h / (se->wave_speed * sqrt(stiff)), MPM_DT_HARDENED);
  }
  return dt;
}

/* ------------------------------------------------------- bookkeeping */
static PetscErrorCode SemiStats(MPMIntegrator integ, MPMStepStats *s)
{
  PetscFunctionBeginUser;
  *s = ((Semi *)integ->data)->st;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The run totals and the step cap (restarts continue bit for bit). */
static PetscErrorCode SemiGetState(MPMIntegrator integ, PetscInt *n, double *state)
{
  const Semi *se = (const Semi *)integ->data;

  PetscFunctionBeginUser;
  for (int k = 0; k < NSTAT; k++) state[k] = se->st.total[k];
  MPMStepControlGetState(&se->sc, state + NSTAT);
  *n = NSTAT + 2;
  if (se->stiff_ratio > 0) /* whether the next step builds the stiff block: a restart continues bit for bit */
    for (PetscInt s = 0; s < se->s[0].sim->nspecies; s++) state[(*n)++] = (double)se->s[s].last_its;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode SemiSetState(MPMIntegrator integ, PetscInt n, const double *state)
{
  Semi *se = (Semi *)integ->data;

  PetscFunctionBeginUser;
  PetscCheck(n >= NSTAT + 1 && n <= NSTAT + 2 + 8, PETSC_COMM_SELF, PETSC_ERR_USER_INPUT, "the checkpoint's semi-implicit integrator state has %" PetscInt_FMT " values, expected %d (and one per species with -semi_implicit_stiff_ratio)", n, NSTAT + 2);
  for (int k = 0; k < NSTAT; k++) se->st.total[k] = state[k];
  MPMStepControlSetState(&se->sc, state + NSTAT, n > NSTAT + 1 ? PETSC_TRUE : PETSC_FALSE);
  for (PetscInt s = 0; s + NSTAT + 2 < n && s < 8; s++) se->s[s].last_its = (PetscInt)state[NSTAT + 2 + s];
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode SemiView(MPMIntegrator integ, char *buf, size_t len)
{
  const Semi *se = (const Semi *)integ->data;
  KSPType     kt;
  PCType      pt;
  PC          pc;

  PetscFunctionBeginUser;
  PetscCall(KSPGetType(se->ksp, &kt));
  PetscCall(KSPGetPC(se->ksp, &pc));
  PetscCall(PCGetType(pc, &pt));
  PetscCall(PetscSNPrintf(buf, len, "semi-implicit (beta %g) %s, %s/%s (-semi_implicit_ksp_*)", se->beta, se->transfer == MPM_TRANSFER_APIC ? "APIC" : (se->transfer == MPM_TRANSFER_FLIP ? "PIC/FLIP" : "affine PIC/FLIP"), kt, pt ? pt : "none"));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode SemiDestroy(MPMIntegrator integ)
{
  Semi *se = (Semi *)integ->data;

  PetscFunctionBeginUser;
  if (!se) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(KSPDestroy(&se->ksp));
  PetscCall(KSPDestroy(&se->sksp));
  for (int s = 0; s < 8; s++) {
    SemiSpecies *ss = &se->s[s];
    PetscCall(MPMGhostLayersDestroy(&ss->gl));
    PetscCall(VecDestroy(&ss->ug));
    PetscCall(VecDestroy(&ss->fg));
    PetscCall(VecDestroy(&ss->fl));
    PetscCall(VecDestroy(&ss->x));
    PetscCall(VecDestroy(&ss->b));
    PetscCall(VecDestroy(&ss->diag));
    PetscCall(MatDestroy(&ss->J));
    PetscCall(MatDestroy(&ss->P));
    PetscCall(VecDestroy(&ss->rs));
    PetscCall(VecDestroy(&ss->zs));
    PetscCall(PetscFree2(ss->kof, ss->near));
    PetscCall(PetscFree(ss->sidx));
    PetscCall(PetscFree3(ss->lin, ss->A, ss->S));
    PetscCall(PetscFree2(ss->own, ss->loc));
    PetscCall(PetscFree7(ss->m, ss->w, ss->Pi, ss->c, ss->f0, ss->fk, ss->u));
    PetscCall(PetscFree(ss->touch));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMIntegratorCreate_SemiImplicit(MPMIntegrator integ)
{
  PetscFunctionBeginUser;
  integ->ops.options   = SemiOptions;
  integ->ops.check     = SemiCheck;
  integ->ops.setup     = SemiSetUp;
  integ->ops.stable_dt = SemiStableDt;
  integ->ops.step      = SemiStep;
  integ->ops.stats     = SemiStats;
  integ->ops.get_state = SemiGetState;
  integ->ops.set_state = SemiSetState;
  integ->ops.view      = SemiView;
  integ->ops.destroy   = SemiDestroy;
  PetscFunctionReturn(PETSC_SUCCESS);
}
