/* -integrator nonsmooth: the semi-implicit nonsmooth granular MPM of
 * Daviet and Bertails-Descoubes 2016 (D, section 5; docs/design/nonsmooth.md).
 * No elastic stress: the contact stress lambda = -sigma_c is the unknown of
 * a discrete Coulomb friction problem (DCFP) at every stress node, with the
 * exact Drucker-Prager cone and the maximum volume fraction phi_max:
 *
 *   u = C(u* + dt M^-1 B^T lambda),   gamma = B u + k,   (lambda_j, gamma_j) Coulomb (D13, D21)
 *
 * with C the walls' and objects' collision with their Coulomb friction.
 *
 * Discretization (the design note says why): velocities on the run's
 * quadratic B-spline grid (the common APIC transfers, lumped mass), the
 * stress piecewise constant on each node's dual cell [x_j - h/2, x_j + h/2)
 * -- a particle feeds the one node its quadratic stencil is centred on --
 * so that s(gamma, tau) is exactly diagonal, a stress node sees 3^d velocity
 * nodes (the seed's trilinear pair sees as many) and B is stored compactly:
 * per node and neighbour the vector G_ji = sum_p V_p grad N_i(x_p), with
 * B_j u = C(sum_i u_i G_ji^T), C(A)_s = chi(e_s) : A, and (B^T lambda)_i =
 * chi(lambda_j) G_ji.  V_p is the grains' volume, phi_max V0 (regions seed
 * at the maximum packing).
 *
 * The DCFP: projected Gauss-Seidel over the nodes in 3^d colours by global
 * index (i mod 3, j mod 3, k mod 3): nodes of one colour share no velocity
 * node, so a colour's updates are independent and the result does not
 * depend on the rank count or the order within a colour; between colours
 * the velocity increments go to their owners and back (parallel.c's ghost
 * verbs).  The per-node problem is solved exactly (kernels/dcfp.c).  The
 * stress of the step is kept on the particles (field "lambda") to
 * warm-start the next step, which also carries it through checkpoints and
 * migration.  Walls and objects are part of the friction problem (D s.
 * 6.1): each wall node's Coulomb contact is solved exactly given the stress
 * (WallVelocities), between Gauss-Seidel's colours or inside APGD's
 * operator.  The final collision books the force on them. */
#include "integrators.h"

#define NS_NB_MAX 27 /* velocity nodes a stress node sees: 3^d */

typedef struct {
  double          phi_max, tol, cfl_gravity, cfl_residual, decompaction, omega;
  PetscInt        max_it, max_newton, solver;
  MPMStressFields f;
  PetscInt        f_lambda; /* particle field: the stress of its node at the last step */
  PetscBool       aniso;    /* some material has anisotropic grains (D s. 6.2) */
  PetscInt        f_nu2;    /* particle field: the grains' normals' second moment nu2 (d x d; all 0: not yet set) */
  PetscBool       mui;      /* some material has the mu(I) rheology (D s. 6.3) */
  PetscInt        f_mu;     /* particle field: its friction coefficient mu_hat from the last step's inertial number (-1: not yet, the static one) */
  int             n, nb;    /* stress components (mpm_sym_size), neighbours (3^d) */
  MPMGridField   *forms;    /* per node: V, V mu, V lambda (n), G (nb x d)[, V (N^-1 - I) (n), anisotropic] */
  MPMGridField   *node;     /* per node: dt/m, u* (d), the walls' frictionless projection P at u* (d x d), near a wall or object (1/0) */
  MPMGridField   *du;       /* per node: dt/m B^T lambda (d), the stress's velocity change before the walls */
  MPMGridField   *lam;      /* per node: lambda (n), for G2P */
  PetscInt        cap;
  double         *W, *k, *mu, *lambda;     /* per owned node: Delassus block n x n, k's trace part, mu, lambda */
  double         *Ninv;                    /* per owned node, anisotropic: the change of variables' inverse (n x n); W and lambda are then W~, lambda~ */
  double          dt;
  double          scale;                /* rho g L [Pa]: the tolerance's unit (with tol_stress, at least) */
  double          dt_drift;             /* -nonsmooth_cfl_residual's step limit [s] (0: off; DriftStep) */
  PetscBool       tol_stress;           /* -nonsmooth_tol_stress: the unit is the larger of rho g L and the largest nodal pressure */
  PetscBool       frames;               /* particle frames, splitting and merging (D s. 5.3) */
  MPMResample     rs;
  int64_t         split;                /* this rank's splits in the step, booked after migration */
  MPMStepStats    st;
  /* the Gauss-Seidel's colours (ColourSetUp): a colour costs its own nodes
     and the slab faces, not a pass over the grid */
  PetscInt        col_off[28], *col_node, cap_col; /* active owned stress nodes by colour (offsets, 3^d + 1) */
  PetscInt       *act, nact;                     /* the same in the owned order: the loops of SpreadAll and APGD */
  PetscInt        builds;                       /* du's layout the rest was made on (0: none) */
  MPMGhostLayers  gl;                           /* du's ghost layers */
  Vec             incl, fg;                     /* a colour's du increments on the local box (0 between colours); the neighbours' ghost sums */
  PetscInt       *ghost, nghost;                /* local indices of the ghost nodes */
  PetscInt       *recv, *recv_loc, nrecv;       /* owned nodes that are ghosts elsewhere (owned index, local index) */
  PetscInt       *geo_at, cap_geo_at;           /* per local node: its walls' geometry in geo, or -1 (not near a wall or object) */
  double         *minv, *ustar;                 /* per local node: dt/m and u* (d) of node, compact: the operator's passes then read 1 and 3 doubles a node, not a 14-double record */
  double         *geo;
  PetscInt       *wall, nwall, cap_wall;        /* the local nodes near a dynamic body, in the box's order */
  char           *near_body;                    /* per local node: near a dynamic body (1/0) */
  PetscBool       monitor;                      /* -nonsmooth_monitor: the residual after every sweep */
} Nonsmooth;

enum { NS_STAT_ITS, NS_STAT_RESIDUAL, NS_STAT_FAILSAFE, NS_STAT_NODES, NS_STAT_UNCONVERGED, NS_NSTAT }; /* the last: steps that stopped at -nonsmooth_max_it above the tolerance */
typedef enum { NS_SOLVER_GS, NS_SOLVER_APGD } NonsmoothSolver;
static const char *const SolverNames[] = {"gs", "apgd", "NonsmoothSolver", "NS_SOLVER_", NULL};

/* -------------------------------------------------------------- options */
static PetscErrorCode NonsmoothOptions(MPMIntegrator integ, MPMSim sim)
{
  Nonsmooth *ns;
  PetscBool  set[4] = {PETSC_FALSE, PETSC_FALSE, PETSC_FALSE, PETSC_FALSE};

  PetscFunctionBeginUser;
  PetscCall(PetscNew(&ns));
  integ->data     = ns;
  ns->phi_max     = 0.6;
  ns->tol         = 1e-3;
  ns->tol_stress  = PETSC_TRUE;
  ns->max_it      = 1000;
  ns->max_newton  = 50;
  ns->omega       = 1.0;
  ns->cfl_gravity  = 0.5;
  ns->cfl_residual = 0; /* off: the studies in docs/ were run without it */
  ns->rs.split_ratio = 2.0;
  ns->rs.merge_ratio = 2.0;
  ns->rs.min_volume  = -1; /* by dimension, in the set-up: half and twice the volume of the default seeding, 2 particles per cell and axis */
  ns->rs.max_volume  = -1;
  PetscOptionsBegin(sim->comm, integ->prefix, "Nonsmooth granular integrator (Daviet and Bertails-Descoubes 2016)", NULL);
  PetscCall(MPMOptionsReal("-phi_max", "Maximum volume fraction of the grains; regions seed at it (the seed: 0.6) [-]", NULL, ns->phi_max, &ns->phi_max, NULL));
  PetscCall(MPMOptionsReal("-tol", "Tolerance of the friction problem: largest per-node residual over rho g L (rho the densest material, L the domain's extent along gravity; the seed: 1e-3), or over the largest pressure at a node where that is larger (-nonsmooth_tol_stress) [-]",
                           NULL, ns->tol, &ns->tol, NULL));
  PetscCall(PetscOptionsBool("-tol_stress", "Measure the residual against the larger of rho g L and the largest pressure at a node: an impact loads the grains with many times rho g L, and 1e-3 rho g L is then a far tighter relative tolerance than the seed's (false: rho g L alone)", NULL,
                             ns->tol_stress, &ns->tol_stress, NULL));
  PetscCall(PetscOptionsInt("-max_it", "Most Gauss-Seidel sweeps per step (then the step goes on with the last iterate, with a warning at the first such step; history.csv and summary.json count them, dcfp_unconverged)", NULL, ns->max_it, &ns->max_it, NULL));
  PetscCall(MPMOptionsReal("-omega",
                           "Gauss-Seidel over-relaxation: each node moves omega times its exact local solve's step, then back into its cone (1: the seed's Gauss-Seidel; 1.5 cut the sweeps of the 2D collapse by 30 %) [-]",
                           NULL, ns->omega, &ns->omega, NULL));
  PetscCall(PetscOptionsInt("-local_newton_max", "Most Newton steps of a node's local solve before its fail-safe (a projected fixed point)", NULL, ns->max_newton, &ns->max_newton, NULL));
  PetscCall(MPMOptionsEList("-solver",
                            "Friction solver: gs (projected Gauss-Seidel in 3^d colours: independent of the rank count) or apgd (accelerated projected gradient over all nodes at once: rank count "
                            "enters through the global sums' roundoff); -nonsmooth_max_it counts sweeps or gradient steps",
                            NULL, SolverNames, 2, SolverNames[ns->solver], &ns->solver, NULL));
  PetscCall(MPMOptionsReal("-decompaction", "Fraction of a dual cell's excess over phi_max that must expand back in one step (0: the seed's clamp k >= 0, which keeps the step dissipative but lets over-full cells stay) [-]",
                           NULL, ns->decompaction, &ns->decompaction, NULL));
  PetscCall(MPMOptionsReal("-cfl_gravity", "dt <= sqrt(cfl_gravity dx / |g|): material at rest falls at most this many cells in one step [-]", NULL, ns->cfl_gravity, &ns->cfl_gravity, NULL));
  PetscCall(MPMOptionsReal("-cfl_residual",
                           "dt <= dx sqrt(cfl_residual / (tol |g| L)): grains held by a stress that is off by the tolerance (tol rho g L) slip at most this many cells in one step "
                           "(0: no such limit; 1e-4 kept the top of an a = 0.5 collapse at L0/128 within 0.4 %, docs/design/nonsmooth.md, \"The tolerance at fine cells\") [-]",
                           NULL, ns->cfl_residual, &ns->cfl_residual, NULL));
  PetscCall(PetscOptionsBool("-monitor", "Print the friction problem's residual (over rho g L) after every Gauss-Seidel sweep or APGD step, as -ksp_monitor does (over the largest nodal pressure where -nonsmooth_tol_stress applies)", NULL, ns->monitor, &ns->monitor, NULL));
  PetscCall(PetscOptionsBool("-frames", "Particle frames with splitting and merging (D s. 5.3): each particle's ellipsoid moves with the flow; stretched particles split, elongated pairs merge", NULL,
                             ns->frames, &ns->frames, NULL));
  PetscCall(MPMOptionsReal("-split_ratio", "-nonsmooth_frames: split a particle whose longest semi-axis exceeds this many half-spacings V0^(1/d)/2 (its initial radius) [-]", NULL, ns->rs.split_ratio,
                           &ns->rs.split_ratio, &set[0]));
  PetscCall(MPMOptionsReal("-merge_ratio", "-nonsmooth_frames: merge two particles of a cell whose frames' longest over shortest axis are both at least this, when the pair's frame is rounder [-]", NULL,
                           ns->rs.merge_ratio, &ns->rs.merge_ratio, &set[1]));
  PetscCall(MPMOptionsReal("-split_min_volume", "-nonsmooth_frames: no split makes halves of less than this volume (default 2^-(d+1), half the default seeding's) [cells]", NULL, ns->rs.min_volume,
                           &ns->rs.min_volume, &set[2]));
  PetscCall(MPMOptionsReal("-merge_max_volume", "-nonsmooth_frames: no merge makes a particle of more than this volume (default 2^(1-d), twice the default seeding's) [cells]", NULL, ns->rs.max_volume,
                           &ns->rs.max_volume, &set[3]));
  PetscOptionsEnd();
  PetscCheck(ns->frames || !(set[0] || set[1] || set[2] || set[3]), sim->comm, PETSC_ERR_USER_INPUT,
             "-nonsmooth_split_ratio, -nonsmooth_merge_ratio, -nonsmooth_split_min_volume and -nonsmooth_merge_max_volume act with particle frames only; add -nonsmooth_frames");
  { /* the other integrators' transfer options, so that one deck runs with any */
    PetscInt transfer = MPM_TRANSFER_APIC;
    double   unused   = 0.5;
    PetscOptionsBegin(sim->comm, NULL, "Nonsmooth integrator: options of the other integrators", NULL);
    PetscCall(MPMOptionsEList("-transfer", "Particle-grid transfer: the nonsmooth integrator has apic only (the seed's)", NULL, MPMTransferNames, 3, MPMTransferNames[transfer], &transfer, NULL));
    PetscCall(MPMOptionsReal("-cfl_elastic", "Explicit integrators only (no elastic limit here): accepted so that one deck runs with any integrator", NULL, unused, &unused, NULL));
    PetscCall(MPMOptionsReal("-flip_blend", "Explicit and semi-implicit integrators only: accepted so that one deck runs with any integrator", NULL, unused, &unused, NULL));
    PetscOptionsEnd();
    PetscCheck(transfer == MPM_TRANSFER_APIC, sim->comm, PETSC_ERR_USER_INPUT, "-transfer %s: -integrator nonsmooth transfers with apic only (allowed: apic)", MPMTransferNames[transfer]);
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode NonsmoothCheck(MPMIntegrator integ, MPMSim sim)
{
  Nonsmooth *ns = (Nonsmooth *)integ->data;

  PetscFunctionBeginUser;
  PetscCheck(ns->phi_max > 0 && ns->phi_max <= 1, sim->comm, PETSC_ERR_USER_INPUT, "-nonsmooth_phi_max must be in (0, 1], got %g", ns->phi_max);
  PetscCheck(ns->tol > 0 && ns->tol < 1, sim->comm, PETSC_ERR_USER_INPUT, "-nonsmooth_tol must be in (0, 1), got %g", ns->tol);
  /* plausibility (warnings): a fraction typed as a percentage is caught above; these are the slips that run */
  PetscCall(MPMWarnUnusual(sim->comm, "-nonsmooth_phi_max", ns->phi_max, 0.4, 0.75, "", "the volume fraction of packed grains (random close packing 0.64, the seed 0.6)"));
  PetscCall(MPMWarnUnusual(sim->comm, "-nonsmooth_tol", ns->tol, 1e-8, 1e-2, "", "in units of rho g L (the seed 1e-3; a looser tolerance lets piles creep)"));
  PetscCheck(ns->max_it >= 1, sim->comm, PETSC_ERR_USER_INPUT, "-nonsmooth_max_it must be >= 1, got %" PetscInt_FMT, ns->max_it);
  PetscCheck(ns->max_newton >= 0, sim->comm, PETSC_ERR_USER_INPUT, "-nonsmooth_local_newton_max must be >= 0, got %" PetscInt_FMT, ns->max_newton);
  PetscCheck(ns->omega > 0 && ns->omega < 2, sim->comm, PETSC_ERR_USER_INPUT, "-nonsmooth_omega must be in (0, 2) (projected over-relaxation), got %g", ns->omega);
  PetscCheck(ns->omega == 1.0 || ns->solver == NS_SOLVER_GS, sim->comm, PETSC_ERR_USER_INPUT, "-nonsmooth_omega relaxes the Gauss-Seidel; allowed with -nonsmooth_solver gs, got apgd");
  PetscCheck(ns->decompaction >= 0 && ns->decompaction <= 1, sim->comm, PETSC_ERR_USER_INPUT, "-nonsmooth_decompaction must be in [0, 1], got %g", ns->decompaction);
  PetscCheck(ns->cfl_gravity > 0 && ns->cfl_gravity <= 1, sim->comm, PETSC_ERR_USER_INPUT, "-nonsmooth_cfl_gravity must be in (0, 1], got %g", ns->cfl_gravity);
  PetscCheck(ns->cfl_residual >= 0 && ns->cfl_residual <= 1, sim->comm, PETSC_ERR_USER_INPUT, "-nonsmooth_cfl_residual must be in [0, 1] (0: off), got %g", ns->cfl_residual);
  PetscCheck(ns->rs.split_ratio >= 1.5 && ns->rs.split_ratio <= 100, sim->comm, PETSC_ERR_USER_INPUT,
             "-nonsmooth_split_ratio must be in [1.5, 100] (a particle starts at 1; below 1.5 its halves would split again at once), got %g", ns->rs.split_ratio);
  PetscCheck(ns->rs.merge_ratio >= 1 && ns->rs.merge_ratio <= 100, sim->comm, PETSC_ERR_USER_INPUT, "-nonsmooth_merge_ratio must be in [1, 100], got %g", ns->rs.merge_ratio);
  if (ns->rs.min_volume < 0) ns->rs.min_volume = pow(0.5, (double)(sim->dim + 1));
  if (ns->rs.max_volume < 0) ns->rs.max_volume = pow(0.5, (double)(sim->dim - 1));
  PetscCheck(ns->rs.min_volume > 0 && ns->rs.min_volume <= 1, sim->comm, PETSC_ERR_USER_INPUT, "-nonsmooth_split_min_volume must be in (0, 1] cells, got %g", ns->rs.min_volume);
  PetscCheck(ns->rs.max_volume > 2 * ns->rs.min_volume && ns->rs.max_volume <= 1, sim->comm, PETSC_ERR_USER_INPUT,
             "-nonsmooth_merge_max_volume must be in (2 x -nonsmooth_split_min_volume, 1] cells = (%g, 1], got %g", 2 * ns->rs.min_volume, ns->rs.max_volume);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* --------------------------------------------------------------- set-up */
/* A split half must not land inside a wall or object (on its surface or
 * deeper: the next step's collision would correct its velocity, not its
 * position) */
static PetscBool InsideObject(void *ctx, const double *x) { return MPMCollidersNear((MPMColliders)ctx, 0, x, 0.0); }

/* The solve leaves up to tol rho g L of stress unbalanced, the same way
 * every step, so grains at rest (|g| = g, extent L along it) drift by
 *
 *   tol (L / h) g dt^2 / h   cells a step,
 *
 * which grows as 1 / h^2 at a fixed step: at L0/128 and dt 1e-3 s the
 * undisturbed top of an a = 0.5 collapse sank by 15 % in 0.57 s, where 4e-4
 * cells a step (L0/64) kept it within 0.6 %.  DriftCells is that drift,
 * DriftStep the step that drifts the given cells (-nonsmooth_cfl_residual). */
static double DriftCells(const Nonsmooth *ns, double g, double L, double h, double dt) { return ns->tol * g * L * dt * dt / (h * h); }
static double DriftStep(const Nonsmooth *ns, double g, double L, double h, double cells) { return h * sqrt(cells / (ns->tol * g * L)); }

/* Without -nonsmooth_cfl_residual, warn before the first step when the
 * longest step allows grains at rest to drift more than 1e-3 cells a step. */
static PetscErrorCode WarnDrift(const Nonsmooth *ns, MPMSim sim, double g, double L)
{
  const double h = sim->layout.h;

  PetscFunctionBeginUser;
  if (g <= 0 || ns->cfl_residual > 0) PetscFunctionReturn(PETSC_SUCCESS);
  const double dt    = sim->dt_fixed > 0 ? sim->dt_fixed : PetscMin(sim->dt_max, sqrt(ns->cfl_gravity * h / g));
  const double drift = DriftCells(ns, g, L, h, dt);
  if (drift > 1e-3)
    PetscCall(MPMWarn(sim->comm,
                      "-nonsmooth_tol %g (of rho g L, L = %g m) lets grains at rest drift by up to %.2g cells a step at dx %g m and dt %g s; above 1e-3 a collapse's undisturbed top sank by 15 %% "
                      "(docs/design/nonsmooth.md, \"The tolerance at fine cells\"): add -nonsmooth_cfl_residual 1e-4, or lower -nonsmooth_tol",
                      ns->tol, L, drift, h, dt));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode NonsmoothSetUp(MPMIntegrator integ, MPMSim sim)
{
  Nonsmooth  *ns = (Nonsmooth *)integ->data;
  MPMSpecies *sp;
  double      rho = 0, L = 0, g = 0;

  PetscFunctionBeginUser;
  PetscCheck(sim->nspecies == 1, sim->comm, PETSC_ERR_USER_INPUT, "-integrator nonsmooth simulates one granular species; the deck has %" PetscInt_FMT, sim->nspecies);
  PetscCheck(sim->layout.order == MPM_KERNEL_QUADRATIC, sim->comm, PETSC_ERR_USER_INPUT, "-integrator nonsmooth needs -kernel quadratic (its stress lives on the quadratic stencil's centre node)");
  sp = sim->species[0];
  for (PetscInt m = 0; m < sp->nmat; m++) {
    const MPMMaterial mat = sp->mat[m];
    PetscCheck(mat->mu_hat >= 0 && !(mat->flags & MPM_MATERIAL_FLUID), sim->comm, PETSC_ERR_USER_INPUT,
               "-integrator nonsmooth: material %s (type %s) is not a Drucker-Prager sand with a friction angle alone (no cohesion, hardening or wet cohesion); allowed: -%s_type drucker_prager", mat->name, mat->type,
               mat->name);
    rho = PetscMax(rho, mat->density);
  }
  for (PetscInt m = 0; m < sp->nmat; m++) ns->aniso = ns->aniso || sp->mat[m]->grains.alpha > 0 ? PETSC_TRUE : PETSC_FALSE;
  for (PetscInt m = 0; m < sp->nmat; m++) ns->mui = ns->mui || sp->mat[m]->mui.mu2_hat > 0 ? PETSC_TRUE : PETSC_FALSE;
  ns->n  = mpm_sym_size((int)sim->dim);
  ns->nb = sim->dim == 3 ? 27 : 9;
  PetscCall(MPMIntegratorStressFields(sp, &ns->f));
  {
    double zero[MPM_SYM_MAX] = {0};
    PetscCall(MPMParticlesRegisterField(&sp->p, "lambda", MPM_FIELD_REAL, ns->n, zero, MPM_FIELD_STATE, &ns->f_lambda));
    ns->f_nu2 = -1;
    if (ns->aniso) {
      PetscCall(MPMParticlesRegisterField(&sp->p, "grain_orientation", MPM_FIELD_REAL, (int)(sim->dim * sim->dim), NULL, MPM_FIELD_STATE, &ns->f_nu2));
      PetscCall(MPMParticlesSetOutput(&sp->p, ns->f_nu2, "grain_orientation", MPM_FIELD_REAL, PETSC_FALSE));
    }
  }
  if (ns->frames) {
    PetscCall(MPMResampleSetUp(sim, sp, &ns->rs));
    ns->rs.solid     = InsideObject;
    ns->rs.solid_ctx = sim->colliders;
  }
  ns->f_mu = -1;
  if (ns->mui) {
    const double none = -1;
    PetscCall(MPMParticlesRegisterField(&sp->p, "friction", MPM_FIELD_REAL, 1, &none, MPM_FIELD_STATE, &ns->f_mu));
    PetscCall(MPMParticlesSetOutput(&sp->p, ns->f_mu, "friction_coefficient", MPM_FIELD_REAL, PETSC_FALSE));
  }

  PetscCall(MPMGridFieldCreate(sim, "granular_momentum", mpm_transfer_dof((int)sim->dim, 0), PETSC_FALSE, &sp->grid));
  PetscCall(MPMGridFieldCreate(sim, "dcfp_forms", 2 + ns->n + ns->nb * sim->dim + (ns->aniso ? ns->n : 0), PETSC_FALSE, &ns->forms));
  PetscCall(MPMGridFieldCreate(sim, "dcfp_nodes", 2 + sim->dim + sim->dim * sim->dim, PETSC_FALSE, &ns->node));
  PetscCall(MPMGridFieldCreate(sim, "dcfp_du", sim->dim, PETSC_FALSE, &ns->du));
  PetscCall(MPMGridFieldCreate(sim, "dcfp_lambda", ns->n, PETSC_FALSE, &ns->lam));
  for (PetscInt a = 0; a < sim->dim; a++) g += sim->gravity[a] * sim->gravity[a];
  for (PetscInt a = 0; a < sim->dim; a++) { /* the extent along gravity (without gravity: the largest, at 9.81 m/s^2) */
    const double ext = sim->layout.hi[a] - sim->layout.lo[a];
    L = g > 0 ? L + fabs(sim->gravity[a]) / sqrt(g) * ext : PetscMax(L, ext);
  }
  ns->scale    = rho * (g > 0 ? sqrt(g) : 9.81) * L;
  ns->dt_drift = g > 0 && ns->cfl_residual > 0 ? DriftStep(ns, sqrt(g), L, sim->layout.h, ns->cfl_residual) : 0;
  PetscCall(WarnDrift(ns, sim, sqrt(g), L));
  {
    static const char *const names[NS_NSTAT] = {"dcfp_its", "dcfp_residual", "dcfp_failsafe", "dcfp_nodes", "dcfp_unconverged"};
    ns->st.n                                 = NS_NSTAT;
    for (int k = 0; k < NS_NSTAT; k++) PetscCall(PetscStrncpy(ns->st.name[k], names[k], sizeof(ns->st.name[k])));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* No elastic limit: CFL on the fastest particle, material at rest falling
 * at most cfl_gravity cells, the drift limit if asked for, the user's
 * maximum. */
static double NonsmoothStableDt(MPMIntegrator integ, const MPMSim sim, double vmax, MPMDtLimit *why)
{
  const Nonsmooth *ns = (const Nonsmooth *)integ->data;
  const double     h  = sim->layout.h;
  double           dt = sim->dt_max, g = 0;
  if (MPMIntegratorFixedDt(sim, why) > 0) return sim->dt_fixed;
  for (PetscInt a = 0; a < sim->dim; a++) g += sim->gravity[a] * sim->gravity[a];
  if (g > 0) dt = MPMDtMin(dt, why, sqrt(ns->cfl_gravity * h / sqrt(g)), MPM_DT_GRAVITY);
  if (ns->dt_drift > 0) dt = MPMDtMin(dt, why, ns->dt_drift, MPM_DT_RESIDUAL); /* grains held within the tolerance (DriftStep) */
  const double vbody = MPMCollidersBodiesSpeed(sim->colliders); /* once: PetscMax is a macro */
  vmax               = PetscMax(vmax, vbody);
  if (vmax > 0) dt = MPMDtMin(dt, why, sim->cfl * h / vmax, MPM_DT_CFL);
  return dt;
}

/* ---------------------------------------------------------- grid helpers */
static inline PetscInt LocalIndex(const MPMGridBox *b, const PetscInt *i) { return ((i[2] - b->gs[2]) * b->gn[1] + (i[1] - b->gs[1])) * b->gn[0] + (i[0] - b->gs[0]); }

/* Owned node o (0 .. xm0 xm1 xm2 - 1) -> its global index */
static inline void OwnedIndex(const MPMLayout *l, PetscInt o, PetscInt *i)
{
  i[0] = l->xs[0] + o % l->xm[0];
  i[1] = l->xs[1] + (o / l->xm[0]) % l->xm[1];
  i[2] = l->xs[2] + o / (l->xm[0] * l->xm[1]);
}

/* The local index of neighbour s (0 .. 3^d - 1) of node i: offsets -1..1 */
static inline PetscInt NeighbourIndex(const MPMGridBox *b, int d, const PetscInt *i, int s)
{
  const PetscInt k[3] = {i[0] + s % 3 - 1, i[1] + (s / 3) % 3 - 1, d == 3 ? i[2] + s / 9 - 1 : 0};
  return LocalIndex(b, k);
}

/* C(A)_s = chi(e_s) : A = 2 chi^-1(sym A) */
static inline void ChiT(int d, const double *A, double *r)
{
  double S[9];
  for (int a = 0; a < d; a++)
    for (int c = 0; c < d; c++) S[a * d + c] = A[a * d + c] + A[c * d + a];
  mpm_chi_inverse(d, S, r);
}

/* ---------------------------------------------------------------- forms */
/* Particles to their dual node: V, V mu, V lambda, G_ji = sum_p V_p grad N_i(x_p). */
static PetscErrorCode AssembleForms(Nonsmooth *ns, MPMSim sim)
{
  MPMSpecies     *sp = sim->species[0];
  MPMParticles   *p  = &sp->p;
  const int       d = (int)sim->dim, n = ns->n, dof = (int)ns->forms->dof;
  const MPMGridBox *bx = &ns->forms->box;
  const double   *x = MPMFieldReal(p, p->f_x), *V0 = MPMFieldReal(p, p->f_V0), *lam = MPMFieldReal(p, ns->f_lambda);
  const double   *mup = ns->f_mu >= 0 ? MPMFieldReal(p, ns->f_mu) : NULL;
  const int32_t  *mat = MPMFieldInt32(p, p->f_mat);
  PetscScalar    *a;

  PetscFunctionBeginUser;
  PetscCall(VecZeroEntries(ns->forms->local));
  PetscCall(VecGetArray(ns->forms->local, &a));
  for (PetscInt q = 0; q < p->n; q++) {
    int      base[3] = {0, 0, 0};
    double   w[3][3] = {{1, 0, 0}, {1, 0, 0}, {1, 0, 0}}, dw[3][3] = {{0}};
    PetscInt j[3] = {0, 0, 0};
    for (int c = 0; c < d; c++) {
      mpm_bspline_weights(MPM_KERNEL_QUADRATIC, mpm_grid_coord(bx, c, x[q * d + c]), &base[c], w[c], dw[c]);
      j[c] = base[c] + 1;
    }
    const double V  = ns->phi_max * V0[q];
    double      *F  = a + dof * LocalIndex(bx, j);
    F[0] += V;
    F[1] += V * mpm_dcfp_mu(d, mup && mup[q] >= 0 ? mup[q] : sp->mat[mat[q]]->mu_hat);
    for (int s = 0; s < n; s++) F[2 + s] += V * lam[q * n + s];
    for (int s = 0; s < ns->nb; s++) {
      const int ia = s % 3, ib = (s / 3) % 3, ic = s / 9;
      double   *G  = F + 2 + n + s * d;
      G[0] += V * dw[0][ia] * w[1][ib] * w[2][ic] / bx->h;
      G[1] += V * w[0][ia] * dw[1][ib] * w[2][ic] / bx->h;
      if (d == 3) G[2] += V * w[0][ia] * w[1][ib] * dw[2][ic] / bx->h;
    }
    if (ns->aniso) { /* N^-1 - I = alpha (d nu2 - I), averaged over the dual cell by volume */
      const double  alpha = sp->mat[mat[q]]->grains.alpha, *nu2 = MPMFieldReal(p, ns->f_nu2) + q * d * d;
      double        T[9], r[MPM_SYM_MAX], *A = F + 2 + n + ns->nb * d;
      for (int k = 0; k < d * d; k++) T[k] = alpha * (d * nu2[k] - (k % (d + 1) == 0 ? 1.0 : 0.0));
      mpm_chi_inverse(d, T, r);
      for (int s = 0; s < n; s++) A[s] += V * r[s];
    }
  }
  PetscCall(VecRestoreArray(ns->forms->local, &a));
  PetscCall(MPMGhostScatterAdd(ns->forms));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The velocity nodes: u* = p / m + dt g, the walls' and objects'
 * frictionless projection P at u* (for the Delassus blocks), dt / m,
 * whether a wall or object is near; gathered to the ghosts. */
static PetscErrorCode PredictNodes(Nonsmooth *ns, MPMSim sim, double dt)
{
  const MPMLayout   *l = &sim->layout;
  const int          d = (int)sim->dim, gdof = (int)sim->species[0]->grid->dof, ndof = (int)ns->node->dof;
  const PetscInt     nown = l->xm[0] * l->xm[1] * l->xm[2];
  const double       gs = MPMGravityScale(sim);
  const PetscScalar *g;
  PetscScalar       *a;

  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(sim->species[0]->grid->global, &g));
  PetscCall(VecGetArray(ns->node->global, &a));
  for (PetscInt o = 0; o < nown; o++) {
    const double *gn = g + gdof * o;
    double       *nd = a + ndof * o, x[3], v[3];
    for (int c = 0; c < ndof; c++) nd[c] = 0;
    for (int c = 0; c < d; c++) nd[1 + d + c * (d + 1)] = 1.0; /* P = I */
    if (gn[0] <= 0) continue;
    nd[0] = dt / gn[0];
    for (int c = 0; c < d; c++) nd[1 + c] = v[c] = gn[1 + c] / gn[0] + dt * gs * sim->gravity[c];
    MPMLayoutOwnedNodeX(l, o, x);
    MPMCollidersProject(sim->colliders, 0, x, dt, v, nd + 1 + d); /* P: the Delassus blocks' (NodeProblems) */
    /* Gauss-Seidel collides only these nodes at every sweep (WallVelocities): beyond two
       cells a node would need to cross 2 cells in one step to be caught */
    nd[ndof - 1] = MPMCollidersNear(sim->colliders, 0, x, 2 * l->h) ? 1.0 : 0.0;
  }
  PetscCall(VecRestoreArray(ns->node->global, &a));
  PetscCall(VecRestoreArrayRead(sim->species[0]->grid->global, &g));
  /* the gather leaves the ghost nodes beyond the domain's edge as they were; a layout
     rebuilt when the slabs move may hold old values there, and APGD's operator collides
     every local node: zero them, or a restart is not bit for bit (APGD with a body) */
  PetscCall(VecZeroEntries(ns->node->local));
  PetscCall(MPMGhostGather(ns->node));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* B_j P du: the strain rate of the velocity change du alone through the
 * walls' frictionless projection P at u* (the operator's linear part) */
static void NodeStrainRate(const Nonsmooth *ns, int d, const PetscInt *i, const double *F, const double *nodes, const double *du, double *r)
{
  const MPMGridBox *bx = &ns->node->box;
  const int         ndof = (int)ns->node->dof, n = ns->n;
  double            A[9] = {0};
  for (int s = 0; s < ns->nb; s++) {
    const PetscInt li = NeighbourIndex(bx, d, i, s);
    const double  *nd = nodes + ndof * li, *P = nd + 1 + d, *G = F + 2 + n + s * d;
    double         v[3] = {0, 0, 0};
    if (nd[0] == 0) continue; /* no mass */
    for (int a = 0; a < d; a++)
      for (int c = 0; c < d; c++) v[a] += P[a * d + c] * du[d * li + c];
    for (int a = 0; a < d; a++)
      for (int c = 0; c < d; c++) A[a * d + c] += v[a] * G[c];
  }
  ChiT(d, A, r);
}

/* B_j v and its transpose (NodeStrainRateOf, SpreadStress) with the
 * dimension a constant and the 3^d neighbours' local indices as offsets
 * from the node's, x fastest (the order of NeighbourIndex's s): the APGD
 * operator runs both at every active node of every iteration (53,000 on
 * the 3D silo).  The same products in the same order as the loops over s
 * with NeighbourIndex: the same bits. */
#define NS_INLINE static inline __attribute__((always_inline))

/* The forms of the active node NS_PREFETCH_AHEAD places on: they are 89
 * doubles a node in 3D, and the active nodes skip the empty ones, which
 * breaks the hardware prefetcher's stream (the passes waited on them) */
#define NS_PREFETCH_AHEAD 4
NS_INLINE void PrefetchForms(const Nonsmooth *ns, const double *F, PetscInt a)
{
  if (a + NS_PREFETCH_AHEAD >= ns->nact) return;
  const char *p = (const char *)(F + ns->forms->dof * ns->act[a + NS_PREFETCH_AHEAD]);
  for (PetscInt b = 0; b < (PetscInt)(ns->forms->dof * sizeof(double)); b += 64) __builtin_prefetch(p + b);
}

NS_INLINE void StrainRateOfD(const int D, const Nonsmooth *ns, const PetscInt *i, const double *F, const double *vel, double *r)
{
  const MPMGridBox *bx = &ns->node->box;
  const PetscInt    c = LocalIndex(bx, i), sy = bx->gn[0], sz = (PetscInt)bx->gn[0] * bx->gn[1];
  const double     *G = F + 2 + ns->n;
  double            A[9] = {0};
  for (int kz = 0; kz < (D == 3 ? 3 : 1); kz++)
    for (int ky = 0; ky < 3; ky++)
      for (int kx = 0; kx < 3; kx++, G += D) {
        const double *v = vel + D * (c + (D == 3 ? kz - 1 : 0) * sz + (ky - 1) * sy + kx - 1);
        for (int a = 0; a < D; a++)
          for (int e = 0; e < D; e++) A[a * D + e] += v[a] * G[e];
      }
  ChiT(D, A, r);
}

NS_INLINE void SpreadStressD(const int D, const Nonsmooth *ns, const PetscInt *i, const double *Fo, const double *dl, double *inc)
{
  const MPMGridBox *bx = &ns->node->box;
  const PetscInt    c = LocalIndex(bx, i), sy = bx->gn[0], sz = (PetscInt)bx->gn[0] * bx->gn[1];
  const double     *G = Fo + 2 + ns->n;
  double            T[9];
  mpm_chi(D, dl, T);
  for (int kz = 0; kz < (D == 3 ? 3 : 1); kz++)
    for (int ky = 0; ky < 3; ky++)
      for (int kx = 0; kx < 3; kx++, G += D) {
        const PetscInt li = c + (D == 3 ? kz - 1 : 0) * sz + (ky - 1) * sy + kx - 1;
        const double   minv = ns->minv[li];
        for (int a = 0; a < D; a++) { /* summed in a register: inc may alias G for the compiler, which then stored every partial sum */
          double sum = inc[D * li + a];
          for (int k = 0; k < D; k++) sum += minv * T[a * D + k] * G[k];
          inc[D * li + a] = sum;
        }
      }
}

/* Anisotropic grains (D s. 6.2): the node's problem in the variables
 * lambda~ = N(lambda), gamma~ = N^-1 gamma, with the cone unchanged:
 * W~ = N^-1 W N^-1 in place, the warm start lambda~ = N lambda, and
 * N^-1 kept (NodeRhs, Physical).  N^-1 - I is the dual cell's volume
 * average of the particles' alpha (d nu2 - I) (AssembleForms). */
static void AnisotropicNode(const Nonsmooth *ns, int d, const double *Fo, double *W, double *lam, double *Ni)
{
  const int n = ns->n;
  double    T[9], Nm[MPM_SYM_MAX * MPM_SYM_MAX], WN[MPM_SYM_MAX * MPM_SYM_MAX], l[MPM_SYM_MAX];
  mpm_chi(d, Fo + 2 + n + ns->nb * d, T);
  for (int k = 0; k < d * d; k++) T[k] = T[k] / Fo[0] + (k % (d + 1) == 0 ? 1.0 : 0.0);
  if (!mpm_aniso_map(d, T, Nm, Ni)) /* cannot happen for alpha < 1: M >= (1 - alpha) I */
    for (int k = 0; k < n * n; k++) Nm[k] = Ni[k] = k % (n + 1) == 0 ? 1.0 : 0.0;
  mpm_matmul(n, W, Ni, WN); /* W N^-1, then N^-1 (W N^-1) */
  mpm_matmul(n, Ni, WN, W);
  if (!lam) return;
  mpm_matvec(n, Nm, lam, l);
  for (int a = 0; a < n; a++) lam[a] = l[a];
}

/* The physical stress (or gamma) of node o from the solve's variables:
 * N^-1 x when anisotropic, else x */
static void Physical(const Nonsmooth *ns, PetscInt o, const double *x, double *out)
{
  const int n = ns->n;
  if (ns->aniso) mpm_matvec(n, ns->Ninv + n * n * o, x, out);
  else
    for (int a = 0; a < n; a++) out[a] = x[a];
}

/* Per owned stress node: mu, the warm start, k (the dual cell's room;
 * clamped at 0 as D section 5.2 unless -nonsmooth_decompaction > 0) and the
 * Delassus block W = sum_i B_ji (dt/m_i) P_i B_ji^T. */
static PetscErrorCode NodeProblems(Nonsmooth *ns, MPMSim sim, double dt, PetscInt *nactive)
{
  const MPMLayout   *l = &sim->layout;
  const int          d = (int)sim->dim, n = ns->n, fdof = (int)ns->forms->dof, ndof = (int)ns->node->dof;
  const PetscInt     nown = l->xm[0] * l->xm[1] * l->xm[2];
  const double       cd   = d == 3 ? sqrt(6.0) : 2.0, hd = d == 3 ? l->h * l->h * l->h : l->h * l->h; /* Tr chi(e_N), dual cell volume */
  const PetscScalar *F, *nodes;

  PetscFunctionBeginUser;
  if (nown > ns->cap) {
    PetscCall(PetscFree4(ns->W, ns->k, ns->mu, ns->lambda));
    PetscCall(PetscFree(ns->Ninv));
    ns->cap = nown;
    PetscCall(PetscMalloc4(nown * n * n, &ns->W, nown, &ns->k, nown, &ns->mu, nown * n, &ns->lambda));
    if (ns->aniso) PetscCall(PetscMalloc1(nown * n * n, &ns->Ninv));
  }
  *nactive = 0;
  PetscCall(VecGetArrayRead(ns->forms->global, &F));
  PetscCall(VecGetArrayRead(ns->node->local, &nodes));
  for (PetscInt o = 0; o < nown; o++) {
    const double *Fo = F + fdof * o;
    double       *W = ns->W + n * n * o, *lam = ns->lambda + n * o;
    PetscInt      i[3];
    OwnedIndex(l, o, i);
    ns->mu[o] = ns->k[o] = 0;
    for (int s = 0; s < n; s++) lam[s] = 0;
    for (int k = 0; k < n * n; k++) W[k] = 0; /* an inactive node's block is read (APGD's NodeScales): never leave it as the memory was */
    if (ns->aniso)
      for (int k = 0; k < n * n; k++) ns->Ninv[n * n * o + k] = k % (n + 1) == 0 ? 1.0 : 0.0;
    if (Fo[0] <= 0) continue;
    (*nactive)++;
    ns->mu[o] = Fo[1] / Fo[0];
    for (int s = 0; s < n; s++) lam[s] = Fo[2 + s] / Fo[0]; /* the warm start: the particles' lambda of the last step */
    { /* the room of the dual cell: phi_max of its part outside walls and objects (else the half
         cells along a wall count as loose and the grains there fall and compact) */
      double x[3];
      MPMLayoutOwnedNodeX(l, o, x);
      const double room = ns->phi_max * hd * MPMCollidersFreeFraction(sim->colliders, 0, x, l->h) - Fo[0];
      ns->k[o] = cd * (room >= 0 ? room : ns->decompaction * room) / (d * dt);
    }
    for (int c = 0; c < n; c++) { /* column c: lambda = e_c */
      double e[MPM_SYM_MAX] = {0}, T[9], A[9] = {0}, r[MPM_SYM_MAX];
      e[c] = 1;
      mpm_chi(d, e, T);
      for (int s = 0; s < ns->nb; s++) {
        const double *nd = nodes + ndof * NeighbourIndex(&ns->node->box, d, i, s), *P = nd + 1 + d, *G = Fo + 2 + n + s * d;
        double        f[3] = {0, 0, 0}, v[3] = {0, 0, 0};
        if (nd[0] == 0) continue;
        for (int a = 0; a < d; a++)
          for (int k = 0; k < d; k++) f[a] += T[a * d + k] * G[k];
        for (int a = 0; a < d; a++)
          for (int k = 0; k < d; k++) v[a] += nd[0] * P[a * d + k] * f[k];
        for (int a = 0; a < d; a++)
          for (int k = 0; k < d; k++) A[a * d + k] += v[a] * G[k];
      }
      ChiT(d, A, r);
      for (int s = 0; s < n; s++) W[s * n + c] = r[s];
    }
    if (ns->aniso) AnisotropicNode(ns, d, Fo, W, lam, ns->Ninv + n * n * o);
  }
  PetscCall(VecRestoreArrayRead(ns->node->local, &nodes));
  PetscCall(VecRestoreArrayRead(ns->forms->global, &F));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ----------------------------------------------------------- the DCFP */
/* The velocity Gauss-Seidel's stress nodes see, u = u* + du through the
 * walls and objects with their Coulomb friction, at every local node (the
 * ghosts too: du is gathered, so each rank finds the same).  This makes the
 * walls part of the friction problem (D s. 6.1, frictional boundaries as
 * bodies of infinite inertia): each wall node's contact impulse is the exact
 * solution of its own Coulomb problem (its Delassus block is M^-1, isotropic)
 * given the stress, a block of the Gauss-Seidel solved between colours.
 * Applying the friction only after the solve let the grains on a floor
 * slide over the held bottom layer (a confined layer under a 15 degree tilt
 * crept at 0.8 mm/s). */
/* Local node li of box bx: its global index */
static inline void BoxIndex(const MPMGridBox *bx, PetscInt li, PetscInt *gi)
{
  gi[0] = bx->gs[0] + li % bx->gn[0];
  gi[1] = bx->gs[1] + (li / bx->gn[0]) % bx->gn[1];
  gi[2] = bx->gs[2] + li / (bx->gn[0] * bx->gn[1]);
}

static inline PetscBool Owned(const MPMLayout *l, const PetscInt *gi)
{
  for (int c = 0; c < 3; c++)
    if (gi[c] < l->xs[c] || gi[c] >= l->xs[c] + l->xm[c]) return PETSC_FALSE;
  return PETSC_TRUE;
}

/* Node li's velocity u* + du, collided with the walls' geometry of
 * WallGeometry; trial: book the dynamic bodies' trial impulses at owned
 * nodes (MPMCollidersVelocity) */
static inline void WallVelocity(Nonsmooth *ns, MPMSim sim, PetscInt li, const double *du, PetscBool trial, double *vel)
{
  const MPMGridBox *bx = &ns->node->box;
  const int         d  = (int)sim->dim;
  const double      mi = ns->minv[li];
  double           *v  = vel + d * li, x[3];
  PetscInt          gi[3];

  for (int c = 0; c < d; c++) v[c] = mi > 0 ? ns->ustar[d * li + c] + du[d * li + c] : 0.0;
  if (ns->geo_at[li] < 0) return;
  BoxIndex(bx, li, gi);
  for (int c = 0; c < d; c++) x[c] = bx->origin[c] + bx->h * gi[c];
  (void)MPMCollidersVelocity(sim->colliders, 0, ns->geo + ns->geo_at[li], x, ns->dt / mi, ns->dt, trial && Owned(&sim->layout, gi), v);
}

/* A node whose du changed in a colour; the nodes near a dynamic body are
 * left to the pass over all of them (SweepColour). */
static inline void Refresh(Nonsmooth *ns, MPMSim sim, PetscInt li, const double *du, double *vel)
{
  if (ns->near_body[li]) return;
  WallVelocity(ns, sim, li, du, PETSC_FALSE, vel);
}

static PetscErrorCode WallVelocities(Nonsmooth *ns, MPMSim sim, Vec vell)
{
  const MPMGridBox  *bx = &ns->node->box;
  const PetscInt     nloc = (PetscInt)bx->gn[0] * bx->gn[1] * bx->gn[2];
  const PetscScalar *du;
  PetscScalar       *vel;

  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(ns->du->local, &du));
  PetscCall(VecGetArray(vell, &vel));
  for (PetscInt li = 0; li < nloc; li++) WallVelocity(ns, sim, li, du, PETSC_TRUE, vel);
  PetscCall(VecRestoreArray(vell, &vel));
  PetscCall(VecRestoreArrayRead(ns->du->local, &du));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* B_j v for the node velocities vel (local, d per node) */
static void NodeStrainRateOf(const Nonsmooth *ns, int d, const PetscInt *i, const double *F, const double *vel, double *r)
{
  if (d == 3) StrainRateOfD(3, ns, i, F, vel, r);
  else StrainRateOfD(2, ns, i, F, vel, r);
}

/* gamma_j = B_j u + k_j with u the velocities through the walls, and the
 * node's problem right-hand side gamma_j - W_j lambda_j (the rest of the
 * operator, frozen) */
static void NodeRhs(const Nonsmooth *ns, int d, PetscInt o, const PetscInt *i, const double *Fo, const double *vel, double *bl)
{
  const int     n = ns->n;
  const double *W = ns->W + n * n * o, *lam = ns->lambda + n * o;
  double        g[MPM_SYM_MAX], gt[MPM_SYM_MAX];
  NodeStrainRateOf(ns, d, i, Fo, vel, g);
  g[0] += ns->k[o];
  Physical(ns, o, g, gt); /* gamma~ = N^-1 gamma (N^-1 is symmetric) */
  for (int s = 0; s < n; s++) {
    bl[s] = gt[s];
    for (int c = 0; c < n; c++) bl[s] -= W[s * n + c] * lam[c];
  }
}

/* The velocity change dt/m_i chi(dl) G_ji of a stress change dl at node i
 * (global index) added to the 3^d velocity nodes it sees (local array). */
static void SpreadStress(const Nonsmooth *ns, int d, const PetscInt *i, const double *Fo, const double *dl, double *inc)
{
  if (d == 3) SpreadStressD(3, ns, i, Fo, dl, inc);
  else SpreadStressD(2, ns, i, Fo, dl, inc);
}

/* Every active node's lambda as it stands spread onto the velocity
 * nodes, du = dt/m chi(lambda) G_ji, summed on the owners and sent back to
 * the ghosts (whole-field exchanges: once per solve for the Gauss-Seidel's
 * warm start; once per APGD operator application, and per power
 * iteration of DelassusNorm).  With vell, the velocities
 * through the walls are then refreshed. */
static PetscErrorCode SpreadAll(Nonsmooth *ns, MPMSim sim, Vec vell)
{
  const MPMLayout   *l = &sim->layout;
  const int          d = (int)sim->dim, n = ns->n, fdof = (int)ns->forms->dof;
  const PetscScalar *F;
  PetscScalar       *inc;
  Vec                incl;

  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(ns->forms->global, &F));
  PetscCall(DMGetLocalVector(ns->du->da, &incl));
  PetscCall(VecZeroEntries(incl));
  PetscCall(VecGetArray(incl, &inc));
  for (PetscInt a = 0; a < ns->nact; a++) {
    const PetscInt o  = ns->act[a];
    const double  *Fo = F + fdof * o;
    PetscInt       i[3];
    double         dl[MPM_SYM_MAX];
    PrefetchForms(ns, F, a);
    OwnedIndex(l, o, i);
    Physical(ns, o, ns->lambda + n * o, dl);
    SpreadStress(ns, d, i, Fo, dl, inc);
  }
  PetscCall(VecRestoreArray(incl, &inc));
  PetscCall(MPMGhostScatterAddVec(ns->du, incl, ns->du->global)); /* du was 0: du = the sums */
  PetscCall(DMRestoreLocalVector(ns->du->da, &incl));
  PetscCall(VecRestoreArrayRead(ns->forms->global, &F));
  PetscCall(MPMGhostGather(ns->du));
  if (vell) {
    PetscCall(WallVelocities(ns, sim, vell));
    PetscCall(MPMCollidersBodiesRelax(sim->colliders, sim->comm)); /* the dynamic bodies, from the owned nodes' trial impulses */
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The exchange work of du's layout, rebuilt when the slabs move: the
 * ghost layers, two zeroed work vectors, the ghost nodes and the owned
 * nodes other ranks see as ghosts. */
static PetscErrorCode ColourLayout(Nonsmooth *ns, MPMSim sim)
{
  const MPMLayout  *l = &sim->layout;
  const MPMGridBox *bx = &ns->du->box;
  const PetscInt    d = sim->dim, nloc = (PetscInt)bx->gn[0] * bx->gn[1] * bx->gn[2];

  PetscFunctionBeginUser;
  if (ns->builds == ns->du->builds) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(MPMGhostLayersDestroy(&ns->gl));
  PetscCall(VecDestroy(&ns->incl));
  PetscCall(VecDestroy(&ns->fg));
  PetscCall(PetscFree3(ns->ghost, ns->recv, ns->recv_loc));
  PetscCall(MPMGhostLayersCreate(ns->du, &ns->gl));
  PetscCall(VecDuplicate(ns->du->local, &ns->incl));
  PetscCall(VecDuplicate(ns->du->global, &ns->fg));
  PetscCall(VecZeroEntries(ns->incl));
  PetscCall(VecZeroEntries(ns->fg));
  PetscCall(PetscMalloc3(nloc, &ns->ghost, ns->gl.nrecv / d + 1, &ns->recv, ns->gl.nrecv / d + 1, &ns->recv_loc));
  ns->nghost = ns->nrecv = 0;
  for (PetscInt li = 0; li < nloc; li++) {
    PetscInt gi[3];
    BoxIndex(bx, li, gi);
    if (!Owned(l, gi)) ns->ghost[ns->nghost++] = li;
  }
  for (PetscInt k = 0; k < ns->gl.nrecv; k++) /* a ghost node's d entries are consecutive */
    if (ns->gl.recv[k] % d == 0) {
      PetscInt i[3];
      ns->recv[ns->nrecv] = ns->gl.recv[k] / d;
      OwnedIndex(l, ns->recv[ns->nrecv], i);
      ns->recv_loc[ns->nrecv++] = LocalIndex(bx, i);
    }
  ns->builds = ns->du->builds;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Each local node with mass near a wall or object: the geometry of the
 * objects that stand still during the solve (all but the dynamic bodies),
 * for the colours' collisions; and the nodes within the same reach (2
 * cells, PredictNodes) of a dynamic body, collided again after every
 * colour. */
static PetscErrorCode WallGeometry(Nonsmooth *ns, MPMSim sim)
{
  const MPMGridBox  *bx = &ns->node->box;
  const int          d = (int)sim->dim, ndof = (int)ns->node->dof;
  const PetscInt     nloc = (PetscInt)bx->gn[0] * bx->gn[1] * bx->gn[2], G = MPMCollidersGeometrySize(sim->colliders);
  const PetscScalar *nodes;
  PetscInt           nw = 0;

  PetscFunctionBeginUser;
  if (nloc > ns->cap_geo_at) {
    PetscCall(PetscFree4(ns->geo_at, ns->near_body, ns->minv, ns->ustar));
    ns->cap_geo_at = nloc;
    PetscCall(PetscMalloc4(nloc, &ns->geo_at, nloc, &ns->near_body, nloc, &ns->minv, d * nloc, &ns->ustar));
  }
  PetscCall(VecGetArrayRead(ns->node->local, &nodes));
  for (PetscInt li = 0; li < nloc; li++) {
    const double *nd = nodes + ndof * li;
    ns->geo_at[li]   = nd[0] > 0 && nd[ndof - 1] != 0 ? G * nw++ : -1;
    ns->minv[li]     = nd[0];
    for (int c = 0; c < d; c++) ns->ustar[d * li + c] = nd[1 + c];
  }
  if (nw > ns->cap_wall) {
    PetscCall(PetscFree2(ns->wall, ns->geo));
    ns->cap_wall = PetscMax(nw, (PetscInt)(1.25 * ns->cap_wall));
    PetscCall(PetscMalloc2(ns->cap_wall, &ns->wall, ns->cap_wall * G, &ns->geo));
  }
  ns->nwall = 0;
  for (PetscInt li = 0; li < nloc; li++) {
    PetscInt gi[3];
    double   x[3];
    ns->near_body[li] = 0;
    if (ns->geo_at[li] < 0) continue;
    BoxIndex(bx, li, gi);
    for (int c = 0; c < d; c++) x[c] = bx->origin[c] + bx->h * gi[c];
    MPMCollidersGeometry(sim->colliders, 0, x, ns->geo + ns->geo_at[li]);
    if (sim->colliders->ndynamic > 0 && MPMCollidersNearBody(sim->colliders, 0, x, 2 * bx->h)) {
      ns->near_body[li]        = 1;
      ns->wall[ns->nwall++] = li;
    }
  }
  PetscCall(VecRestoreArrayRead(ns->node->local, &nodes));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The active stress nodes of each colour, in increasing owned index (the
 * order of a pass over the grid), once per solve. */
static PetscErrorCode ColourSetUp(Nonsmooth *ns, MPMSim sim)
{
  const MPMLayout   *l    = &sim->layout;
  const int          ncol = sim->dim == 3 ? 27 : 9, fdof = (int)ns->forms->dof;
  const PetscInt     nown = l->xm[0] * l->xm[1] * l->xm[2];
  const PetscScalar *F;
  PetscInt           cnt[28] = {0};

  PetscFunctionBeginUser;
  PetscCall(ColourLayout(ns, sim));
  if (nown > ns->cap_col) {
    PetscCall(PetscFree2(ns->col_node, ns->act));
    ns->cap_col = nown;
    PetscCall(PetscMalloc2(nown, &ns->col_node, nown, &ns->act));
  }
  PetscCall(VecGetArrayRead(ns->forms->global, &F));
  ns->nact = 0;
  for (PetscInt o = 0; o < nown; o++)
    if (F[fdof * o] > 0) ns->act[ns->nact++] = o;
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) {
      ns->col_off[0] = 0;
      for (int c = 0; c < ncol; c++) ns->col_off[c + 1] = ns->col_off[c] + cnt[c];
      for (int c = 0; c < ncol; c++) cnt[c] = ns->col_off[c];
    }
    for (PetscInt o = 0; o < nown; o++) {
      PetscInt i[3];
      if (F[fdof * o] <= 0) continue;
      OwnedIndex(l, o, i);
      const int c = (int)(i[0] % 3 + 3 * (i[1] % 3) + 9 * (i[2] % 3));
      if (pass == 0) cnt[c]++;
      else ns->col_node[cnt[c]++] = o;
    }
  }
  PetscCall(VecRestoreArrayRead(ns->forms->global, &F));
  PetscCall(WallGeometry(ns, sim));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* One Gauss-Seidel colour (the lists of ColourSetUp): every active node
 * of it solves its problem and spreads its change of lambda, dt/m
 * chi(dlambda) G_ji, touching only the velocity nodes of the
 * colour's stencils and the slab faces.  The increments are summed on the
 * owners as own part + the neighbours' ghost parts (MPMGhostLayers), the
 * order of the full exchange, so the iterates are the same to the bit. */
static PetscErrorCode SweepColour(Nonsmooth *ns, MPMSim sim, int colour, Vec vell, PetscInt *failsafe)
{
  const MPMLayout   *l  = &sim->layout;
  const MPMGridBox  *bx = &ns->node->box;
  const int          d = (int)sim->dim, n = ns->n, fdof = (int)ns->forms->dof;
  const PetscInt     c0 = ns->col_off[colour], c1 = ns->col_off[colour + 1];
  const PetscScalar *F, *fg;
  PetscScalar       *inc, *vel, *dug, *dul;

  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(ns->forms->global, &F));
  PetscCall(VecGetArray(vell, &vel));
  PetscCall(VecGetArray(ns->incl, &inc));
  for (PetscInt k = c0; k < c1; k++) {
    const PetscInt o = ns->col_node[k];
    const double  *Fo = F + fdof * o;
    PetscInt       i[3];
    double         bl[MPM_SYM_MAX], r[MPM_SYM_MAX], dl[MPM_SYM_MAX];
    int            its;
    OwnedIndex(l, o, i);
    NodeRhs(ns, d, o, i, Fo, vel, bl);
    if (mpm_dcfp_local(n, ns->W + n * n * o, bl, ns->mu[o], 1e-12, (int)ns->max_newton, r, &its) == MPM_DCFP_FAILSAFE) (*failsafe)++;
    if (ns->omega != 1.0) { /* projected over-relaxation: the fixed point (r = lambda) is unchanged */
      double x[MPM_SYM_MAX];
      for (int s = 0; s < n; s++) x[s] = ns->lambda[n * o + s] + ns->omega * (r[s] - ns->lambda[n * o + s]);
      mpm_dcfp_project(n, ns->mu[o], x, r);
    }
    for (int s = 0; s < n; s++) {
      bl[s]                 = r[s] - ns->lambda[n * o + s];
      ns->lambda[n * o + s] = r[s];
    }
    Physical(ns, o, bl, dl);
    SpreadStress(ns, d, i, Fo, dl, inc);
  }
  PetscCall(VecRestoreArray(ns->incl, &inc));
  PetscCall(MPMGhostLayersScatterAdd(&ns->gl, ns->incl, ns->fg));
  PetscCall(VecGetArray(ns->incl, &inc));
  PetscCall(VecGetArrayRead(ns->fg, &fg));
  PetscCall(VecGetArray(ns->du->global, &dug));
  PetscCall(VecGetArray(ns->du->local, &dul));
  for (PetscInt k = 0; k < ns->nrecv; k++) /* own part + the neighbours' */
    for (int a = 0; a < d; a++) inc[d * ns->recv_loc[k] + a] += fg[d * ns->recv[k] + a];
  /* du += the increment on the owned nodes that have one (the stencils' and
     the faces'), which then hold 0 again; the stencils' ghosts too */
  for (PetscInt k = c0; k < c1; k++) {
    PetscInt i[3];
    OwnedIndex(l, ns->col_node[k], i);
    for (int s = 0; s < ns->nb; s++) {
      const PetscInt li = NeighbourIndex(bx, d, i, s), t[3] = {i[0] + s % 3 - 1, i[1] + (s / 3) % 3 - 1, d == 3 ? i[2] + s / 9 - 1 : 0};
      if (Owned(l, t)) {
        const PetscInt o = ((t[2] - l->xs[2]) * l->xm[1] + (t[1] - l->xs[1])) * l->xm[0] + (t[0] - l->xs[0]);
        for (int a = 0; a < d; a++) dul[d * li + a] = dug[d * o + a] += inc[d * li + a];
      }
      for (int a = 0; a < d; a++) inc[d * li + a] = 0;
    }
  }
  for (PetscInt k = 0; k < ns->nrecv; k++) { /* the faces' nodes no stencil of this rank touched */
    const PetscInt li = ns->recv_loc[k];
    for (int a = 0; a < d; a++) {
      dul[d * li + a] = dug[d * ns->recv[k] + a] += inc[d * li + a];
      inc[d * li + a] = 0;
    }
  }
  PetscCall(VecRestoreArray(ns->du->local, &dul));
  PetscCall(VecRestoreArray(ns->du->global, &dug));
  PetscCall(VecRestoreArrayRead(ns->fg, &fg));
  PetscCall(VecRestoreArray(ns->incl, &inc));
  PetscCall(MPMGhostLayersGather(&ns->gl, ns->du->global, ns->du->local));
  {
    const PetscScalar *du;
    PetscCall(VecGetArrayRead(ns->du->local, &du));
    for (PetscInt k = c0; k < c1; k++) {
      PetscInt i[3];
      OwnedIndex(l, ns->col_node[k], i);
      for (int s = 0; s < ns->nb; s++) Refresh(ns, sim, NeighbourIndex(bx, d, i, s), du, vel);
    }
    for (PetscInt k = 0; k < ns->nrecv; k++) Refresh(ns, sim, ns->recv_loc[k], du, vel);
    for (PetscInt k = 0; k < ns->nghost; k++) Refresh(ns, sim, ns->ghost[k], du, vel);
    /* dynamic bodies: their velocity changes after every colour from the trial impulses of all
       nodes near them, summed in the box's order (as a pass over the whole box would) */
    for (PetscInt k = 0; k < ns->nwall; k++) WallVelocity(ns, sim, ns->wall[k], du, PETSC_TRUE, vel);
    PetscCall(VecRestoreArrayRead(ns->du->local, &du));
  }
  PetscCall(VecRestoreArray(vell, &vel));
  PetscCall(VecRestoreArrayRead(ns->forms->global, &F));
  PetscCall(MPMCollidersBodiesRelax(sim->colliders, sim->comm));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A node's mean normal stress (its pressure, tr / d) from the trace part
 * r_N of its stress (mpm_chi: tr = sqrt(6) r_N in 3D, 2 r_N in 2D): the
 * unit of the tolerance where it exceeds rho g L.  Not the whole stress's
 * norm: the shear is at most mu times the pressure, and grains at rest
 * under their weight have p <= rho g H <= rho g L, so they keep the seed's
 * unit (a collapse's first, dynamic steps can exceed it). */
static double NodePressure(int dim, const double *l)
{
  return (dim == 3 ? sqrt(2.0 / 3.0) : 1.0) * l[0];
}

/* The largest residual r and nodal pressure smax of the ranks, into the
 * residual over the tolerance's unit: rho g L, or the largest pressure
 * where that is larger (-nonsmooth_tol_stress) */
static PetscErrorCode ResidualOver(Nonsmooth *ns, MPMSim sim, double r, double smax, double *res)
{
  double m[2] = {r, smax};

  PetscFunctionBeginUser;
  PetscCall(MPMGlobalMax(sim->comm, m, 2));
  *res = m[0] / (ns->tol_stress ? PetscMax(ns->scale, m[1]) : ns->scale);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The largest per-node natural-map residual, over rho g L or the largest
 * nodal pressure (ResidualOver; the active nodes of ColourSetUp's lists) */
static PetscErrorCode Residual(Nonsmooth *ns, MPMSim sim, Vec vell, double *res)
{
  const MPMLayout   *l = &sim->layout;
  const int          d = (int)sim->dim, n = ns->n, fdof = (int)ns->forms->dof, ncol = d == 3 ? 27 : 9;
  const PetscScalar *F, *vel;
  double             smax = 0;

  PetscFunctionBeginUser;
  *res = 0;
  PetscCall(VecGetArrayRead(ns->forms->global, &F));
  PetscCall(VecGetArrayRead(vell, &vel));
  for (PetscInt k = 0; k < ns->col_off[ncol]; k++) {
    const PetscInt o = ns->col_node[k];
    PetscInt       i[3];
    double         bl[MPM_SYM_MAX];
    OwnedIndex(l, o, i);
    NodeRhs(ns, d, o, i, F + fdof * o, vel, bl);
    const double r = mpm_dcfp_residual(n, ns->W + n * n * o, bl, ns->mu[o], ns->lambda + n * o); /* once: PetscMax is a macro */
    const double s = NodePressure(d, ns->lambda + n * o);
    *res           = PetscMax(*res, r);
    smax           = PetscMax(smax, s);
  }
  PetscCall(VecRestoreArrayRead(vell, &vel));
  PetscCall(VecRestoreArrayRead(ns->forms->global, &F));
  PetscCall(ResidualOver(ns, sim, *res, smax, res));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* -------------------------------------------------------------- APGD */
/* du = dt M^-1 B^T l for the stresses l (not the solve's own lambda);
 * with vell, the velocities through the walls too (SpreadAll) */
static PetscErrorCode SpreadStresses(Nonsmooth *ns, MPMSim sim, double *l, Vec vell)
{
  double *keep = ns->lambda;

  PetscFunctionBeginUser;
  ns->lambda = l;
  PetscCall(SpreadAll(ns, sim, vell));
  ns->lambda = keep;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* U_j = B_j P du(l): the velocities at every owned stress node of the
 * stresses l alone, du(l) = dt M^-1 B^T l (spread as the warm start is),
 * with the walls' frictionless projection P at u*: the linear part of the
 * operator, for its norm (DelassusNorm). */
static PetscErrorCode ApplyDelassus(Nonsmooth *ns, MPMSim sim, double *l, double *U)
{
  const MPMLayout   *ly = &sim->layout;
  const int          d = (int)sim->dim, n = ns->n, fdof = (int)ns->forms->dof;
  const PetscInt     nown = ly->xm[0] * ly->xm[1] * ly->xm[2];
  const PetscScalar *F, *nodes, *du;

  PetscFunctionBeginUser;
  PetscCall(SpreadStresses(ns, sim, l, NULL));
  PetscCall(VecGetArrayRead(ns->forms->global, &F));
  PetscCall(VecGetArrayRead(ns->node->local, &nodes));
  PetscCall(VecGetArrayRead(ns->du->local, &du));
  for (PetscInt o = 0; o < nown; o++) {
    const double *Fo = F + fdof * o;
    double       *Uo = U + n * o, g[MPM_SYM_MAX];
    PetscInt      i[3];
    for (int s = 0; s < n; s++) Uo[s] = 0;
    if (Fo[0] <= 0) continue;
    OwnedIndex(ly, o, i);
    NodeStrainRate(ns, d, i, Fo, nodes, du, g);
    Physical(ns, o, g, Uo); /* the solve's variables: N^-1 gamma (anisotropic grains) */
  }
  PetscCall(VecRestoreArrayRead(ns->du->local, &du));
  PetscCall(VecRestoreArrayRead(ns->node->local, &nodes));
  PetscCall(VecRestoreArrayRead(ns->forms->global, &F));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* U_j = gamma_j(l) = B_j u(l) + k_j: the velocities at every active owned
 * stress node of the stresses l (the others' entries are not touched), with u(l) = u* + du(l) through the walls and
 * objects with their Coulomb friction (WallVelocities, the velocities the
 * Gauss-Seidel's nodes see), so that APGD's fixed points are Gauss-Seidel's.
 * The map is affine only where no wall contact changes state; the dynamic
 * bodies take one relaxation (MPMCollidersBodiesRelax) per application. */
static PetscErrorCode ApplyOperator(Nonsmooth *ns, MPMSim sim, double *l, Vec vell, double *U)
{
  const MPMLayout   *ly = &sim->layout;
  const int          d = (int)sim->dim, fdof = (int)ns->forms->dof;
  const PetscScalar *F, *vel;

  PetscFunctionBeginUser;
  PetscCall(SpreadStresses(ns, sim, l, vell));
  PetscCall(VecGetArrayRead(ns->forms->global, &F));
  PetscCall(VecGetArrayRead(vell, &vel));
  for (PetscInt a = 0; a < ns->nact; a++) {
    const PetscInt o  = ns->act[a];
    const double  *Fo = F + fdof * o;
    double         g[MPM_SYM_MAX];
    PetscInt       i[3];
    PrefetchForms(ns, F, a);
    OwnedIndex(ly, o, i);
    NodeStrainRateOf(ns, d, i, Fo, vel, g);
    g[0] += ns->k[o];
    Physical(ns, o, g, U + ns->n * o);
  }
  PetscCall(VecRestoreArrayRead(vell, &vel));
  PetscCall(VecRestoreArrayRead(ns->forms->global, &F));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode GlobalDot(MPMSim sim, PetscInt N, const double *a, const double *b, double *dot)
{
  PetscFunctionBeginUser;
  *dot = 0;
  for (PetscInt k = 0; k < N; k++) *dot += a[k] * b[k];
  PetscCall(MPMGlobalSum(sim->comm, dot, 1));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Per node: the trace of W_jj (the residual's rho = n / tr) and the scale
 * of the gradient step, its mean diagonal (0 for inactive nodes: they never
 * move); once per solve, W is fixed during it */
static void NodeScales(const Nonsmooth *ns, PetscInt nown, double *trW, double *dsc)
{
  for (PetscInt o = 0; o < nown; o++) {
    double tr = 0;
    for (int s = 0; s < ns->n; s++) tr += ns->W[ns->n * ns->n * o + s * (ns->n + 1)];
    trW[o] = tr;
    dsc[o] = tr > 0 ? tr / ns->n : 0.0;
  }
}

/* The largest eigenvalue of D^-1/2 A D^-1/2, A the assembled Delassus
 * operator B P dt M^-1 B^T (symmetric positive semidefinite; N^-1 A N^-1
 * with anisotropic grains) and D the
 * nodes' scales, by power iteration: APGD's step is its inverse. */
static PetscErrorCode DelassusNorm(Nonsmooth *ns, MPMSim sim, PetscInt N, const double *dsc, double *v, double *w, double *L)
{
  const int n = ns->n;
  double    nrm;

  PetscFunctionBeginUser;
  for (PetscInt k = 0; k < N; k++) v[k] = (k % n == 0 && dsc[k / n] > 0) ? 1.0 : 0.0; /* every active node pressed */
  *L = 0;
  for (int it = 0; it < 10; it++) {
    PetscCall(GlobalDot(sim, N, v, v, &nrm));
    if (nrm <= 0) break;
    for (PetscInt k = 0; k < N; k++) {
      const double dj = dsc[k / n];
      v[k]            = dj > 0 ? v[k] / (sqrt(nrm) * sqrt(dj)) : 0.0;
    }
    PetscCall(ApplyDelassus(ns, sim, v, w));
    for (PetscInt k = 0; k < N; k++) {
      const double dj = dsc[k / n];
      w[k]            = dj > 0 ? w[k] / sqrt(dj) : 0.0;
      v[k] *= sqrt(dj);
    }
    PetscCall(GlobalDot(sim, N, v, w, L)); /* Rayleigh quotient, from below */
    for (PetscInt k = 0; k < N; k++) v[k] = w[k];
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The largest natural-map residual at lambda l with velocities U, over rho g L
 * or the largest nodal pressure (ResidualOver).  U itself, not W l + (U - W l)
 * as the Gauss-Seidel's Residual has it: the same to roundoff, without two
 * products by W per node and iteration. */
static PetscErrorCode ResidualAt(Nonsmooth *ns, MPMSim sim, const double *trW, const double *l, const double *U, double *res)
{
  const int n = ns->n;
  double    smax = 0;

  PetscFunctionBeginUser;
  *res = 0;
  for (PetscInt a = 0; a < ns->nact; a++) {
    const PetscInt o = ns->act[a];
    const double   r = mpm_dcfp_residual_at(n, trW[o], ns->mu[o], l + n * o, U + n * o); /* once: PetscMax is a macro */
    const double s = NodePressure((int)sim->dim, l + n * o);
    *res           = PetscMax(*res, r);
    smax           = PetscMax(smax, s);
  }
  PetscCall(ResidualOver(ns, sim, *res, smax, res));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Accelerated projected gradient (Nesterov; Mazhar et al. 2015) on all
 * nodes at once, with the De Saxce velocity u + mu |u_T| e_N as the
 * gradient, so that its fixed points are the Coulomb solutions (with the
 * walls and bodies of ApplyOperator: Gauss-Seidel's), the step
 * of node j 1 / (L d_j) (d_j: NodeScales, a diagonal preconditioner that
 * keeps the per-node cone projection exact; L: DelassusNorm) and adaptive
 * restarts.  Every node moves together (a Jacobi-like iteration), so
 * nothing depends on an order; the rank count enters only through the
 * global sums' roundoff. */
static PetscErrorCode SolveAPGD(Nonsmooth *ns, MPMSim sim, Vec vell, PetscInt *its, double *res)
{
  const MPMLayout *ly = &sim->layout;
  const int        n  = ns->n;
  const PetscInt   N  = n * ly->xm[0] * ly->xm[1] * ly->xm[2], *act = ns->act;
  double          *b[6], *g, *gp, *gn, *Ug, *Up, *Ugn, *dsc, *trW, L, theta = 1, beta = 0, prev;

  PetscFunctionBeginUser;
  /* g, gp, gn: this iterate, the one before and the next (Ug, Up, Ugn their
     velocities), rotated rather than copied; only the active nodes' entries
     are read or written after the warm start */
  PetscCall(PetscCalloc7(N, &b[0], N, &b[1], N, &b[2], N, &b[3], N, &b[4], N, &b[5], N / n, &dsc));
  PetscCall(PetscMalloc1(N / n, &trW));
  g = b[0], gp = b[1], gn = b[2], Ug = b[3], Up = b[4], Ugn = b[5];
  NodeScales(ns, N / n, trW, dsc);
  PetscCall(DelassusNorm(ns, sim, N, dsc, gn, Ugn, &L));
  for (PetscInt k = 0; k < N; k += n) mpm_dcfp_project(n, ns->mu[k / n], ns->lambda + k, g + k); /* the warm start, inside the cone */
  PetscCall(ApplyOperator(ns, sim, g, vell, Ug));
  PetscCall(ResidualAt(ns, sim, trW, g, Ug, res));
  if (ns->monitor) PetscCall(PetscPrintf(sim->comm, "  %4d DCFP residual %e (warm start)\n", 0, *res));
  const double t = L > 0 ? 1.0 / (1.25 * L) : 0.0; /* the power iteration's estimate is from below; L = 0: no active node */
  for (*its = 0; *its < ns->max_it && *res > ns->tol && L > 0; (*its)++) {
    double   *sw;
    PetscBool up;
    for (PetscInt a = 0; a < ns->nact; a++) { /* gn = P(y - t_j (Uy + mu |Uy_T| e_N)), y = g + beta (g - gp) */
      const PetscInt k = n * act[a];
      double         x[MPM_SYM_MAX], y[MPM_SYM_MAX], Uy[MPM_SYM_MAX], ut = 0;
      for (int s = 0; s < n; s++) { /* the first step from g itself (g + 0 (g - gp) would turn a -0 into +0) */
        y[s]  = *its == 0 ? g[k + s] : g[k + s] + beta * (g[k + s] - gp[k + s]);
        Uy[s] = *its == 0 ? Ug[k + s] : Ug[k + s] + beta * (Ug[k + s] - Up[k + s]); /* exact where u is affine; near a wall that changes contact state a guess
                                                                                         that moves only the path (evaluating u at y too gave the same step counts) */
      }
      for (int s = 1; s < n; s++) ut += Uy[s] * Uy[s];
      const double dj = dsc[k / n], tj = dj > 0 ? t / dj : 0.0;
      for (int s = 0; s < n; s++) x[s] = y[s] - tj * (Uy[s] + (s == 0 ? ns->mu[k / n] * sqrt(ut) : 0.0));
      mpm_dcfp_project(n, ns->mu[k / n], x, gn + k);
    }
    PetscCall(ApplyOperator(ns, sim, gn, vell, Ugn));
    prev = *res;
    PetscCall(ResidualAt(ns, sim, trW, gn, Ugn, res));
    if (ns->monitor) PetscCall(PetscPrintf(sim->comm, "  %4" PetscInt_FMT " DCFP residual %e\n", *its + 1, *res));
    /* Restart when the residual grew.  The stress is statically indeterminate (W
       singular), and momentum along its null space made the first steps of a
       column at rest stall (residual 8e-3 after 50,000 steps) without it.  The
       gradient test of O'Donoghue and Candes, grad(y) . (gn - g) > 0, restarted
       too often: the collapse a = 2 took 378 gradient steps a step, 10 of its 60
       steps at the 1,000 limit, against 165 and none without (until 2026-11-27 it
       was silently off: an inactive node's stale W block made its product NaN). */
    up = *res > prev;
    const double thn = 0.5 * theta * (sqrt(theta * theta + 4.0) - theta);
    beta  = up ? 0.0 : theta * (1.0 - theta) / (theta * theta + thn);
    theta = up ? 1.0 : thn;
    sw = gp, gp = g, g = gn, gn = sw;
    sw = Up, Up = Ug, Ug = Ugn, Ugn = sw;
  }
  PetscCall(PetscArraycpy(ns->lambda, b[0], N)); /* the inactive nodes: the projected warm start */
  for (PetscInt a = 0; a < ns->nact; a++) PetscCall(PetscArraycpy(ns->lambda + n * act[a], g + n * act[a], n)); /* du and the bodies' velocities are those of g: its ApplyOperator came last */
  PetscCall(PetscFree7(b[0], b[1], b[2], b[3], b[4], b[5], dsc));
  PetscCall(PetscFree(trW));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The friction problem until the residual is below tol: Gauss-Seidel sweeps
 * over the 3^d colours, or APGD */
static PetscErrorCode SolveDCFP(Nonsmooth *ns, MPMSim sim, PetscInt *its, double *res, PetscInt *failsafe)
{
  const int ncol = sim->dim == 3 ? 27 : 9;

  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_DCFP, 0, 0, 0, 0));
  *failsafe = 0;
  PetscCall(VecZeroEntries(ns->du->global));
  PetscCall(VecZeroEntries(ns->du->local));
  { /* the slabs (and the fields' layouts) may move between steps: a work Vec of this step's */
    Vec vel;
    PetscCall(DMGetLocalVector(ns->du->da, &vel));
    PetscCall(ColourSetUp(ns, sim)); /* the walls' geometry, for both solvers */
    if (ns->solver == NS_SOLVER_APGD) PetscCall(SolveAPGD(ns, sim, vel, its, res));
    else {
      PetscCall(SpreadAll(ns, sim, vel)); /* the warm start's velocity change */
      PetscCall(Residual(ns, sim, vel, res));
      if (ns->monitor) PetscCall(PetscPrintf(sim->comm, "  %4d DCFP residual %e (warm start)\n", 0, *res));
      for (*its = 0; *its < ns->max_it && *res > ns->tol; (*its)++) {
        for (int c = 0; c < ncol; c++) PetscCall(SweepColour(ns, sim, c, vel, failsafe));
        PetscCall(Residual(ns, sim, vel, res));
        if (ns->monitor) PetscCall(PetscPrintf(sim->comm, "  %4" PetscInt_FMT " DCFP residual %e\n", *its + 1, *res));
      }
    }
    PetscCall(DMRestoreLocalVector(ns->du->da, &vel));
  }
  {
    double f = (double)*failsafe;
    PetscCall(MPMGlobalSum(sim->comm, &f, 1));
    *failsafe = (PetscInt)f;
  }
  PetscCall(PetscLogEventEnd(MPM_EVENT_DCFP, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ------------------------------------------------------------- finish */
/* The final velocity u* + du through the colliders with friction (which
 * books their force), into the species grid for G2P; lambda to its grid. */
static PetscErrorCode FinishNodes(Nonsmooth *ns, MPMSim sim, double dt)
{
  const MPMLayout   *l = &sim->layout;
  const int          d = (int)sim->dim, n = ns->n, gdof = (int)sim->species[0]->grid->dof, ndof = (int)ns->node->dof;
  const PetscInt     nown = l->xm[0] * l->xm[1] * l->xm[2];
  const PetscScalar *nodes, *du;
  PetscScalar       *g, *lam;

  PetscFunctionBeginUser;
  PetscCall(VecGetArray(sim->species[0]->grid->global, &g));
  PetscCall(VecGetArrayRead(ns->node->global, &nodes));
  PetscCall(VecGetArrayRead(ns->du->global, &du));
  PetscCall(VecGetArray(ns->lam->global, &lam));
  for (PetscInt o = 0; o < nown; o++) {
    double       *gn = g + gdof * o, x[3], v[3];
    const double *nd = nodes + ndof * o, m = gn[0];
    Physical(ns, o, ns->lambda + n * o, lam + n * o);
    for (int c = 0; c < gdof; c++) gn[c] = 0;
    if (m <= 0) continue;
    for (int c = 0; c < d; c++) v[c] = nd[1 + c] + du[d * o + c];
    MPMLayoutOwnedNodeX(l, o, x);
    (void)MPMCollidersApply(sim->colliders, 0, x, m, dt, v);
    for (int c = 0; c < d; c++) gn[1 + c] = v[c];
  }
  PetscCall(VecRestoreArray(ns->lam->global, &lam));
  PetscCall(VecRestoreArrayRead(ns->du->global, &du));
  PetscCall(VecRestoreArrayRead(ns->node->global, &nodes));
  PetscCall(VecRestoreArray(sim->species[0]->grid->global, &g));
  PetscCall(MPMGhostGather(sim->species[0]->grid));
  PetscCall(MPMGhostGather(ns->lam));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Before G2P moves them, each particle takes its node's lambda (the warm
 * start of the next step) and, for the outputs (pressure, deviatoric
 * stress), the bulk stress sigma = -phi_max chi(lambda) as tau (P2G here
 * passes no stress).  The model has no elastic strain: F_E stays I (G2P's
 * update is undone after it), so the outputs' J and the elastic energy
 * are 1 and 0, and compaction shows as particles crowding, not as volume. */
static PetscErrorCode ParticleStress(Nonsmooth *ns, MPMSim sim)
{
  MPMParticles      *p = &sim->species[0]->p;
  const int          d = (int)sim->dim, n = ns->n;
  const MPMGridBox  *bx = &ns->lam->box;
  const double      *x = MPMFieldReal(p, p->f_x);
  double            *lp = MPMFieldReal(p, ns->f_lambda), *tau = MPMFieldReal(p, ns->f.f_tau);
  const PetscScalar *lam;

  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(ns->lam->local, &lam));
  for (PetscInt q = 0; q < p->n; q++) {
    PetscInt j[3] = {0, 0, 0};
    double   T[9];
    for (int c = 0; c < d; c++) {
      int    base;
      double w[3], dw[3];
      mpm_bspline_weights(MPM_KERNEL_QUADRATIC, mpm_grid_coord(bx, c, x[q * d + c]), &base, w, dw);
      j[c] = base + 1;
    }
    const double *lj = lam + n * LocalIndex(bx, j);
    for (int s = 0; s < n; s++) lp[q * n + s] = lj[s];
    mpm_chi(d, lj, T);
    for (int a = 0; a < d * d; a++) tau[q * d * d + a] = -ns->phi_max * T[a];
  }
  PetscCall(VecRestoreArrayRead(ns->lam->local, &lam));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------- the grains */
/* A particle's velocity gradient of the step, (F_E - I) / dt right after
 * G2P (F_E is I before it: the model has no elastic strain). */
static inline void StepGradient(int d, const double *Fe, double dt, double *G)
{
  for (int k = 0; k < d * d; k++) G[k] = (Fe[k] - (k % (d + 1) == 0 ? 1.0 : 0.0)) / dt;
}

/* The grains turn with the flow (D24): one step of the normals' moment
 * under the particle's velocity gradient of the step. */
static void GrainsTurn(Nonsmooth *ns, MPMSim sim, double dt, const double *Fe)
{
  MPMSpecies    *sp = sim->species[0];
  MPMParticles  *p  = &sp->p;
  const int      d  = (int)sim->dim;
  double        *nu2 = MPMFieldReal(p, ns->f_nu2);
  const int32_t *mat = MPMFieldInt32(p, p->f_mat);

  for (PetscInt q = 0; q < p->n; q++) {
    const MPMGrainShape *g = &sp->mat[mat[q]]->grains;
    double               G[9];
    if (g->alpha == 0) continue; /* its orientation plays no part */
    StepGradient(d, Fe + q * d * d, dt, G);
    mpm_grain_orientation_step(d, g->ell, G, dt, nu2 + q * d * d);
  }
}

/* mu(I) (D s. 6.3: "in an explicit fashion"): each particle's friction
 * for the next step from this step's inertial number, its velocity
 * gradient of the step and the grains' pressure p =
 * Tr chi(lambda) / d of its node's stress, with the grains' density
 * rho / phi_max (regions seed at phi_max). */
static void FrictionOfInertia(Nonsmooth *ns, MPMSim sim, double dt, const double *Fe)
{
  MPMSpecies    *sp = sim->species[0];
  MPMParticles  *p  = &sp->p;
  const int      d = (int)sim->dim, n = ns->n;
  double        *mu = MPMFieldReal(p, ns->f_mu);
  const double  *lam = MPMFieldReal(p, ns->f_lambda);
  const int32_t *mat = MPMFieldInt32(p, p->f_mat);

  for (PetscInt q = 0; q < p->n; q++) {
    const MPMMaterial m = sp->mat[mat[q]];
    double            G[9], T[9], pr = 0;
    if (!(m->mui.mu2_hat > 0)) continue; /* constant friction */
    StepGradient(d, Fe + q * d * d, dt, G);
    mpm_chi(d, lam + q * n, T);
    for (int a = 0; a < d; a++) pr += T[a * (d + 1)] / d;
    mu[q] = mpm_mu_of_i(m->mu_hat, m->mui.mu2_hat, m->mui.I0, mpm_inertial_number(d, m->mui.diameter, m->density / ns->phi_max, G, pr));
  }
}

/* A step whose friction problem stopped at -nonsmooth_max_it above the
 * tolerance goes on with the last iterate; it is counted (history.csv and
 * summary.json, dcfp_unconverged), and the first one of the run is said. */
static PetscErrorCode CountUnconverged(Nonsmooth *ns, MPMSim sim, PetscInt its, double res)
{
  const PetscBool unconverged = res > ns->tol ? PETSC_TRUE : PETSC_FALSE;

  PetscFunctionBeginUser;
  ns->st.value[NS_STAT_UNCONVERGED] = unconverged ? 1.0 : 0.0;
  if (!unconverged) PetscFunctionReturn(PETSC_SUCCESS);
  if (ns->st.total[NS_STAT_UNCONVERGED] == 0)
    PetscCall(PetscPrintf(sim->comm,
                          "warning: step %" PetscInt_FMT ": the friction problem stopped at -nonsmooth_max_it %" PetscInt_FMT " with residual %.3g above -nonsmooth_tol %g; the step goes on with the last iterate "
                          "(history.csv and summary.json count such steps: dcfp_unconverged)\n",
                          sim->step + 1, its, res, ns->tol));
  ns->st.total[NS_STAT_UNCONVERGED] += 1;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ----------------------------------------------------------------- step */
static PetscErrorCode NonsmoothStep(MPMIntegrator integ, MPMSim sim, double dt, double *vmax)
{
  Nonsmooth      *ns = (Nonsmooth *)integ->data;
  MPMSpecies     *sp = sim->species[0];
  MPMParticleView v  = MPMIntegratorView(sp, &ns->f, PETSC_TRUE);
  PetscInt        nactive = 0, its = 0, failsafe = 0;
  double          res, act;

  PetscFunctionBeginUser;
  *vmax  = 0;
  ns->dt = dt;
  MPMCollidersAtTime(sim->colliders, sim->t);
  {
    const double gs = MPMGravityScale(sim), g[3] = {gs * sim->gravity[0], gs * sim->gravity[1], gs * sim->gravity[2]};
    MPMCollidersBodiesPredict(sim->colliders, g, dt);
  }
  PetscCall(MPMIntegratorP2G(sp, &v, 0.0)); /* mass and APIC momentum; dt = 0: no stress force */
  PetscCall(MPMGhostScatterAdd(sp->grid));
  if (ns->aniso) MPMMaterialsGrainsInit(sp, sim->seed); /* emitted since the last step */
  if (ns->frames) MPMResampleInitFrames(sp, &ns->rs);     /* seeded or emitted since the last step */
  PetscCall(PetscLogEventBegin(MPM_EVENT_FORMS, 0, 0, 0, 0));
  PetscCall(AssembleForms(ns, sim));
  PetscCall(PredictNodes(ns, sim, dt));
  PetscCall(NodeProblems(ns, sim, dt, &nactive));
  PetscCall(PetscLogEventEnd(MPM_EVENT_FORMS, 0, 0, 0, 0));
  PetscCall(SolveDCFP(ns, sim, &its, &res, &failsafe));
  MPMCollidersBodiesMark(sim->colliders);
  PetscCall(FinishNodes(ns, sim, dt));
  PetscCall(MPMCollidersBodiesSettle(sim->colliders, sim->comm));
  PetscCall(MPMCollidersBodiesWalls(sim->colliders, sim->rank == 0 ? PETSC_TRUE : PETSC_FALSE, dt));
  PetscCall(ParticleStress(ns, sim));
  PetscCall(MPMIntegratorG2P(sp, &v, dt, -1.0, 0.0, vmax));
  if (ns->aniso) GrainsTurn(ns, sim, dt, v.Fe);
  if (ns->frames) MPMResampleAdvect(sp, &ns->rs, v.Fe); /* F_E = I + dt grad v here */
  if (ns->mui) FrictionOfInertia(ns, sim, dt, v.Fe);
  for (PetscInt q = 0; q < sp->p.n * sim->dim * sim->dim; q++) v.Fe[q] = (q % (sim->dim * sim->dim)) % (sim->dim + 1) == 0 ? 1.0 : 0.0;
  MPMCollidersAdvance(sim->colliders, dt);
  if (ns->frames) PetscCall(MPMResampleSplit(sim, sp, &ns->rs, &ns->split)); /* before migration: a half may cross into the next slab */
  act = (double)nactive;
  PetscCall(MPMGlobalSum(sim->comm, &act, 1));
  ns->st.value[NS_STAT_ITS]      = (double)its;
  ns->st.value[NS_STAT_RESIDUAL] = res;
  ns->st.value[NS_STAT_FAILSAFE] = (double)failsafe;
  ns->st.value[NS_STAT_NODES]    = act;
  ns->st.total[NS_STAT_ITS] += (double)its;
  ns->st.total[NS_STAT_RESIDUAL] = PetscMax(ns->st.total[NS_STAT_RESIDUAL], res);
  ns->st.total[NS_STAT_FAILSAFE] += (double)failsafe;
  ns->st.total[NS_STAT_NODES] = PetscMax(ns->st.total[NS_STAT_NODES], act);
  PetscCall(CountUnconverged(ns, sim, its, res));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Merging pairs of a cell needs the cell's particles on one rank: after
 * migration (D s. 5.3, resample.c). */
static PetscErrorCode NonsmoothAfterMigrate(MPMIntegrator integ, MPMSim sim, MPMStepReduction *red)
{
  Nonsmooth *ns = (Nonsmooth *)integ->data;
  int64_t    merged;

  PetscFunctionBeginUser;
  if (!ns->frames) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(MPMResampleMerge(sim, sim->species[0], &ns->rs, &merged));
  red->n -= merged;
  red->merged += merged;
  red->split += ns->split;
  ns->split = 0;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode NonsmoothStats(MPMIntegrator integ, MPMStepStats *s)
{
  PetscFunctionBeginUser;
  *s = ((Nonsmooth *)integ->data)->st;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode NonsmoothGetState(MPMIntegrator integ, PetscInt *n, double *state)
{
  PetscFunctionBeginUser;
  *n = MPMStepStatsGetTotals(&((Nonsmooth *)integ->data)->st, state);
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode NonsmoothSetState(MPMIntegrator integ, PetscInt n, const double *state)
{
  Nonsmooth *ns = (Nonsmooth *)integ->data;
  double     full[NS_NSTAT] = {0};

  PetscFunctionBeginUser;
  if (n == NS_NSTAT - 1) { /* checkpoints before 2026-11-27 (fifth session) did not count the unconverged steps */
    for (PetscInt k = 0; k < n; k++) full[k] = state[k];
    state = full;
    n     = NS_NSTAT;
  }
  PetscCall(MPMStepStatsSetTotals(&ns->st, "nonsmooth", n, state));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode NonsmoothView(MPMIntegrator integ, char *buf, size_t len)
{
  const Nonsmooth *ns = (const Nonsmooth *)integ->data;

  PetscFunctionBeginUser;
  PetscCall(PetscSNPrintf(buf, len, "APIC, nonsmooth Drucker-Prager (Coulomb problem per node, %s; phi_max %g, tol %g of rho g L (%g Pa)%s%s)",
                          ns->solver == NS_SOLVER_GS ? "colored Gauss-Seidel" : "APGD", ns->phi_max, ns->tol, ns->tol * ns->scale, ns->tol_stress ? " or of the largest nodal pressure" : "",
                          ns->frames ? "; particle frames, splitting and merging" : ""));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode NonsmoothDestroy(MPMIntegrator integ)
{
  Nonsmooth *ns = (Nonsmooth *)integ->data;

  PetscFunctionBeginUser;
  if (!ns) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscFree4(ns->W, ns->k, ns->mu, ns->lambda));
  PetscCall(PetscFree(ns->Ninv));
  PetscCall(PetscFree2(ns->col_node, ns->act));
  PetscCall(PetscFree4(ns->geo_at, ns->near_body, ns->minv, ns->ustar));
  PetscCall(PetscFree2(ns->wall, ns->geo));
  PetscCall(PetscFree3(ns->ghost, ns->recv, ns->recv_loc));
  PetscCall(MPMGhostLayersDestroy(&ns->gl));
  PetscCall(VecDestroy(&ns->incl));
  PetscCall(VecDestroy(&ns->fg));
  PetscCall(PetscFree(integ->data));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMIntegratorCreate_Nonsmooth(MPMIntegrator integ)
{
  PetscFunctionBeginUser;
  integ->ops.options   = NonsmoothOptions;
  integ->ops.check     = NonsmoothCheck;
  integ->ops.setup     = NonsmoothSetUp;
  integ->ops.stable_dt = NonsmoothStableDt;
  integ->ops.step      = NonsmoothStep;
  integ->ops.stats     = NonsmoothStats;
  integ->ops.after_migrate = NonsmoothAfterMigrate;
  integ->ops.get_state = NonsmoothGetState;
  integ->ops.set_state = NonsmoothSetState;
  integ->ops.view      = NonsmoothView;
  integ->ops.destroy   = NonsmoothDestroy;
  PetscFunctionReturn(PETSC_SUCCESS);
}
