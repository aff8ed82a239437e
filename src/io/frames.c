/* Output frames: one parallel HDF5 file per frame (collective hyperslab
 * writes of every rank's particles) and the XDMF time series ParaView
 * opens.  The datasets are the species' registered output fields and
 * derived fields, so a field registered anywhere appears here, in the XDMF
 * and in Catalyst with no edit.  Files are written to a temporary name and
 * renamed, so a killed run leaves only complete files behind.
 *
 * Several species (the sand-water mixture): the first species' datasets
 * are at the file's root, as with one species; species s > 0 writes the
 * same datasets in the group "/<species>/", and has its own XDMF series,
 * particles_<species>.xmf, beside particles.xmf. */
#include "io.h"
#include <errno.h>

#define MPM_MAX_OUTPUT 64

/* The output arrays of a species without their data: name, type, components. */
static PetscInt OutputList(const MPMSpecies *sp, MPMOutputArray *list)
{
  const MPMParticles *p = &sp->p;
  PetscInt            n = 0;
  for (PetscInt f = 0; f < p->nfield && n < MPM_MAX_OUTPUT; f++) {
    const MPMField *fd = &p->field[f];
    if (!(fd->flags & MPM_FIELD_OUTPUT)) continue;
    list[n].name    = fd->output;
    list[n].type    = fd->output_type;
    list[n].ncomp   = fd->pad3 ? 3 : fd->ncomp;
    list[n].data    = NULL;
    list[n].owned   = PETSC_FALSE;
    list[n].field   = f;
    list[n].derived = -1;
    n++;
  }
  for (PetscInt k = 0; k < sp->nderived && n < MPM_MAX_OUTPUT; k++) {
    list[n].name    = sp->derived[k].name;
    list[n].type    = MPM_FIELD_REAL;
    list[n].ncomp   = sp->derived[k].ncomp;
    list[n].data    = NULL;
    list[n].owned   = PETSC_FALSE;
    list[n].field   = -1;
    list[n].derived = k;
    n++;
  }
  return n;
}

/* Field f converted to its output type, vectors padded to 3 components. */
static void ConvertField(const MPMParticles *p, const MPMField *fd, int ncomp, void *out)
{
  const int d = fd->ncomp;
  for (PetscInt q = 0; q < p->n; q++)
    for (int c = 0; c < ncomp; c++) {
      const PetscInt i = q * d + c;
      double         v = 0;
      if (c < d) switch (fd->type) {
        case MPM_FIELD_REAL: v = ((const double *)fd->data)[i]; break;
        case MPM_FIELD_INT64: v = (double)((const int64_t *)fd->data)[i]; break;
        case MPM_FIELD_INT32: v = ((const int32_t *)fd->data)[i]; break;
        default: v = ((const uint8_t *)fd->data)[i]; break;
        }
      if (fd->output_type == MPM_FIELD_REAL) ((double *)out)[q * ncomp + c] = v;
      else if (fd->output_type == MPM_FIELD_INT32) ((int32_t *)out)[q * ncomp + c] = (int32_t)v;
      else ((int64_t *)out)[q * ncomp + c] = fd->type == MPM_FIELD_INT64 && c < d ? ((const int64_t *)fd->data)[i] : (int64_t)v; /* ids stay exact; SetOutput allows no other type */
    }
}

/* Is output array a written from its field's own storage (no copy)? */
static PetscBool AsStored(const MPMSpecies *sp, const MPMOutputArray *a)
{
  const MPMField *fd = a->field >= 0 ? &sp->p.field[a->field] : NULL;
  return fd && fd->type == fd->output_type && !fd->pad3 ? PETSC_TRUE : PETSC_FALSE;
}

/* The bytes of output array a as a copy (converted or derived). */
static size_t CopyBytes(const MPMSpecies *sp, const MPMOutputArray *a) { return MPMFieldTypeSize(a->type) * (size_t)a->ncomp * (size_t)sp->p.n; }

/* Output array a's data: the field's storage when written as stored, else
 * converted or derived into buf (CopyBytes of it). */
static PetscErrorCode OutputArrayData(MPMSpecies *sp, MPMOutputArray *a, void *buf)
{
  PetscFunctionBeginUser;
  if (AsStored(sp, a)) {
    a->data = sp->p.field[a->field].data;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  a->data = buf;
  if (a->field >= 0) ConvertField(&sp->p, &sp->p.field[a->field], a->ncomp, buf);
  else PetscCall(sp->derived[a->derived].fn(sp->derived[a->derived].ctx, &sp->p, (double *)buf));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* This rank's output arrays, all at once (Catalyst takes them together;
 * MPMOutputArraysRestore frees them). */
PetscErrorCode MPMOutputArraysGet(MPMSpecies *sp, PetscInt *n, MPMOutputArray **arrays)
{
  MPMOutputArray list[MPM_MAX_OUTPUT];

  PetscFunctionBeginUser;
  *n = OutputList(sp, list);
  PetscCheck(*n < MPM_MAX_OUTPUT, PETSC_COMM_SELF, PETSC_ERR_SUP, "More than %d output arrays", MPM_MAX_OUTPUT - 1);
  PetscCall(PetscMalloc1(*n, arrays));
  for (PetscInt k = 0; k < *n; k++) {
    void *buf = NULL;
    (*arrays)[k] = list[k];
    if (!AsStored(sp, &list[k])) {
      PetscCall(PetscMalloc(CopyBytes(sp, &list[k]) + 8, &buf));
      (*arrays)[k].owned = PETSC_TRUE;
    }
    PetscCall(OutputArrayData(sp, &(*arrays)[k], buf));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMOutputArraysRestore(PetscInt n, MPMOutputArray **arrays)
{
  PetscFunctionBeginUser;
  for (PetscInt k = 0; k < n; k++)
    if ((*arrays)[k].owned) PetscCall(PetscFree((*arrays)[k].data));
  PetscCall(PetscFree(*arrays));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static hid_t H5Type(MPMFieldType t) { return t == MPM_FIELD_REAL ? H5T_NATIVE_DOUBLE : t == MPM_FIELD_INT64 ? H5T_NATIVE_INT64 : H5T_NATIVE_INT32; }

/* Is an output array written to the frames (-output_fields; position and
 * id always: the geometry and the key to compare runs by)? */
static PetscBool Selected(const MPMSim sim, const char *name)
{
  if (!sim->noutput_fields || !strcmp(name, "position") || !strcmp(name, "id")) return PETSC_TRUE;
  for (PetscInt k = 0; k < sim->noutput_fields; k++)
    if (!strcmp(sim->output_fields[k], name)) return PETSC_TRUE;
  return PETSC_FALSE;
}

/* SI units of the frame datasets (an HDF5 attribute "units" on each; 2D
 * quantities are per unit depth). */
static const char *Units(const char *name, PetscInt dim)
{
  static const char *const table[][3] = {
    {"position", "m", "m"},          {"velocity", "m/s", "m/s"}, {"mass", "kg/m", "kg"},       {"volume", "m^2", "m^3"}, {"pressure", "Pa", "Pa"},
    {"dev_stress_norm", "Pa", "Pa"}, {"radius", "m", "m"},       {"connectivity", "-", "-"}, {NULL, NULL, NULL}};
  for (int k = 0; table[k][0]; k++)
    if (!strcmp(table[k][0], name)) return table[k][dim == 2 ? 1 : 2];
  return "-"; /* ids, indices, flags and ratios */
}

/* Real fields in the precision of -output_precision. */
static hid_t FileType(const MPMSim sim, MPMFieldType t) { return t == MPM_FIELD_REAL && sim->output_single ? H5T_NATIVE_FLOAT : H5Type(t); }

static PetscErrorCode WriteUnits(hid_t file, const char *name, const char *units)
{
  hid_t d;

  PetscFunctionBeginUser;
  H5CALL(d = H5Dopen2(file, name, H5P_DEFAULT));
  PetscCall(MPMH5WriteString(d, "units", units));
  H5CALL(H5Dclose(d));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* -output_fields names only arrays a frame has: checked before the first
 * frame, naming the allowed values. */
PetscErrorCode MPMOutputCheckFields(MPMSim sim)
{
  MPMOutputArray list[MPM_MAX_OUTPUT];
  const char    *names[MPM_MAX_SPECIES * MPM_MAX_OUTPUT];
  char           allowed[2048] = "";
  PetscInt       nn = 0;

  PetscFunctionBeginUser;
  for (PetscInt s = 0; s < sim->nspecies; s++) { /* every species' arrays, each name once */
    const PetscInt n = OutputList(sim->species[s], list);
    for (PetscInt k = 0; k < n; k++) {
      PetscInt j = 0;
      while (j < nn && strcmp(names[j], list[k].name)) j++;
      if (j < nn) continue;
      names[nn++] = list[k].name;
      PetscCall(PetscStrlcat(allowed, allowed[0] ? ", " : "", sizeof(allowed)));
      PetscCall(PetscStrlcat(allowed, list[k].name, sizeof(allowed)));
    }
  }
  for (PetscInt f = 0; f < sim->noutput_fields; f++) {
    PetscInt j = 0;
    while (j < nn && strcmp(names[j], sim->output_fields[f])) j++;
    PetscCheck(j < nn, sim->comm, PETSC_ERR_USER_INPUT, "-output_fields %s: not a field of this run's frames; allowed: %s", sim->output_fields[f], allowed);
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode FrameAttributes(MPMSim sim, hid_t file)
{
  const double  rattr[2] = {sim->t, sim->dt};
  const int64_t iattr[4] = {sim->step, sim->frame, sim->dim, sim->size};

  PetscFunctionBeginUser;
  PetscCall(MPMH5WriteAttr(file, "time_dt", H5T_NATIVE_DOUBLE, 2, rattr));
  PetscCall(MPMH5WriteAttr(file, "step_frame_dim_ranks", H5T_NATIVE_INT64, 4, iattr));
  PetscCall(MPMH5WriteString(file, "version", MPMVersion()));
  PetscCall(MPMH5WriteString(file, "options", sim->options_string ? sim->options_string : ""));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Species sp's frame datasets, one array at a time through the scratch
 * buf (OutputScratchBytes, allocated before the file is created): a frame
 * holds at most one converted or derived array besides the particles, not
 * all of them at once; last the Polyvertex connectivity 0..N-1 ParaView
 * needs, in the same scratch. */
static PetscErrorCode WriteParticles(const MPMSim sim, MPMSpecies *sp, void *buf, const char *group, MPMH5File *F)
{
  char           name[2 * MPM_NAME_LEN + 64];
  MPMOutputArray list[MPM_MAX_OUTPUT];
  const PetscInt n = OutputList(sp, list);

  PetscFunctionBeginUser;
  for (PetscInt k = 0; k < n; k++) {
    if (!Selected(sim, list[k].name)) continue;
    PetscCall(OutputArrayData(sp, &list[k], buf));
    PetscCall(PetscSNPrintf(name, sizeof(name), "%s%s", group, list[k].name));
    PetscCall(MPMH5WriteArrayAs(F, name, H5Type(list[k].type), FileType(sim, list[k].type), list[k].ncomp, list[k].data));
    PetscCall(WriteUnits(F->file, name, Units(list[k].name, sim->dim)));
  }
  PetscCall(PetscSNPrintf(name, sizeof(name), "%sconnectivity", group));
  {
    int64_t *conn = (int64_t *)buf;
    for (PetscInt q = 0; q < F->n; q++) conn[q] = F->offset + q;
    /* stored in 4 bytes a particle where they suffice (HDF5 converts) */
    PetscCall(MPMH5WriteArrayAs(F, name, H5T_NATIVE_INT64, F->total < INT32_MAX ? H5T_NATIVE_INT32 : H5T_NATIVE_INT64, 1, conn));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The scratch a frame needs: the largest copied array of any species, or
 * the connectivity (8 bytes a particle).  Allocated before the file is
 * created, so that running out of memory is our clear error, not a
 * failure inside HDF5. */
static size_t OutputScratchBytes(const MPMSim sim)
{
  size_t b = 8;
  for (PetscInt s = 0; s < sim->nspecies; s++) {
    MPMSpecies    *sp = sim->species[s];
    MPMOutputArray list[MPM_MAX_OUTPUT];
    const PetscInt n    = OutputList(sp, list);
    const size_t   conn = 8 * (size_t)sp->p.n;
    b                   = PetscMax(b, conn);
    for (PetscInt k = 0; k < n; k++) {
      const size_t c = Selected(sim, list[k].name) && !AsStored(sp, &list[k]) ? CopyBytes(sp, &list[k]) : 0;
      b              = PetscMax(b, c);
    }
  }
  return b + 8;
}

/* The HDF5 group of species s in frames and checkpoints: "" for the first
 * (the root), "<species>/" for the others. */
static void SpeciesGroup(const MPMSim sim, PetscInt s, char *group, size_t len)
{
  if (s == 0) group[0] = 0;
  else snprintf(group, len, "%s/", sim->species[s]->name);
}

/* XDMF's attribute type for n components: ParaView reads a d x d array
 * (the grains' orientation) as a tensor only when told. */
static const char *XdmfType(int ncomp)
{
  switch (ncomp) {
  case 1: return "Scalar";
  case 3: return "Vector";
  case 6: return "Tensor6";
  case 9: return "Tensor";
  default: return "Matrix";
  }
}

static void XdmfAttribute(const MPMSim sim, char *buf, size_t len, const MPMFrameRecord *r, PetscInt s, const char *group, const MPMOutputArray *a)
{
  char dims[64];
  if (a->ncomp > 1) snprintf(dims, sizeof(dims), "%lld %d", (long long)r->n[s], a->ncomp);
  else snprintf(dims, sizeof(dims), "%lld", (long long)r->n[s]);
  size_t l = strlen(buf);
  snprintf(buf + l, len - l,
           "      <Attribute Name=\"%s\" AttributeType=\"%s\" Center=\"Node\">\n"
           "        <DataItem Dimensions=\"%s\" NumberType=\"%s\" Precision=\"%d\" Format=\"HDF\">frames/frame_%05d.h5:/%s%s</DataItem>\n"
           "      </Attribute>\n",
           a->name, XdmfType(a->ncomp), dims, a->type == MPM_FIELD_REAL ? "Float" : "Int", a->type == MPM_FIELD_INT32 || (a->type == MPM_FIELD_REAL && sim->output_single) ? 4 : 8, (int)r->frame, group,
           a->name);
}

/* The XDMF time series of species s over all frames so far (rank 0):
 * positions as the geometry, every other output array as an attribute. */
static PetscErrorCode WriteXdmfSpecies(MPMSim sim, PetscInt s)
{
  MPMOutputArray list[MPM_MAX_OUTPUT];
  const PetscInt na  = OutputList(sim->species[s], list);
  const size_t   per = 1024 + 512 * (size_t)na, len = per * (size_t)(sim->nframes + 1);
  char          *buf, path[PETSC_MAX_PATH_LEN], group[MPM_NAME_LEN + 2];

  PetscFunctionBeginUser;
  SpeciesGroup(sim, s, group, sizeof(group));
  PetscCall(PetscMalloc1(len, &buf));
  snprintf(buf, len, "<?xml version=\"1.0\" ?>\n<Xdmf Version=\"2.0\">\n  <Domain>\n    <Grid Name=\"%s\" GridType=\"Collection\" CollectionType=\"Temporal\">\n",
           s ? sim->species[s]->name : "particles");
  for (PetscInt f = 0; f < sim->nframes; f++) {
    const MPMFrameRecord *r = &sim->frames[f];
    const long long       n = (long long)r->n[s];
    size_t                l = strlen(buf);
    snprintf(buf + l, len - l,
             "    <Grid Name=\"frame_%05d\" GridType=\"Uniform\">\n      <Time Value=\"%.10g\"/>\n"
             "      <Topology TopologyType=\"Polyvertex\" NumberOfElements=\"%lld\" NodesPerElement=\"1\">\n"
             "        <DataItem Dimensions=\"%lld\" NumberType=\"Int\" Precision=\"%d\" Format=\"HDF\">frames/frame_%05d.h5:/%sconnectivity</DataItem>\n"
             "      </Topology>\n      <Geometry GeometryType=\"XYZ\">\n"
             "        <DataItem Dimensions=\"%lld 3\" NumberType=\"Float\" Precision=\"%d\" Format=\"HDF\">frames/frame_%05d.h5:/%sposition</DataItem>\n"
             "      </Geometry>\n",
             (int)r->frame, r->t, n, n, n < INT32_MAX ? 4 : 8, (int)r->frame, group, n, sim->output_single ? 4 : 8, (int)r->frame, group);
    for (PetscInt k = 0; k < na; k++)
      if (strcmp(list[k].name, "position") && Selected(sim, list[k].name)) XdmfAttribute(sim, buf, len, r, s, group, &list[k]);
    l = strlen(buf);
    snprintf(buf + l, len - l, "    </Grid>\n");
  }
  size_t l = strlen(buf);
  snprintf(buf + l, len - l, "    </Grid>\n  </Domain>\n</Xdmf>\n");
  if (s == 0) PetscCall(PetscSNPrintf(path, sizeof(path), "%s/particles.xmf", sim->outdir));
  else PetscCall(PetscSNPrintf(path, sizeof(path), "%s/particles_%s.xmf", sim->outdir, sim->species[s]->name));
  PetscCall(MPMWriteFileAtomic(path, buf));
  PetscCall(PetscFree(buf));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMOutputWriteXdmf(MPMSim sim)
{
  PetscFunctionBeginUser;
  for (PetscInt s = 0; s < sim->nspecies; s++) PetscCall(WriteXdmfSpecies(sim, s));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Add a frame to the list the XDMF series is written from (rank 0). */
PetscErrorCode MPMOutputRecordFrame(MPMSim sim, double t, const int64_t *n, PetscInt frame)
{
  PetscFunctionBeginUser;
  if (sim->nframes == sim->capframes) {
    sim->capframes = 2 * sim->capframes + 16;
    PetscCall(PetscRealloc(sizeof(MPMFrameRecord) * sim->capframes, &sim->frames));
  }
  sim->frames[sim->nframes].t     = t;
  for (PetscInt s = 0; s < MPM_MAX_SPECIES; s++) sim->frames[sim->nframes].n[s] = s < sim->nspecies ? n[s] : 0;
  sim->frames[sim->nframes].frame = frame;
  sim->nframes++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Give the frame file its final name and add it to the XDMF series. */
static PetscErrorCode FrameFinishRank0(MPMSim sim, const char *tmp, const char *path, const int64_t *total)
{
  PetscFunctionBeginUser;
  PetscCheck(rename(tmp, path) == 0, PETSC_COMM_SELF, PETSC_ERR_FILE_WRITE, "Cannot rename %s: %s", tmp, strerror(errno));
  PetscCall(MPMOutputRecordFrame(sim, sim->t, total, sim->frame));
  PetscCall(MPMOutputWriteXdmf(sim));
  PetscCall(MPMOutputObjects(sim));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMOutputFrame(MPMSim sim)
{
  char            path[PETSC_MAX_PATH_LEN], tmp[PETSC_MAX_PATH_LEN], group[MPM_NAME_LEN + 2];
  MPMH5File       F;
  void           *buf;
  int64_t         total[MPM_MAX_SPECIES];

  PetscFunctionBeginUser;
  PetscCheck(sim->nspecies <= MPM_MAX_SPECIES, sim->comm, PETSC_ERR_SUP, "Frames of more than %d particle species", MPM_MAX_SPECIES);
  PetscCall(PetscLogEventBegin(MPM_EVENT_OUTPUT, 0, 0, 0, 0));
  PetscCall(PetscSNPrintf(path, sizeof(path), "%s/frames/frame_%05" PetscInt_FMT ".h5", sim->outdir, sim->frame));
  PetscCall(PetscSNPrintf(tmp, sizeof(tmp), "%s.tmp", path));
  PetscCall(PetscMalloc(OutputScratchBytes(sim), &buf));
  PetscCall(MPMH5Create(sim->comm, tmp, &F));
  for (PetscInt s = 0; s < sim->nspecies; s++) {
    SpeciesGroup(sim, s, group, sizeof(group));
    if (s) {
      hid_t g;
      H5CALL(g = H5Gcreate2(F.file, sim->species[s]->name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
      H5CALL(H5Gclose(g));
    }
    F.n = sim->species[s]->p.n;
    PetscCall(MPMGlobalOffset(sim->comm, F.n, &F.offset, &F.total));
    PetscCall(WriteParticles(sim, sim->species[s], buf, group, &F));
    total[s] = F.total;
  }
  PetscCall(FrameAttributes(sim, F.file));
  PetscCall(MPMH5Close(&F));
  PetscCall(PetscFree(buf));
  PetscCall(MPMBarrier(sim->comm)); /* every rank's data is in the file before it gets its final name */
  PetscCall(MPMRank0Outcome(sim, sim->rank == 0 ? FrameFinishRank0(sim, tmp, path, total) : PETSC_SUCCESS, "naming the frame, writing particles.xmf or the objects' surfaces"));
  sim->frame++;
  PetscCall(PetscLogEventEnd(MPM_EVENT_OUTPUT, 0, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}
