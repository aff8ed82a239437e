/* Private header of src/io/: output frames (parallel HDF5) and their XDMF
 * series, run records (run.json, history.csv, summary.json), checkpoints
 * and in-situ visualization (ParaView Catalyst).  Everything here loops over
 * the species' field registries, so a new particle or derived field is
 * written, checkpointed and visualized with no edit in this folder. */
#ifndef MPM_IO_H
#define MPM_IO_H

#include "core/core.h"
#include "materials/materials.h"
#include "colliders/colliders.h"
#include "integrators/integrators.h"
#include <hdf5.h>

/* ------------------------------------------------------------ diagnostics */
typedef struct {
  int64_t n;            /* particles */
  double  mass, mom[3]; /* total mass [kg], momentum [kg m/s] */
  double  ke, ee;       /* kinetic and elastic energy [J] */
  double  pe;           /* gravitational potential energy -sum m g.(x - domain_lo), g with -gravity_ramp's factor [J] */
  double  vmax;         /* largest particle speed [m/s] */
} MPMDiagnostics;

PetscErrorCode MPMComputeDiagnostics(MPMSim sim, MPMDiagnostics *d);

/* ------------------------------------------------ output frames and records */
PetscErrorCode MPMOutputSetUp(MPMSim sim, PetscBool restarted);
PetscErrorCode MPMOutputMakeDir(MPMSim sim, const char *dir);
PetscErrorCode MPMOutputRecordFrame(MPMSim sim, double t, const int64_t *n, PetscInt frame);
PetscErrorCode MPMRank0Outcome(MPMSim sim, PetscErrorCode ierr, const char *what);
PetscErrorCode MPMOutputFrame(MPMSim sim);
PetscErrorCode MPMOutputHistory(MPMSim sim, const MPMDiagnostics *d);
PetscErrorCode MPMOutputSummary(MPMSim sim);
double         MPMGeometryBytes(const MPMSim sim);
PetscErrorCode MPMOutputFinalize(MPMSim sim);
PetscErrorCode MPMOutputWriteXdmf(MPMSim sim);
PetscErrorCode MPMOutputObjects(MPMSim sim); /* surfaces.c: the objects' surfaces and objects.xmf (rank 0) */
PetscBool      MPMObjectMoving(const MPMCollider *o);
PetscErrorCode MPMObjectTrace(const MPMSim sim, const MPMCollider *o, PetscInt *n, double **pts);
PetscErrorCode MPMObjectsTraceStill(MPMSim sim);
PetscErrorCode MPMWriteFileAtomic(const char *path, const char *text);

/* One output array of this rank's particles, as written to frames and handed
 * to Catalyst: a registered field converted to its output type (vectors
 * padded to 3 components) or a derived field. */
typedef struct {
  const char  *name;
  MPMFieldType type;  /* MPM_FIELD_REAL, _INT64 or _INT32 */
  int          ncomp;
  void        *data;  /* n x ncomp */
  PetscBool    owned; /* a converted copy (freed by MPMOutputArraysRestore), else the field's own storage */
  PetscInt     field, derived; /* its source: a registered field, or a derived field (-1: not this kind) */
} MPMOutputArray;

PetscErrorCode MPMOutputArraysGet(MPMSpecies *sp, PetscInt *n, MPMOutputArray **arrays);
PetscErrorCode MPMOutputCheckFields(MPMSim sim);
PetscErrorCode MPMPotentialEnergyFull(MPMSim sim, double *pe);
PetscErrorCode MPMOutputArraysRestore(PetscInt n, MPMOutputArray **arrays);

/* ------------------------------------------------------------ checkpoints */
PetscErrorCode MPMCheckpointSetUp(MPMSim sim);
PetscErrorCode MPMCheckpointInstallSignals(MPMSim sim);
int64_t        MPMCheckpointLocalFlags(const MPMSim sim);
PetscErrorCode MPMCheckpointWrite(MPMSim sim);
PetscErrorCode MPMCheckpointAfterStep(MPMSim sim, PetscBool *stop);
PetscErrorCode MPMCheckpointRestart(MPMSim sim, PetscBool *restarted);

/* ---------------------------------------------------------------- Catalyst */
PetscErrorCode MPMCatalystSetUp(MPMSim sim);
PetscErrorCode MPMCatalystCoProcess(MPMSim sim);
PetscErrorCode MPMCatalystFinalize(MPMSim sim);

/* ------------------------------------------------ parallel HDF5 (h5io.c) */
/* Collective row-block writes and reads of per-particle arrays, and
 * scalar/array/string attributes on the root group. */
#define H5CALL(expr) \
  do { \
    if ((expr) < 0) SETERRQ(PETSC_COMM_SELF, PETSC_ERR_LIB, "HDF5 call failed: %s", #expr); \
  } while (0)

/* An open file and this rank's block of rows [offset, offset + n) of total. */
typedef struct {
  hid_t   file, dxpl;
  int64_t offset, total, n;
} MPMH5File;
PetscErrorCode MPMH5WriteArrayAs(MPMH5File *F, const char *name, hid_t type, hid_t filetype, int ncols, const void *data);

PetscErrorCode MPMH5Create(MPI_Comm comm, const char *path, MPMH5File *F);
/* Open for reading; returns PETSC_FALSE in *ok (no error) if the file is not
 * readable HDF5, so the caller can name the file in its own message. */
PetscErrorCode MPMH5Open(MPI_Comm comm, const char *path, MPMH5File *F, PetscBool *ok);
PetscErrorCode MPMH5Close(MPMH5File *F);
PetscErrorCode MPMH5WriteArray(MPMH5File *F, const char *name, hid_t type, int ncols, const void *data);
/* Read rows [F->offset, F->offset + F->n) of dataset `name`; checks that it
 * exists with F->total rows and ncols columns. */
PetscErrorCode MPMH5ReadArray(MPMH5File *F, const char *name, hid_t type, int ncols, void *data, const char *what);
PetscErrorCode MPMH5WriteAttr(hid_t file, const char *name, hid_t type, int n, const void *data);
PetscErrorCode MPMH5ReadAttr(hid_t file, const char *name, hid_t type, int n, void *data, const char *what);
PetscErrorCode MPMH5WriteString(hid_t file, const char *name, const char *value);
PetscErrorCode MPMH5ReadString(hid_t file, const char *name, char **value, const char *what);
PetscBool      MPMH5Exists(hid_t file, const char *name);

/* Persistent grid fields, in natural node order (checkpoint.c). */
PetscErrorCode MPMCheckpointGridFieldsWrite(MPMSim sim, MPMH5File *F);
PetscErrorCode MPMCheckpointGridFieldsRead(MPMSim sim, MPMH5File *F, const char *what);

#endif
