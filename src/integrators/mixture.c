/* Sand and water on two grids (Tampubolon et al. 2017, s. 3.3 and 4; the
 * formulation with its factors of porosity n in docs/design/mixture.md):
 *
 *   water: m_w a_w = n F + m_w g - D (v_w - v_s)
 *   sand:  m_s a_s = f_s + (1 - n) F + m_s g + D (v_w - v_s)
 *
 * per node.  F = -grad p V is the pore pressure's force, the divergence
 * of the water particles' stress -p I (their P2G force slot); the water
 * takes n of it and the sand the rest, its buoyancy (-mixture_buoyancy,
 * on by default; off is the seed's model, where the water takes all of F
 * and the sand none).  Either way the pressure's forces sum to zero and
 * the drag is an exchange: the two species' momentum changes by gravity
 * and the walls alone, to roundoff.  The drag is D = c_E V_mix,
 * c_E = n^2 rho_w g / k_hat (T13), V_mix = m_w / (n rho_w) the node's
 * volume of mixture: D = n g m_w / k_hat.  The porosity at a node comes
 * from the sand's mass and volume there, n = 1 - m_s / (rho_grain V_s),
 * V_s = sum w_ip V_p (the sand particles' current volume; h^d instead
 * would make the nodes at the sand's boundary look porous), clamped to
 * [0.05, 1]; it is interpolated to the water particles (field
 * "porosity"), whose pore water takes the pressure of its true density
 * (water.c), so that a compressing skeleton raises the pore pressure.
 * Hydrostatics: n F + m_w g = 0 gives grad p = rho_w g; steady seepage
 * q = n (v_w - v_s) = k_hat i (Darcy).
 *
 * -mixture_stress explicit (the default) integrates the stresses
 * explicitly (each species' P2G with its force kept apart, the FLIP grid
 * layout, APIC transfers) and the drag implicitly: per node and direction
 * the 2x2 system [m_s + dt D, -dt D; -dt D, m_w + dt D] v = rhs, solved
 * exactly, so the drag sets no step limit, the water's sound speed does.
 * -mixture_stress implicit solves the coupled system (T22) with Newton and
 * KSP MINRES (mixture_system.c): no elastic step limit.  Options under
 * -mixture_: hydraulic_conductivity, grain_density, buoyancy, fixed_sand,
 * stress, pmat, max_halvings, check_operator. */
#include "mixture.h"

static const char *const StressNames[] = {"explicit", "implicit"};
static const char *const PmatNames[]   = {"blocks", "assembled"};

static PetscErrorCode MixtureOptions(MPMIntegrator integ, MPMSim sim)
{
  Mixture *mx;

  PetscFunctionBeginUser;
  PetscCall(PetscNew(&mx));
  integ->data     = mx;
  mx->k_hat       = 1e-3;
  mx->rho_grain   = 2650;
  mx->cfl_elastic = 0.5;
  mx->buoyancy    = PETSC_TRUE;
  mx->f_n         = -1;
  MPMStepControlInit(&mx->sc, 6);
  PetscOptionsBegin(sim->comm, integ->prefix, "Sand-water mixture integrator", NULL);
  PetscCall(MPMOptionsReal("-hydraulic_conductivity", "k_hat of the sand: Darcy's q = k_hat i [m/s]", NULL, mx->k_hat, &mx->k_hat, NULL));
  PetscCall(MPMOptionsReal("-grain_density", "Density of the sand grains: porosity n = 1 - (sand mass per volume)/grain_density [kg/m^3]", NULL, mx->rho_grain, &mx->rho_grain, NULL));
  PetscCall(PetscOptionsBool("-buoyancy", "The pore pressure's force is shared, n to the water and 1 - n to the sand (off: the seed's model, all to the water: hydrostatic pore pressure n rho_w g)",
                             NULL, mx->buoyancy, &mx->buoyancy, NULL));
  PetscCall(PetscOptionsBool("-fixed_sand", "The sand is a rigid porous skeleton that does not move (Darcy verification)", NULL, mx->fixed_sand, &mx->fixed_sand, NULL));
  PetscCall(PetscOptionsEList("-stress",
                              "The stresses: explicit (the drag implicit per node; dt limited by the water's sound speed) or implicit (the coupled system (M + dt D) v = M v^n + dt M g + dt f(v), Newton with KSP MINRES: -mixture_snes_*, -mixture_ksp_*, -mixture_pc_*)",
                              NULL, StressNames, 2, StressNames[mx->stress], &mx->stress, NULL));
  PetscCall(PetscOptionsEList("-pmat",
                              "-mixture_stress implicit, the preconditioner: blocks (matrix-free: per node and direction the exact 2x2 block of M + dt D + diag(dt^2 K), PCSHELL) or assembled (M + dt D + dt^2 K assembled without the porosity chain's coupling; PCGAMG by default, or -mixture_pc_type cholesky, ...)",
                              NULL, PmatNames, 2, PmatNames[mx->pmat], &mx->pmat, NULL));
  PetscCall(PetscOptionsInt("-max_halvings", "-mixture_stress implicit: halve dt at most this many times in a row when the solve fails, then stop with an error", NULL, mx->sc.max_halvings, &mx->sc.max_halvings, NULL));
  PetscCall(PetscOptionsBool("-contact_release", "-mixture_stress implicit: after the solve, let nodes the contact set held leave a wall with the force over mass (explicit in the stiff forces: unstable at large dt); default they keep the solved velocity and leave at the next step", NULL, mx->release, &mx->release, NULL));
  PetscCall(PetscOptionsBool("-check_operator", "-mixture_stress implicit: every step, print the operator's symmetry |y'Ax - x'Ay| / |x'Ay| and smallest Rayleigh quotient on random vectors (tests)", NULL, mx->check_operator, &mx->check_operator, NULL));
  PetscOptionsEnd();
  PetscOptionsBegin(sim->comm, NULL, "Sand-water mixture integrator: transfer and elastic step", NULL);
  PetscCall(MPMOptionsReal("-cfl_elastic", "Elastic limit: dt <= cfl_elastic dx / c_p [-]", NULL, mx->cfl_elastic, &mx->cfl_elastic, NULL));
  PetscCall(MPMOptionsEList("-transfer", "Particle-grid transfer (the mixture: apic only)", NULL, MPMTransferNames, 3, MPMTransferNames[MPM_TRANSFER_APIC], &mx->transfer, NULL));
  PetscOptionsEnd();
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MixtureCheck(MPMIntegrator integ, MPMSim sim)
{
  Mixture *mx = (Mixture *)integ->data;

  PetscFunctionBeginUser;
  PetscCheck(mx->k_hat > 0, sim->comm, PETSC_ERR_USER_INPUT, "-mixture_hydraulic_conductivity must be > 0 m/s, got %g", mx->k_hat);
  PetscCheck(mx->rho_grain > 0, sim->comm, PETSC_ERR_USER_INPUT, "-mixture_grain_density must be > 0 kg/m^3, got %g", mx->rho_grain);
  PetscCheck(mx->cfl_elastic > 0 && mx->cfl_elastic <= 1, sim->comm, PETSC_ERR_USER_INPUT, "-cfl_elastic must be in (0, 1], got %g", mx->cfl_elastic);
  PetscCheck(mx->sc.max_halvings >= 0 && mx->sc.max_halvings <= 30, sim->comm, PETSC_ERR_USER_INPUT, "-mixture_max_halvings must be in [0, 30], got %" PetscInt_FMT, mx->sc.max_halvings);
  PetscCheck(mx->transfer == MPM_TRANSFER_APIC, sim->comm, PETSC_ERR_USER_INPUT, "-integrator mixture transfers with APIC (the seed's choice); -transfer %s is not supported, allowed: apic",
             MPMTransferNames[mx->transfer]);
  for (PetscInt m = 0; m < sim->species[0]->nmat; m++) {
    const MPMMaterial mat = sim->species[0]->mat[m];
    PetscCheck(!(mat->flags & MPM_MATERIAL_UNILATERAL) || mx->stress == MIXTURE_STRESS_IMPLICIT, sim->comm, PETSC_ERR_USER_INPUT,
               "-%s_unilateral shapes the elastic energy of the implicit solve; it needs -mixture_stress implicit (got explicit)", mat->name);
    PetscCheck(mat->density < mx->rho_grain, sim->comm, PETSC_ERR_USER_INPUT,
               "-%s_density %g kg/m^3 is the sand's dry bulk density and must be below -mixture_grain_density %g (the porosity would be negative)", mat->name, mat->density,
               mx->rho_grain);
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The drag's explicit limit: m_s dv_s/dt = D (v_w - v_s) = -m_w dv_w/dt,
 * D = c_E V_mix, relaxes v_w - v_s at the rate c_E (1 / (n rho_w) +
 * 1 / rho_s) (per unit volume of mixture: n rho_w of water, rho_s of sand),
 * = n g / k_hat (1 + n rho_w / rho_s); forward Euler on it is stable for
 * dt <= 2 / rate, the limit of the seed's "stiff momentum exchange" (the
 * explicit stresses solve the drag per node exactly and do not have it).
 * From each sand material's seeded porosity n = 1 - rho_s / rho_grain, the
 * saturated bed's: a node's own masses would put a sliver of sand under
 * free water at rates of 1e8 /s, a property of the grid, not of the soil. */
static double DragRate(const Mixture *mx, const MPMSim sim)
{
  const MPMSpecies *sp   = sim->species[0];
  double            rate = 0;
  for (PetscInt m = 0; m < sp->nmat; m++) {
    const double rho_s = sp->mat[m]->density, n = 1.0 - rho_s / mx->rho_grain;
    rate               = PetscMax(rate, n * MIXTURE_G / mx->k_hat * (mx->fixed_sand ? 1.0 : 1.0 + n * mx->rho_w / rho_s)); /* a fixed skeleton: D / m_w */
  }
  return rate;
}

static PetscErrorCode MixtureSetUp(MPMIntegrator integ, MPMSim sim)
{
  Mixture *mx = (Mixture *)integ->data;
  char     name[2 * MPM_NAME_LEN];

  PetscFunctionBeginUser;
  for (PetscInt s = 0; s < 2; s++) {
    MPMSpecies *sp = sim->species[s];
    PetscCall(MPMIntegratorStressFields(sp, &mx->fields[s]));
    PetscCall(PetscSNPrintf(name, sizeof(name), "%s_momentum", sp->name));
    PetscCall(MPMGridFieldCreate(sim, name, mpm_transfer_dof((int)sim->dim, 1), PETSC_FALSE, &sp->grid)); /* the force kept apart from the momentum */
  }
  PetscCall(MPMGridFieldCreate(sim, "sand_volume", 1, PETSC_FALSE, &mx->volume));
  mx->f_sat = -1;
  mx->rho_w = sim->species[1]->nmat ? sim->species[1]->mat[0]->true_density : 1000.0;
  for (PetscInt m = 0; m < sim->species[0]->nmat; m++)
    if ((sim->species[0]->mat[m]->flags & MPM_MATERIAL_WET) && !mx->sat) PetscCall(MPMGridFieldCreate(sim, "sand_saturation", 1, PETSC_FALSE, &mx->sat));
  mx->wave_speed = MPMIntegratorWaveSpeed(sim);
  mx->drag_rate  = DragRate(mx, sim);
  if (mx->stress == MIXTURE_STRESS_IMPLICIT) {
    static const char *const names[MIXTURE_NSTAT] = {"newton_its", "ksp_its", "dt_halvings", "dt_over_explicit", "dt_over_sound", "dt_over_drag"};
    PetscCall(MixtureSystemOptions(mx, sim, integ->prefix));
    mx->st.n = MIXTURE_NSTAT;
    for (int k = 0; k < MIXTURE_NSTAT; k++) PetscCall(PetscStrncpy(mx->st.name[k], names[k], sizeof(mx->st.name[k])));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* V_s at the nodes: sum w_ip V0 det(F_E) J_P of the sand particles. */
static PetscErrorCode SandVolume(Mixture *mx, MPMSpecies *sp)
{
  MPMParticles          *p = &sp->p;
  const MPMStressFields *f = &mx->fields[0];
  const int              d = (int)p->dim;
  const double          *V0 = MPMFieldReal(p, p->f_V0), *Fe = MPMFieldReal(p, f->f_Fe), *Jp = MPMFieldReal(p, f->f_Jp);
  PetscScalar           *a;

  PetscFunctionBeginUser;
  if (p->n > mx->nVp) {
    PetscCall(PetscFree(mx->Vp));
    mx->nVp = 2 * p->n;
    PetscCall(PetscMalloc1(mx->nVp, &mx->Vp));
  }
  for (PetscInt q = 0; q < p->n; q++) mx->Vp[q] = V0[q] * mpm_det(d, Fe + q * d * d) * Jp[q];
  PetscCall(VecZeroEntries(mx->volume->local));
  PetscCall(VecGetArray(mx->volume->local, &a));
  mpm_p2g_scalar(&mx->volume->box, (int)p->n, MPMFieldReal(p, p->f_x), mx->Vp, a, 0);
  PetscCall(VecRestoreArray(mx->volume->local, &a));
  PetscCall(MPMGhostScatterAdd(mx->volume));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The porosity at the water particles (x^n), from the nodes' (which
 * GridUpdate left in the volume field): their pressure is that of the
 * water's true density (water.c's commit). */
PetscErrorCode MixtureWaterPorosity(Mixture *mx, MPMSpecies *sp)
{
  MPMParticles      *p = &sp->p;
  const PetscScalar *a;

  PetscFunctionBeginUser;
  if (mx->f_n < 0) PetscCall(MPMParticlesFindField(p, "porosity", &mx->f_n));
  PetscCall(MPMGhostGather(mx->volume));
  PetscCall(VecGetArrayRead(mx->volume->local, &a));
  mpm_g2p_scalar(&mx->volume->box, (int)p->n, MPMFieldReal(p, p->f_x), a, 0, MPMFieldReal(p, mx->f_n));
  PetscCall(VecRestoreArrayRead(mx->volume->local, &a));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Wet sand: the saturation at the sand particles (x^n), from the nodes',
 * for their cohesion in commit (Tampubolon et al. 2017, s. 4.3.3, with the
 * pores' saturation in place of the seed's overlap indicator). */
static PetscErrorCode SandSaturation(Mixture *mx, MPMSpecies *sp)
{
  MPMParticles      *p = &sp->p;
  const PetscScalar *a;

  PetscFunctionBeginUser;
  if (!mx->sat) PetscFunctionReturn(PETSC_SUCCESS);
  if (mx->f_sat < 0) PetscCall(MPMParticlesFindField(p, "saturation", &mx->f_sat));
  PetscCall(MPMGhostGather(mx->sat));
  PetscCall(VecGetArrayRead(mx->sat->local, &a));
  mpm_g2p_scalar(&mx->sat->box, (int)p->n, MPMFieldReal(p, p->f_x), a, 0, MPMFieldReal(p, mx->f_sat));
  PetscCall(VecRestoreArrayRead(mx->sat->local, &a));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MixtureDestroy(MPMIntegrator integ)
{
  Mixture *mx = (Mixture *)integ->data;

  PetscFunctionBeginUser;
  PetscCall(PetscFree(mx->Vp));
  PetscCall(MixtureSystemDestroy(&mx->sys));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* As the explicit integrator's (common.c): CFL, the elastic limit of the
 * stiffest material (the water's sound speed, usually), the user's maximum. */
static double MixtureStableDt(MPMIntegrator integ, const MPMSim sim, double vmax, MPMDtLimit *why)
{
  const Mixture *mx = (const Mixture *)integ->data;
  if (mx->stress == MIXTURE_STRESS_EXPLICIT || sim->dt_fixed > 0) return MPMIntegratorExplicitDt(sim, mx->fields, mx->wave_speed, mx->cfl_elastic, vmax, why);
  /* implicit: CFL on the particles, the user's maximum, the cap after a failed solve */
  double dt = MPMStepControlDt(&mx->sc, sim->dt_max, why);
  if (vmax > 0) dt = MPMDtMin(dt, why, sim->cfl * sim->layout.h / vmax, MPM_DT_CFL);
  return dt;
}

/* One node: the drag-coupled velocities from the momenta ps, pw, the force
 * impulses fs (the sand's effective stress) and fw (the pore pressure's,
 * dt F) and gravity (dt g), direction by direction. */
/* The water saturation of the pores at a node: the water's own volume
 * m_w / rho_w over the pore volume n V_s, in [0, 1] (0 without sand). */
double MixtureSaturation(const Mixture *mx, double ms, double mw, double n, double Vs) { return ms > 0 && Vs > 0 && n > 0 ? PetscClipInterval(mw / (mx->rho_w * n * Vs), 0.0, 1.0) : 0.0; }

double MixturePorosity(const Mixture *mx, double ms, double Vs) { return ms > 0 && Vs > 0 ? PetscClipInterval(1.0 - ms / (mx->rho_grain * Vs), MIXTURE_NMIN, 1.0) : 1.0; }

static void CoupledVelocities(const Mixture *mx, int d, double n, double dt, const double *gdt, double ms, const double *ps, const double *fs, double mw, const double *pw,
                              const double *fw, double *vs, double *vw)
{
  const double nw = mx->buoyancy ? n : 1.0;                                      /* the water's share of the pore pressure's force */
  const double D  = ms > 0 && mw > 0 ? n * MIXTURE_G * mw / mx->k_hat : 0.0; /* c_E V_mix */
  const double e = dt * D, a = ms + e, b = mw + e, det = a * b - e * e;
  for (int c = 0; c < d; c++) {
    const double rs = ps[c] + fs[c] + (1.0 - nw) * fw[c] + ms * gdt[c], rw = pw[c] + nw * fw[c] + mw * gdt[c];
    if (mx->fixed_sand) { /* v_s = 0: (m_w + dt D) v_w = rw */
      vs[c] = 0.0;
      vw[c] = mw > 0 ? rw / b : 0.0;
    } else if (ms > 0 && mw > 0) {
      vs[c] = (b * rs + e * rw) / det;
      vw[c] = (e * rs + a * rw) / det;
    } else {
      vs[c] = ms > 0 ? rs / ms : 0.0;
      vw[c] = mw > 0 ? rw / mw : 0.0;
    }
  }
}

/* The owned nodes of both grids: coupled velocities, then each species'
 * collisions and friction; slot 0 becomes 0 (no held-PIC flag). */
static PetscErrorCode GridUpdate(const Mixture *mx, MPMSim sim, double dt)
{
  const MPMLayout *l = &sim->layout;
  const int        d = l->dim == 3 ? 3 : 2, dof = (int)sim->species[0]->grid->dof;
  const double     gs = MPMGravityScale(sim);
  double           gdt[3] = {0, 0, 0};
  PetscScalar     *as, *aw, *av, *sv = NULL;

  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_GRID_UPDATE, 0, 0, 0, 0));
  for (int c = 0; c < 3; c++) gdt[c] = dt * gs * sim->gravity[c];
  PetscCall(VecGetArray(sim->species[0]->grid->global, &as));
  PetscCall(VecGetArray(sim->species[1]->grid->global, &aw));
  PetscCall(VecGetArray(mx->volume->global, &av));
  if (mx->sat) PetscCall(VecGetArray(mx->sat->global, &sv));
  for (PetscInt k = l->xs[2]; k < l->xs[2] + l->xm[2]; k++)
    for (PetscInt j = l->xs[1]; j < l->xs[1] + l->xm[1]; j++)
      for (PetscInt i = l->xs[0]; i < l->xs[0] + l->xm[0]; i++) {
        const PetscInt at = dof * (((k - l->xs[2]) * l->xm[1] + (j - l->xs[1])) * l->xm[0] + (i - l->xs[0]));
        double        *ns = as + at, *nw = aw + at, x[3], vs[3], vw[3];
        const PetscInt idx[3] = {i, j, k};
        const double   ms = ns[0] > 0 ? ns[0] : 0.0, mw = nw[0] > 0 ? nw[0] : 0.0, n = MixturePorosity(mx, ms, av[at / dof]);
        if (sv) sv[at / dof] = MixtureSaturation(mx, ms, mw, n, av[at / dof]);
        av[at / dof] = n; /* the volume field now holds the porosity, for the water particles */
        if (ms == 0 && mw == 0) {
          for (int c = 0; c < dof; c++) ns[c] = nw[c] = 0;
          continue;
        }
        CoupledVelocities(mx, d, n, dt, gdt, ms, ns + 1, ns + 1 + d, mw, nw + 1, nw + 1 + d, vs, vw);
        for (int c = 0; c < d; c++) x[c] = l->box.origin[c] + l->h * idx[c];
        if (ms > 0) (void)MPMCollidersApply(sim->colliders, 0, x, ms, dt, vs);
        if (mw > 0) (void)MPMCollidersApply(sim->colliders, 1, x, mw, dt, vw);
        for (int c = 0; c < dof; c++) ns[c] = nw[c] = 0;
        for (int c = 0; c < d; c++) {
          ns[1 + c] = vs[c];
          nw[1 + c] = vw[c];
        }
      }
  PetscCall(VecRestoreArray(mx->volume->global, &av));
  if (mx->sat) PetscCall(VecRestoreArray(mx->sat->global, &sv));
  PetscCall(VecRestoreArray(sim->species[1]->grid->global, &aw));
  PetscCall(VecRestoreArray(sim->species[0]->grid->global, &as));
  PetscCall(PetscLogEventEnd(MPM_EVENT_GRID_UPDATE, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The coupled solve (mixture_system.c) and the step control: a failed
 * solve halves dt (the driver retries; nothing has moved), the step grows
 * back by 2 per step from the one that worked. */
static PetscErrorCode ImplicitGridUpdate(MPMIntegrator integ, Mixture *mx, MPMSim sim, double dt, PetscBool *rejected)
{
  SNESConvergedReason reason;

  PetscFunctionBeginUser;
  PetscCall(MixtureSystemSolve(mx, sim, dt, &reason));
  *rejected = reason < 0 ? PETSC_TRUE : PETSC_FALSE;
  if (reason < 0) {
    const PetscBool retry = MPMStepControlFail(&mx->sc, dt);
    mx->st.total[MIXTURE_STAT_HALVINGS] += 1;
    PetscCheck(retry, sim->comm, PETSC_ERR_NOT_CONVERGED,
               "Mixture solve failed at t = %g s (step %" PetscInt_FMT ", dt = %g s, %" PetscInt_FMT " halvings in a row; SNES: %s): lower -dt_max or -cfl, or raise -mixture_snes_max_it, -mixture_ksp_max_it or -mixture_max_halvings",
               sim->t, sim->step + 1, dt, mx->sc.halvings - 1, SNESConvergedReasons[reason]);
    PetscCall(PetscPrintf(sim->comm, "step %" PetscInt_FMT ": mixture solve failed (%s), retrying with dt = %g s\n", sim->step + 1, SNESConvergedReasons[reason], 0.5 * dt));
    integ->rejected = PETSC_TRUE;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  mx->st.value[MIXTURE_STAT_HALVINGS] = (double)MPMStepControlAccept(&mx->sc, dt);
  { /* dt against the explicit step's limits: the elastic one (the water's sound speed) and the drag's */
    const double dte = mx->cfl_elastic * sim->layout.h / mx->wave_speed;
    double       stiff = 1, r[3];
    for (PetscInt s = 0; s < 2; s++) {
      const double st = MPMIntegratorStiffening(sim->species[s], &mx->fields[s]); /* once: PetscMax is a macro */
      stiff           = PetscMax(stiff, st);
    }
    PetscCall(MPMGlobalMax(sim->comm, &stiff, 1));
    r[1] = dt / (dte / sqrt(stiff));
    r[2] = dt * mx->drag_rate / 2.0;
    r[0] = PetscMax(r[1], r[2]);
    for (int k = 0; k < 3; k++) {
      mx->st.value[MIXTURE_STAT_DT_RATIO + k] = r[k];
      mx->st.total[MIXTURE_STAT_DT_RATIO + k] = PetscMax(mx->st.total[MIXTURE_STAT_DT_RATIO + k], r[k]);
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MixtureStep(MPMIntegrator integ, MPMSim sim, double dt, double *vmax)
{
  Mixture *mx = (Mixture *)integ->data;

  PetscFunctionBeginUser;
  *vmax = 0;
  MPMCollidersAtTime(sim->colliders, sim->t);
  PetscCall(SandVolume(mx, sim->species[0]));
  MPMParticleView v[2];
  for (PetscInt s = 0; s < 2; s++) {
    v[s] = MPMIntegratorView(sim->species[s], &mx->fields[s], PETSC_TRUE);
    PetscCall(MPMIntegratorP2G(sim->species[s], &v[s], dt));
    PetscCall(MPMGhostScatterAdd(sim->species[s]->grid));
  }
  if (mx->stress == MIXTURE_STRESS_IMPLICIT) {
    PetscBool rejected = PETSC_FALSE;
    PetscCall(ImplicitGridUpdate(integ, mx, sim, dt, &rejected));
    if (rejected) PetscFunctionReturn(PETSC_SUCCESS);
  } else {
    PetscCall(GridUpdate(mx, sim, dt));
    PetscCall(MixtureWaterPorosity(mx, sim->species[1]));
  }
  PetscCall(SandSaturation(mx, sim->species[0]));
  for (PetscInt s = 0; s < 2; s++) {
    double vs = 0;
    PetscCall(MPMGhostGather(sim->species[s]->grid));
    PetscCall(MPMIntegratorG2P(sim->species[s], &v[s], dt, -1.0, 0.0, &vs)); /* flip < 0: APIC */
    PetscCall(MPMIntegratorCommit(sim->species[s], &mx->fields[s]));
    *vmax = PetscMax(*vmax, vs);
  }
  MPMCollidersAdvance(sim->colliders, dt);
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MixtureView(MPMIntegrator integ, char *buf, size_t len)
{
  const Mixture *mx = (const Mixture *)integ->data;

  PetscFunctionBeginUser;
  if (mx->stress == MIXTURE_STRESS_IMPLICIT) {
    KSP     ksp;
    PC      pc;
    KSPType kt;
    PCType  pt;
    PetscCall(SNESGetKSP(mx->sys.snes, &ksp));
    PetscCall(KSPGetType(ksp, &kt));
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PCGetType(pc, &pt));
    PetscCall(PetscSNPrintf(buf, len, "sand and water on two grids, APIC, stresses and drag implicit, Newton-%s/%s (-mixture_snes_*, -mixture_ksp_*; k_hat %g m/s, grains %g kg/m^3)", kt,
                            pt ? pt : "none", mx->k_hat, mx->rho_grain));
  } else PetscCall(PetscSNPrintf(buf, len, "sand and water on two grids, APIC, stresses explicit, drag implicit (k_hat %g m/s, grains %g kg/m^3)", mx->k_hat, mx->rho_grain));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MixtureStats(MPMIntegrator integ, MPMStepStats *s)
{
  PetscFunctionBeginUser;
  *s = ((Mixture *)integ->data)->st;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The run totals and the step cap (restarts continue bit for bit). */
static PetscErrorCode MixtureGetState(MPMIntegrator integ, PetscInt *n, double *state)
{
  const Mixture *mx = (const Mixture *)integ->data;

  PetscFunctionBeginUser;
  *n = 0; /* explicit stresses: nothing */
  if (mx->stress == MIXTURE_STRESS_EXPLICIT) PetscFunctionReturn(PETSC_SUCCESS);
  for (int k = 0; k < MIXTURE_NSTAT; k++) state[k] = mx->st.total[k];
  MPMStepControlGetState(&mx->sc, state + MIXTURE_NSTAT);
  *n = MIXTURE_NSTAT + 2;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MixtureSetState(MPMIntegrator integ, PetscInt n, const double *state)
{
  Mixture *mx = (Mixture *)integ->data;

  PetscFunctionBeginUser;
  PetscCheck(n == MIXTURE_NSTAT + 2, PETSC_COMM_SELF, PETSC_ERR_USER_INPUT, "the checkpoint's mixture integrator state has %" PetscInt_FMT " values, expected %d", n, MIXTURE_NSTAT + 2);
  for (int k = 0; k < MIXTURE_NSTAT; k++) mx->st.total[k] = state[k];
  MPMStepControlSetState(&mx->sc, state + MIXTURE_NSTAT, PETSC_TRUE);
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMIntegratorCreate_Mixture(MPMIntegrator integ)
{
  PetscFunctionBeginUser;
  integ->phases        = PETSC_TRUE;
  integ->ops.options   = MixtureOptions;
  integ->ops.check     = MixtureCheck;
  integ->ops.setup     = MixtureSetUp;
  integ->ops.stable_dt = MixtureStableDt;
  integ->ops.step      = MixtureStep;
  integ->ops.view      = MixtureView;
  integ->ops.stats     = MixtureStats;
  integ->ops.get_state = MixtureGetState;
  integ->ops.set_state = MixtureSetState;
  integ->ops.destroy   = MixtureDestroy;
  PetscFunctionReturn(PETSC_SUCCESS);
}
