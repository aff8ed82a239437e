/* Output: one parallel HDF5 file per frame (collective hyperslab writes of
 * every rank's particles), an XDMF time series ParaView opens, a per-frame
 * history of the invariants (history.csv), run.json (provenance, written at
 * start) and summary.json (written at the end).
 *
 * Files are written to a temporary name and renamed, so a killed run
 * leaves only complete files behind. */
#define _POSIX_C_SOURCE 200809L /* dirent, unlink under -std=c11 */
#include "mpm_impl.h"
#include <hdf5.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <dirent.h>
#include <errno.h>
#include <time.h>
#include <unistd.h>

#define H5CALL(expr) \
  do { \
    if ((expr) < 0) SETERRQ(PETSC_COMM_SELF, PETSC_ERR_LIB, "HDF5 call failed: %s", #expr); \
  } while (0)


static PetscErrorCode MakeDir(const char *path)
{
  char     buf[PETSC_MAX_PATH_LEN];
  size_t   len;

  PetscFunctionBeginUser;
  PetscCall(PetscStrncpy(buf, path, sizeof(buf)));
  PetscCall(PetscStrlen(buf, &len));
  for (size_t i = 1; i <= len; i++) {
    if (buf[i] != '/' && buf[i] != 0) continue;
    const char c = buf[i];
    buf[i]       = 0;
    PetscCheck(mkdir(buf, 0755) == 0 || errno == EEXIST, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "-output_dir: cannot create directory %s: %s", buf, strerror(errno));
    buf[i] = c;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Write text to path atomically (temporary file, then rename). */
static PetscErrorCode WriteFileAtomic(const char *path, const char *text)
{
  char  tmp[PETSC_MAX_PATH_LEN];
  FILE *f;

  PetscFunctionBeginUser;
  PetscCall(PetscSNPrintf(tmp, sizeof(tmp), "%s.tmp", path));
  f = fopen(tmp, "w");
  PetscCheck(f, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "Cannot write %s: %s", tmp, strerror(errno));
  fputs(text, f);
  PetscCheck(fclose(f) == 0, PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE, "Cannot write %s", tmp);
  PetscCheck(rename(tmp, path) == 0, PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE, "Cannot rename %s to %s", tmp, path);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* JSON string escaping of the options database (it may contain quotes). */
static void JsonEscape(const char *in, char *out, size_t len)
{
  size_t j = 0;
  for (size_t i = 0; in && in[i] && j + 7 < len; i++) {
    const char c = in[i];
    if (c == '"' || c == '\\') {
      out[j++] = '\\';
      out[j++] = c;
    } else if ((unsigned char)c < 0x20) out[j++] = ' ';
    else out[j++] = c;
  }
  out[j] = 0;
}

/* run.json at a fresh start; restart_<step>.json when continuing from a
 * checkpoint (run.json keeps the original run's record). */
static PetscErrorCode WriteRunRecord(MPMSim sim, PetscBool restarted)
{
  char     *esc, *text;
  size_t    len;
  time_t    now = time(NULL);
  char      stamp[64], path[PETSC_MAX_PATH_LEN];
  unsigned  h5maj, h5min, h5rel;

  PetscFunctionBeginUser;
  PetscCall(PetscStrlen(sim->options_string, &len));
  PetscCall(PetscMalloc2(2 * len + 16, &esc, 2 * len + 4096, &text));
  JsonEscape(sim->options_string, esc, 2 * len + 16);
  strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S%z", localtime(&now));
  H5get_libversion(&h5maj, &h5min, &h5rel);
  PetscCall(PetscSNPrintf(text, 2 * len + 4096,
                          "{\n  \"program\": \"granular-mpm\",\n  \"version\": \"%s\",\n  \"petsc\": \"%d.%d.%d\",\n  \"hdf5\": \"%u.%u.%u\",\n"
                          "  \"ranks\": %d,\n  \"dim\": %" PetscInt_FMT ",\n  \"started\": \"%s\",\n  \"restart_step\": %" PetscInt_FMT ",\n  \"options\": \"%s\"\n}\n",
                          MPMVersion(), PETSC_VERSION_MAJOR, PETSC_VERSION_MINOR, PETSC_VERSION_SUBMINOR, h5maj, h5min, h5rel, sim->size, sim->dim, stamp,
                          restarted ? sim->step : (PetscInt)-1, esc));
  if (restarted) PetscCall(PetscSNPrintf(path, sizeof(path), "%s/restart_%08" PetscInt_FMT ".json", sim->outdir, sim->step));
  else PetscCall(PetscSNPrintf(path, sizeof(path), "%s/run.json", sim->outdir));
  PetscCall(WriteFileAtomic(path, text));
  PetscCall(PetscFree2(esc, text));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Files written by rank 0 alone: every rank learns whether it worked, so a
 * failure stops all ranks instead of leaving them waiting in a collective. */
PetscErrorCode MPMRank0Outcome(MPMSim sim, PetscErrorCode ierr, const char *what)
{
  int code = (int)ierr;

  PetscFunctionBeginUser;
  PetscCall(MPMBroadcastInt(sim->comm, &code));
  PetscCheck(code == 0, sim->comm, PETSC_ERR_FILE_WRITE, "Rank 0 failed %s in -output_dir %s (its message is above)", what, sim->outdir);
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode WriteXdmf(MPMSim sim);

/* mkdir -p on rank 0, the outcome known to all ranks. */
PetscErrorCode MPMOutputMakeDir(MPMSim sim, const char *dir)
{
  PetscFunctionBeginUser;
  PetscCall(MPMRank0Outcome(sim, sim->rank == 0 ? MakeDir(dir) : PETSC_SUCCESS, "creating a directory"));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Remove the temporaries a killed run may have left (they never got their
 * final name, so no reader ever saw them). */
static void RemoveTemporaries(const char *dir)
{
  DIR           *d = opendir(dir);
  struct dirent *e;
  char           path[PETSC_MAX_PATH_LEN];
  if (!d) return;
  while ((e = readdir(d))) {
    const size_t len = strlen(e->d_name);
    if (len > 4 && !strcmp(e->d_name + len - 4, ".tmp")) {
      snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
      unlink(path);
    }
  }
  closedir(d);
}

/* On restart, history.csv keeps its rows up to the checkpoint's step (a
 * killed run may have written rows past it, or half a row). */
static PetscErrorCode TruncateHistoryRank0(MPMSim sim, const char *path)
{
  FILE  *in = fopen(path, "r");
  char   line[4096], tmp[PETSC_MAX_PATH_LEN];
  FILE  *out;
  double t;
  long   step;

  PetscFunctionBeginUser;
  if (!in) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscSNPrintf(tmp, sizeof(tmp), "%s.tmp", path));
  out = fopen(tmp, "w");
  PetscCheck(out, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "Cannot write %s: %s", tmp, strerror(errno));
  if (fgets(line, sizeof(line), in)) fputs(line, out); /* the header */
  while (fgets(line, sizeof(line), in))
    if (strchr(line, '\n') && sscanf(line, "%lf,%ld,", &t, &step) == 2 && step <= sim->step) fputs(line, out);
  fclose(in);
  PetscCheck(fclose(out) == 0 && rename(tmp, path) == 0, PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE, "Cannot rewrite %s", path);
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode OutputSetUpRank0(MPMSim sim, PetscBool restarted)
{
  char path[PETSC_MAX_PATH_LEN];

  PetscFunctionBeginUser;
  PetscCall(PetscSNPrintf(path, sizeof(path), "%s/frames", sim->outdir));
  PetscCall(MakeDir(path));
  RemoveTemporaries(path);
  PetscCall(PetscSNPrintf(path, sizeof(path), "%s/checkpoints", sim->outdir));
  RemoveTemporaries(path);
  PetscCall(WriteRunRecord(sim, restarted));
  PetscCall(PetscSNPrintf(path, sizeof(path), "%s/history.csv", sim->outdir));
  if (restarted) PetscCall(TruncateHistoryRank0(sim, path));
  sim->history = fopen(path, restarted ? "a" : "w");
  PetscCheck(sim->history, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "Cannot write %s: %s", path, strerror(errno));
  if (!restarted) fprintf(sim->history, "t,step,particles,mass,momentum_x,momentum_y,momentum_z,kinetic_energy,elastic_energy,dt,vmax,imbalance\n");
  if (restarted) PetscCall(WriteXdmf(sim)); /* the series up to the checkpoint */
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMOutputSetUp(MPMSim sim, PetscBool restarted)
{
  PetscFunctionBeginUser;
  PetscCall(MPMRank0Outcome(sim, sim->rank == 0 ? OutputSetUpRank0(sim, restarted) : PETSC_SUCCESS, "creating the output directory, run.json or history.csv"));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ------------------------------------------------------------ HDF5 frames */
typedef struct {
  hid_t   file, dxpl;
  int64_t offset, total, n;
} H5Frame;

static PetscErrorCode H5WriteArray(H5Frame *F, const char *name, hid_t type, int ncols, const void *data)
{
  const int rank        = ncols > 1 ? 2 : 1;
  hsize_t   gdims[2]    = {(hsize_t)F->total, (hsize_t)ncols}, ldims[2] = {(hsize_t)F->n, (hsize_t)ncols};
  hsize_t   start[2]    = {(hsize_t)F->offset, 0};
  hid_t     fspace, mspace, dset;
  static const double dummy[3] = {0, 0, 0};

  PetscFunctionBeginUser;
  H5CALL(fspace = H5Screate_simple(rank, gdims, NULL));
  H5CALL(mspace = H5Screate_simple(rank, ldims, NULL));
  H5CALL(dset = H5Dcreate2(F->file, name, type, fspace, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  if (F->n > 0) H5CALL(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, ldims, NULL));
  else {
    H5CALL(H5Sselect_none(fspace));
    H5CALL(H5Sselect_none(mspace));
  }
  /* every rank takes part in the collective write, also with 0 particles;
   * an empty dataset (no particles anywhere yet) is not written at all */
  if (F->total > 0) H5CALL(H5Dwrite(dset, type, mspace, fspace, F->dxpl, F->n > 0 ? data : (const void *)dummy));
  H5CALL(H5Dclose(dset));
  H5CALL(H5Sclose(mspace));
  H5CALL(H5Sclose(fspace));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode H5Attributes(MPMSim sim, hid_t file)
{
  const double  rattr[2] = {sim->t, sim->dt};
  const int64_t iattr[4] = {sim->step, sim->frame, sim->dim, sim->size};
  const char   *snames[] = {"version", "options"};
  const char   *svals[]  = {MPMVersion(), sim->options_string ? sim->options_string : ""};
  hid_t         sp, a, st;
  hsize_t       two = 2, four = 4;

  PetscFunctionBeginUser;
  H5CALL(sp = H5Screate_simple(1, &two, NULL));
  H5CALL(a = H5Acreate2(file, "time_dt", H5T_NATIVE_DOUBLE, sp, H5P_DEFAULT, H5P_DEFAULT));
  H5CALL(H5Awrite(a, H5T_NATIVE_DOUBLE, rattr));
  H5CALL(H5Aclose(a));
  H5CALL(H5Sclose(sp));
  H5CALL(sp = H5Screate_simple(1, &four, NULL));
  H5CALL(a = H5Acreate2(file, "step_frame_dim_ranks", H5T_NATIVE_INT64, sp, H5P_DEFAULT, H5P_DEFAULT));
  H5CALL(H5Awrite(a, H5T_NATIVE_INT64, iattr));
  H5CALL(H5Aclose(a));
  H5CALL(H5Sclose(sp));
  for (int i = 0; i < 2; i++) {
    size_t len;
    PetscCall(PetscStrlen(svals[i], &len));
    H5CALL(st = H5Tcopy(H5T_C_S1));
    H5CALL(H5Tset_size(st, len + 1));
    H5CALL(sp = H5Screate(H5S_SCALAR));
    H5CALL(a = H5Acreate2(file, snames[i], st, sp, H5P_DEFAULT, H5P_DEFAULT));
    H5CALL(H5Awrite(a, st, svals[i]));
    H5CALL(H5Aclose(a));
    H5CALL(H5Sclose(sp));
    H5CALL(H5Tclose(st));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Derived per-particle output: volume, pressure -tr(sigma)/d and the norm
 * of the deviatoric Cauchy stress, sigma = tau / J.  Shared with the
 * Catalyst adaptor (catalyst.c), so both show the same pressure. */
void MPMDerivedFields(const MPMSim sim, double *vol, double *pres, double *sdev)
{
  const MPMParticles *p = &sim->p;
  const PetscInt      d = p->dim;
  for (PetscInt q = 0; q < p->n; q++) {
    const double *tau = p->tau + q * d * d;
    const double  J   = mpm_det((int)d, p->Fe + q * d * d) * p->Jp[q];
    double        tr  = 0, s2 = 0;
    for (PetscInt a = 0; a < d; a++) tr += tau[a * d + a];
    for (PetscInt a = 0; a < d; a++)
      for (PetscInt b = 0; b < d; b++) {
        const double s = tau[a * d + b] - (a == b ? tr / d : 0.0);
        s2 += s * s;
      }
    vol[q]  = p->V0[q] * J;
    pres[q] = -tr / (d * J);
    sdev[q] = sqrt(s2) / J;
  }
}

static PetscErrorCode WriteParticles(MPMSim sim, H5Frame *F)
{
  const MPMParticles *p = &sim->p;
  const PetscInt      d = p->dim, n = p->n;
  double             *xyz, *vel, *vol, *pres, *sdev;
  int32_t            *pc;
  int64_t            *conn;

  PetscFunctionBeginUser;
  PetscCall(PetscMalloc7(3 * n + 1, &xyz, 3 * n + 1, &vel, n + 1, &vol, n + 1, &pres, n + 1, &sdev, n + 1, &pc, n + 1, &conn));
  for (PetscInt q = 0; q < n; q++) {
    for (PetscInt a = 0; a < 3; a++) {
      xyz[3 * q + a] = a < d ? p->x[q * d + a] : 0.0; /* ParaView wants 3D points */
      vel[3 * q + a] = a < d ? p->v[q * d + a] : 0.0;
    }
    pc[q]   = p->pcase[q];
    conn[q] = F->offset + q;
  }
  MPMDerivedFields(sim, vol, pres, sdev);
  PetscCall(H5WriteArray(F, "id", H5T_NATIVE_INT64, 1, p->id));
  PetscCall(H5WriteArray(F, "position", H5T_NATIVE_DOUBLE, 3, xyz));
  PetscCall(H5WriteArray(F, "velocity", H5T_NATIVE_DOUBLE, 3, vel));
  PetscCall(H5WriteArray(F, "material", H5T_NATIVE_INT32, 1, p->mat));
  PetscCall(H5WriteArray(F, "mass", H5T_NATIVE_DOUBLE, 1, p->m));
  PetscCall(H5WriteArray(F, "volume", H5T_NATIVE_DOUBLE, 1, vol));
  PetscCall(H5WriteArray(F, "pressure", H5T_NATIVE_DOUBLE, 1, pres));
  PetscCall(H5WriteArray(F, "dev_stress_norm", H5T_NATIVE_DOUBLE, 1, sdev));
  PetscCall(H5WriteArray(F, "plastic_case", H5T_NATIVE_INT32, 1, pc));
  PetscCall(H5WriteArray(F, "hardening", H5T_NATIVE_DOUBLE, 1, p->q));
  PetscCall(H5WriteArray(F, "plastic_volume_ratio", H5T_NATIVE_DOUBLE, 1, p->Jp));
  PetscCall(H5WriteArray(F, "connectivity", H5T_NATIVE_INT64, 1, conn));
  PetscCall(PetscFree7(xyz, vel, vol, pres, sdev, pc, conn));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static void XdmfAttribute(char *buf, size_t len, const MPMFrameRecord *r, const char *name, const char *type, int ncols, const char *ntype, int prec)
{
  char dims[64];
  if (ncols > 1) snprintf(dims, sizeof(dims), "%lld %d", (long long)r->n, ncols);
  else snprintf(dims, sizeof(dims), "%lld", (long long)r->n);
  size_t l = strlen(buf);
  snprintf(buf + l, len - l,
           "      <Attribute Name=\"%s\" AttributeType=\"%s\" Center=\"Node\">\n"
           "        <DataItem Dimensions=\"%s\" NumberType=\"%s\" Precision=\"%d\" Format=\"HDF\">frames/frame_%05d.h5:/%s</DataItem>\n"
           "      </Attribute>\n",
           name, type, dims, ntype, prec, (int)r->frame, name);
}

/* The XDMF time series over all frames so far (rank 0). */
static PetscErrorCode WriteXdmf(MPMSim sim)
{
  const size_t per = 4096, len = per * (size_t)(sim->nframes + 1);
  char        *buf, path[PETSC_MAX_PATH_LEN];
  static const char *scalars[] = {"mass", "volume", "pressure", "dev_stress_norm", "hardening", "plastic_volume_ratio"};

  PetscFunctionBeginUser;
  PetscCall(PetscMalloc1(len, &buf));
  snprintf(buf, len, "<?xml version=\"1.0\" ?>\n<Xdmf Version=\"2.0\">\n  <Domain>\n    <Grid Name=\"particles\" GridType=\"Collection\" CollectionType=\"Temporal\">\n");
  for (PetscInt f = 0; f < sim->nframes; f++) {
    const MPMFrameRecord *r = &sim->frames[f];
    size_t             l = strlen(buf);
    snprintf(buf + l, len - l,
             "    <Grid Name=\"frame_%05d\" GridType=\"Uniform\">\n      <Time Value=\"%.10g\"/>\n"
             "      <Topology TopologyType=\"Polyvertex\" NumberOfElements=\"%lld\" NodesPerElement=\"1\">\n"
             "        <DataItem Dimensions=\"%lld\" NumberType=\"Int\" Precision=\"8\" Format=\"HDF\">frames/frame_%05d.h5:/connectivity</DataItem>\n"
             "      </Topology>\n      <Geometry GeometryType=\"XYZ\">\n"
             "        <DataItem Dimensions=\"%lld 3\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">frames/frame_%05d.h5:/position</DataItem>\n"
             "      </Geometry>\n",
             (int)r->frame, r->t, (long long)r->n, (long long)r->n, (int)r->frame, (long long)r->n, (int)r->frame);
    XdmfAttribute(buf, len, r, "velocity", "Vector", 3, "Float", 8);
    XdmfAttribute(buf, len, r, "id", "Scalar", 1, "Int", 8);
    XdmfAttribute(buf, len, r, "material", "Scalar", 1, "Int", 4);
    XdmfAttribute(buf, len, r, "plastic_case", "Scalar", 1, "Int", 4);
    for (size_t s = 0; s < sizeof(scalars) / sizeof(scalars[0]); s++) XdmfAttribute(buf, len, r, scalars[s], "Scalar", 1, "Float", 8);
    l = strlen(buf);
    snprintf(buf + l, len - l, "    </Grid>\n");
  }
  size_t l = strlen(buf);
  snprintf(buf + l, len - l, "    </Grid>\n  </Domain>\n</Xdmf>\n");
  PetscCall(PetscSNPrintf(path, sizeof(path), "%s/particles.xmf", sim->outdir));
  PetscCall(WriteFileAtomic(path, buf));
  PetscCall(PetscFree(buf));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Add a frame to the list the XDMF series is written from (rank 0). */
PetscErrorCode MPMOutputRecordFrame(MPMSim sim, double t, int64_t n, PetscInt frame)
{
  PetscFunctionBeginUser;
  if (sim->nframes == sim->capframes) {
    sim->capframes = 2 * sim->capframes + 16;
    PetscCall(PetscRealloc(sizeof(MPMFrameRecord) * sim->capframes, &sim->frames));
  }
  sim->frames[sim->nframes].t     = t;
  sim->frames[sim->nframes].n     = n;
  sim->frames[sim->nframes].frame = frame;
  sim->nframes++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Give the frame file its final name and add it to the XDMF series. */
static PetscErrorCode FrameFinishRank0(MPMSim sim, const char *tmp, const char *path, int64_t total)
{
  PetscFunctionBeginUser;
  PetscCheck(rename(tmp, path) == 0, PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE, "Cannot rename %s: %s", tmp, strerror(errno));
  PetscCall(MPMOutputRecordFrame(sim, sim->t, total, sim->frame));
  PetscCall(WriteXdmf(sim));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMOutputFrame(MPMSim sim)
{
  char    path[PETSC_MAX_PATH_LEN], tmp[PETSC_MAX_PATH_LEN];
  H5Frame F;
  hid_t   fapl;

  PetscFunctionBeginUser;
  PetscCall(PetscLogEventBegin(MPM_EVENT_OUTPUT, 0, 0, 0, 0));
  F.n = sim->p.n;
  PetscCall(MPMGlobalOffset(sim->comm, F.n, &F.offset, &F.total));
  PetscCall(PetscSNPrintf(path, sizeof(path), "%s/frames/frame_%05" PetscInt_FMT ".h5", sim->outdir, sim->frame));
  PetscCall(PetscSNPrintf(tmp, sizeof(tmp), "%s.tmp", path));
  H5CALL(fapl = H5Pcreate(H5P_FILE_ACCESS));
  H5CALL(H5Pset_fapl_mpio(fapl, sim->comm, MPI_INFO_NULL));
  F.file = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  PetscCheck(F.file >= 0, PETSC_COMM_SELF, PETSC_ERR_FILE_OPEN, "Cannot create %s", tmp);
  H5CALL(H5Pclose(fapl));
  H5CALL(F.dxpl = H5Pcreate(H5P_DATASET_XFER));
  H5CALL(H5Pset_dxpl_mpio(F.dxpl, H5FD_MPIO_COLLECTIVE));
  PetscCall(WriteParticles(sim, &F));
  PetscCall(H5Attributes(sim, F.file));
  H5CALL(H5Pclose(F.dxpl));
  H5CALL(H5Fclose(F.file));
  PetscCall(MPMBarrier(sim->comm)); /* every rank's data is in the file before it gets its final name */
  PetscCall(MPMRank0Outcome(sim, sim->rank == 0 ? FrameFinishRank0(sim, tmp, path, F.total) : PETSC_SUCCESS, "naming the frame or writing particles.xmf"));
  sim->frame++;
  PetscCall(PetscLogEventEnd(MPM_EVENT_OUTPUT, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMOutputHistory(MPMSim sim, const MPMDiagnostics *d)
{
  PetscFunctionBeginUser;
  if (sim->rank == 0 && sim->history) {
    fprintf(sim->history, "%.12g,%" PetscInt_FMT ",%lld,%.15g,%.15g,%.15g,%.15g,%.15g,%.15g,%.6g,%.6g,%.4f\n", sim->t, sim->step, (long long)d->n, d->mass, d->mom[0], d->mom[1],
            d->mom[2], d->ke, d->ee, sim->dt, d->vmax, sim->imbalance);
    fflush(sim->history);
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* "n0, n1, ..." : one count of every rank (particles, grid nodes: the load balance). */
static PetscErrorCode PerRankCounts(MPMSim sim, int64_t mine, char *buf, size_t len)
{
  int64_t *all;

  PetscFunctionBeginUser;
  PetscCall(PetscMalloc1(sim->size, &all));
  PetscCall(MPMAllGatherInt64(sim->comm, mine, all));
  buf[0] = 0;
  for (PetscMPIInt r = 0; r < sim->size && strlen(buf) + 24 < len; r++) snprintf(buf + strlen(buf), len - strlen(buf), "%s%lld", r ? ", " : "", (long long)all[r]);
  PetscCall(PetscFree(all));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static double PeakRSSBytes(void)
{
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return 1024.0 * (double)ru.ru_maxrss; /* Linux reports kB */
}

PetscErrorCode MPMOutputSummary(MPMSim sim)
{
  MPMDiagnostics d;
  double         rss[2] = {PeakRSSBytes(), 0}, rss_sum, wall;
  char          *text, *counts, *nodes, path[PETSC_MAX_PATH_LEN];
  const size_t   clen = 24 * (size_t)sim->size + 16, tlen = 8192 + 2 * clen;
  int64_t        owned = 1;
  PetscLogDouble now;

  PetscFunctionBeginUser;
  PetscCall(MPMComputeDiagnostics(sim, &d));
  rss_sum = rss[0];
  PetscCall(MPMGlobalSum(sim->comm, &rss_sum, 1));
  PetscCall(MPMGlobalMax(sim->comm, rss, 1));
  PetscCall(PetscTime(&now));
  wall = sim->wall_before + (now - sim->wall_start); /* whole run, across restarts */
  PetscCall(PetscMalloc3(tlen, &text, clen, &counts, clen, &nodes));
  for (PetscInt a = 0; a < sim->dim; a++) owned *= sim->grid.xm[a];
  PetscCall(PerRankCounts(sim, sim->p.n, counts, clen));
  PetscCall(PerRankCounts(sim, owned, nodes, clen));
  const double psteps = sim->particle_steps, rate = sim->wall_steps > 0 ? psteps / sim->wall_steps : 0;
  PetscCall(PetscSNPrintf(text, tlen,
                          "{\n  \"version\": \"%s\",\n  \"ranks\": %d,\n  \"dim\": %" PetscInt_FMT ",\n  \"particles\": %lld,\n  \"particles_deleted\": %lld,\n"
                          "  \"particles_emitted\": %lld,\n  \"steps\": %" PetscInt_FMT ",\n  \"simulated_time\": %.12g,\n  \"dt_min\": %.6g,\n  \"dt_max\": %.6g,\n"
                          "  \"total_mass\": %.15g,\n  \"total_momentum\": [%.15g, %.15g, %.15g],\n  \"kinetic_energy\": %.15g,\n  \"elastic_energy\": %.15g,\n"
                          "  \"wall_seconds\": %.6g,\n  \"wall_seconds_stepping\": %.6g,\n  \"particle_steps\": %.6g,\n  \"particle_steps_per_second\": %.6g,\n"
                          "  \"particle_steps_per_second_per_rank\": %.6g,\n  \"state_bytes_per_particle\": %zu,\n  \"peak_rss_bytes_max_rank\": %.6g,\n"
                          "  \"peak_rss_bytes_total\": %.6g,\n  \"output_frames\": %" PetscInt_FMT ",\n  \"particles_per_rank\": [%s],\n"
                          "  \"nodes_per_rank\": [%s],\n  \"balance_node_cost\": %.6g,\n  \"rebalances\": %" PetscInt_FMT ",\n  \"checkpoints_written\": %" PetscInt_FMT ",\n  \"checkpoint_seconds\": %.6g,\n  \"status\": \"%s\"\n}\n",
                          MPMVersion(), sim->size, sim->dim, (long long)d.n, (long long)sim->n_deleted, (long long)sim->n_emitted, sim->step, sim->t,
                          sim->step ? sim->dt_lo : 0.0, sim->step ? sim->dt_hi : 0.0, d.mass, d.mom[0], d.mom[1], d.mom[2], d.ke, d.ee, wall, sim->wall_steps, psteps,
                          rate, rate / sim->size, sim->p.bytes, rss[0], rss_sum, sim->frame, counts, nodes, sim->balance_node_cost, sim->rebalances, sim->ckpt_count, sim->ckpt_seconds,
                          sim->exit_code == MPM_EXIT_CHECKPOINTED ? "checkpointed" : "finished"));
  PetscCall(PetscSNPrintf(path, sizeof(path), "%s/summary.json", sim->outdir));
  PetscCall(MPMRank0Outcome(sim, sim->rank == 0 ? WriteFileAtomic(path, text) : PETSC_SUCCESS, "writing summary.json"));
  PetscCall(PetscFree3(text, counts, nodes));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMOutputFinalize(MPMSim sim)
{
  PetscFunctionBeginUser;
  if (sim->history) fclose(sim->history);
  sim->history = NULL;
  PetscCall(PetscFree(sim->frames));
  sim->nframes = sim->capframes = 0;
  PetscFunctionReturn(PETSC_SUCCESS);
}
