/* Parallel HDF5 helpers (declared in io.h).  Problems with a file someone gave us
 * (missing or misshapen datasets) are input errors.  Every call here is collective over
 * the file's communicator except the attribute reads. */
#include "io.h"

PetscErrorCode MPMH5Create(MPI_Comm comm, const char *path, MPMH5File *F)
{
  hid_t fapl;

  PetscFunctionBeginUser;
  H5CALL(fapl = H5Pcreate(H5P_FILE_ACCESS));
  H5CALL(H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL));
  F->file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  H5CALL(H5Pclose(fapl));
  PetscCheck(F->file >= 0, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "Cannot create %s", path);
  H5CALL(F->dxpl = H5Pcreate(H5P_DATASET_XFER));
  H5CALL(H5Pset_dxpl_mpio(F->dxpl, H5FD_MPIO_COLLECTIVE));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMH5Open(MPI_Comm comm, const char *path, MPMH5File *F, PetscBool *ok)
{
  hid_t fapl;

  PetscFunctionBeginUser;
  H5CALL(fapl = H5Pcreate(H5P_FILE_ACCESS));
  H5CALL(H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL));
  H5E_BEGIN_TRY { F->file = H5Fopen(path, H5F_ACC_RDONLY, fapl); } /* a damaged file is reported by the caller */
  H5E_END_TRY;
  H5CALL(H5Pclose(fapl));
  *ok = F->file >= 0 ? PETSC_TRUE : PETSC_FALSE;
  if (*ok) {
    H5CALL(F->dxpl = H5Pcreate(H5P_DATASET_XFER));
    H5CALL(H5Pset_dxpl_mpio(F->dxpl, H5FD_MPIO_COLLECTIVE));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMH5Close(MPMH5File *F)
{
  PetscFunctionBeginUser;
  H5CALL(H5Pclose(F->dxpl));
  H5CALL(H5Fclose(F->file));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* File and memory spaces of this rank's row block (none if it has no rows). */
static PetscErrorCode RowBlock(const MPMH5File *F, int ncols, hid_t *fspace, hid_t *mspace)
{
  const int rank     = ncols > 1 ? 2 : 1;
  hsize_t   gdims[2] = {(hsize_t)F->total, (hsize_t)ncols}, ldims[2] = {(hsize_t)F->n, (hsize_t)ncols};
  hsize_t   start[2] = {(hsize_t)F->offset, 0};

  PetscFunctionBeginUser;
  H5CALL(*fspace = H5Screate_simple(rank, gdims, NULL));
  H5CALL(*mspace = H5Screate_simple(rank, ldims, NULL));
  if (F->n > 0) H5CALL(H5Sselect_hyperslab(*fspace, H5S_SELECT_SET, start, NULL, ldims, NULL));
  else {
    H5CALL(H5Sselect_none(*fspace));
    H5CALL(H5Sselect_none(*mspace));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMH5WriteArray(MPMH5File *F, const char *name, hid_t type, int ncols, const void *data)
{
  PetscFunctionBeginUser;
  PetscCall(MPMH5WriteArrayAs(F, name, type, type, ncols, data));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The same, stored as filetype (HDF5 converts: double data as float). */
PetscErrorCode MPMH5WriteArrayAs(MPMH5File *F, const char *name, hid_t type, hid_t filetype, int ncols, const void *data)
{
  static const double dummy[9] = {0};
  hid_t               fspace, mspace, dset;

  PetscFunctionBeginUser;
  PetscCall(RowBlock(F, ncols, &fspace, &mspace));
  H5CALL(dset = H5Dcreate2(F->file, name, filetype, fspace, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  /* every rank takes part in the collective write, also with 0 rows; an
   * empty dataset (no rows anywhere) is not written at all */
  if (F->total > 0) H5CALL(H5Dwrite(dset, type, mspace, fspace, F->dxpl, F->n > 0 ? data : (const void *)dummy));
  H5CALL(H5Dclose(dset));
  H5CALL(H5Sclose(mspace));
  H5CALL(H5Sclose(fspace));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscBool MPMH5Exists(hid_t file, const char *name)
{
  htri_t e;
  H5E_BEGIN_TRY { e = H5Lexists(file, name, H5P_DEFAULT); }
  H5E_END_TRY;
  return e > 0 ? PETSC_TRUE : PETSC_FALSE;
}

PetscErrorCode MPMH5ReadArray(MPMH5File *F, const char *name, hid_t type, int ncols, void *data, const char *what)
{
  double  dummy[9];
  hid_t   fspace, mspace, dset, dspace;
  hsize_t dims[2] = {0, 1};
  int     rank;

  PetscFunctionBeginUser;
  PetscCheck(MPMH5Exists(F->file, name), PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "%s has no dataset %s", what, name);
  H5CALL(dset = H5Dopen2(F->file, name, H5P_DEFAULT));
  H5CALL(dspace = H5Dget_space(dset));
  H5CALL(rank = H5Sget_simple_extent_dims(dspace, dims, NULL));
  H5CALL(H5Sclose(dspace));
  PetscCheck((int64_t)dims[0] == F->total && (rank == 1 ? 1 : (int)dims[1]) == ncols, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT,
             "%s: dataset %s has %llu x %d entries, expected %lld x %d", what, name, (unsigned long long)dims[0], rank == 1 ? 1 : (int)dims[1], (long long)F->total, ncols);
  PetscCall(RowBlock(F, ncols, &fspace, &mspace));
  if (F->total > 0) H5CALL(H5Dread(dset, type, mspace, fspace, F->dxpl, F->n > 0 ? data : (void *)dummy));
  H5CALL(H5Dclose(dset));
  H5CALL(H5Sclose(mspace));
  H5CALL(H5Sclose(fspace));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMH5WriteAttr(hid_t file, const char *name, hid_t type, int n, const void *data)
{
  hsize_t dim = (hsize_t)n;
  hid_t   sp, a;

  PetscFunctionBeginUser;
  H5CALL(sp = H5Screate_simple(1, &dim, NULL));
  H5CALL(a = H5Acreate2(file, name, type, sp, H5P_DEFAULT, H5P_DEFAULT));
  H5CALL(H5Awrite(a, type, data));
  H5CALL(H5Aclose(a));
  H5CALL(H5Sclose(sp));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMH5ReadAttr(hid_t file, const char *name, hid_t type, int n, void *data, const char *what)
{
  hid_t   a, sp;
  hssize_t npts;

  PetscFunctionBeginUser;
  PetscCheck(H5Aexists(file, name) > 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "%s has no attribute %s", what, name);
  H5CALL(a = H5Aopen(file, name, H5P_DEFAULT));
  H5CALL(sp = H5Aget_space(a));
  H5CALL(npts = H5Sget_simple_extent_npoints(sp));
  H5CALL(H5Sclose(sp));
  PetscCheck(npts == n, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "%s: attribute %s has %lld values, expected %d", what, name, (long long)npts, n);
  H5CALL(H5Aread(a, type, data));
  H5CALL(H5Aclose(a));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMH5WriteString(hid_t file, const char *name, const char *value)
{
  size_t len;
  hid_t  st, sp, a;

  PetscFunctionBeginUser;
  PetscCall(PetscStrlen(value, &len));
  H5CALL(st = H5Tcopy(H5T_C_S1));
  H5CALL(H5Tset_size(st, len + 1));
  H5CALL(sp = H5Screate(H5S_SCALAR));
  H5CALL(a = H5Acreate2(file, name, st, sp, H5P_DEFAULT, H5P_DEFAULT));
  H5CALL(H5Awrite(a, st, value));
  H5CALL(H5Aclose(a));
  H5CALL(H5Sclose(sp));
  H5CALL(H5Tclose(st));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMH5ReadString(hid_t file, const char *name, char **value, const char *what)
{
  hid_t  a, t;
  size_t len;

  PetscFunctionBeginUser;
  PetscCheck(H5Aexists(file, name) > 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "%s has no attribute %s", what, name);
  H5CALL(a = H5Aopen(file, name, H5P_DEFAULT));
  H5CALL(t = H5Aget_type(a));
  len = H5Tget_size(t);
  PetscCall(PetscCalloc1(len + 1, value));
  H5CALL(H5Aread(a, t, *value));
  H5CALL(H5Tclose(t));
  H5CALL(H5Aclose(a));
  PetscFunctionReturn(PETSC_SUCCESS);
}
