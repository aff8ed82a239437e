/* Private header of the sand-water mixture integrator: mixture.c (options,
 * the step, the explicit-stress grid update) and mixture_system.c (the
 * coupled implicit system solved with KSP MINRES). */
#ifndef MPM_MIXTURE_H
#define MPM_MIXTURE_H

#include "integrators.h"
#include <petscsnes.h>

#define MIXTURE_G    9.81 /* the g of the hydraulic conductivity k_hat = K rho_w g / mu [m/s^2] */
#define MIXTURE_NMIN 0.05 /* smallest porosity a node takes (a node full of sand grains) */

/* -mixture_stress: how the stresses enter the step */
typedef enum { MIXTURE_STRESS_EXPLICIT, MIXTURE_STRESS_IMPLICIT } MixtureStress;
/* -mixture_pmat: what the preconditioner is built from */
typedef enum { MIXTURE_PMAT_BLOCKS, MIXTURE_PMAT_ASSEMBLED } MixturePmat;

/* The coupled implicit system (mixture_system.c): one unknown per owned node
 * [v_sand (dim), v_water (dim)], PETSc SNES (Newton) and KSP MINRES. */
typedef struct {
  MPMGridField        *vel;    /* mixture_velocity: the unknowns, dof 2 dim */
  MPMGridField        *sv[2];  /* <species>_velocity: one species' u, gathered for the stiffness (dof dim) */
  PetscInt             builds; /* the velocity field's build the solver objects were made on (0: none; rebuilt when the slabs move) */
  SNES                 snes;
  Mat                  J;
  Vec                  x, r;                 /* iterate and residual (dof 2 dim) */
  Vec                  ug[2], ul[2], fl[2], fg[2]; /* per species: u owned/ghosted, dt f ghosted/owned */
  PetscInt             nown;
  double              *Pi[2], *c[2]; /* per owned node and species: u = Pi x + c (the step's contact set) */
  double              *b;     /* per owned node: the right-hand sides [sand (dim), water (dim)] */
  double              *e;     /* per owned node: dt D, the drag's coupling */
  double              *blk;   /* per owned node and direction: the inverse of the node's 2x2 block (3 values), the preconditioner */
  double              *diag;  /* per owned node: the operator's diagonal (2 dim), for PCJACOBI */
  double              *ms, *Vs, *dndV; /* per owned node: the sand's mass and volume at the step's start, dn/dV at the iterate */
  MPMGridField        *scal;  /* mixture_porosity_change: one value per node, the porosity chain's */
  Vec                  fW0[2]; /* per species: the water energy's force at rest (owned), which b carries instead */
  PetscBool            coupled; /* pore water whose pressure follows the skeleton's porosity (-mixture_buoyancy and a water of porosity < 1) */
  /* per sand particle */
  MPMIsoLinearization *lin;   /* the elastic tangent at the Newton iterate */
  double              *As, *bs, *pis; /* grad u then the stress to scatter (dim x dim), dt tr grad u, the pore pressure's V dW/dV */
  /* per water particle */
  double              *H;     /* V0 times the Hessian of W in (a, dn) at the iterate (3) */
  double              *Aw, *dn, *gn; /* grad u then the stress to scatter, the porosity change, V0 dW/dn */
  PetscInt             cap[2];
  double               dt;
  /* -mixture_pmat assembled: the preconditioner's matrix */
  PetscBool            assembled;
  Mat                  P;
  MPMGridField        *proj;  /* mixture_projector: Pi of both species on owned and ghost nodes (2 dim^2) */
  double              *Ke;    /* one particle's blocks */
} MixtureSystem;

typedef struct {
  double          k_hat;      /* hydraulic conductivity [m/s] */
  double          rho_grain;  /* density of the sand grains [kg/m^3] */
  double          cfl_elastic;
  double          wave_speed;
  PetscInt        transfer;
  PetscInt        stress;     /* MixtureStress */
  PetscBool       buoyancy;   /* the pore pressure's force is shared: n to the water, 1 - n to the sand */
  PetscBool       fixed_sand; /* a rigid porous skeleton: the sand does not move (verification) */
  PetscBool       check_operator;
  PetscBool       release; /* -mixture_contact_release: contact nodes leave a wall with t / m after the solve */
  PetscInt        pmat;       /* MIXTURE_PMAT_* */
  MPMStressFields fields[2]; /* sand, water */
  MPMGridField   *volume;    /* the sand's volume at the nodes (dof 1), then its porosity */
  double         *Vp;        /* scratch: the sand particles' current volume */
  PetscInt        f_n;       /* the water particles' field "porosity" (water.c) */
  MPMGridField   *sat;       /* wet sand (a material with -<m>_wet_cohesion): the pores' water saturation at the nodes (dof 1), else NULL */
  double          rho_w;     /* the water's own density (of the first water material) [kg/m^3] */
  double          drag_rate; /* the drag's fastest relaxation, n g / k_hat (1 + n rho_w / rho_s) over the sand materials [1/s] (the explicit limit is 2 / it) */
  PetscInt        f_sat;     /* the sand particles' field "saturation" (drucker_prager.c) */
  PetscInt        nVp;
  /* implicit stresses: the step control and statistics */
  MPMStepControl  sc;
  MPMStepStats    st;
  MixtureSystem   sys;
} Mixture;

/* dt_over_explicit: over the explicit limit of the stiffest term, the
 * smaller of the water's sound speed (dt_over_sound) and the drag's
 * (dt_over_drag) */
enum { MIXTURE_STAT_NEWTON, MIXTURE_STAT_KSP, MIXTURE_STAT_HALVINGS, MIXTURE_STAT_DT_RATIO, MIXTURE_STAT_DT_SOUND, MIXTURE_STAT_DT_DRAG, MIXTURE_NSTAT };

double         MixturePorosity(const Mixture *mx, double ms, double Vs);
double         MixtureSaturation(const Mixture *mx, double ms, double mw, double n, double Vs);
PetscErrorCode MixtureWaterPorosity(Mixture *mx, MPMSpecies *sp);
PetscErrorCode MixtureSystemOptions(Mixture *mx, MPMSim sim, const char *prefix);
PetscErrorCode MixtureSystemSolve(Mixture *mx, MPMSim sim, double dt, SNESConvergedReason *reason);
PetscErrorCode MixtureSystemDestroy(MixtureSystem *sys);

#endif
