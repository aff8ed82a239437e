/* What the integrators share: the particle fields of the stress state,
 * the derived outputs computed from them (volume, pressure, deviatoric
 * stress), and the end-of-step commit of the materials. */
#include "integrators.h"

const char *const MPMTransferNames[] = {"apic", "flip", "aflip", "MPMTransfer", "MPM_TRANSFER_", NULL};

/* ------------------------------------------------------ derived output */
/* Volume, pressure -tr(sigma)/d and the norm of the deviatoric Cauchy
 * stress, sigma = tau / J, J = det(F_E) Jp. */
static void KirchhoffInvariants(int d, const double *tau, double *tr, double *s2)
{
  *tr = 0;
  *s2 = 0;
  for (int a = 0; a < d; a++) *tr += tau[a * d + a];
  for (int a = 0; a < d; a++)
    for (int b = 0; b < d; b++) {
      const double s = tau[a * d + b] - (a == b ? *tr / d : 0.0);
      *s2 += s * s;
    }
}

static PetscErrorCode DerivedVolume(void *ctx, const MPMParticles *p, double *out)
{
  const MPMStressFields *f  = (const MPMStressFields *)ctx;
  const int             d  = (int)p->dim;
  const double         *V0 = MPMFieldReal(p, p->f_V0), *Fe = MPMFieldReal(p, f->f_Fe), *Jp = MPMFieldReal(p, f->f_Jp);
  PetscFunctionBeginUser;
  for (PetscInt q = 0; q < p->n; q++) out[q] = V0[q] * (mpm_det(d, Fe + q * d * d) * Jp[q]);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* out[q] = -tr(sigma)/d (pressure) or ||dev sigma|| of every particle. */
static void CauchyInvariant(const MPMStressFields *f, const MPMParticles *p, PetscBool pressure, double *out)
{
  const int     d  = (int)p->dim;
  const double *Fe = MPMFieldReal(p, f->f_Fe), *Jp = MPMFieldReal(p, f->f_Jp), *tau = MPMFieldReal(p, f->f_tau);
  for (PetscInt q = 0; q < p->n; q++) {
    const double J = mpm_det(d, Fe + q * d * d) * Jp[q];
    double       tr, s2;
    KirchhoffInvariants(d, tau + q * d * d, &tr, &s2);
    out[q] = pressure ? -tr / (d * J) : sqrt(s2) / J;
  }
}

static PetscErrorCode DerivedPressure(void *ctx, const MPMParticles *p, double *out)
{
  PetscFunctionBeginUser;
  CauchyInvariant((const MPMStressFields *)ctx, p, PETSC_TRUE, out);
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode DerivedDevStress(void *ctx, const MPMParticles *p, double *out)
{
  PetscFunctionBeginUser;
  CauchyInvariant((const MPMStressFields *)ctx, p, PETSC_FALSE, out);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* C (APIC's affine velocity), tau (the Kirchhoff stress the materials
 * commit), the materials' shared state, and the derived outputs. */
PetscErrorCode MPMIntegratorStressFields(MPMSpecies *sp, MPMStressFields *f)
{
  const PetscInt d = sp->p.dim;

  PetscFunctionBeginUser;
  for (PetscInt m = 0; m < sp->nmat; m++)
    PetscCheck(!(sp->mat[m]->flags & MPM_MATERIAL_GRAIN), PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT,
               "-%s_type grain: grains are moved by -integrator pbd only; the grid methods need a continuum material (drucker_prager, neo_hookean, hencky_elastic, snow, water)",
               sp->mat[m]->name);
  PetscCall(MPMParticlesRegisterField(&sp->p, "C", MPM_FIELD_REAL, d * d, NULL, MPM_FIELD_STATE, &f->f_C));
  sp->f_affine = f->f_C; /* an initial velocity gradient is APIC's C (Klar et al. s. 5.7) */
  PetscCall(MPMParticlesRegisterField(&sp->p, "tau", MPM_FIELD_REAL, d * d, NULL, MPM_FIELD_STATE, &f->f_tau));
  PetscCall(MPMMaterialsFields(sp, &f->mf));
  f->f_Fe = f->mf.f_Fe;
  f->f_Jp = f->mf.f_Jp;
  PetscCall(MPMSpeciesAddDerived(sp, "volume", 1, DerivedVolume, f));
  PetscCall(MPMSpeciesAddDerived(sp, "pressure", 1, DerivedPressure, f));
  PetscCall(MPMSpeciesAddDerived(sp, "dev_stress_norm", 1, DerivedDevStress, f));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Plasticity, hardening (K16-K18, K29) and the stress for the next step:
 * runs of consecutive particles of one material go to its commit. */
PetscErrorCode MPMIntegratorCommit(MPMSpecies *sp, const MPMStressFields *f)
{
  MPMParticles  *p   = &sp->p;
  const int32_t *mat = MPMFieldInt32(p, p->f_mat);

  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_CONSTITUTIVE, 0, 0, 0, 0));
  for (PetscInt q0 = 0, q1; q0 < p->n; q0 = q1) {
    const MPMMaterial m = sp->mat[mat[q0]];
    MPMMaterialPoints pts;
    q1 = MPMMaterialRunEnd(mat, q0, p->n);
    MPMMaterialsPoints(sp, &f->mf, f->f_tau, q0, &pts);
    m->ops.commit(m, (int)(q1 - q0), &pts);
  }
  PetscCall(PetscLogEventEnd(MPM_EVENT_CONSTITUTIVE, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Largest P-wave speed over everything that can put particles in the run:
 * every material at its own density and at the densities of the regions
 * (the lightest of a random variation) and emitters that use it. */
double MPMIntegratorWaveSpeed(const MPMSim sim)
{
  double c = 0;
  for (PetscInt s = 0; s < sim->nspecies; s++)
    for (PetscInt m = 0; m < sim->species[s]->nmat; m++) {
      const MPMMaterial mat = sim->species[s]->mat[m];
      const double cm       = mat->ops.wave_speed(mat, mat->density); /* once: PetscMax is a macro */
      c                     = PetscMax(c, cm);
    }
  for (PetscInt r = 0; r < sim->nreg; r++) {
    const MPMMaterial m = sim->species[sim->reg[r].species]->mat[sim->reg[r].mat];
    const double      cm = m->ops.wave_speed(m, sim->reg[r].density * (1.0 - sim->reg[r].density_variation));
    c                   = PetscMax(c, cm);
  }
  for (PetscInt e = 0; e < sim->nem; e++) {
    const MPMMaterial m = sim->species[sim->em[e].species]->mat[sim->em[e].mat];
    const double      cm = m->ops.wave_speed(m, sim->em[e].density);
    c                   = PetscMax(c, cm);
  }
  return c;
}

/* The largest ops.stiffening of the species' particles on this rank (at
 * least 1), or 0 if no material has the op (then nothing is read). */
double MPMIntegratorStiffening(MPMSpecies *sp, const MPMStressFields *f)
{
  MPMParticles  *p = &sp->p;
  const int32_t *mat;
  double         s = 1.0;
  PetscBool      any = PETSC_FALSE;
  for (PetscInt m = 0; m < sp->nmat; m++) any = any || sp->mat[m]->ops.stiffening;
  if (!any) return 0.0;
  mat = MPMFieldInt32(p, p->f_mat);
  for (PetscInt q0 = 0, q1; q0 < p->n; q0 = q1) {
    const MPMMaterial m = sp->mat[mat[q0]];
    MPMMaterialPoints pts;
    q1 = MPMMaterialRunEnd(mat, q0, p->n);
    if (!m->ops.stiffening) continue;
    MPMMaterialsPoints(sp, &f->mf, f->f_tau, q0, &pts);
    const double sm = m->ops.stiffening(m, (int)(q1 - q0), &pts); /* once: PetscMax is a macro */
    s               = PetscMax(s, sm);
  }
  return s;
}


/* The stable step of an explicit stress update: CFL on the fastest
 * particle, the elastic wave limit (raised by the square root of the
 * materials' stiffening, snow's hardening) and the user maximum (or the
 * fixed -dt).  fields: one per species.  This rank's value: the driver
 * takes the minimum over ranks. */
/* -dt given: 0 if not. */
double MPMIntegratorFixedDt(const MPMSim sim, MPMDtLimit *why)
{
  *why = sim->dt_fixed > 0 ? MPM_DT_FIXED : MPM_DT_MAX;
  return sim->dt_fixed > 0 ? sim->dt_fixed : 0.0;
}

double MPMIntegratorExplicitDt(const MPMSim sim, const MPMStressFields *fields, double wave_speed, double cfl_elastic, double vmax, MPMDtLimit *why)
{
  if (MPMIntegratorFixedDt(sim, why) > 0) return sim->dt_fixed;
  double dt = sim->dt_max, stiff = 1;
  for (PetscInt s = 0; s < sim->nspecies; s++) {
    const double st = MPMIntegratorStiffening(sim->species[s], &fields[s]); /* once: PetscMax is a macro */
    stiff           = PetscMax(stiff, st);
  }
  if (vmax > 0) dt = MPMDtMin(dt, why, sim->cfl * sim->layout.h / vmax, MPM_DT_CFL);
  if (wave_speed > 0) dt = MPMDtMin(dt, why, cfl_elastic * sim->layout.h / (wave_speed * sqrt(stiff)), stiff > 1 ? MPM_DT_HARDENED : MPM_DT_ELASTIC);
  return dt;
}

/* ----------------------------------------------------- transfers */
/* The transfers' view of a species' particles; affine = PETSC_FALSE leaves
 * C out (plain PIC/FLIP: C stays 0). */
MPMParticleView MPMIntegratorView(MPMSpecies *sp, const MPMStressFields *f, PetscBool affine)
{
  MPMParticles   *p = &sp->p;
  MPMParticleView v = {(int)p->n, MPMFieldReal(p, p->f_x), MPMFieldReal(p, p->f_v), MPMFieldReal(p, f->f_C), MPMFieldReal(p, f->f_Fe),
                       MPMFieldReal(p, f->f_tau), MPMFieldReal(p, p->f_m), MPMFieldReal(p, p->f_V0)};
  if (!affine) v.C = NULL;
  return v;
}

/* Floating-point operations of one particle's transfer, counted from the
 * inner loops of kernels/transfer.c for -log_view (an estimate: the
 * weights' set-up, 6 d, plus per stencil node, (order + 1)^d of them,
 * the weight and its gradient, d^2, and the affine momentum, force and
 * mass, 5 d^2 + 3 d for P2G; the velocity, C and grad v sums, 5 d^2 + 3 d
 * for G2P, about the same). */
static PetscLogDouble TransferFlops(const MPMGridBox *b)
{
  const int d = b->dim, nodes = d == 2 ? (b->order + 1) * (b->order + 1) : (b->order + 1) * (b->order + 1) * (b->order + 1);
  return 6.0 * d + nodes * (6.0 * d * d + 3.0 * d);
}

/* Transfer to the species' grid (K7, K9) with the explicit force (K23)
 * fused in (or kept apart, on a grid of the FLIP layout). */
PetscErrorCode MPMIntegratorP2G(MPMSpecies *sp, const MPMParticleView *v, double dt)
{
  MPMGridField *g = sp->grid;
  PetscScalar  *a;

  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_P2G, 0, 0, 0, 0));
  PetscCall(VecZeroEntries(g->local));
  PetscCall(VecGetArray(g->local, &a));
  mpm_p2g(&g->box, v, dt, a);
  PetscCall(PetscLogFlops(TransferFlops(&g->box) * v->n));
  PetscCall(VecRestoreArray(g->local, &a));
  PetscCall(PetscLogEventEnd(MPM_EVENT_P2G, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Transfer to the particles (K11-K15); vmax: the local max particle speed. */
PetscErrorCode MPMIntegratorG2P(MPMSpecies *sp, MPMParticleView *v, double dt, double flip, double rest, double *vmax)
{
  MPMGridField      *g = sp->grid;
  const PetscScalar *a;

  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_G2P, 0, 0, 0, 0));
  PetscCall(VecGetArrayRead(g->local, &a));
  *vmax = sqrt(mpm_g2p(&g->box, a, dt, flip, rest, v));
  PetscCall(PetscLogFlops(TransferFlops(&g->box) * v->n));
  PetscCall(VecRestoreArrayRead(g->local, &a));
  PetscCall(PetscLogEventEnd(MPM_EVENT_G2P, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Read inside the integrator's PetscOptionsBegin/End block. */
PetscErrorCode MPMHeldPICOptions(PetscOptionItems *PetscOptionsObject, MPMHeldPIC *h)
{
  PetscFunctionBeginUser;
  h->on   = PETSC_TRUE;
  h->rest = 1e-4;
  PetscCall(PetscOptionsBool("-held_pic", "Particles at rest next to a node held by wall or object friction drop the affine part C (transfer as PIC), so that static friction holds (docs/validation.md, \"Static friction\")", NULL, h->on, &h->on, NULL));
  PetscCall(MPMOptionsReal("-held_pic_rest", "With -held_pic, a particle is at rest when it moves at most this many cells per step [-]", NULL, h->rest, &h->rest, NULL));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMHeldPICCheck(MPMSim sim, const MPMHeldPIC *h)
{
  PetscFunctionBeginUser;
  PetscCheck(h->rest >= 0, sim->comm, PETSC_ERR_USER_INPUT, "-held_pic_rest must be >= 0 (cells per step), got %g", h->rest);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* SNESSolve and KSPSolve read their viewer options when they end, after
 * the run's check for unknown options: mark those as known here. */
PetscErrorCode MPMIntegratorMarkLazyOptions(const char *prefix)
{
  static const char *const lazy[] = {"-snes_converged_reason", "-snes_view", "-snes_view_pre", "-snes_view_solution", "-snes_view_update", "-snes_view_residual",
                                     "-ksp_converged_reason", "-ksp_view", "-ksp_view_pre", "-ksp_converged_rate", "-ksp_view_eigenvalues", "-ksp_view_singularvalues",
                                     "-ksp_view_mat", "-ksp_view_rhs", "-ksp_view_solution", "-ksp_view_final_residual", "-snes_test_jacobian",
                                     "-snes_test_jacobian_view", "-snes_test_jacobian_display", "-snes_test_jacobian_display_threshold"};
  PetscBool                flg;

  PetscFunctionBeginUser;
  for (size_t i = 0; i < sizeof(lazy) / sizeof(lazy[0]); i++) PetscCall(PetscOptionsHasName(NULL, prefix, lazy[i], &flg));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* -<prefix>check_operator: y'Ax against x'Ay and x'Ax / x'x for four random
 * pairs (a symmetric solver needs both), and, given the assembled
 * preconditioner matrix P, |P x - A x| / |A x|; printed. */
PetscErrorCode MPMIntegratorCheckOperator(MPI_Comm comm, Mat A, Mat P)
{
  PetscRandom rnd;
  Vec         x, y, Ax, Ay;
  double      asym = 0, rq = PETSC_INFINITY, pdiff = 0;

  PetscFunctionBeginUser;
  PetscCall(PetscRandomCreate(comm, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -1.0, 1.0));
  PetscCall(PetscRandomSetSeed(rnd, 7));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(MatCreateVecs(A, &x, &Ax));
  PetscCall(VecDuplicate(x, &y));
  PetscCall(VecDuplicate(x, &Ay));
  for (int k = 0; k < 4; k++) {
    PetscScalar a, b, xx, xAx;
    PetscCall(VecSetRandom(x, rnd));
    PetscCall(VecSetRandom(y, rnd));
    PetscCall(MatMult(A, x, Ax));
    PetscCall(MatMult(A, y, Ay));
    PetscCall(VecDot(y, Ax, &a));
    PetscCall(VecDot(x, Ay, &b));
    PetscCall(VecDot(x, x, &xx));
    PetscCall(VecDot(x, Ax, &xAx));
    asym = PetscMax(asym, PetscAbsReal(a - b) / PetscMax(PetscAbsReal(a), PetscAbsReal(b)));
    rq   = PetscMin(rq, xAx / xx);
    if (P) {
      PetscReal nd, na;
      PetscCall(MatMult(P, x, Ay));
      PetscCall(VecAXPY(Ay, -1.0, Ax));
      PetscCall(VecNorm(Ay, NORM_2, &nd));
      PetscCall(VecNorm(Ax, NORM_2, &na));
      pdiff = PetscMax(pdiff, nd / na);
    }
  }
  if (P) PetscCall(PetscPrintf(comm, "operator check: assembled matrix |P x - A x| / |A x| %.3e\n", pdiff));
  PetscCall(PetscPrintf(comm, "operator check: asymmetry %.3e, min Rayleigh quotient %.6e\n", asym, rq));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y));
  PetscCall(VecDestroy(&Ax));
  PetscCall(VecDestroy(&Ay));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A new preconditioner matrix on a grid field's layout (the rows of the
 * owned nodes, nl of them, block size bs), addressed by the ghosted node
 * numbers (MatSetValuesBlockedLocal). */
PetscErrorCode MPMIntegratorPmatCreate(MPI_Comm comm, const MPMGridField *f, PetscInt nl, PetscInt bs, MatType type, Mat *A)
{
  ISLocalToGlobalMapping map;

  PetscFunctionBeginUser;
  PetscCall(DMGetLocalToGlobalMapping(f->da, &map));
  PetscCall(MatCreate(comm, A));
  PetscCall(MatSetSizes(*A, nl, nl, PETSC_DETERMINE, PETSC_DETERMINE));
  PetscCall(MatSetType(*A, type));
  PetscCall(MatSetBlockSize(*A, bs));
  PetscCall(MatSetLocalToGlobalMapping(*A, map, map));
  PetscFunctionReturn(PETSC_SUCCESS);
}

void MPMStepControlInit(MPMStepControl *sc, PetscInt max_halvings)
{
  sc->max_halvings = max_halvings;
  sc->halvings     = 0;
  sc->dt_cap       = PETSC_INFINITY;
  sc->dt_ref       = 0.0;
}

PetscBool MPMStepControlFail(MPMStepControl *sc, double dt)
{
  sc->halvings++;
  /* a step that fails first at full size (not capped by earlier failures) starts a new run; dt is the same on every rank */
  if (sc->halvings == 1 && (!(sc->dt_cap < PETSC_INFINITY) || sc->dt_cap >= sc->dt_ref)) sc->dt_ref = dt;
  return sc->halvings <= sc->max_halvings && 0.5 * dt >= ldexp(sc->dt_ref, -(int)sc->max_halvings) ? PETSC_TRUE : PETSC_FALSE;
}

PetscInt MPMStepControlAccept(MPMStepControl *sc, double dt)
{
  const PetscInt h = sc->halvings;
  if (h) sc->dt_cap = dt; /* grow back from the step that worked */
  else if (sc->dt_cap < PETSC_INFINITY) sc->dt_cap *= 2;
  sc->halvings = 0;
  return h;
}

double MPMStepControlDt(const MPMStepControl *sc, double dt, MPMDtLimit *why) { return MPMDtMin(dt, why, sc->dt_cap, MPM_DT_SOLVER); }

void MPMStepControlGetState(const MPMStepControl *sc, double *state)
{
  state[0] = sc->dt_cap < PETSC_INFINITY ? sc->dt_cap : -1.0;
  state[1] = sc->dt_ref;
}

void MPMStepControlSetState(MPMStepControl *sc, const double *state, PetscBool has_ref)
{
  sc->dt_cap = state[0] > 0 ? state[0] : PETSC_INFINITY;
  sc->dt_ref = has_ref ? state[1] : 0.0; /* checkpoints before dt_ref: no floor until the next failure */
}

/* ---------------------------------------------- statistics as state */
PetscInt MPMStepStatsGetTotals(const MPMStepStats *s, double *state)
{
  for (PetscInt k = 0; k < s->n; k++) state[k] = s->total[k];
  return s->n;
}

PetscErrorCode MPMStepStatsSetTotals(MPMStepStats *s, const char *type, PetscInt n, const double *state)
{
  PetscFunctionBeginUser;
  PetscCheck(n == s->n, PETSC_COMM_SELF, PETSC_ERR_USER_INPUT, "the checkpoint's %s integrator state has %" PetscInt_FMT " values, expected %" PetscInt_FMT, type, n, s->n);
  for (PetscInt k = 0; k < n; k++) s->total[k] = state[k];
  PetscFunctionReturn(PETSC_SUCCESS);
}
