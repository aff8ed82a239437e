/* The objects' surfaces beside the frames, so that ParaView draws the
 * obstacles with the grains (rank 0 writes; an object whose mesh is
 * sliced across the ranks is traced by each on its slab and gathered
 * once, MPMObjectsTraceStill).  Each object of -objects (the domain's faces are the domain's
 * outline, not drawn) is traced by MPMPlacedShapeSurfaceCells on a lattice of
 * half the grid's spacing, inside the domain:
 *   objects.h5                      the objects that stand still, once per run;
 *   frames/objects_NNNNN.h5         the moving ones (prescribed motion or
 *                                   dynamic bodies), per frame;
 *   objects.xmf                     the time series: per frame, one grid per
 *                                   object (Polyline segments in 2D,
 *                                   Triangles in 3D), open it beside
 *                                   particles.xmf.
 * In each file the group /<object>/ holds "points" (n x 3, m) and
 * "connectivity" (pieces x dim, int32, each piece its own points). */
#include "io.h"
#include <unistd.h>

PetscBool MPMObjectMoving(const MPMCollider *o)
{
  for (int a = 0; a < 3; a++)
    if (o->ps.vel[a] != 0 || o->ps.omega[a] != 0) return PETSC_TRUE;
  return o->dynamic;
}

/* Object o's surface on the cells of its lattice (MPMCollidersTraceLattice)
 * whose lower corner along axis lies in [xlo, xhi) (bounds in m, may be
 * infinite); nothing when the lattice is empty (the object is outside the
 * domain). */
static PetscErrorCode TraceCells(const MPMSim sim, const MPMCollider *o, PetscInt axis, double xlo, double xhi, PetscInt *n, double **pts)
{
  const PetscInt d = sim->dim;
  double         lo[3], hi[3], h = MPMCollidersTraceLattice(sim, o, lo, hi);

  PetscFunctionBeginUser;
  *n   = 0;
  *pts = NULL;
  for (PetscInt a = 0; a < d; a++)
    if (hi[a] <= lo[a]) PetscFunctionReturn(PETSC_SUCCESS);
  const double   f0 = isfinite(xlo) ? ceil((xlo - lo[axis]) / h) : 0.0, f1 = isfinite(xhi) ? ceil((xhi - lo[axis]) / h) : 1e9;
  const PetscInt c0 = (PetscInt)PetscMax(0.0, PetscMin(f0, 1e9)), c1 = (PetscInt)PetscMax(0.0, PetscMin(f1, 1e9));
  PetscCall(MPMPlacedShapeSurfaceCells(&o->ps, d, lo, hi, h, axis, c0, c1, n, pts));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Object o's surface where it is now: n pieces (segments in 2D, triangles
 * in 3D) of dim points each, pts (n x dim x 3, m; the caller frees it).
 * An object sliced across the ranks (colliders.h) gives rank 0 the picture
 * MPMObjectsTraceStill made, the other ranks nothing. */
PetscErrorCode MPMObjectTrace(const MPMSim sim, const MPMCollider *o, PetscInt *n, double **pts)
{
  const PetscInt d = sim->dim;

  PetscFunctionBeginUser;
  if (!o->sliced) {
    PetscCall(TraceCells(sim, o, 0, -INFINITY, INFINITY, n, pts));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(PetscMalloc1(o->ntrace * d * 3 + 1, pts));
  PetscCall(PetscArraycpy(*pts, o->trace, o->ntrace * d * 3));
  *n = o->ntrace;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Collective: the pictures of the sliced objects, each rank tracing the
 * lattice cells whose lower corner lies in its slab (what it holds
 * reaches a cell past it, colliders.c), gathered on rank 0 rank by rank. */
PetscErrorCode MPMObjectsTraceStill(MPMSim sim)
{
  const MPMColliders c = sim->colliders;
  const PetscInt     d = sim->dim;
  double             slo, shi;
  PetscBool          first = PETSC_TRUE; /* blocks: of the ranks that share an interval along the slab axis, the first traces it */

  PetscFunctionBeginUser;
  for (PetscInt a = 0; a < sim->dim; a++) first = first && (a == sim->layout.slab_axis || sim->layout.coord[a] == 0);
  MPMCollidersSlabInterval(sim, sim->rank, &slo, &shi);
  for (PetscInt k = c->nwalls; k < c->nobj; k++) {
    MPMCollider *o   = &c->obj[k];
    double      *pts = NULL;
    PetscInt     n   = 0;
    int64_t      total;
    if (!o->sliced || o->traced) continue;
    if (first) PetscCall(TraceCells(sim, o, sim->layout.slab_axis, slo, shi, &n, &pts)); /* cells i with lo + i h in [slo, shi) */
    PetscCall(MPMGatherVDouble(sim->comm, n * d * 3, pts, &total, &o->trace));
    o->ntrace = (PetscInt)(total / (d * 3));
    o->traced = PETSC_TRUE;
    PetscCall(PetscFree(pts));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode WriteObject(const MPMSim sim, hid_t file, const MPMCollider *o)
{
  const PetscInt d = sim->dim;
  double        *pts;
  PetscInt       n;
  int           *conn;
  hid_t          g, sp, ds;
  hsize_t        dp[2], dc[2];

  PetscFunctionBeginUser;
  PetscCall(MPMObjectTrace(sim, o, &n, &pts));
  dp[0] = (hsize_t)(n * d), dp[1] = 3;
  dc[0] = (hsize_t)n, dc[1] = (hsize_t)d;
  PetscCall(PetscMalloc1(n * d + 1, &conn));
  for (PetscInt k = 0; k < n * d; k++) conn[k] = (int)k;
  H5CALL(g = H5Gcreate2(file, o->name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5CALL(sp = H5Screate_simple(2, dp, NULL));
  H5CALL(ds = H5Dcreate2(g, "points", H5T_NATIVE_DOUBLE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  if (n > 0) H5CALL(H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, pts));
  H5CALL(H5Dclose(ds));
  H5CALL(H5Sclose(sp));
  H5CALL(sp = H5Screate_simple(2, dc, NULL));
  H5CALL(ds = H5Dcreate2(g, "connectivity", H5T_NATIVE_INT32, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  if (n > 0) H5CALL(H5Dwrite(ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, conn));
  H5CALL(H5Dclose(ds));
  H5CALL(H5Sclose(sp));
  H5CALL(H5Gclose(g));
  PetscCall(PetscFree(conn));
  PetscCall(PetscFree(pts));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The objects that stand still (moving = PETSC_FALSE) or move, into path */
static PetscErrorCode WriteObjects(const MPMSim sim, const char *path, PetscBool moving)
{
  const MPMColliders c = sim->colliders;
  char               tmp[PETSC_MAX_PATH_LEN];
  hid_t              file;

  PetscFunctionBeginUser;
  PetscCall(PetscSNPrintf(tmp, sizeof(tmp), "%s.tmp", path));
  H5CALL(file = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  for (PetscInt o = c->nwalls; o < c->nobj; o++)
    if (MPMObjectMoving(&c->obj[o]) == moving) PetscCall(WriteObject(sim, file, &c->obj[o]));
  H5CALL(H5Fclose(file));
  PetscCheck(rename(tmp, path) == 0, PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE, "Cannot rename %s", tmp);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The number of pieces of object `name` in file rel (relative to the
 * output directory), 0 if absent.  Read back from the files rather than
 * kept, so the series is right after a restart; a file open per moving
 * object and frame each time the series is rewritten, cheap next to a
 * frame's write for the hundreds of frames a run has. */
static PetscErrorCode Pieces(const MPMSim sim, const char *rel, const char *name, long long *n)
{
  char    path[PETSC_MAX_PATH_LEN], ds[MPM_NAME_LEN + 16];
  hid_t   file, set, sp;
  hsize_t dims[2] = {0, 0};

  PetscFunctionBeginUser;
  *n = 0;
  PetscCall(PetscSNPrintf(path, sizeof(path), "%s/%s", sim->outdir, rel));
  PetscCall(PetscSNPrintf(ds, sizeof(ds), "/%s/connectivity", name));
  if (access(path, R_OK)) PetscFunctionReturn(PETSC_SUCCESS);
  H5CALL(file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT));
  if (H5Lexists(file, name, H5P_DEFAULT) > 0) {
    H5CALL(set = H5Dopen2(file, ds, H5P_DEFAULT));
    H5CALL(sp = H5Dget_space(set));
    H5CALL(H5Sget_simple_extent_dims(sp, dims, NULL));
    H5CALL(H5Sclose(sp));
    H5CALL(H5Dclose(set));
    *n = (long long)dims[0];
  }
  H5CALL(H5Fclose(file));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* objects.xmf over every frame so far */
static PetscErrorCode WriteXdmf(const MPMSim sim)
{
  const MPMColliders c   = sim->colliders;
  const PetscInt     d   = sim->dim, nobj = c->nobj - c->nwalls;
  const size_t       len = 1024 + (size_t)(sim->nframes + 1) * (256 + 1024 * (size_t)nobj);
  char              *buf, path[PETSC_MAX_PATH_LEN];

  PetscFunctionBeginUser;
  PetscCall(PetscMalloc1(len, &buf));
  snprintf(buf, len, "<?xml version=\"1.0\" ?>\n<Xdmf Version=\"2.0\">\n  <Domain>\n    <Grid Name=\"objects\" GridType=\"Collection\" CollectionType=\"Temporal\">\n");
  for (PetscInt f = 0; f < sim->nframes; f++) {
    const MPMFrameRecord *r = &sim->frames[f];
    size_t                l = strlen(buf);
    snprintf(buf + l, len - l, "    <Grid Name=\"frame_%05d\" GridType=\"Collection\" CollectionType=\"Spatial\">\n      <Time Value=\"%.10g\"/>\n", (int)r->frame, r->t);
    for (PetscInt o = c->nwalls; o < c->nobj; o++) {
      char      rel[64];
      long long n;
      if (MPMObjectMoving(&c->obj[o])) PetscCall(PetscSNPrintf(rel, sizeof(rel), "frames/objects_%05d.h5", (int)r->frame));
      else PetscCall(PetscSNPrintf(rel, sizeof(rel), "objects.h5"));
      PetscCall(Pieces(sim, rel, c->obj[o].name, &n));
      if (n == 0) continue; /* ParaView refuses empty grids */
      l = strlen(buf);
      snprintf(buf + l, len - l,
               "      <Grid Name=\"%s\" GridType=\"Uniform\">\n"
               "        <Topology TopologyType=\"%s\" NumberOfElements=\"%lld\" NodesPerElement=\"%d\">\n"
               "          <DataItem Dimensions=\"%lld %d\" NumberType=\"Int\" Precision=\"4\" Format=\"HDF\">%s:/%s/connectivity</DataItem>\n"
               "        </Topology>\n        <Geometry GeometryType=\"XYZ\">\n"
               "          <DataItem Dimensions=\"%lld 3\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">%s:/%s/points</DataItem>\n"
               "        </Geometry>\n      </Grid>\n",
               c->obj[o].name, d == 2 ? "Polyline" : "Triangle", n, (int)d, n, (int)d, rel, c->obj[o].name, n * d, rel, c->obj[o].name);
    }
    l = strlen(buf);
    snprintf(buf + l, len - l, "    </Grid>\n");
  }
  size_t l = strlen(buf);
  snprintf(buf + l, len - l, "    </Grid>\n  </Domain>\n</Xdmf>\n");
  PetscCall(PetscSNPrintf(path, sizeof(path), "%s/objects.xmf", sim->outdir));
  PetscCall(MPMWriteFileAtomic(path, buf));
  PetscCall(PetscFree(buf));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Rank 0, after the frame is recorded: the moving objects of this frame,
 * the ones that stand still at the run's first frame, and the series. */
PetscErrorCode MPMOutputObjects(MPMSim sim)
{
  const MPMColliders c = sim->colliders;
  char               path[PETSC_MAX_PATH_LEN];
  PetscBool          moving = PETSC_FALSE, still = PETSC_FALSE;

  PetscFunctionBeginUser;
  if (c->nobj == c->nwalls) PetscFunctionReturn(PETSC_SUCCESS);
  for (PetscInt o = c->nwalls; o < c->nobj; o++) {
    if (MPMObjectMoving(&c->obj[o])) moving = PETSC_TRUE;
    else still = PETSC_TRUE;
  }
  if (still && !sim->objects_written) {
    PetscCall(PetscSNPrintf(path, sizeof(path), "%s/objects.h5", sim->outdir));
    PetscCall(WriteObjects(sim, path, PETSC_FALSE));
    sim->objects_written = PETSC_TRUE;
  }
  if (moving) {
    PetscCall(PetscSNPrintf(path, sizeof(path), "%s/frames/objects_%05" PetscInt_FMT ".h5", sim->outdir, sim->frame));
    PetscCall(WriteObjects(sim, path, PETSC_TRUE));
  }
  PetscCall(WriteXdmf(sim));
  PetscFunctionReturn(PETSC_SUCCESS);
}
