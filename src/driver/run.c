/* The top of the library: set-up of a run from the options database, the
 * run loop (time step control -> integrator step -> particle bookkeeping
 * -> balance -> output -> checkpoint) and clean-up.  The only layer that
 * sees every other one. */
#include "io/io.h"

PetscErrorCode MPMInitializePackage(void)
{
  PetscFunctionBeginUser;
  PetscCall(MPMLogEventsRegister());
  PetscCall(MPMMaterialRegisterAll());
  PetscCall(MPMIntegratorRegisterAll());
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMCreate(MPI_Comm comm, MPMSim *simout)
{
  MPMSim sim;

  PetscFunctionBeginUser;
  MPMMemoryReturnFreedBlocks(); /* before anything large is allocated */
  PetscCall(MPMMemorySetFromOptions(comm));
  PetscCall(MPMInitializePackage());
  PetscCall(PetscNew(&sim));
  sim->comm = comm;
  PetscCall(MPMParallelSetUp(sim));
  PetscCall(MPMCheckpointInstallSignals(sim)); /* before the (possibly long) set-up: a signal then stops after the first step */
  *simout = sim;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Materials, regions, objects and emitters read options under their names:
 * a name used twice would share options silently. */
static PetscErrorCode CheckUniqueNames(MPMSim sim)
{
  const char *all[4 * MPM_MAX_NAMES];
  PetscInt    n = 0;

  PetscFunctionBeginUser;
  for (PetscInt s = 0; s < sim->nspecies; s++)
    for (PetscInt i = 0; i < sim->species[s]->nmat; i++) all[n++] = sim->species[s]->matinfo[i].name;
  for (PetscInt i = 0; i < sim->nreg; i++) all[n++] = sim->reg[i].name;
  for (PetscInt i = sim->colliders->nwalls; i < sim->colliders->nobj; i++) all[n++] = sim->colliders->obj[i].name;
  for (PetscInt i = 0; i < sim->nem; i++) all[n++] = sim->em[i].name;
  for (PetscInt i = 0; i < n; i++)
    for (PetscInt j = i + 1; j < n; j++) {
      PetscBool same;
      PetscCall(PetscStrcmp(all[i], all[j], &same));
      PetscCheck(!same, sim->comm, PETSC_ERR_USER_INPUT, "The name '%s' is used twice in -materials/-regions/-objects/-emitters: each needs its own options prefix", all[i]);
    }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A run that could never finish is refused before it starts: the largest
 * step the integrator allows (particles at rest) and the frame interval
 * must reach t_end in a plausible number of steps and frames. */
static PetscErrorCode CheckTimeScales(MPMSim sim)
{
  MPMDtLimit   why = MPM_DT_MAX;
  const double dt = sim->integ->ops.stable_dt(sim->integ, sim, 0.0, &why), steps = sim->t_end / dt, frames = sim->t_end / sim->output_dt;
  const double most_steps = sim->max_steps >= 0 ? PetscMin(steps, (double)sim->max_steps) : steps;

  PetscFunctionBeginUser;
  PetscCheck(dt >= 1e-9 && isfinite(dt), sim->comm, PETSC_ERR_USER_INPUT,
             "The largest stable time step is %g s (below 1e-9 s, set by %s): check -dt, -dt_max, -cfl_elastic and the materials' -*_youngs_modulus and -*_density", dt, MPMDtLimitNames[why]);
  PetscCheck(most_steps <= 1e9, sim->comm, PETSC_ERR_USER_INPUT, "-t_end %g s needs at least %g steps of %g s (more than 1e9; the step is set by %s); shorten -t_end or set -max_steps", sim->t_end, steps, dt,
             MPMDtLimitNames[why]);
  PetscCheck(frames <= 1e6, sim->comm, PETSC_ERR_USER_INPUT, "-output_dt %g s gives %g frames up to -t_end %g s (more than 1e6)", sim->output_dt, frames, sim->t_end);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* One species, "default", with every material of -materials; or, for an
 * integrator of two phases (-integrator mixture), "sand" with the solid
 * materials and "water" with the fluids, each on its own grid. */
static PetscErrorCode SpeciesSetUp(MPMSim sim)
{
  MPMSpecies *solid, *fluid;

  PetscFunctionBeginUser;
  if (!sim->integ->phases) {
    PetscCall(MPMSpeciesCreate(sim, "default", &solid));
    PetscCall(MPMMaterialsSetUp(sim, solid, NULL));
    for (PetscInt m = 0; m < solid->nmat; m++) /* pore water has no pores to fill in a run of one phase */
      PetscCheck(!(solid->mat[m]->flags & MPM_MATERIAL_PORE), sim->comm, PETSC_ERR_USER_INPUT,
                 "-%s_porosity below 1 is pore water for -integrator mixture; with -integrator %s water fills its particles (leave -%s_porosity at 1)", solid->mat[m]->name,
                 sim->integ->type, solid->mat[m]->name);
    for (PetscInt m = 0; m < solid->nmat; m++) /* the unilateral energy only shapes the lagged solve of a mixture */
      PetscCheck(!(solid->mat[m]->flags & MPM_MATERIAL_UNILATERAL), sim->comm, PETSC_ERR_USER_INPUT,
                 "-%s_unilateral shapes the elastic energy of -integrator mixture -mixture_stress implicit (plasticity lagged); -integrator %s does not use it", solid->mat[m]->name,
                 sim->integ->type);
    for (PetscInt m = 0; m < solid->nmat; m++) /* nor saturation */
      PetscCheck(!(solid->mat[m]->flags & MPM_MATERIAL_WET), sim->comm, PETSC_ERR_USER_INPUT,
                 "-%s_wet_cohesion follows the water saturation of -integrator mixture; with -integrator %s there is no water in the pores (use -%s_cohesion)", solid->mat[m]->name,
                 sim->integ->type, solid->mat[m]->name);
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(MPMSpeciesCreate(sim, "sand", &solid));
  PetscCall(MPMSpeciesCreate(sim, "water", &fluid));
  PetscCall(MPMMaterialsSetUp(sim, solid, fluid));
  PetscCheck(sim->help || (solid->nmat > 0 && fluid->nmat > 0), sim->comm, PETSC_ERR_USER_INPUT,
             "-integrator %s needs a solid and a fluid material in -materials (a fluid is -<m>_type water); got %" PetscInt_FMT " solid and %" PetscInt_FMT " fluid", sim->integ->type,
             solid->nmat, fluid->nmat);
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMSetFromOptions(MPMSim sim)
{
  PetscFunctionBeginUser;
  PetscCall(PetscLogStagePush(MPM_STAGE_SETUP));
  PetscCall(PetscOptionsHasHelp(NULL, &sim->help));
  PetscCall(MPMRunOptionsRead(sim));
  PetscCall(MPMIntegratorCreate(sim));
  PetscCall(SpeciesSetUp(sim));
  PetscCall(MPMRunOptionsCheck(sim));
  for (PetscInt s = 0; s < sim->nspecies; s++)
    for (PetscInt m = 0; m < sim->species[s]->nmat; m++)
      PetscCheck(sim->species[s]->mat[m]->grains.alpha == 0 || !strcmp(sim->integ->type, "nonsmooth"), sim->comm, PETSC_ERR_USER_INPUT,
                 "-%s_anisotropy %g: anisotropic grains are simulated by -integrator nonsmooth only (allowed with -integrator %s: 0)", sim->species[s]->mat[m]->name,
                 sim->species[s]->mat[m]->grains.alpha, sim->integ->type);
  for (PetscInt s = 0; s < sim->nspecies; s++)
    for (PetscInt m = 0; m < sim->species[s]->nmat; m++)
      PetscCheck(sim->species[s]->mat[m]->mui.mu2_hat <= 0 || !strcmp(sim->integ->type, "nonsmooth"), sim->comm, PETSC_ERR_USER_INPUT,
                 "-%s_friction_angle_dynamic: the mu(I) rheology is simulated by -integrator nonsmooth only (allowed with -integrator %s: 0)", sim->species[s]->mat[m]->name, sim->integ->type);
  if (sim->integ->ops.check) PetscCall(sim->integ->ops.check(sim->integ, sim));
  PetscCall(MPMLayoutSetUp(sim));
  PetscCall(MPMCollidersCreate(sim));
  PetscCheck(sim->colliders->ndynamic == 0 || !strcmp(sim->integ->type, "nonsmooth") || !strcmp(sim->integ->type, "pbd"), sim->comm, PETSC_ERR_USER_INPUT,
             "Dynamic bodies (-<object>_dynamic) are coupled by -integrator nonsmooth and pbd only; the deck uses -integrator %s", sim->integ->type);
  PetscCall(MPMRegionsSetUp(sim));
  PetscCall(MPMEmittersSetUp(sim));
  PetscCall(MPMCatalystSetUp(sim));
  PetscCall(MPMCheckpointSetUp(sim));
  PetscCall(MPMBalanceSetUp(sim));
  /* before the grid fields exist: the method's own state (APIC C and tau,
   * 2 dim^2 values) and its widest grid field (FLIP) as the bound */
  PetscCall(MPMMemoryCheck(sim, (double)sim->species[0]->p.bytes + 16.0 * sim->dim * sim->dim, mpm_transfer_dof((int)sim->dim, 1)));
  PetscCall(sim->integ->ops.setup(sim->integ, sim));
  if (!sim->help) PetscCall(CheckTimeScales(sim));
  PetscCall(CheckUniqueNames(sim));
  if (!sim->help) PetscCall(MPMRunCheckUnusedOptions(sim));
  PetscCall(PetscOptionsGetAll(NULL, &sim->options_string));
  PetscCall(PetscLogStagePop());
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode Progress(MPMSim sim)
{
  PetscLogDouble now;
  const double   nframes = ceil(sim->t_end / sim->output_dt - 1e-9);

  PetscFunctionBeginUser;
  PetscCall(PetscTime(&now));
  const double wall = now - sim->wall_start;
  const double done = sim->t - sim->t_run_start; /* since this process started (a restart starts late) */
  double       eta  = done > 0 ? wall * (sim->t_end - sim->t) / done : 0;
  if (sim->max_steps >= 0 && sim->step > sim->step_run_start) eta = PetscMin(eta, wall * (sim->max_steps - sim->step) / (sim->step - sim->step_run_start));
  PetscCall(PetscPrintf(sim->comm, "frame %4" PetscInt_FMT "/%-4.0f step %8" PetscInt_FMT "  t %.5e s  dt %.3e s  particles %lld  wall %.1f s  eta %.1f s\n", sim->frame - 1, nframes,
                        sim->step, sim->t, sim->dt, (long long)sim->n_global, wall, eta));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode OutputAll(MPMSim sim)
{
  MPMDiagnostics d;

  PetscFunctionBeginUser;
  PetscCall(PetscLogStagePush(MPM_STAGE_OUTPUT));
  PetscCall(MPMOutputFrame(sim));
  PetscCall(MPMComputeDiagnostics(sim, &d));
  PetscCall(MPMOutputHistory(sim, &d));
  PetscCall(Progress(sim));
  sim->t_last_frame = sim->t;
  PetscCall(PetscLogStagePop());
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Fastest particle on this rank, and the inflow speeds. */
static double InitialSpeed(MPMSim sim)
{
  double vmax2 = 0;
  for (PetscInt s = 0; s < sim->nspecies; s++) {
    const MPMParticles *p = &sim->species[s]->p;
    const double       *v = MPMFieldReal(p, p->f_v);
    for (PetscInt q = 0; q < p->n; q++) {
      double s2 = 0;
      for (PetscInt a = 0; a < sim->dim; a++) s2 += v[q * sim->dim + a] * v[q * sim->dim + a];
      vmax2 = PetscMax(vmax2, s2);
    }
  }
  for (PetscInt e = 0; e < sim->nem; e++) vmax2 = PetscMax(vmax2, sim->em[e].speed * sim->em[e].speed);
  return sqrt(vmax2);
}

/* Plausibility (a warning): particles seeded inside a solid object are
 * pushed out violently at the first step. */
static PetscErrorCode WarnSeededInside(MPMSim sim)
{
  MPMColliders c = sim->colliders;
  double      *count;

  PetscFunctionBeginUser;
  if (c->nobj == c->nwalls) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscCalloc1(c->nobj, &count));
  for (PetscInt s = 0; s < sim->nspecies; s++) {
    const MPMParticles *p = &sim->species[s]->p;
    const double       *x = MPMFieldReal(p, p->f_x);
    for (PetscInt i = 0; i < p->n; i++) {
      const PetscInt o = MPMCollidersSolidAt(c, s, &x[i * sim->dim]);
      if (o >= 0) count[o] += 1;
    }
  }
  PetscCall(MPMGlobalSum(sim->comm, count, c->nobj));
  for (PetscInt o = c->nwalls; o < c->nobj; o++)
    if (count[o] > 0) PetscCall(MPMWarn(sim->comm, "%.0f particles were seeded inside object '%s': they will be pushed out at the first step (check the regions against -%s_*)", count[o], c->obj[o].name, c->obj[o].name));
  PetscCall(PetscFree(count));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Seed, migrate once (seeding is per slab, this only checks), first dt. */
static PetscErrorCode InitialState(MPMSim sim)
{
  MPMStepReduction red;

  PetscFunctionBeginUser;
  PetscCall(MPMBalanceInitial(sim, PETSC_FALSE));
  PetscCall(MPMCollidersFitSlab(sim)); /* the objects' meshes around the slabs as balanced */
  PetscCall(MPMSeedRegions(sim));
  PetscCall(WarnSeededInside(sim));
  PetscCall(MPMMaterialsInitialState(sim));
  PetscCall(MPMMigrate(sim, &red));
  MPMDtLimit why = MPM_DT_MAX;
  red.wmax      = MPMBalanceRankWork(sim);
  red.vmax      = InitialSpeed(sim);
  red.dt        = sim->integ->ops.stable_dt(sim->integ, sim, red.vmax, &why);
  red.dt_limit  = why;
  red.flags     = 0;
  PetscCall(MPMGlobalStepReduce(sim->comm, &red));
  PetscCheck(red.outside == 0, sim->comm, PETSC_ERR_USER_INPUT, "Particle %lld was seeded outside the domain at (%g, %g, %g)", (long long)red.bad_id, red.bad_x[0], red.bad_x[1],
             red.bad_x[2]);
  sim->n_global      = red.n;
  sim->imbalance     = MPMBalanceImbalance(sim, &red);
  sim->dt            = red.dt;
  sim->dt_limit      = (MPMDtLimit)red.dt_limit;
  sim->t_next_output = sim->output_dt;
  if (sim->sort_interval) PetscCall(MPMSortParticles(sim));
  PetscCall(PetscInfo(NULL, "Seeded %lld particles, first dt %g s\n", (long long)sim->n_global, sim->dt));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode PrintSetup(MPMSim sim)
{
  const MPMLayout *l = &sim->layout;
  char             method[256], cut[64];

  PetscFunctionBeginUser;
  PetscCall(sim->integ->ops.view(sim->integ, method, sizeof(method)));
  if (l->decomposition == MPM_DECOMP_SLABS) PetscCall(PetscSNPrintf(cut, sizeof(cut), "slabs along %c", "xyz"[l->slab_axis]));
  else PetscCall(PetscSNPrintf(cut, sizeof(cut), "blocks %" PetscInt_FMT " x %" PetscInt_FMT " x %" PetscInt_FMT, l->parts[0], l->parts[1], l->parts[2]));
  PetscCall(PetscPrintf(sim->comm, "granular-mpm %s: %" PetscInt_FMT "D, %d rank%s, grid %" PetscInt_FMT " x %" PetscInt_FMT " x %" PetscInt_FMT " nodes (dx %g m), %s, %s %s\n",
                        MPMVersion(), sim->dim, sim->size, sim->size > 1 ? "s" : "", l->N[0], l->N[1], l->N[2], l->h, cut,
                        !sim->species[0]->grid ? "particles only:" : (l->order == MPM_KERNEL_QUADRATIC ? "quadratic" : "cubic"), method));
  PetscCall(PetscPrintf(sim->comm, "particles %lld, state %zu bytes each, output in %s\n", (long long)sim->n_global, sim->species[0]->p.bytes, sim->outdir));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The state went NaN or infinite: say where, once, from rank 0; the run
 * then stops, writes a last frame (the particles as they are) and exits
 * with MPM_EXIT_NONFINITE.  Such particles are never deleted. */
static PetscErrorCode ReportNonFinite(MPMSim sim, const MPMStepReduction *red)
{
  const MPMSpecies *sp = sim->species[red->nf_species];

  PetscFunctionBeginUser;
  sim->exit_code = MPM_EXIT_NONFINITE;
  PetscCall(PetscFPrintf(sim->comm, PETSC_STDERR,
                         "granular-mpm: error: the state became non-finite at step %" PetscInt_FMT ", t = %g s: %lld particle%s with a NaN or infinite position, the first particle %lld "
                         "(material %s) at (%g, %g, %g) with velocity (%g, %g, %g). The run stops; the last frame shows the state. Usual causes: a time step above the stability "
                         "limit (-dt, -cfl, -cfl_elastic), or material parameters far outside their range\n",
                         sim->step, sim->t, (long long)red->nonfinite, red->nonfinite > 1 ? "s" : "", (long long)red->nf_id,
                         red->nf_mat >= 0 && red->nf_mat < sp->nmat ? sp->matinfo[red->nf_mat].name : "?", red->nf_x[0], red->nf_x[1], red->nf_x[2], red->nf_v[0], red->nf_v[1],
                         red->nf_v[2]));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* After the step's reduction: non-finite particles, particles outside the
 * domain and the global count. */
static PetscErrorCode CheckInvariants(MPMSim sim, const MPMStepReduction *red, int64_t emitted)
{
  PetscFunctionBeginUser;
  if (red->nonfinite) PetscCall(ReportNonFinite(sim, red));
  if (red->outside) {
    PetscCheck(sim->delete_outside, sim->comm, PETSC_ERR_USER_INPUT,
               "Particle %lld left the domain at (%g, %g, %g) at step %" PetscInt_FMT ", t = %g s (%lld particle%s outside). Close the boundary (-bc_*), enlarge the domain, or pass -delete_outside to delete and count such particles",
               (long long)red->bad_id, red->bad_x[0], red->bad_x[1], red->bad_x[2], sim->step, sim->t, (long long)red->outside, red->outside > 1 ? "s" : "");
    sim->n_deleted += red->outside;
    PetscCall(PetscInfo(NULL, "Deleted %lld particles outside the domain at step %" PetscInt_FMT "\n", (long long)red->outside, sim->step));
  }
  const int64_t expect = sim->n_global + emitted - red->outside + red->split - red->merged;
  PetscCheck(red->n == expect, sim->comm, PETSC_ERR_PLIB,
             "Particle count changed from %lld to %lld at step %" PetscInt_FMT " (expected %lld: %lld emitted, %lld deleted, %lld split, %lld merged): particles were lost in migration",
             (long long)sim->n_global, (long long)red->n, sim->step, (long long)expect, (long long)emitted, (long long)red->outside, (long long)red->split, (long long)red->merged);
  sim->n_global  = red->n;
  sim->n_split += red->split;
  sim->n_merged += red->merged;
  sim->imbalance = MPMBalanceImbalance(sim, red);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* -monitor_wall: rank 0's clock decides (the flag reaches every rank
 * through the step's reduction, so all print, or compute, alike). */
static int64_t MonitorFlag(const MPMSim sim)
{
  PetscLogDouble now;
  if (sim->monitor_wall <= 0 || sim->rank != 0 || PetscTime(&now)) return 0;
  return now - sim->monitor_last >= sim->monitor_wall ? MPM_FLAG_MONITOR : 0;
}

/* One line of progress (-monitor N steps, -monitor_wall S seconds): where
 * the run is, what sets dt, how fast it goes. */
static PetscErrorCode Monitor(MPMSim sim)
{
  MPMDiagnostics d;
  PetscLogDouble now;

  PetscFunctionBeginUser;
  if (!((sim->monitor > 0 && sim->step % sim->monitor == 0) || (sim->step_flags & MPM_FLAG_MONITOR))) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(MPMComputeDiagnostics(sim, &d));
  PetscCall(PetscTime(&now));
  const double wall = now - sim->wall_start, done = sim->t - sim->t_run_start;
  const double eta  = done > 0 ? wall * (sim->t_end - sim->t) / done : 0;
  PetscCall(PetscPrintf(sim->comm,
                        "step %8" PetscInt_FMT "  t %.5e s  dt %.3e s (%s; next %.3e s, %s)  KE %.4e J  vmax %.3e m/s  particles %lld  imbalance %.2f  wall %.1f s  %.3g steps/s  eta %.0f s\n",
                        sim->step, sim->t, sim->dt_taken_last, MPMDtLimitNames[sim->step_limit], sim->dt, MPMDtLimitNames[sim->dt_limit], d.ke, sim->vmax, (long long)d.n, sim->imbalance,
                        wall, wall > 0 ? (sim->step - sim->step_run_start) / wall : 0.0, eta));
  sim->monitor_last = now;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* One step: the integrator moves the particles; then inflow, migration,
 * sorting and the step's one reduction (next dt, count, signals, work). */
static PetscErrorCode Step(MPMSim sim)
{
  MPMStepReduction red;
  double           dt = sim->dt, vmax = 0;
  int64_t          emitted;
  MPMDtLimit       why = sim->dt_limit;
  const double     gs0 = MPMGravityScale(sim);

  PetscFunctionBeginUser;
  /* the stable range, before landing exactly on output times and on t_end */
  sim->dt_lo = sim->step == 0 ? dt : PetscMin(sim->dt_lo, dt);
  sim->dt_hi = PetscMax(sim->dt_hi, dt);
  dt         = MPMDtMin(dt, &why, sim->t_next_output - sim->t, MPM_DT_OUTPUT);
  dt         = MPMDtMin(dt, &why, sim->t_end - sim->t, MPM_DT_T_END);
  for (;;) { /* an implicit solve that fails is retried with half the step */
    sim->dt              = dt;
    sim->integ->rejected = PETSC_FALSE;
    PetscCall(sim->integ->ops.step(sim->integ, sim, dt, &vmax));
    if (!sim->integ->rejected) break;
    dt *= 0.5;
    why = MPM_DT_RETRY;
  }
  sim->t += dt;
  sim->step++;
  if (MPMGravityScale(sim) != gs0) { /* the ramp raised g under the particles: work put in (energy budget) */
    double pe;
    PetscCall(MPMPotentialEnergyFull(sim, &pe));
    sim->work_ramp += (MPMGravityScale(sim) - gs0) * pe;
  }
  sim->step_limit    = why;
  sim->dt_taken_last = dt;
  sim->dt_taken_lo = sim->step == 1 ? dt : PetscMin(sim->dt_taken_lo, dt);
  sim->dt_count[why] += 1;
  sim->particle_steps += (double)sim->n_global;
  PetscCall(MPMEmittersStep(sim, sim->t, &emitted));
  for (PetscInt e = 0; e < sim->nem; e++) vmax = PetscMax(vmax, sim->em[e].speed);
  PetscCall(MPMMigrate(sim, &red));
  if (sim->integ->ops.after_migrate) PetscCall(sim->integ->ops.after_migrate(sim->integ, sim, &red));
  red.wmax = MPMBalanceRankWork(sim);
  if (sim->sort_interval && sim->step % sim->sort_interval == 0) PetscCall(MPMSortParticles(sim));
  why          = MPM_DT_MAX;
  red.vmax     = vmax;
  red.dt       = sim->integ->ops.stable_dt(sim->integ, sim, vmax, &why);
  red.dt_limit = why;
  red.flags    = MPMCheckpointLocalFlags(sim) | MonitorFlag(sim);
  PetscCall(MPMGlobalStepReduce(sim->comm, &red));
  sim->step_flags = red.flags;
  PetscCall(CheckInvariants(sim, &red, emitted));
  sim->n_emitted += emitted;
  sim->dt       = red.dt;
  sim->dt_limit = (MPMDtLimit)red.dt_limit;
  sim->vmax     = red.vmax;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Wall time spent stepping (without output and checkpoints), and the same
 * times the rank count: a run restarted on another rank count divides its
 * particle-steps by the rank-seconds of every part (summary.json). */
static void SteppingTime(MPMSim sim, PetscLogDouble dt)
{
  sim->wall_steps += dt;
  sim->rank_seconds_steps += dt * sim->size;
}

/* Frames and history rows due after a step. */
static PetscErrorCode OutputAfterStep(MPMSim sim, PetscLogDouble *t0)
{
  PetscLogDouble t1;

  PetscFunctionBeginUser;
  if (sim->t >= sim->t_next_output * (1 - 1e-12)) {
    PetscCall(PetscTime(&t1));
    SteppingTime(sim, t1 - *t0);
    PetscCall(OutputAll(sim));
    sim->t_next_output += sim->output_dt;
    PetscCall(PetscTime(t0));
  } else if (sim->history_interval && sim->step % sim->history_interval == 0) {
    MPMDiagnostics d;
    PetscCall(PetscLogStagePush(MPM_STAGE_OUTPUT));
    PetscCall(MPMComputeDiagnostics(sim, &d));
    PetscCall(MPMOutputHistory(sim, &d));
    PetscCall(PetscLogStagePop());
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A fresh start (seed, frame 0) or the state of a checkpoint. */
static PetscErrorCode StartState(MPMSim sim)
{
  PetscBool restarted;

  PetscFunctionBeginUser;
  PetscCall(MPMCheckpointRestart(sim, &restarted));
  PetscCall(MPMOutputSetUp(sim, restarted));
  if (!restarted) PetscCall(InitialState(sim));
  else PetscCall(MPMCollidersFitSlab(sim)); /* the slabs as the checkpoint left them */
  sim->geometry_bytes_setup = MPMGeometryBytes(sim); /* the summary's figure, with the regions */
  PetscCall(MPMRegionsRelease(sim));                 /* seeded (or read back): their shapes are not needed again */
  PetscCall(MPMObjectsTraceStill(sim));
  PetscCall(PrintSetup(sim));
  if (!restarted) PetscCall(OutputAll(sim));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMRun(MPMSim sim)
{
  PetscLogDouble t0, t1;
  PetscBool      stop = PETSC_FALSE;

  PetscFunctionBeginUser;
  if (sim->help) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscTime(&sim->wall_start));
  PetscCall(PetscLogStagePush(MPM_STAGE_SETUP));
  PetscCall(StartState(sim));
  PetscCall(PetscLogStagePop());
  PetscCall(PetscLogStagePush(MPM_STAGE_STEPPING));
  PetscCall(PetscTime(&t0));
  sim->t_run_start    = sim->t;
  sim->step_run_start = sim->step;
  sim->monitor_last   = t0;
  while (!stop && sim->t < sim->t_end * (1 - 1e-12) && (sim->max_steps < 0 || sim->step < sim->max_steps)) {
    PetscCall(Step(sim));
    if (sim->exit_code == MPM_EXIT_NONFINITE) break; /* the final frame below shows the state */
    PetscCall(MPMBalanceAfterStep(sim));
    PetscCall(MPMCollidersFitSlab(sim));
    PetscCall(MPMCatalystCoProcess(sim));
    PetscCall(OutputAfterStep(sim, &t0));
    PetscCall(Monitor(sim));
    PetscCall(PetscTime(&t1)); /* the stepping time so far, before a checkpoint records it (and without the checkpoint's own) */
    SteppingTime(sim, t1 - t0);
    PetscCall(PetscLogStagePush(MPM_STAGE_OUTPUT));
    PetscCall(MPMCheckpointAfterStep(sim, &stop));
    PetscCall(PetscLogStagePop());
    PetscCall(PetscTime(&t0));
  }
  PetscCall(PetscLogStagePop());
  PetscCall(PetscTime(&t1));
  SteppingTime(sim, t1 - t0);
  if (!stop && sim->t > sim->t_last_frame) PetscCall(OutputAll(sim)); /* the final state */
  PetscCall(MPMOutputSummary(sim));
  {
    char resampled[96] = "";
    if (sim->n_split || sim->n_merged) PetscCall(PetscSNPrintf(resampled, sizeof(resampled), ", %lld split, %lld merged", (long long)sim->n_split, (long long)sim->n_merged));
    PetscCall(PetscPrintf(sim->comm, "%s: %" PetscInt_FMT " steps, t = %g s, %lld particles (%lld deleted%s), %.3g particle-steps/s\n",
                          stop ? "stopped" : (sim->exit_code == MPM_EXIT_NONFINITE ? "failed (non-finite state)" : "done"), sim->step, sim->t, (long long)sim->n_global,
                          (long long)sim->n_deleted, resampled, sim->wall_steps > 0 ? sim->particle_steps / sim->wall_steps : 0.0));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

int MPMExitCode(MPMSim sim) { return sim ? sim->exit_code : 0; }

PetscErrorCode MPMDestroy(MPMSim *simp)
{
  MPMSim sim = *simp;

  PetscFunctionBeginUser;
  if (!sim) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(MPMOutputFinalize(sim));
  PetscCall(MPMCatalystFinalize(sim));
  for (PetscInt s = 0; s < sim->nspecies; s++) PetscCall(MPMMaterialsDestroy(sim->species[s]));
  PetscCall(MPMSpeciesDestroyAll(sim));
  PetscCall(MPMIntegratorDestroy(&sim->integ));
  PetscCall(MPMCollidersDestroy(&sim->colliders));
  for (PetscInt e = 0; e < sim->nem; e++) PetscCall(PetscFree(sim->em[e].layer_offsets));
  for (PetscInt r = 0; r < sim->nreg; r++) PetscCall(MPMPlacedShapeDestroy(&sim->reg[r].ps));
  PetscCall(PetscFree(sim->reg));
  PetscCall(PetscFree(sim->em));
  PetscCall(MPMGridFieldsDestroy(sim));
  PetscCall(MPMLayoutDestroy(&sim->layout));
  PetscCall(PetscFree(sim->options_string));
  for (PetscInt k = 0; k < sim->noutput_fields; k++) PetscCall(PetscFree(sim->output_fields[k]));
  PetscCall(PetscFree(sim));
  PetscCall(MPMParallelFinalize());
  *simp = NULL;
  PetscFunctionReturn(PETSC_SUCCESS);
}
