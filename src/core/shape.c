/* Shapes placed in the world: a signed distance function (kernels/sdf.c)
 * in its own frame, the frame's prescribed motion (linear and angular
 * velocity) and the options that describe it.  Seeding regions (seed.c)
 * and collision objects (colliders/) are both placed shapes, so the shape
 * lives here, below both. */
#include "core.h"
#include <stdio.h>
#include <string.h>

/* The kernel's primitives (MPMShapeType, in order), then the operations of
 * constructive geometry on named parts. */
static const char *const ShapeNames[] = {"half_space", "box", "sphere", "cylinder", "polygon", "terrain", "mesh", "union", "intersection", "difference", "MPMShapeType", "MPM_SHAPE_", NULL};
#define MPM_NSHAPES 10
#define MPM_MAX_POLYGON 4096 /* vertices */

/* What a shape's options leave for after its options block: parts and files. */
typedef struct {
  char  *parts[MPM_MAX_NAMES];
  PetscInt nparts;
  char   file[PETSC_MAX_PATH_LEN];
  double origin[2], spacing;
  PetscBool origin_set;
  double mesh_scale, mesh_spacing; /* a triangle mesh (-shape mesh) */
} ShapeDeferred;

static PetscErrorCode Normalize(const char *prefix, const char *opt, PetscInt d, double *n)
{
  double len = 0;

  PetscFunctionBeginUser;
  PetscCall(MPMVectorTame(d, n));
  for (PetscInt a = 0; a < d; a++) len += n[a] * n[a];
  len = sqrt(len);
  PetscCheck(len > 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%s%s must be a nonzero vector", prefix, opt);
  for (PetscInt a = 0; a < d; a++) n[a] /= len;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Polygon: -vertices (x0,y0,x1,y1,...: 2D, or in 3D the coordinates in
 * -plane) relative to -center; in 3D a prism along the plane's normal axis
 * over -range (infinite without).  The frame's R0 maps the plane to the
 * kernel's x-y plane. */
static const char *const PlaneNames[] = {"xy", "xz", "zy", "MPMPlane", "MPM_PLANE_", NULL};

static PetscErrorCode PolygonOptions(PetscOptionItems *PetscOptionsObject, PetscInt d, const char *prefix, MPMPlacedShape *ps, double *perm)
{
  MPMShape *s = &ps->shape;
  PetscInt  n = 2 * MPM_MAX_POLYGON + 1, plane = 0; /* one more than allowed: PETSc drops extras silently */
  double    range[2] = {0, 0};
  PetscBool set, rset;
  double   *v;

  PetscFunctionBeginUser;
  PetscCall(PetscMalloc1(n, &v));
  PetscCall(PetscOptionsRealArray("-vertices", "Polygon vertices x0,y0,x1,y1,... relative to -center (3D: the coordinates in -plane) [m]", NULL, v, &n, &set));
  PetscCheck(set && n >= 6 && n % 2 == 0 && n <= 2 * MPM_MAX_POLYGON, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%svertices needs at least 3 points as x0,y0,x1,y1,... (an even count of at most %d values), got %" PetscInt_FMT " values",
             prefix, 2 * MPM_MAX_POLYGON, set ? n : 0);
  for (PetscInt i = 0; i < n; i++) PetscCheck(isfinite(v[i]), PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%svertices must be finite numbers", prefix);
  PetscCall(PetscRealloc(sizeof(double) * n, &v)); /* keep the vertices given, not the room for the most allowed */
  ps->data = v;
  s->pts   = v;
  s->np    = (int)(n / 2);
  if (d == 3) {
    PetscCall(MPMOptionsEList("-plane", "Plane of the vertices; the prism extends along the third axis", NULL, PlaneNames, 3, PlaneNames[plane], &plane, NULL));
    PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-range", "Extent of the prism along the third axis, lo,hi (infinite without) [m]", 2, range, &rset));
    PetscCheck(!rset || range[1] > range[0], PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%srange must be lo,hi with hi > lo", prefix);
    /* kernel (u, v, w) from world (x, y, z): rows of R0^T */
    const int axes[3][3] = {{0, 1, 2}, {0, 2, 1}, {2, 1, 0}};
    for (int a = 0; a < 9; a++) perm[a] = 0;
    for (int k = 0; k < 3; k++) perm[axes[plane][k] * 3 + k] = 1; /* R0[world, local] */
    if (rset) {
      s->a[2]                  = 0.5 * (range[1] - range[0]);
      ps->c0[axes[plane][2]] = 0.5 * (range[0] + range[1]);
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode TerrainOptions(PetscOptionItems *PetscOptionsObject, PetscInt d, const char *prefix, MPMPlacedShape *ps, ShapeDeferred *df)
{
  PetscBool set;

  PetscFunctionBeginUser;
  df->file[0] = 0;
  PetscCall(PetscOptionsString("-file", d == 2 ? "Terrain profile: a CSV of x,height rows [m]" : "Terrain: an ESRI ASCII grid (.asc) of heights, or a CSV of heights (rows along z, columns along x) with -origin and -spacing [m]", NULL,
                               df->file, df->file, sizeof(df->file), &set));
  PetscCheck(set && df->file[0], PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%sfile is required for a terrain", prefix);
  ps->shape.r = 0;
  PetscCall(MPMOptionsReal("-raise", "Raise the surface by this height (a layer of this thickness on the terrain: the difference of two terrains) [m]", NULL, ps->shape.r, &ps->shape.r, NULL));
  if (d == 3) {
    PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-origin", "CSV terrain: x,z of the first height [m]", 2, df->origin, &df->origin_set));
    df->spacing = 0;
    PetscCall(MPMOptionsReal("-spacing", "CSV terrain: spacing of the heights [m]", NULL, df->spacing, &df->spacing, NULL));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Geometry of one shape, read with the given options prefix ("floor_");
 * files and parts are left in *df for after the options block. */
static PetscErrorCode ShapeOptions(PetscOptionItems *PetscOptionsObject, PetscInt d, const char *prefix, PetscBool allow_half_space, MPMPlacedShape *ps, double *perm, ShapeDeferred *df)
{
  MPMShape *s = &ps->shape;
  PetscInt  type = MPM_SHAPE_BOX;
  double    lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  PetscBool set, inside_out = PETSC_FALSE;

  PetscFunctionBeginUser;
  PetscCall(MPMOptionsEList("-shape", "Shape: a primitive, a terrain, or a union/intersection/difference of -parts", NULL, ShapeNames, MPM_NSHAPES, ShapeNames[type], &type, NULL));
  PetscCheck(allow_half_space || type != MPM_SHAPE_HALF_SPACE, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT,
             "-%sshape half_space is unbounded; allowed here: box, sphere, cylinder, polygon, terrain, mesh, union, intersection, difference (a half space can be a part of an intersection)", prefix);
  s->dim  = (int)d;
  s->type = (MPMShapeType)type;
  PetscCall(PetscOptionsBool("-inside_out", "Solid outside the shape (a container)", NULL, inside_out, &inside_out, NULL));
  s->inside_out = inside_out;
  if (type >= MPM_NSHAPES - 3) { /* constructive geometry */
    ps->op     = (MPMCsgOp)(type - (MPM_NSHAPES - 3) + 1);
    s->type    = MPM_SHAPE_BOX; /* unused */
    df->nparts = MPM_MAX_NAMES;
    PetscCall(PetscOptionsStringArray("-parts", "Names of the parts; each reads options -<this prefix><part>_*", NULL, df->parts, &df->nparts, &set));
    PetscCheck(set && df->nparts >= (ps->op == MPM_CSG_DIFFERENCE ? 2 : 1), PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%sparts needs %s part names (comma-separated) for -%sshape %s", prefix,
               ps->op == MPM_CSG_DIFFERENCE ? "at least 2" : "1 or more", prefix, ShapeNames[type]);
    PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-center", "Origin of the parts' frame (the pivot of -rotation) [m]", d, ps->c0, NULL));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (type == MPM_SHAPE_SAMPLED) {
    PetscBool fset;
    PetscCheck(d == 3, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%sshape mesh: triangle meshes are 3D; in 2D use -%sshape polygon", prefix, prefix);
    PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-center", "Where the mesh's origin goes (the pivot of -rotation) [m]", d, ps->c0, NULL));
    df->file[0] = 0;
    PetscCall(PetscOptionsString("-file", "Closed triangle mesh: STL (binary or ASCII) or OBJ", NULL, df->file, df->file, sizeof(df->file), &fset));
    PetscCheck(fset && df->file[0], PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%sfile is required for a mesh", prefix);
    df->mesh_scale = 1;
    PetscCall(MPMOptionsReal("-scale", "Factor from the file's units to m (0.001 for a mesh in mm) [-]", NULL, df->mesh_scale, &df->mesh_scale, NULL));
    PetscCheck(df->mesh_scale > 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%sscale must be > 0, got %g", prefix, df->mesh_scale);
    df->mesh_spacing = 0;
    PetscCall(MPMOptionsReal("-spacing", "Spacing of the signed-distance samples (0: the mesh's largest extent / 96; about dx / 2 resolves it for the grid) [m]", NULL, df->mesh_spacing,
                             &df->mesh_spacing, NULL));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (type == MPM_SHAPE_POLYGON || type == MPM_SHAPE_HEIGHTFIELD) {
    PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-center", "Origin of the vertices (the pivot of -rotation) [m]", d, ps->c0, NULL));
    if (type == MPM_SHAPE_POLYGON) PetscCall(PolygonOptions(PetscOptionsObject, d, prefix, ps, perm));
    else PetscCall(TerrainOptions(PetscOptionsObject, d, prefix, ps, df));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (type == MPM_SHAPE_BOX) {
    PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-lo", "Box lower corner [m]", d, lo, &set));
    PetscCheck(set, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%slo is required for a box", prefix);
    PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-hi", "Box upper corner [m]", d, hi, &set));
    PetscCheck(set, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%shi is required for a box", prefix);
    for (PetscInt a = 0; a < d; a++) {
      PetscCheck(hi[a] > lo[a], PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%shi must exceed -%slo in every component", prefix, prefix);
      ps->c0[a] = 0.5 * (lo[a] + hi[a]);
      s->a[a]   = 0.5 * (hi[a] - lo[a]);
    }
  } else {
    PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-center", "Centre (a point on the plane for a half space) [m]", d, ps->c0, &set));
    PetscCheck(set, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%scenter is required for a %s", prefix, ShapeNames[type]);
  }
  if (type == MPM_SHAPE_HALF_SPACE) {
    PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-normal", "Unit normal pointing out of the solid half space [-]", d, s->n, &set));
    PetscCheck(set, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%snormal is required for a half_space", prefix);
    PetscCall(Normalize(prefix, "normal", d, s->n));
  }
  if (type == MPM_SHAPE_SPHERE || type == MPM_SHAPE_CYLINDER) {
    s->r = 0;
    PetscCall(MPMOptionsReal("-radius", "Radius [m]", NULL, s->r, &s->r, NULL));
    PetscCheck(s->r > 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "-%sradius must be > 0 m, got %g", prefix, s->r);
  }
  if (type == MPM_SHAPE_CYLINDER && d == 3) {
    s->n[2] = 1;
    PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-axis", "Cylinder axis [-]", d, s->n, NULL));
    PetscCall(Normalize(prefix, "axis", d, s->n));
    s->a[0] = 0;
    PetscCall(MPMOptionsReal("-half_length", "Cylinder half length, <= 0 for infinite [m]", NULL, s->a[0], &s->a[0], NULL));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

static void RotationExp(PetscInt d, const double *w, double *R);

/* ------------------------------------------------------------ terrain files */
/* One number from f (skipping commas and white space); 0 at the end. */
static int ReadNumber(FILE *f, double *v)
{
  int c;
  while ((c = fgetc(f)) != EOF && (c == ',' || c == ';' || c == ' ' || c == '\t' || c == '\r' || c == '\n')) {}
  if (c == EOF) return 0;
  ungetc(c, f);
  return fscanf(f, "%lf", v) == 1;
}

/* ESRI ASCII grid: a header (ncols, nrows, xllcorner or xllcenter,
 * yllcorner or yllcenter, cellsize, optional NODATA_value), then nrows
 * rows from north to south.  Easting is x, northing z, heights y. */
static PetscErrorCode ReadAsc(const char *path, const char *prefix, MPMPlacedShape *ps)
{
  FILE    *f = fopen(path, "r");
  char     key[64];
  double   val, xll = 0, yll = 0, cs = 0, nodata = -INFINITY;
  long     ncols = 0, nrows = 0;
  PetscBool center = PETSC_FALSE;
  MPMShape *s = &ps->shape;

  PetscFunctionBeginUser;
  PetscCheck(f, PETSC_COMM_SELF, PETSC_ERR_USER_INPUT, "-%sfile %s: cannot read the terrain file", prefix, path);
  for (int k = 0; k < 6; k++) {
    long pos = ftell(f);
    if (fscanf(f, "%63s %lf", key, &val) != 2) {
      fseek(f, pos, SEEK_SET);
      break;
    }
    for (char *c = key; *c; c++) *c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
    if (!strcmp(key, "ncols")) ncols = (long)val;
    else if (!strcmp(key, "nrows")) nrows = (long)val;
    else if (!strcmp(key, "xllcorner") || !strcmp(key, "xllcenter")) xll = val, center = !strcmp(key, "xllcenter");
    else if (!strcmp(key, "yllcorner") || !strcmp(key, "yllcenter")) yll = val;
    else if (!strcmp(key, "cellsize")) cs = val;
    else if (!strcmp(key, "nodata_value")) nodata = val;
    else {
      fseek(f, pos, SEEK_SET);
      break;
    }
  }
  if (!(ncols >= 2 && nrows >= 2 && cs > 0)) fclose(f);
  PetscCheck(ncols >= 2 && nrows >= 2 && cs > 0, PETSC_COMM_SELF, PETSC_ERR_USER_INPUT, "-%sfile %s: not an ESRI ASCII grid with ncols, nrows >= 2 and cellsize > 0 in its header", prefix, path);
  PetscCall(PetscMalloc1(ncols * nrows, &ps->data));
  for (long r = 0; r < nrows; r++)
    for (long c = 0; c < ncols; c++) {
      double h;
      if (!ReadNumber(f, &h) || h == nodata || !isfinite(h)) {
        fclose(f);
        SETERRQ(PETSC_COMM_SELF, PETSC_ERR_USER_INPUT, "-%sfile %s: height %ld of row %ld is missing, not a number or NODATA (fill the holes first)", prefix, path, c + 1, r + 1);
      }
      ps->data[c + ncols * (nrows - 1 - r)] = h; /* row 0 is the north edge: largest z */
    }
  fclose(f);
  s->pts    = ps->data;
  s->nx     = (int)ncols;
  s->nz     = (int)nrows;
  s->dh     = cs;
  s->org[0] = xll + (center ? 0 : 0.5 * cs);
  s->org[1] = yll + (center ? 0 : 0.5 * cs);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* CSV of numbers: all of them, and the count of the first row. */
static PetscErrorCode ReadCsv(const char *path, const char *prefix, double **v, PetscInt *n, PetscInt *first_row)
{
  FILE  *f = fopen(path, "r");
  size_t cap = 1024;
  int    c;

  PetscFunctionBeginUser;
  PetscCheck(f, PETSC_COMM_SELF, PETSC_ERR_USER_INPUT, "-%sfile %s: cannot read the terrain file", prefix, path);
  while ((c = fgetc(f)) == '#' || (c != EOF && !((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.'))) /* a header line */
    while (c != '\n' && c != EOF) c = fgetc(f);
  if (c != EOF) ungetc(c, f);
  PetscCall(PetscMalloc1(cap, v));
  *n = 0, *first_row = -1;
  for (double x;;) {
    while ((c = fgetc(f)) == ' ' || c == '\t' || c == ',' || c == ';' || c == '\r') {}
    if (c == EOF) break;
    if (c == '\n') {
      if (*first_row < 0 && *n > 0) *first_row = *n;
      continue;
    }
    ungetc(c, f);
    if (fscanf(f, "%lf", &x) != 1 || !isfinite(x)) {
      fclose(f);
      SETERRQ(PETSC_COMM_SELF, PETSC_ERR_USER_INPUT, "-%sfile %s: value %" PetscInt_FMT " is not a finite number", prefix, path, *n + 1);
    }
    if ((size_t)*n == cap) {
      cap *= 2;
      PetscCall(PetscRealloc(cap * sizeof(double), v));
    }
    (*v)[(*n)++] = x;
  }
  fclose(f);
  if (*first_row < 0) *first_row = *n;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* 2D terrain: the profile x,h as a polygon closed far below and continued
 * flat beyond its ends (the solid is below the profile). */
static PetscErrorCode ProfilePolygon(const char *path, const char *prefix, MPMPlacedShape *ps)
{
  double  *v, *p, hmin, span;
  PetscInt n, row, m;

  PetscFunctionBeginUser;
  PetscCall(ReadCsv(path, prefix, &v, &n, &row));
  PetscCheck(row == 2 && n % 2 == 0 && n >= 4, PETSC_COMM_SELF, PETSC_ERR_USER_INPUT, "-%sfile %s: a 2D terrain is a CSV of x,height rows (at least 2), got %" PetscInt_FMT " values in rows of %" PetscInt_FMT, prefix, path, n, row);
  m = n / 2;
  for (PetscInt i = 1; i < m; i++) PetscCheck(v[2 * i] > v[2 * i - 2], PETSC_COMM_SELF, PETSC_ERR_USER_INPUT, "-%sfile %s: the x values must increase (row %" PetscInt_FMT ")", prefix, path, i + 1);
  hmin = v[1];
  for (PetscInt i = 1; i < m; i++) hmin = PetscMin(hmin, v[2 * i + 1]);
  span = 1e3 * (v[2 * m - 2] - v[0] + 1.0);
  PetscCall(PetscMalloc1(2 * (m + 4), &p));
  p[0] = v[0] - span, p[1] = v[1];
  PetscCall(PetscArraycpy(p + 2, v, 2 * m));
  p[2 * m + 2] = v[2 * m - 2] + span, p[2 * m + 3] = v[2 * m - 1];
  p[2 * m + 4] = v[2 * m - 2] + span, p[2 * m + 5] = hmin - span;
  p[2 * m + 6] = v[0] - span, p[2 * m + 7] = hmin - span;
  for (PetscInt i = 0; i < m + 4; i++) p[2 * i + 1] += ps->shape.r; /* -raise */
  PetscCall(PetscFree(v));
  ps->data        = p;
  ps->shape.type  = MPM_SHAPE_POLYGON;
  ps->shape.pts   = p;
  ps->shape.np    = (int)(m + 4);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Relative file names in a deck: as given (from the working directory),
 * else next to the deck (MPMSetDeckDirectory), so a deck and its terrain
 * travel together. */
static char deck_dir[PETSC_MAX_PATH_LEN] = "";

PetscErrorCode MPMSetDeckDirectory(const char *dir)
{
  PetscFunctionBeginUser;
  PetscCall(PetscStrncpy(deck_dir, dir ? dir : "", sizeof(deck_dir)));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static void ResolvePath(char *path, size_t len)
{
  char  alt[2 * PETSC_MAX_PATH_LEN];
  FILE *f;
  if (path[0] == '/' || !deck_dir[0]) return;
  if ((f = fopen(path, "r"))) {
    fclose(f);
    return;
  }
  snprintf(alt, sizeof(alt), "%s/%s", deck_dir, path);
  if ((f = fopen(alt, "r"))) {
    fclose(f);
    if (strlen(alt) < len) strcpy(path, alt);
  }
}

static PetscErrorCode LoadTerrain(PetscInt d, const char *prefix, ShapeDeferred *df, MPMPlacedShape *ps)
{
  MPMShape   *s = &ps->shape;
  const char *ext;

  PetscFunctionBeginUser;
  ext = strrchr(df->file, '.');
  if (d == 2) PetscCall(ProfilePolygon(df->file, prefix, ps));
  else if (ext && (!strcmp(ext, ".asc") || !strcmp(ext, ".ASC"))) PetscCall(ReadAsc(df->file, prefix, ps));
  else {
    PetscInt n, row;
    PetscCheck(df->origin_set && df->spacing > 0, PETSC_COMM_SELF, PETSC_ERR_USER_INPUT, "-%sfile %s: a CSV terrain needs -%sorigin x,z and -%sspacing > 0 (or use an ESRI .asc grid)", prefix, df->file, prefix, prefix);
    PetscCall(ReadCsv(df->file, prefix, &ps->data, &n, &row));
    PetscCheck(row >= 2 && n % row == 0 && n / row >= 2, PETSC_COMM_SELF, PETSC_ERR_USER_INPUT, "-%sfile %s: a CSV terrain is rows of equal length (>= 2 rows of >= 2 heights), got %" PetscInt_FMT " values in rows of %" PetscInt_FMT, prefix,
               df->file, n, row);
    s->pts = ps->data, s->nx = (int)row, s->nz = (int)(n / row), s->dh = df->spacing;
    s->org[0] = df->origin[0], s->org[1] = df->origin[1];
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Parts of constructive geometry: shapes of their own, with options
 * -<prefix><part>_*, placed in this shape's frame. */
static PetscErrorCode CreateParts(MPI_Comm comm, PetscInt d, const char *prefix, const char *title, ShapeDeferred *df, MPMPlacedShape *ps)
{
  PetscFunctionBeginUser;
  PetscCall(PetscCalloc1(df->nparts, &ps->parts));
  ps->nparts = df->nparts;
  for (PetscInt i = 0; i < df->nparts; i++) {
    char sub[256], subtitle[512];
    PetscCall(PetscSNPrintf(sub, sizeof(sub), "%s%s_", prefix, df->parts[i]));
    PetscCall(PetscSNPrintf(subtitle, sizeof(subtitle), "%s: part '%s'", title, df->parts[i]));
    PetscCall(MPMShapeFromOptions(comm, d, sub, subtitle, PETSC_TRUE, PETSC_FALSE, &ps->parts[i]));
    PetscCall(PetscFree(df->parts[i]));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMShapeFromOptions(MPI_Comm comm, PetscInt d, const char *prefix, const char *title, PetscBool allow_half_space, PetscBool allow_motion,
                                   MPMPlacedShape *ps)
{
  ShapeDeferred df;
  double        perm[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, R[9];

  PetscFunctionBeginUser;
  PetscCall(PetscMemzero(ps, sizeof(*ps)));
  PetscCall(PetscMemzero(&df, sizeof(df)));
  if (d == 2) perm[2] = 0, perm[3] = 1, perm[4] = 0; /* the 2 x 2 identity, row-major */
  PetscOptionsBegin(comm, prefix, title, NULL);
  PetscCall(ShapeOptions(PetscOptionsObject, d, prefix, allow_half_space, ps, perm, &df));
  {
    double rot[3] = {0, 0, 0}; /* degrees */
    PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-rotation", "Initial rotation about -center: one angle in 2D, a rotation vector (axis times angle) in 3D [deg]",
                               d == 2 ? 1 : 3, d == 2 ? &rot[2] : rot, NULL));
    for (PetscInt a = 0; a < 3; a++) rot[a] *= PETSC_PI / 180.0;
    RotationExp(d, rot, R);
    for (PetscInt i = 0; i < d; i++) /* R0 = rotation x the polygon plane's axes */
      for (PetscInt j = 0; j < d; j++) {
        double r = 0;
        for (PetscInt k = 0; k < d; k++) r += R[i * d + k] * perm[k * d + j];
        ps->R0[i * d + j] = r;
      }
  }
  if (allow_motion) {
    PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-velocity", "Velocity of the object: prescribed, or a dynamic body's initial velocity [m/s]", d, ps->vel, NULL));
    PetscCall(MPMOptionsVector(PetscOptionsObject, prefix, "-angular_velocity", "Angular velocity about -center: prescribed, or a dynamic body's initial one (one value in 2D) [rad/s]", d == 2 ? 1 : 3,
                         d == 2 ? &ps->omega[2] : ps->omega, NULL));
  }
  PetscOptionsEnd();
  if (df.file[0]) ResolvePath(df.file, sizeof(df.file));
  if (df.file[0] && ps->shape.type == MPM_SHAPE_SAMPLED) {
    char opt[256];
    PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%sfile", prefix));
    PetscCall(MPMShapeMeshLoad(df.file, opt, df.mesh_scale, df.mesh_spacing, ps));
  } else if (df.file[0]) PetscCall(LoadTerrain(d, prefix, &df, ps));
  if (ps->op != MPM_CSG_NONE) PetscCall(CreateParts(comm, d, prefix, title, &df, ps));
  MPMPlacedShapeAtTime(ps, d, 0.0);
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MPMPlacedShapeDestroy(MPMPlacedShape *ps)
{
  PetscFunctionBeginUser;
  for (PetscInt i = 0; i < ps->nparts; i++) PetscCall(MPMPlacedShapeDestroy(&ps->parts[i]));
  PetscCall(PetscFree(ps->parts));
  PetscCall(PetscFree(ps->data));
  PetscCall(PetscFree(ps->bricks));
  PetscCall(PetscFree(ps->tris));
  ps->nparts       = 0;
  ps->stored_bytes = 0; /* it holds nothing now (a region after the initial state: MPMRegionsRelease) */
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The bytes a shape holds: polygon vertices, terrain heights, a mesh's
 * near-surface samples and brick table, and those of its parts. */
double MPMPlacedShapeBytes(const MPMPlacedShape *ps)
{
  double b = ps->stored_bytes;
  if (ps->shape.type == MPM_SHAPE_POLYGON && ps->data) b += 2.0 * ps->shape.np * sizeof(double);
  if (ps->shape.type == MPM_SHAPE_HEIGHTFIELD && ps->data) b += (double)ps->shape.nx * ps->shape.nz * sizeof(double);
  for (PetscInt i = 0; i < ps->nparts; i++) b += MPMPlacedShapeBytes(&ps->parts[i]);
  return b;
}

/* R = exp([w]) for a rotation vector w (one angle w[2] in 2D), Rodrigues;
 * R is d x d, row-major. */
static void RotationExp(PetscInt d, const double *w, double *R)
{
  if (d == 2) {
    const double c = cos(w[2]), s = sin(w[2]);
    R[0] = c;
    R[1] = -s;
    R[2] = s;
    R[3] = c;
    return;
  }
  const double th = sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
  const double k[3] = {th > 0 ? w[0] / th : 0, th > 0 ? w[1] / th : 0, th > 0 ? w[2] / th : 0};
  const double c = cos(th), s = sin(th);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) R[i * 3 + j] = (i == j ? c : 0) + (1 - c) * k[i] * k[j];
  /* skew part s [k]x */
  R[1] += -s * k[2];
  R[2] += s * k[1];
  R[3] += s * k[2];
  R[5] += -s * k[0];
  R[6] += -s * k[1];
  R[7] += s * k[0];
}

/* Frame at time t: c = c0 + v t, R = exp(t [omega]) R0. */
void MPMPlacedShapeAtTime(MPMPlacedShape *ps, PetscInt d, double t)
{
  const double wt[3] = {ps->omega[0] * t, ps->omega[1] * t, ps->omega[2] * t};
  double       Rw[9];
  for (PetscInt a = 0; a < 3; a++) ps->c[a] = ps->c0[a] + ps->vel[a] * t;
  RotationExp(d, wt, Rw);
  for (PetscInt i = 0; i < d; i++)
    for (PetscInt j = 0; j < d; j++) {
      double r = 0;
      for (PetscInt k = 0; k < d; k++) r += Rw[i * d + k] * ps->R0[k * d + j];
      ps->R[i * d + j] = r;
    }
}

/* A dynamic body's frame one step on, with its current velocities:
 * c += dt v, R = exp(dt [omega]) R (omega in the world frame). */
void MPMPlacedShapeAdvance(MPMPlacedShape *ps, PetscInt d, double dt)
{
  const double wt[3] = {ps->omega[0] * dt, ps->omega[1] * dt, ps->omega[2] * dt};
  double       Rw[9], R[9];
  for (PetscInt a = 0; a < d; a++) ps->c[a] += dt * ps->vel[a];
  RotationExp(d, wt, Rw);
  for (PetscInt i = 0; i < d; i++)
    for (PetscInt j = 0; j < d; j++) {
      double r = 0;
      for (PetscInt k = 0; k < d; k++) r += Rw[i * d + k] * ps->R[k * d + j];
      R[i * d + j] = r;
    }
  for (PetscInt a = 0; a < d * d; a++) ps->R[a] = R[a];
}

/* Bounding box in the shape's own frame: a primitive's, or the parts'
 * (placed in this frame) combined (FALSE if unbounded). */
static PetscBool LocalBBox(const MPMPlacedShape *ps, PetscInt d, double *lo, double *hi)
{
  PetscBool bounded = PETSC_FALSE;
  if (ps->op == MPM_CSG_NONE) return mpm_shape_bbox(&ps->shape, lo, hi) ? PETSC_TRUE : PETSC_FALSE;
  if (ps->shape.inside_out) return PETSC_FALSE;
  for (PetscInt i = 0; i < ps->nparts; i++) {
    double    l[3], h[3];
    PetscBool b = MPMPlacedShapeBBox(&ps->parts[i], d, l, h);
    if (ps->op == MPM_CSG_UNION && !b) return PETSC_FALSE;
    if (ps->op == MPM_CSG_DIFFERENCE && i == 0 && !b) return PETSC_FALSE;
    if (!b || (ps->op == MPM_CSG_DIFFERENCE && i > 0)) continue; /* what is cut away does not grow the box */
    for (PetscInt a = 0; a < d; a++) {
      const int grow = ps->op == MPM_CSG_UNION;
      lo[a]          = !bounded ? l[a] : (grow ? PetscMin(lo[a], l[a]) : PetscMax(lo[a], l[a]));
      hi[a]          = !bounded ? h[a] : (grow ? PetscMax(hi[a], h[a]) : PetscMin(hi[a], h[a]));
    }
    bounded = PETSC_TRUE;
  }
  return bounded;
}

/* World bounding box of the shape at its current frame (FALSE if
 * unbounded): the local box turned by R about its centre, |R| e. */
PetscBool MPMPlacedShapeBBox(const MPMPlacedShape *ps, PetscInt d, double *lo, double *hi)
{
  double el[3], eh[3];
  if (!LocalBBox(ps, d, el, eh)) return PETSC_FALSE;
  for (PetscInt a = 0; a < d; a++) {
    double e = 0, m = 0;
    for (PetscInt b = 0; b < d; b++) {
      e += fabs(ps->R[a * d + b]) * (0.5 * (eh[b] - el[b]));
      m += ps->R[a * d + b] * (0.5 * (eh[b] + el[b]));
    }
    lo[a] = ps->c[a] + m - e;
    hi[a] = ps->c[a] + m + e;
  }
  return PETSC_TRUE;
}

/* Constructive geometry at a point of the shape's frame: union min,
 * intersection max, difference max(phi_0, -phi_1, ...); the gradient of
 * the part that decides. */
static double CsgEval(const MPMPlacedShape *ps, PetscInt d, const double *x, double *g)
{
  double phi = 0;
  for (PetscInt i = 0; i < ps->nparts; i++) {
    double       gi[3];
    const double sign = (ps->op == MPM_CSG_DIFFERENCE && i > 0) ? -1.0 : 1.0;
    const double p    = sign * MPMPlacedShapeEval(&ps->parts[i], d, x, gi, NULL);
    if (i == 0 || (ps->op == MPM_CSG_UNION ? p < phi : p > phi)) {
      phi = p;
      for (PetscInt a = 0; a < d; a++) g[a] = sign * gi[a];
    }
  }
  if (ps->shape.inside_out) {
    phi = -phi;
    for (PetscInt a = 0; a < d; a++) g[a] = -g[a];
  }
  return phi;
}

/* Evaluations at a finite point that read a mesh brick this rank does not
 * hold (NaN): none may happen; MPMPlacedShapeMisses reports them. */
static int64_t miss_count;
static double  miss_x[3];

int64_t MPMPlacedShapeMisses(double *x)
{
  for (PetscInt a = 0; a < 3; a++) x[a] = miss_x[a];
  return miss_count;
}

/* phi and its gradient at world point x, and the body velocity there. */
double MPMPlacedShapeEval(const MPMPlacedShape *ps, PetscInt d, const double *x, double *grad, double *vb)
{
  double r[3] = {0, 0, 0}, xl[3] = {0, 0, 0}, gl[3] = {0, 0, 0}, phi;
  for (PetscInt a = 0; a < d; a++) r[a] = x[a] - ps->c[a];
  for (PetscInt a = 0; a < d; a++)
    for (PetscInt b = 0; b < d; b++) xl[a] += ps->R[b * d + a] * r[b]; /* R^T r */
  phi = ps->op == MPM_CSG_NONE ? mpm_sdf(&ps->shape, xl, gl) : CsgEval(ps, d, xl, gl);
  if (PetscUnlikely(phi != phi) && isfinite(r[0] + r[1] + r[2])) {
    if (!miss_count++)
      for (PetscInt a = 0; a < 3; a++) miss_x[a] = a < d ? x[a] : 0.0;
  }
  for (PetscInt a = 0; a < d; a++) {
    grad[a] = 0;
    for (PetscInt b = 0; b < d; b++) grad[a] += ps->R[a * d + b] * gl[b];
  }
  if (vb) {
    const double *w = ps->omega;
    if (d == 2) {
      vb[0] = ps->vel[0] - w[2] * r[1];
      vb[1] = ps->vel[1] + w[2] * r[0];
    } else {
      vb[0] = ps->vel[0] + w[1] * r[2] - w[2] * r[1];
      vb[1] = ps->vel[1] + w[2] * r[0] - w[0] * r[2];
      vb[2] = ps->vel[2] + w[0] * r[1] - w[1] * r[0];
    }
  }
  return phi;
}

