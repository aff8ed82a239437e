/* The sand-water mixture's coupled implicit system (Tampubolon et al. 2017,
 * eq. 22; -mixture_stress implicit; docs/design/mixture.md, "Step B"):
 *
 *   (M + dt D) v = M v^n + dt M g + dt f(v)
 *
 * on both grids at once, the unknown per owned node x = [v_s, v_w], the
 * drag D implicit and plasticity lagged (the sand's elastic law in the
 * solve, its return map in commit).  The forces are those of the trial
 * state of the velocity u = Pi x + c (the collision projection of the
 * step's contact set, decided on the first iterate and grown while the
 * solution enters walls):
 *   sand:  its elastic stress at Fhat = (I + dt grad u_s) F_E
 *          + (1 - n) F^n + the pore water's dW/du_s - its value at rest
 *   water: n F^n + dW/du_w - its value at rest
 * F^n the pore pressure's force at the step's start shared by node as in
 * the explicit step (n the porosity; without -mixture_buoyancy the water
 * takes all of it), and W the water's energy (water.c, mpm_water_trial) as
 * a function of its own volume change and, for pore water, of the
 * porosity change the skeleton's volume change makes through the nodes
 * (n = 1 - m_s / (rho_grain V_s)): the porosity chain.  Everything that
 * changes within the step is implicit (lagging the porosity made
 * Terzaghi's column blow up at 47 times the explicit step), and the
 * Jacobian is a Hessian: symmetric.
 *
 * Newton (PETSc SNES newtonls with its line search, prefix mixture_), the
 * tangent at every iterate (the sand's made positive semidefinite, Teran
 * et al.; the water's 2x2 Hessian in (volume change, porosity change)
 * clamped the same way), KSP MINRES.  The preconditioner (-mixture_pmat):
 * blocks, per node and direction the exact 2x2 block of M + dt D +
 * diag(dt^2 K), so that the iterations do not grow with c_E; or assembled,
 * M + dt D + dt^2 K without the porosity chain, for PETSc's PCs (GAMG by
 * default).  After the solve the velocity without collisions goes through
 * the colliders with friction, as in the explicit step. */
#include "mixture.h"

typedef struct {
  Mixture *mx;
  MPMSim   sim;
} Ctx;

static Ctx gctx; /* the SNES and shell callbacks' context (one mixture per run) */

static PetscErrorCode Scratch(MixtureSystem *sys, const MPMSim sim)
{
  const PetscInt d = sim->dim, ns = sim->species[0]->p.n, nw = sim->species[1]->p.n;

  PetscFunctionBeginUser;
  if (ns > sys->cap[0]) {
    PetscCall(PetscFree4(sys->lin, sys->As, sys->bs, sys->pis));
    sys->cap[0] = PetscMax(ns, (PetscInt)(1.25 * sys->cap[0]));
    PetscCall(PetscMalloc4(sys->cap[0], &sys->lin, sys->cap[0] * d * d, &sys->As, sys->cap[0], &sys->bs, sys->cap[0], &sys->pis));
  }
  if (nw > sys->cap[1]) {
    PetscCall(PetscFree4(sys->H, sys->Aw, sys->dn, sys->gn));
    sys->cap[1] = PetscMax(nw, (PetscInt)(1.25 * sys->cap[1]));
    PetscCall(PetscMalloc4(3 * sys->cap[1], &sys->H, sys->cap[1] * d * d, &sys->Aw, sys->cap[1], &sys->dn, sys->cap[1], &sys->gn));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ------------------------------------------------------ the operator */
/* ug[s] = Pi_s x_s (+ c_s), gathered to ul[s]; X = NULL: u = 0. */
static PetscErrorCode Project(MixtureSystem *sys, int d, Vec X, PetscBool affine)
{
  const PetscScalar *x = NULL;

  PetscFunctionBeginUser;
  if (X) PetscCall(VecGetArrayRead(X, &x));
  for (int s = 0; s < 2; s++) {
    PetscScalar *u;
    PetscCall(VecGetArray(sys->ug[s], &u));
    for (PetscInt n = 0; n < sys->nown; n++) {
      if (x) mpm_matvec(d, sys->Pi[s] + n * d * d, x + n * 2 * d + s * d, u + n * d);
      for (int a = 0; a < d; a++) u[n * d + a] = x ? u[n * d + a] + (affine ? sys->c[s][n * d + a] : 0.0) : 0.0;
    }
    PetscCall(VecRestoreArray(sys->ug[s], &u));
    PetscCall(MPMGhostGatherVec(sys->sv[s], sys->ug[s], sys->ul[s]));
  }
  if (X) PetscCall(VecRestoreArrayRead(X, &x));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* G = grad u of species s's particles into A (dim x dim each). */
static PetscErrorCode Gradients(MixtureSystem *sys, MPMSim sim, int s, double *A)
{
  MPMParticles      *p = &sim->species[s]->p;
  const PetscScalar *ul;

  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(sys->ul[s], &ul));
  mpm_grid_gradient(&sys->sv[s]->box, (int)p->n, MPMFieldReal(p, p->f_x), ul, 0, A);
  PetscCall(VecRestoreArrayRead(sys->ul[s], &ul));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* fg[s] = sum_p A_p grad w_ip on the owned nodes. */
static PetscErrorCode Divergence(MixtureSystem *sys, MPMSim sim, int s, const double *A)
{
  MPMParticles *p = &sim->species[s]->p;
  PetscScalar  *fl;

  PetscFunctionBeginUser;
  PetscCall(VecZeroEntries(sys->fl[s]));
  PetscCall(VecGetArray(sys->fl[s], &fl));
  mpm_p2g_divergence(&sys->sv[s]->box, (int)p->n, MPMFieldReal(p, p->f_x), A, fl, 0);
  PetscCall(VecRestoreArray(sys->fl[s], &fl));
  PetscCall(MPMGhostScatterAddVec(sys->sv[s], sys->fl[s], sys->fg[s]));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A = s I (the stress of a pressure-like scalar s, added) */
static void AddIsotropic(int d, double s, double *A)
{
  for (int a = 0; a < d; a++) A[a * d + a] += s;
}

/* The porosity chain, forward: the sand particles' volume changes b_q to
 * the nodes' volumes V_i + sum_q w_iq V_q b_q, their porosities (dn_i; the
 * slopes dn/dV at the iterate when nonlinear, used as they are when not)
 * and the water particles' porosity change dn_p = sum_i w_ip dn_i. */
static PetscErrorCode PorosityChange(Mixture *mx, MPMSim sim, PetscBool nonlinear)
{
  MixtureSystem *sys = &mx->sys;
  MPMParticles  *ps = &sim->species[0]->p, *pw = &sim->species[1]->p;
  PetscScalar   *a;

  PetscFunctionBeginUser;
  for (PetscInt q = 0; q < ps->n; q++) sys->pis[q] = mx->Vp[q] * sys->bs[q]; /* pis as scratch */
  PetscCall(VecZeroEntries(sys->scal->local));
  PetscCall(VecGetArray(sys->scal->local, &a));
  mpm_p2g_scalar(&sys->scal->box, (int)ps->n, MPMFieldReal(ps, ps->f_x), sys->pis, a, 0);
  PetscCall(VecRestoreArray(sys->scal->local, &a));
  PetscCall(MPMGhostScatterAdd(sys->scal));
  PetscCall(VecGetArray(sys->scal->global, &a));
  for (PetscInt n = 0; n < sys->nown; n++) {
    if (!nonlinear) {
      a[n] *= sys->dndV[n];
      continue;
    }
    const double V = sys->Vs[n] + a[n], np = MixturePorosity(mx, sys->ms[n], V);
    sys->dndV[n]   = np > MIXTURE_NMIN && np < 1 && V > 0 ? sys->ms[n] / (mx->rho_grain * V * V) : 0.0; /* 0 where clamped */
    a[n]           = np - MixturePorosity(mx, sys->ms[n], sys->Vs[n]);
  }
  PetscCall(VecRestoreArray(sys->scal->global, &a));
  PetscCall(MPMGhostGather(sys->scal));
  PetscCall(VecGetArray(sys->scal->local, &a));
  mpm_g2p_scalar(&sys->scal->box, (int)pw->n, MPMFieldReal(pw, pw->f_x), a, 0, sys->dn);
  PetscCall(VecRestoreArray(sys->scal->local, &a));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The chain backward (its transpose): the water particles' V0 dW/dn to
 * the sand particles' pressures pi_q = V_q sum_i w_iq dn/dV_i sum_p w_ip V0 dW/dn_p. */
static PetscErrorCode PorosityForce(Mixture *mx, MPMSim sim)
{
  MixtureSystem *sys = &mx->sys;
  MPMParticles  *ps = &sim->species[0]->p, *pw = &sim->species[1]->p;
  PetscScalar   *a;

  PetscFunctionBeginUser;
  PetscCall(VecZeroEntries(sys->scal->local));
  PetscCall(VecGetArray(sys->scal->local, &a));
  mpm_p2g_scalar(&sys->scal->box, (int)pw->n, MPMFieldReal(pw, pw->f_x), sys->gn, a, 0);
  PetscCall(VecRestoreArray(sys->scal->local, &a));
  PetscCall(MPMGhostScatterAdd(sys->scal));
  PetscCall(VecGetArray(sys->scal->global, &a));
  for (PetscInt n = 0; n < sys->nown; n++) a[n] *= sys->dndV[n];
  PetscCall(VecRestoreArray(sys->scal->global, &a));
  PetscCall(MPMGhostGather(sys->scal));
  PetscCall(VecGetArray(sys->scal->local, &a));
  mpm_g2p_scalar(&sys->scal->box, (int)ps->n, MPMFieldReal(ps, ps->f_x), a, 0, sys->pis);
  PetscCall(VecRestoreArray(sys->scal->local, &a));
  for (PetscInt q = 0; q < ps->n; q++) sys->pis[q] *= mx->Vp[q];
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The sand's elastic trial stresses from the gradients in As:
 * As = -dt V0 P(Fhat) F^T, Fhat = (I + dt G) F, and bs = dt tr G; the
 * tangents in lin (made positive semidefinite) when linearize.  *bad: a
 * deformation inverted or not finite (this rank). */
static void SandStresses(MixtureSystem *sys, MPMSim sim, Mixture *mx, PetscBool linearize, PetscBool *bad)
{
  MPMSpecies    *sp = sim->species[0];
  MPMParticles  *p  = &sp->p;
  const int      d = (int)p->dim, n = (int)p->n;
  const double  *V0 = MPMFieldReal(p, p->f_V0), *Fe = MPMFieldReal(p, mx->fields[0].f_Fe), dt = sys->dt;
  const int32_t *mat = MPMFieldInt32(p, p->f_mat);

  for (PetscInt q0 = 0, q1; q0 < n; q0 = q1) {
    const MPMMaterial m = sp->mat[mat[q0]];
    MPMMaterialPoints pts;
    q1 = MPMMaterialRunEnd(mat, q0, n);
    MPMMaterialsPoints(sp, &mx->fields[0].mf, mx->fields[0].f_tau, q0, &pts);
    for (PetscInt q = q0; q < q1; q++) {
      double             *A = sys->As + q * d * d, P[9] = {0}, Fh[9] = {0};
      const double       *F = Fe + q * d * d;
      MPMIsoLinearization lin, *l = linearize ? &sys->lin[q] : &lin;
      sys->bs[q] = 0;
      for (int a = 0; a < d; a++) sys->bs[q] += dt * A[a * d + a];
      mpm_matmul(d, A, F, Fh);
      for (int k = 0; k < d * d; k++) Fh[k] = F[k] + dt * Fh[k];
      const double J = mpm_det(d, Fh);
      if (!(J > 0) || !PetscIsNormalReal(J)) *bad = PETSC_TRUE;
      else {
        m->ops.elastic_trial(m, &pts, (int)(q - q0), Fh, P, l);
        if (linearize) mpm_iso_definite(l);
      }
      mpm_scaled_pft(d, -dt * V0[q], P, F, A);
    }
  }
}

/* H made positive semidefinite (its eigenvalues clamped at 0). */
static void Definite2(double *H)
{
  const double m = 0.5 * (H[0] + H[2]), r = sqrt(0.25 * (H[0] - H[2]) * (H[0] - H[2]) + H[1] * H[1]), l1 = m + r, l2 = m - r;
  if (l2 >= 0) return;
  if (l1 <= 0) {
    H[0] = H[1] = H[2] = 0;
    return;
  }
  /* keep the eigenvector of l1: H = l1 e e^T */
  double ex = H[1], ey = l1 - H[0], nrm = sqrt(ex * ex + ey * ey);
  if (nrm == 0) {
    ex  = 1;
    ey  = 0;
    nrm = 1;
  }
  ex /= nrm;
  ey /= nrm;
  H[0] = l1 * ex * ex;
  H[1] = l1 * ex * ey;
  H[2] = l1 * ey * ey;
}

/* The water's energy at the gradients in Aw and the porosity changes dn:
 * Aw = -dt V0 dW/da I, gn = V0 dW/dn; the Hessians (made positive
 * semidefinite) in H when linearize.  rest: a = dn = 0. */
static void WaterStresses(MixtureSystem *sys, MPMSim sim, Mixture *mx, PetscBool linearize, PetscBool rest, PetscBool *bad)
{
  MPMSpecies    *sp = sim->species[1];
  MPMParticles  *p  = &sp->p;
  const int      d = (int)p->dim, n = (int)p->n;
  const double  *V0 = MPMFieldReal(p, p->f_V0), dt = sys->dt;
  const int32_t *mat = MPMFieldInt32(p, p->f_mat);

  for (PetscInt q0 = 0, q1; q0 < n; q0 = q1) {
    const MPMMaterial m = sp->mat[mat[q0]];
    MPMMaterialPoints pts;
    q1 = MPMMaterialRunEnd(mat, q0, n);
    MPMMaterialsPoints(sp, &mx->fields[1].mf, mx->fields[1].f_tau, q0, &pts);
    for (PetscInt q = q0; q < q1; q++) {
      double *A = sys->Aw + q * d * d, a = 0, g[2] = {0, 0}, H[3];
      for (int c = 0; c < d; c++) a += rest ? 0.0 : dt * A[c * d + c];
      const double dn = rest || !sys->coupled ? 0.0 : sys->dn[q];
      if (!(1.0 + a > 0) || !PetscIsNormalReal(1.0 + a)) *bad = PETSC_TRUE;
      else m->ops.fluid_trial(m, &pts, (int)(q - q0), a, dn, sys->coupled, g, H);
      if (linearize) {
        Definite2(H);
        for (int k = 0; k < 3; k++) sys->H[3 * q + k] = V0[q] * H[k];
      }
      sys->gn[q] = V0[q] * g[1];
      for (int k = 0; k < d * d; k++) A[k] = 0;
      AddIsotropic(d, -dt * V0[q] * g[0], A);
    }
  }
}

/* fg = dt f(u) of both species on the owned nodes: the sand's elastic
 * stress and the water's energy, minus its force at rest (fW0: b carries
 * the pressure of the step's start, shared by node); X = NULL: the
 * water's force at rest itself, into fW0.  *bad the same on every rank. */
static PetscErrorCode Forces(MixtureSystem *sys, MPMSim sim, Mixture *mx, Vec X, PetscBool linearize, PetscBool *bad)
{
  const int      d = (int)sim->dim;
  const PetscInt ns = sim->species[0]->p.n;
  const PetscBool rest = X ? PETSC_FALSE : PETSC_TRUE;
  double          nbad;

  PetscFunctionBeginUser;
  *bad = PETSC_FALSE;
  PetscCall(Project(sys, d, X, PETSC_TRUE));
  if (rest) { /* fW0: the water's part only, at b = 0 */
    PetscCall(PetscArrayzero(sys->As, ns * d * d));
    PetscCall(PetscArrayzero(sys->bs, ns));
  } else {
    PetscCall(Gradients(sys, sim, 0, sys->As));
    SandStresses(sys, sim, mx, linearize, bad);
  }
  if (sys->coupled) PetscCall(PorosityChange(mx, sim, PETSC_TRUE));
  PetscCall(Gradients(sys, sim, 1, sys->Aw));
  WaterStresses(sys, sim, mx, linearize, rest, bad);
  PetscCall(Divergence(sys, sim, 1, sys->Aw));
  if (sys->coupled) {
    PetscCall(PorosityForce(mx, sim));
    for (PetscInt q = 0; q < ns; q++) AddIsotropic(d, -sys->dt * sys->pis[q], sys->As + q * d * d);
  }
  PetscCall(Divergence(sys, sim, 0, sys->As));
  for (int s = 0; s < 2; s++) {
    if (rest) PetscCall(VecCopy(sys->fg[s], sys->fW0[s]));
    else PetscCall(VecAXPY(sys->fg[s], -1.0, sys->fW0[s]));
  }
  nbad = *bad ? 1.0 : 0.0;
  PetscCall(MPMGlobalMax(sim->comm, &nbad, 1));
  *bad = nbad > 0 ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* fg = -K du of both species (dt^2 K the Hessian at the iterate): the
 * sand's dP = C : (dt G F) and the water's H (da, dn), with the porosity
 * chain both ways; du from the gathered ul. */
static PetscErrorCode StiffnessAction(MixtureSystem *sys, MPMSim sim, Mixture *mx)
{
  MPMParticles  *ps = &sim->species[0]->p, *pw = &sim->species[1]->p;
  const int      d  = (int)sim->dim;
  const double  *Fe = MPMFieldReal(ps, mx->fields[0].f_Fe), *V0s = MPMFieldReal(ps, ps->f_V0), dt = sys->dt;

  PetscFunctionBeginUser;
  PetscCall(Gradients(sys, sim, 0, sys->As));
  for (PetscInt q = 0; q < ps->n; q++) {
    double *A = sys->As + q * d * d, dF[9] = {0}, dP[9];
    const double *F = Fe + q * d * d;
    sys->bs[q] = 0;
    for (int a = 0; a < d; a++) sys->bs[q] += dt * A[a * d + a];
    mpm_matmul(d, A, F, dF);
    for (int k = 0; k < d * d; k++) dF[k] *= dt;
    mpm_iso_dpiola(&sys->lin[q], dF, dP);
    mpm_scaled_pft(d, -dt * V0s[q], dP, F, A);
  }
  if (sys->coupled) PetscCall(PorosityChange(mx, sim, PETSC_FALSE));
  PetscCall(Gradients(sys, sim, 1, sys->Aw));
  for (PetscInt q = 0; q < pw->n; q++) {
    double      *A = sys->Aw + q * d * d, a = 0;
    const double *H = sys->H + 3 * q, dn = sys->coupled ? sys->dn[q] : 0.0;
    for (int c = 0; c < d; c++) a += dt * A[c * d + c];
    sys->gn[q] = H[1] * a + H[2] * dn;
    for (int k = 0; k < d * d; k++) A[k] = 0;
    AddIsotropic(d, -dt * (H[0] * a + H[1] * dn), A);
  }
  PetscCall(Divergence(sys, sim, 1, sys->Aw));
  if (sys->coupled) {
    PetscCall(PorosityForce(mx, sim));
    for (PetscInt q = 0; q < ps->n; q++) AddIsotropic(d, -dt * sys->pis[q], sys->As + q * d * d);
  }
  PetscCall(Divergence(sys, sim, 0, sys->As));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The rows, residual (u = Pi x + c, fg = dt f(u), minus b) or the
 * operator's action (u = Pi x, fg = -K u):
 *   Y_s = Pi_s [m_s u_s + e (u_s - u_o) - fg_s - b_s] + m_s (X_s - u_s),
 * Y_s = X_s where the species has no mass. */
static PetscErrorCode Rows(MixtureSystem *sys, MPMSim sim, Vec X, PetscBool residual, Vec Y)
{
  const int          d = (int)sim->dim, dof = (int)sim->species[0]->grid->dof;
  const PetscScalar *x, *u[2], *f[2], *g[2];
  PetscScalar       *y;

  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(X, &x));
  PetscCall(VecGetArray(Y, &y));
  for (int s = 0; s < 2; s++) {
    PetscCall(VecGetArrayRead(sys->ug[s], &u[s]));
    PetscCall(VecGetArrayRead(sys->fg[s], &f[s]));
    PetscCall(VecGetArrayRead(sim->species[s]->grid->global, &g[s]));
  }
  for (PetscInt n = 0; n < sys->nown; n++)
    for (int s = 0; s < 2; s++) {
      const double  m = g[s][n * dof], *us = u[s] + n * d, *uo = u[1 - s] + n * d, *xs = x + n * 2 * d + s * d;
      double       *ys = y + n * 2 * d + s * d, t[3];
      if (m <= 0) {
        for (int a = 0; a < d; a++) ys[a] = xs[a];
        continue;
      }
      for (int a = 0; a < d; a++) t[a] = m * us[a] + sys->e[n] * (us[a] - uo[a]) - f[s][n * d + a] - (residual ? sys->b[n * 2 * d + s * d + a] : 0.0);
      mpm_matvec(d, sys->Pi[s] + n * d * d, t, ys);
      for (int a = 0; a < d; a++) ys[a] += m * (xs[a] - us[a]);
    }
  for (int s = 0; s < 2; s++) {
    PetscCall(VecRestoreArrayRead(sim->species[s]->grid->global, &g[s]));
    PetscCall(VecRestoreArrayRead(sys->fg[s], &f[s]));
    PetscCall(VecRestoreArrayRead(sys->ug[s], &u[s]));
  }
  PetscCall(VecRestoreArray(Y, &y));
  PetscCall(VecRestoreArrayRead(X, &x));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ------------------------------------------ the assembled preconditioner */
/* One particle's stiffness blocks between the nn nodes of its stencil,
 * (nn 2d) x (nn 2d) into Ke, projected by the nodes' Pi (Pi_a K_ab Pi_b):
 * sand K_ab = dt^2 V0 sum C_ikjl ya_k yb_l (the tangent at the iterate,
 * positive semidefinite) in the sand's slots; water dt^2 V0 W_aa ya yb^T in
 * the water's.  The porosity chain is left out: its blocks reach 7^dim
 * nodes, and taken as local (dn = (1 - n) dt div v_s at the particle) they
 * made MINRES slower, not faster (Terzaghi's column with Cholesky: 73
 * iterations per solve against 45 without). */
static void ParticleBlocks(MixtureSystem *sys, int s, PetscInt q, double V0, const PetscScalar *pil, int nn, const int *at, const double *y, int d, double *Ke)
{
  const int nd = 2 * d, ld = nn * nd;
  double    C[81];
  if (s == 0) mpm_iso_tangent(&sys->lin[q], C);
  for (int k = 0; k < ld * ld; k++) Ke[k] = 0;
  for (int a = 0; a < nn; a++)
    for (int b = 0; b < nn; b++) {
      double        K[9], T[9];
      const double *Pa = pil + (size_t)at[a] * 2 * d * d + s * d * d, *Pb = pil + (size_t)at[b] * 2 * d * d + s * d * d;
      if (s == 0) mpm_tangent_block(d, sys->dt * sys->dt * V0, C, y + a * d, y + b * d, K);
      else mpm_elastic_block(d, sys->dt * sys->dt, 0.0, sys->H[3 * q], y + a * d, y + b * d, K); /* H holds V0 W */
      mpm_matmul(d, Pa, K, T);
      mpm_matmul(d, T, Pb, K);
      for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) Ke[(a * nd + s * d + i) * ld + b * nd + s * d + j] = K[i * d + j];
    }
}

/* The matrix: the particles' blocks plus, per owned node, the projected
 * mass and drag [m_s + e, -e; -e, m_w + e] (m (I - Pi) + Pi (m + e) Pi on the
 * diagonal, -e Pi_s Pi_w off it; the identity for a species without mass).
 * pattern: zeros, for the MATPREALLOCATOR pass. */
static PetscErrorCode InsertPmat(Mixture *mx, MPMSim sim, Mat A, PetscBool pattern)
{
  MixtureSystem     *sys = &mx->sys;
  const int          d = (int)sim->dim, nd = 2 * d, dof = (int)sim->species[0]->grid->dof;
  const PetscScalar *pil, *g[2];
  PetscInt           node[MPM_MAX_STENCIL * MPM_MAX_STENCIL * MPM_MAX_STENCIL], r0;
  int                at[MPM_MAX_STENCIL * MPM_MAX_STENCIL * MPM_MAX_STENCIL];
  double             y[3 * MPM_MAX_STENCIL * MPM_MAX_STENCIL * MPM_MAX_STENCIL];

  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(sys->proj->local, &pil));
  for (int s = 0; s < 2; s++) {
    MPMParticles *p  = &sim->species[s]->p;
    const double *X  = MPMFieldReal(p, p->f_x), *V0 = MPMFieldReal(p, p->f_V0), *Fe = MPMFieldReal(p, mx->fields[s].f_Fe);
    for (PetscInt q = 0; q < p->n; q++) {
      const int nn = mpm_stencil_y(&sys->vel->box, X + q * d, Fe + q * d * d, at, y);
      if (pattern) PetscCall(PetscArrayzero(sys->Ke, nn * nd * nn * nd));
      else ParticleBlocks(sys, s, q, V0[q], pil, nn, at, y, d, sys->Ke);
      for (int a = 0; a < nn; a++) node[a] = at[a];
      PetscCall(MatSetValuesBlockedLocal(A, nn, node, nn, node, sys->Ke, ADD_VALUES));
    }
  }
  PetscCall(VecRestoreArrayRead(sys->proj->local, &pil));
  PetscCall(VecGetOwnershipRange(sys->x, &r0, NULL));
  for (int s = 0; s < 2; s++) PetscCall(VecGetArrayRead(sim->species[s]->grid->global, &g[s]));
  for (PetscInt n = 0; n < sys->nown; n++) {
    double   B[36] = {0};
    PetscInt row   = r0 / nd + n;
    for (int s = 0; s < 2; s++) {
      const double  m = g[s][n * dof], e = g[1 - s][n * dof] > 0 ? sys->e[n] : 0.0, *Pi = sys->Pi[s] + n * d * d, *Po = sys->Pi[1 - s] + n * d * d;
      double        PP[9], PQ[9];
      mpm_matmul(d, Pi, Pi, PP);
      mpm_matmul(d, Pi, Po, PQ);
      for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) {
          B[(s * d + i) * nd + s * d + j]       = m > 0 ? m * ((i == j) - Pi[i * d + j]) + (m + e) * PP[i * d + j] : (double)(i == j);
          B[(s * d + i) * nd + (1 - s) * d + j] = m > 0 ? -e * PQ[i * d + j] : 0.0;
        }
    }
    PetscCall(MatSetValuesBlocked(A, 1, &row, 1, &row, B, ADD_VALUES));
  }
  for (int s = 0; s < 2; s++) PetscCall(VecRestoreArrayRead(sim->species[s]->grid->global, &g[s]));
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Both species' projectors Pi onto the owned and ghost nodes, for the
 * particles' blocks (after the contact set changes too). */
static PetscErrorCode ProjectorsGather(MixtureSystem *sys, int d)
{
  PetscScalar *pi;

  PetscFunctionBeginUser;
  PetscCall(VecGetArray(sys->proj->global, &pi));
  for (PetscInt n = 0; n < sys->nown; n++)
    for (int s = 0; s < 2; s++) PetscCall(PetscArraycpy(pi + (n * 2 + s) * d * d, sys->Pi[s] + n * d * d, d * d));
  PetscCall(VecRestoreArray(sys->proj->global, &pi));
  PetscCall(MPMGhostGather(sys->proj));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode PmatCreate(MixtureSystem *sys, MPMSim sim, MatType type, Mat *A)
{
  PetscInt nl;

  PetscFunctionBeginUser;
  PetscCall(VecGetLocalSize(sys->x, &nl));
  PetscCall(MPMIntegratorPmatCreate(sim->comm, sys->vel, nl, 2 * sim->dim, type, A));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Once per step, after Prepare: the matrix with the step's pattern and the
 * projectors gathered to the ghost nodes; FormJacobian fills in values. */
static PetscErrorCode PmatPrepare(Mixture *mx, MPMSim sim)
{
  MixtureSystem *sys = &mx->sys;
  const int      d   = (int)sim->dim;
  Mat            pre, A;

  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_PMAT, 0, 0, 0, 0));
  PetscCall(ProjectorsGather(sys, d));
  PetscCall(PmatCreate(sys, sim, MATPREALLOCATOR, &pre));
  PetscCall(MatSetUp(pre));
  PetscCall(InsertPmat(mx, sim, pre, PETSC_TRUE));
  PetscCall(PmatCreate(sys, sim, MATAIJ, &A));
  PetscCall(MatPreallocatorPreallocate(pre, PETSC_TRUE, A));
  PetscCall(MatDestroy(&pre));
  PetscCall(MatSetOption(A, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_TRUE));
  PetscCall(MatSetOption(A, MAT_SPD, PETSC_TRUE));
  PetscCall(MatDestroy(&sys->P));
  sys->P = A;
  PetscCall(SNESSetJacobian(sys->snes, sys->J, sys->P, NULL, NULL));
  PetscCall(PetscLogEventEnd(MPM_EVENT_PMAT, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ------------------------------------------------- SNES and KSP callbacks */
static PetscErrorCode FormFunction(SNES snes, Vec X, Vec R, void *ctx)
{
  Ctx      *c = (Ctx *)ctx;
  PetscBool bad;

  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_RESIDUAL, 0, 0, 0, 0));
  PetscCall(Forces(&c->mx->sys, c->sim, c->mx, X, PETSC_FALSE, &bad));
  if (bad) {
    PetscCall(SNESSetFunctionDomainError(snes));
    PetscCall(VecSetInf(R));
  } else PetscCall(Rows(&c->mx->sys, c->sim, X, PETSC_TRUE, R));
  PetscCall(PetscLogEventEnd(MPM_EVENT_RESIDUAL, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode JacobianMult(Mat J, Vec X, Vec Y)
{
  Ctx *c;

  PetscFunctionBeginUser;
  PetscCall(MatShellGetContext(J, &c));
  PetscCall(PetscLogEventBegin(MPM_EVENT_JACOBIAN_MULT, 0, 0, 0, 0));
  PetscCall(Project(&c->mx->sys, (int)c->sim->dim, X, PETSC_FALSE));
  PetscCall(StiffnessAction(&c->mx->sys, c->sim, c->mx));
  PetscCall(Rows(&c->mx->sys, c->sim, X, PETSC_FALSE, Y));
  PetscCall(PetscLogEventEnd(MPM_EVENT_JACOBIAN_MULT, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The stiffness diagonal of species s into fg[s]: per particle
 * D[a][c][f] = dt^2 V0 dP_ac/dF_af, through y = F^T grad w. */
static PetscErrorCode StiffnessDiagonal(MixtureSystem *sys, MPMSim sim, int s)
{
  MPMParticles *p = &sim->species[s]->p;
  const int     d = (int)p->dim, n = (int)p->n;
  const double *V0 = MPMFieldReal(p, p->f_V0), dt2 = sys->dt * sys->dt;
  double       *D;
  PetscScalar  *fl;

  PetscFunctionBeginUser;
  PetscCall(PetscCalloc1((size_t)n * d * d * d + 1, &D));
  for (int q = 0; q < n; q++) {
    double *Dq = D + (size_t)q * d * d * d;
    if (s == 1) { /* the water's C_ijkl = dh delta_ij delta_kl */
      for (int a = 0; a < d; a++) Dq[(a * d + a) * d + a] = dt2 * sys->H[3 * q]; /* H holds V0 W_aa */
      continue;
    }
    double C[81];
    mpm_iso_tangent(&sys->lin[q], C);
    for (int a = 0; a < d; a++)
      for (int c = 0; c < d; c++)
        for (int f = 0; f < d; f++) Dq[(a * d + c) * d + f] = dt2 * V0[q] * C[(a * d + c) * d * d + a * d + f];
  }
  PetscCall(VecZeroEntries(sys->fl[s]));
  PetscCall(VecGetArray(sys->fl[s], &fl));
  mpm_p2g_diagonal(&sys->sv[s]->box, n, MPMFieldReal(p, p->f_x), MPMFieldReal(p, gctx.mx->fields[s].f_Fe), D, fl, 0);
  PetscCall(VecRestoreArray(sys->fl[s], &fl));
  PetscCall(PetscFree(D));
  PetscCall(MPMGhostScatterAddVec(sys->sv[s], sys->fl[s], sys->fg[s]));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The preconditioner: per owned node and direction a the 2x2 block
 *   [d_s  c ]   d = m (1 - Pi_aa) + sum_b Pi_ab Pi_ba (m + e + k_b),
 *   [c   d_w]   c = -e (Pi_s Pi_w)_aa,
 * of M + dt D + diag(dt^2 K) projected (k the stiffness diagonal), its
 * inverse in blk; the diagonal alone in diag (PCJACOBI). */
static PetscErrorCode NodeBlocks(MixtureSystem *sys, MPMSim sim)
{
  const int          d = (int)sim->dim, dof = (int)sim->species[0]->grid->dof;
  const PetscScalar *k[2], *g[2];

  PetscFunctionBeginUser;
  for (int s = 0; s < 2; s++) PetscCall(StiffnessDiagonal(sys, sim, s));
  for (int s = 0; s < 2; s++) {
    PetscCall(VecGetArrayRead(sys->fg[s], &k[s]));
    PetscCall(VecGetArrayRead(sim->species[s]->grid->global, &g[s]));
  }
  for (PetscInt n = 0; n < sys->nown; n++) {
    const double e = sys->e[n];
    for (int a = 0; a < d; a++) {
      double dd[2], c = 0;
      for (int s = 0; s < 2; s++) {
        const double  m  = g[s][n * dof];
        const double *Pi = sys->Pi[s] + n * d * d;
        double        t  = m * (1.0 - Pi[a * d + a]);
        for (int b = 0; b < d; b++) t += Pi[a * d + b] * Pi[b * d + a] * (m + e + k[s][n * d + b]);
        dd[s] = m <= 0 ? 1.0 : (t > 0 ? t : m);
      }
      if (g[0][n * dof] > 0 && g[1][n * dof] > 0)
        for (int b = 0; b < d; b++) c -= e * sys->Pi[0][n * d * d + a * d + b] * sys->Pi[1][n * d * d + b * d + a];
      double det = dd[0] * dd[1] - c * c;
      if (!(det > 0)) {
        c   = 0;
        det = dd[0] * dd[1];
      }
      sys->blk[(n * d + a) * 3 + 0] = dd[1] / det;
      sys->blk[(n * d + a) * 3 + 1] = -c / det;
      sys->blk[(n * d + a) * 3 + 2] = dd[0] / det;
      sys->diag[n * 2 * d + a]      = dd[0];
      sys->diag[n * 2 * d + d + a]  = dd[1];
    }
  }
  for (int s = 0; s < 2; s++) {
    PetscCall(VecRestoreArrayRead(sim->species[s]->grid->global, &g[s]));
    PetscCall(VecRestoreArrayRead(sys->fg[s], &k[s]));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Newton: the tangents at X (X passed the residual's domain check) and the
 * preconditioner's blocks; -mixture_snes_lag_jacobian makes it modified
 * Newton (measured: with the tangent of the step's start it diverges as
 * soon as water at zero pressure, whose tangent is 0 under the tension
 * cutoff, is compressed within the solve). */
static PetscErrorCode FormJacobian(SNES snes, Vec X, Mat J, Mat P, void *ctx)
{
  Ctx      *c = (Ctx *)ctx;
  PetscBool bad;

  PetscFunctionBeginUser;
  PetscCall(Forces(&c->mx->sys, c->sim, c->mx, X, PETSC_TRUE, &bad));
  PetscCall(NodeBlocks(&c->mx->sys, c->sim));
  if (c->mx->sys.assembled) {
    PetscCall(PetscLogEventBegin(MPM_EVENT_PMAT, 0, 0, 0, 0));
    PetscCall(MatZeroEntries(P));
    PetscCall(InsertPmat(c->mx, c->sim, P, PETSC_FALSE));
    PetscCall(PetscLogEventEnd(MPM_EVENT_PMAT, 0, 0, 0, 0));
  }
  PetscCall(MatAssemblyBegin(J, MAT_FINAL_ASSEMBLY)); /* a new state: PCJACOBI reads the new diagonal */
  PetscCall(MatAssemblyEnd(J, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode JacobianDiagonal(Mat J, Vec D)
{
  Ctx         *c;
  PetscScalar *dg;

  PetscFunctionBeginUser;
  PetscCall(MatShellGetContext(J, &c));
  PetscCall(VecGetArray(D, &dg));
  PetscCall(PetscArraycpy(dg, c->mx->sys.diag, c->mx->sys.nown * 2 * c->sim->dim));
  PetscCall(VecRestoreArray(D, &dg));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* PCSHELL: y = blk^-1 x, node by node and direction by direction. */
static PetscErrorCode NodeBlockApply(PC pc, Vec X, Vec Y)
{
  Ctx               *c;
  const PetscScalar *x;
  PetscScalar       *y;

  PetscFunctionBeginUser;
  PetscCall(PCShellGetContext(pc, &c));
  const MixtureSystem *sys = &c->mx->sys;
  const int            d   = (int)c->sim->dim;
  PetscCall(VecGetArrayRead(X, &x));
  PetscCall(VecGetArray(Y, &y));
  for (PetscInt n = 0; n < sys->nown; n++)
    for (int a = 0; a < d; a++) {
      const double *B = sys->blk + (n * d + a) * 3, xs = x[n * 2 * d + a], xw = x[n * 2 * d + d + a];
      y[n * 2 * d + a]     = B[0] * xs + B[1] * xw;
      y[n * 2 * d + d + a] = B[1] * xs + B[2] * xw;
    }
  PetscCall(VecRestoreArray(Y, &y));
  PetscCall(VecRestoreArrayRead(X, &x));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ----------------------------------------------------------- set-up */
static PetscErrorCode SolverDestroy(MixtureSystem *sys)
{
  PetscFunctionBeginUser;
  PetscCall(SNESDestroy(&sys->snes));
  PetscCall(MatDestroy(&sys->J));
  PetscCall(MatDestroy(&sys->P));
  PetscCall(VecDestroy(&sys->x));
  PetscCall(VecDestroy(&sys->r));
  for (int s = 0; s < 2; s++) {
    PetscCall(VecDestroy(&sys->ug[s]));
    PetscCall(VecDestroy(&sys->ul[s]));
    PetscCall(VecDestroy(&sys->fg[s]));
    PetscCall(VecDestroy(&sys->fl[s]));
    PetscCall(VecDestroy(&sys->fW0[s]));
    PetscCall(PetscFree2(sys->Pi[s], sys->c[s]));
  }
  PetscCall(PetscFree4(sys->b, sys->e, sys->blk, sys->diag));
  PetscCall(PetscFree3(sys->ms, sys->Vs, sys->dndV));
  sys->builds = 0;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MixtureSystemDestroy(MixtureSystem *sys)
{
  PetscFunctionBeginUser;
  PetscCall(SolverDestroy(sys));
  PetscCall(PetscFree4(sys->lin, sys->As, sys->bs, sys->pis));
  PetscCall(PetscFree4(sys->H, sys->Aw, sys->dn, sys->gn));
  PetscCall(PetscFree(sys->Ke));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* SNES (Newton with the line search on |R|),
 * KSP MINRES with the node-block preconditioner, on the layout of the
 * day (rebuilt when the slabs move); then the user's -mixture_* options. */
static PetscErrorCode SolverSetUp(Mixture *mx, MPMSim sim, const char *prefix)
{
  MixtureSystem *sys = &mx->sys;
  const PetscInt d   = sim->dim;
  PetscInt       nl;
  KSP            ksp;
  PC             pc;

  PetscFunctionBeginUser;
  if (sys->builds == sys->vel->builds) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(SolverDestroy(sys));
  sys->builds = sys->vel->builds;
  PetscCall(VecDuplicate(sys->vel->global, &sys->x));
  PetscCall(VecDuplicate(sys->vel->global, &sys->r));
  for (int s = 0; s < 2; s++) {
    PetscCall(VecDuplicate(sys->sv[s]->global, &sys->ug[s]));
    PetscCall(VecDuplicate(sys->sv[s]->global, &sys->fg[s]));
    PetscCall(VecDuplicate(sys->sv[s]->global, &sys->fW0[s]));
    PetscCall(VecDuplicate(sys->sv[s]->local, &sys->ul[s]));
    PetscCall(VecDuplicate(sys->sv[s]->local, &sys->fl[s]));
  }
  PetscCall(VecGetLocalSize(sys->x, &nl));
  sys->nown = nl / (2 * d);
  for (int s = 0; s < 2; s++) PetscCall(PetscMalloc2(sys->nown * d * d, &sys->Pi[s], sys->nown * d, &sys->c[s]));
  PetscCall(PetscMalloc4(sys->nown * 2 * d, &sys->b, sys->nown, &sys->e, sys->nown * d * 3, &sys->blk, sys->nown * 2 * d, &sys->diag));
  PetscCall(PetscMalloc3(sys->nown, &sys->ms, sys->nown, &sys->Vs, sys->nown, &sys->dndV));
  gctx.mx  = mx;
  gctx.sim = sim;
  PetscCall(MatCreateShell(sim->comm, nl, nl, PETSC_DETERMINE, PETSC_DETERMINE, &gctx, &sys->J));
  PetscCall(MatShellSetOperation(sys->J, MATOP_MULT, (void (*)(void))JacobianMult));
  PetscCall(MatShellSetOperation(sys->J, MATOP_GET_DIAGONAL, (void (*)(void))JacobianDiagonal));
  PetscCall(MatSetOption(sys->J, MAT_SYMMETRIC, PETSC_TRUE));
  PetscCall(SNESCreate(sim->comm, &sys->snes));
  PetscCall(SNESSetOptionsPrefix(sys->snes, prefix));
  PetscCall(SNESSetFunction(sys->snes, sys->r, FormFunction, &gctx));
  PetscCall(SNESSetJacobian(sys->snes, sys->J, sys->J, FormJacobian, &gctx));
  PetscCall(SNESSetType(sys->snes, SNESNEWTONLS)); /* with the backtracking line search on |R| */
  PetscCall(SNESSetTolerances(sys->snes, PETSC_DEFAULT, 1e-6, PETSC_DEFAULT, 15, PETSC_DEFAULT));
  PetscCall(SNESSetMaxLinearSolveFailures(sys->snes, 1000)); /* a MINRES stopped at max_it is an inexact step, not a failure */
  /* Eisenstat-Walker: loose linear solves while Newton is far.  Measured on
   * the 3D dam breach at dx = 3 cm, dt = 5e-3 s: with MINRES to rtol 1e-6
   * most solves stopped at 500 iterations and Newton failed at step 4 after
   * 4 halvings; with EW it ran through (-mixture_snes_ksp_ew false: off). */
  PetscCall(SNESKSPSetUseEW(sys->snes, PETSC_TRUE));
  PetscCall(SNESGetKSP(sys->snes, &ksp));
  PetscCall(KSPSetType(ksp, KSPMINRES));
  PetscCall(KSPSetTolerances(ksp, 1e-6, PETSC_DEFAULT, PETSC_DEFAULT, 500));
  PetscCall(KSPGetPC(ksp, &pc));
  if (sys->assembled) PetscCall(PCSetType(pc, PCGAMG));
  else {
    PetscCall(PCSetType(pc, PCSHELL));
    PetscCall(PCShellSetContext(pc, &gctx));
    PetscCall(PCShellSetApply(pc, NodeBlockApply));
    PetscCall(PCShellSetName(pc, "node blocks: the exact 2x2 drag block of M + dt D + diag(dt^2 K) per node and direction"));
  }
  PetscCall(SNESSetFromOptions(sys->snes));
  PetscCall(MPMIntegratorMarkLazyOptions(prefix));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Grid fields for the unknowns, and the solver objects (so that the
 * -mixture_snes_*, _ksp_*, _pc_* options are read before the run's check
 * for unused options). */
PetscErrorCode MixtureSystemOptions(Mixture *mx, MPMSim sim, const char *prefix)
{
  MixtureSystem *sys = &mx->sys;

  PetscFunctionBeginUser;
  PetscCall(MPMGridFieldCreate(sim, "mixture_velocity", 2 * sim->dim, PETSC_FALSE, &sys->vel));
  PetscCall(MPMGridFieldCreate(sim, "sand_velocity", sim->dim, PETSC_FALSE, &sys->sv[0]));
  PetscCall(MPMGridFieldCreate(sim, "water_velocity", sim->dim, PETSC_FALSE, &sys->sv[1]));
  PetscCall(MPMGridFieldCreate(sim, "mixture_porosity_change", 1, PETSC_FALSE, &sys->scal));
  sys->assembled = mx->pmat == MIXTURE_PMAT_ASSEMBLED ? PETSC_TRUE : PETSC_FALSE;
  if (sys->assembled) {
    const size_t nk = MPM_MAX_STENCIL * MPM_MAX_STENCIL * MPM_MAX_STENCIL * 6;
    PetscCall(MPMGridFieldCreate(sim, "mixture_projector", 2 * sim->dim * sim->dim, PETSC_FALSE, &sys->proj));
    PetscCall(PetscMalloc1(nk * nk, &sys->Ke));
  }
  for (PetscInt s = 0; s < 2; s++)
    for (PetscInt m = 0; m < sim->species[s]->nmat; m++) {
      PetscCall(MPMMaterialRequire(sim->species[s]->mat[m], MPM_MATERIAL_LAGGED, "-mixture_stress implicit"));
      if (s == 1 && (sim->species[s]->mat[m]->flags & MPM_MATERIAL_PORE) && mx->buoyancy) sys->coupled = PETSC_TRUE;
    }
  PetscCall(SolverSetUp(mx, sim, prefix));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ----------------------------------------------------------- the step */
/* Per owned node: the porosity (into the volume field, for the water
 * particles), the drag e = dt D, the right-hand sides b, the predictor
 * (the explicit stresses with the drag implicit) as the first iterate,
 * and the contact set decided on it. */
static PetscErrorCode Prepare(Mixture *mx, MPMSim sim, double dt)
{
  MixtureSystem *sys = &mx->sys;
  const int      d = (int)sim->dim, dof = (int)sim->species[0]->grid->dof;
  const double   gs = MPMGravityScale(sim);
  PetscScalar   *g[2], *av, *x, *sv = NULL;

  PetscFunctionBeginUser;
  for (int s = 0; s < 2; s++) PetscCall(VecGetArray(sim->species[s]->grid->global, &g[s]));
  PetscCall(VecGetArray(mx->volume->global, &av));
  if (mx->sat) PetscCall(VecGetArray(mx->sat->global, &sv));
  PetscCall(VecGetArray(sys->x, &x));
  for (PetscInt n = 0; n < sys->nown; n++) {
    const double *ns = g[0] + n * dof, *nw = g[1] + n * dof;
    const double  ms = ns[0] > 0 ? ns[0] : 0.0, mw = nw[0] > 0 ? nw[0] : 0.0, por = MixturePorosity(mx, ms, av[n]);
    const double  share = mx->buoyancy && ms > 0 ? 1.0 - por : 0.0, D = ms > 0 && mw > 0 ? por * MIXTURE_G * mw / mx->k_hat : 0.0;
    double       *bs = sys->b + n * 2 * d, *bw = bs + d, *xs = x + n * 2 * d, *xw = xs + d, pos[3];
    sys->ms[n] = ms;
    sys->Vs[n] = av[n];
    if (sv) sv[n] = MixtureSaturation(mx, ms, mw, por, av[n]);
    av[n]      = por;
    sys->e[n] = dt * D;
    for (int a = 0; a < d; a++) {
      const double gdt = dt * gs * sim->gravity[a], fw = nw[1 + d + a];
      bs[a] = ns[1 + a] + ms * gdt + share * fw; /* the pressure of the step's start shared by node, as the explicit step */
      bw[a] = nw[1 + a] + mw * gdt + (1.0 - share) * fw;
    }
    /* the first iterate: the 2x2 drag system without the stresses (with
     * them, explicit at many times their stable step, it inverted particles:
     * the 3D dam breach at 14 times the explicit step) */
    const double e = sys->e[n], A = ms + e, B = mw + e, det = A * B - e * e;
    for (int a = 0; a < d; a++) {
      const double gdt = dt * gs * sim->gravity[a], rs = ns[1 + a] + ms * gdt, rw = nw[1 + a] + mw * gdt;
      xs[a] = det > 0 ? (B * rs + e * rw) / det : 0.0;
      xw[a] = det > 0 ? (e * rs + A * rw) / det : 0.0;
    }
    MPMLayoutOwnedNodeX(&sim->layout, n, pos);
    for (int s = 0; s < 2; s++) {
      const double m  = s ? mw : ms;
      double      *Pi = sys->Pi[s] + n * d * d, *c = sys->c[s] + n * d, *xv = x + n * 2 * d + s * d, u[3];
      if (m <= 0 || (s == 0 && mx->fixed_sand)) { /* u = 0 */
        for (int k = 0; k < d * d; k++) Pi[k] = 0;
        for (int a = 0; a < d; a++) c[a] = xv[a] = 0;
        continue;
      }
      for (int a = 0; a < d; a++) u[a] = xv[a];
      MPMCollidersProject(sim->colliders, s, pos, dt, u, Pi); /* affine in x for the fixed set: c = Pi(x) - Pi x */
      mpm_matvec(d, Pi, xv, c);
      for (int a = 0; a < d; a++) c[a] = u[a] - c[a];
    }
  }
  PetscCall(VecRestoreArray(sys->x, &x));
  if (mx->sat) PetscCall(VecRestoreArray(mx->sat->global, &sv));
  PetscCall(VecRestoreArray(mx->volume->global, &av));
  for (int s = 0; s < 2; s++) PetscCall(VecRestoreArray(sim->species[s]->grid->global, &g[s]));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* After the solve: per species the solved velocity u (a node the contact
 * set holds keeps the wall's normal velocity and leaves at the next step),
 * through the colliders with friction, into the species' grid (slot 0: no
 * held flag, 1..dim: v).  -mixture_contact_release instead lets held nodes
 * go with the force the collision had to stop, v* = Pi u + (I - Pi) t / m
 * (t = b + dt f(u) - e (u - u_other)): explicit in the stiff pressure, it
 * crushed water particles next to the side walls of the 3D dam breach at
 * 14x the stable step (docs/performance.md, "Sand-water"). */
static PetscErrorCode Finish(Mixture *mx, MPMSim sim, PetscBool *bad)
{
  MixtureSystem     *sys = &mx->sys;
  const int          d = (int)sim->dim, dof = (int)sim->species[0]->grid->dof;
  const PetscScalar *u[2], *f[2];
  PetscScalar       *g[2];

  PetscFunctionBeginUser;
  PetscCall(Forces(sys, sim, mx, sys->x, PETSC_FALSE, bad));
  if (*bad) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscLogEventBegin(MPM_EVENT_GRID_UPDATE, 0, 0, 0, 0));
  for (int s = 0; s < 2; s++) {
    PetscCall(VecGetArrayRead(sys->ug[s], &u[s]));
    PetscCall(VecGetArrayRead(sys->fg[s], &f[s]));
    PetscCall(VecGetArray(sim->species[s]->grid->global, &g[s]));
  }
  for (PetscInt n = 0; n < sys->nown; n++) {
    double v[2][3] = {{0}}, pos[3];
    MPMLayoutOwnedNodeX(&sim->layout, n, pos);
    for (int s = 0; s < 2; s++) {
      const double  m = g[s][n * dof], *Pi = sys->Pi[s] + n * d * d, *us = u[s] + n * d;
      double        t[3], pu[3], pt[3];
      if (m <= 0 || (s == 0 && mx->fixed_sand)) continue;
      for (int a = 0; a < d; a++) v[s][a] = us[a];
      if (mx->release) {
        for (int a = 0; a < d; a++) t[a] = (sys->b[n * 2 * d + s * d + a] + f[s][n * d + a] - sys->e[n] * (us[a] - u[1 - s][n * d + a])) / m;
        mpm_matvec(d, Pi, us, pu);
        mpm_matvec(d, Pi, t, pt);
        for (int a = 0; a < d; a++) v[s][a] = pu[a] + t[a] - pt[a];
      }
      (void)MPMCollidersApply(sim->colliders, s, pos, m, sys->dt, v[s]);
    }
    for (int s = 0; s < 2; s++) {
      double *node = g[s] + n * dof;
      for (int c = 0; c < dof; c++) node[c] = 0;
      for (int a = 0; a < d; a++) node[1 + a] = v[s][a];
    }
  }
  for (int s = 0; s < 2; s++) {
    PetscCall(VecRestoreArray(sim->species[s]->grid->global, &g[s]));
    PetscCall(VecRestoreArrayRead(sys->fg[s], &f[s]));
    PetscCall(VecRestoreArrayRead(sys->ug[s], &u[s]));
  }
  PetscCall(PetscLogEventEnd(MPM_EVENT_GRID_UPDATE, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Nodes out of the contact set whose solved velocity enters a wall or
 * object join it (their projection becomes the one of the solution), so
 * that the solve can be repeated with them held: otherwise the collision
 * after the solve stops them where the solve let the water flow in, and
 * at many times the explicit step the particles next to a wall compressed
 * by up to 28 % (a water column at rest, dt = 1e-3 s, dx = 5 mm).
 * *changed: on any rank. */
static PetscErrorCode GrowContactSet(Mixture *mx, MPMSim sim, PetscBool *changed)
{
  MixtureSystem     *sys = &mx->sys;
  const int          d   = (int)sim->dim;
  const PetscScalar *x;
  double             nch = 0;

  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(sys->x, &x));
  for (PetscInt n = 0; n < sys->nown; n++)
    for (int s = 0; s < 2; s++) {
      double      *Pi = sys->Pi[s] + n * d * d, *c = sys->c[s] + n * d, u[3], P2[9], pos[3];
      const double *xv = x + n * 2 * d + s * d;
      PetscBool    free = PETSC_TRUE, moved = PETSC_FALSE;
      for (int k = 0; k < d * d; k++) free = free && Pi[k] == (double)(k % (d + 1) == 0);
      if (!free) continue; /* in the set already, or without mass (Pi = 0) */
      for (int a = 0; a < d; a++) u[a] = xv[a];
      MPMLayoutOwnedNodeX(&sim->layout, n, pos);
      MPMCollidersProject(sim->colliders, s, pos, sys->dt, u, P2);
      for (int a = 0; a < d; a++) moved = moved || u[a] != xv[a];
      if (!moved) continue;
      for (int k = 0; k < d * d; k++) Pi[k] = P2[k];
      mpm_matvec(d, Pi, xv, c);
      for (int a = 0; a < d; a++) c[a] = u[a] - c[a];
      nch += 1;
    }
  PetscCall(VecRestoreArrayRead(sys->x, &x));
  PetscCall(MPMGlobalMax(sim->comm, &nch, 1));
  *changed = nch > 0 ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* -mixture_check_operator: |y'Ax - x'Ay| / |x'Ay| and min x'Ax / x'x over
 * four random pairs, printed (the symmetric-operator test). */
static PetscErrorCode CheckOperator(MixtureSystem *sys, MPMSim sim)
{
  PetscFunctionBeginUser;
  PetscCall(MPMIntegratorCheckOperator(sim->comm, sys->J, sys->assembled ? sys->P : NULL));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* One step's solve on the grids P2G filled (both species' momenta and
 * explicit force impulses, summed to the owned nodes, and the sand's
 * volume): on success the species' grids hold the new velocities on the
 * owned nodes; on failure (*reason < 0) no particle has changed. */
PetscErrorCode MixtureSystemSolve(Mixture *mx, MPMSim sim, double dt, SNESConvergedReason *reason)
{
  MixtureSystem *sys = &mx->sys;
  PetscInt       its, kits;
  PetscBool      bad;

  PetscFunctionBeginUser;
  PetscCall(SolverSetUp(mx, sim, "mixture_"));
  PetscCall(Scratch(sys, sim));
  sys->dt    = dt;
  gctx.mx    = mx;
  gctx.sim   = sim;
  PetscCall(Prepare(mx, sim, dt));
  PetscCall(MixtureWaterPorosity(mx, sim->species[1])); /* n0 of the water's trial: the porosity of the step's start */
  PetscCall(Forces(sys, sim, mx, NULL, PETSC_FALSE, &bad)); /* fW0 */
  if (sys->assembled) PetscCall(PmatPrepare(mx, sim));
  if (mx->check_operator) { /* at the first iterate */
    PetscBool bad;
    PetscCall(Forces(sys, sim, mx, sys->x, PETSC_TRUE, &bad));
    PetscCall(NodeBlocks(sys, sim));
    if (sys->assembled) {
      PetscCall(MatZeroEntries(sys->P));
      PetscCall(InsertPmat(mx, sim, sys->P, PETSC_FALSE));
    }
    PetscCall(CheckOperator(sys, sim));
  }
  mx->st.value[MIXTURE_STAT_NEWTON] = mx->st.value[MIXTURE_STAT_KSP] = 0;
  for (int round = 0; round < 4; round++) { /* the solve, again while the contact set grows */
    PetscBool changed = PETSC_FALSE;
    PetscCall(SNESSolve(sys->snes, NULL, sys->x));
    PetscCall(SNESGetConvergedReason(sys->snes, reason));
    PetscCall(SNESGetIterationNumber(sys->snes, &its));
    PetscCall(SNESGetLinearSolveIterations(sys->snes, &kits));
    mx->st.value[MIXTURE_STAT_NEWTON] += (double)its;
    mx->st.value[MIXTURE_STAT_KSP] += (double)kits;
    mx->st.total[MIXTURE_STAT_NEWTON] += its;
    mx->st.total[MIXTURE_STAT_KSP] += kits;
    if (*reason < 0) break;
    PetscCall(GrowContactSet(mx, sim, &changed));
    if (!changed) break;
    if (sys->assembled) PetscCall(ProjectorsGather(sys, (int)sim->dim));
  }
  if (*reason < 0) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(Finish(mx, sim, &bad));
  if (bad) *reason = SNES_DIVERGED_FUNCTION_DOMAIN;
  else if (sys->coupled) { /* the water's commit takes the porosity of the solution, n0 + dn (the solve's, from Finish) */
    MPMParticles *p = &sim->species[1]->p;
    double       *nf = MPMFieldReal(p, mx->f_n);
    for (PetscInt q = 0; q < p->n; q++) nf[q] += sys->dn[q];
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}
