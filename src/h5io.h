/* Parallel HDF5 helpers shared by frames (output.c) and checkpoints
 * (checkpoint.c): collective row-block writes and reads of per-particle
 * arrays, and scalar/array/string attributes on the root group. */
#ifndef MPM_H5IO_H
#define MPM_H5IO_H

#include "mpm_impl.h"
#include <hdf5.h>

#define H5CALL(expr) \
  do { \
    if ((expr) < 0) SETERRQ(PETSC_COMM_SELF, PETSC_ERR_LIB, "HDF5 call failed: %s", #expr); \
  } while (0)

/* An open file and this rank's block of rows [offset, offset + n) of total. */
typedef struct {
  hid_t   file, dxpl;
  int64_t offset, total, n;
} MPMH5File;

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

#endif
