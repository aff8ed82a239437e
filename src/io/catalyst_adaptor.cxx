/* ParaView Catalyst adaptor: hands each rank's particles to Python pipeline
 * scripts through the legacy Catalyst API, the one Debian's ParaView 5.11
 * ships (no Catalyst 2 / conduit there).  The only C++ file of the solver;
 * its C interface is catalyst_adaptor.h.
 *
 * The particles become a vtkPolyData of vertex cells: ParaView draws only
 * points that belong to a cell, and the VTP extractor writes polydata as is.
 * Everything is copied (positions padded to 3D), so the pipelines never see
 * solver arrays that the next step moves or reallocates. */
#include "catalyst_adaptor.h"

#include <vtkCPDataDescription.h>
#include <vtkCPInputDataDescription.h>
#include <vtkCPProcessor.h>
#include <vtkCPPythonPipeline.h>
#include <vtkCellArray.h>
#include <vtkCellData.h>
#include <vtkStringArray.h>
#include <vtkDataArray.h>
#include <vtkDoubleArray.h>
#include <vtkFieldData.h>
#include <vtkIdTypeArray.h>
#include <vtkIntArray.h>
#include <vtkMPI.h>
#include <vtkNew.h>
#include <vtkPointData.h>
#include <vtkPoints.h>
#include <vtkPolyData.h>
#include <vtkSmartPointer.h>
#include <vtkTypeInt64Array.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

struct MPMCatalystAdaptor {
  vtkCPProcessor       *processor;
  vtkCPDataDescription *description;
};

static void Message(char *msg, size_t len, const std::string &text)
{
  if (msg && len) std::snprintf(msg, len, "%s", text.c_str());
}

/* A version-2 script without its '# script-version: 2' line is run as a
 * legacy script: it then fails with a NameError at every step while the run
 * still succeeds.  Legacy scripts always define DoCoProcessing, so anything
 * else that is not marked version 2 is refused up front. */
static bool CheckScriptStyle(const char *file, std::string &why)
{
  if (vtkCPPythonPipeline::DetectScriptVersion(file) == 2) return true;
  std::ifstream     in(file);
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().find("def DoCoProcessing") != std::string::npos) return true;
  why = std::string("-catalyst_script ") + file +
        ": neither a version-2 Catalyst script (it needs a '# script-version: 2' comment line) nor a legacy one (no DoCoProcessing)";
  return false;
}

extern "C" int MPMCatalystAdaptorInitialize(MPI_Comm comm, const char *outdir, int nchannels, const char *const *channels, int nscripts, const char *const *scripts,
                                            MPMCatalystAdaptor **out, char *msg, size_t len)
{
  *out = nullptr;
  if (setenv("MPM_CATALYST_OUTPUT_DIR", outdir, 1)) {
    Message(msg, len, "cannot set MPM_CATALYST_OUTPUT_DIR");
    return 1;
  }
  std::string why;
  for (int s = 0; s < nscripts; s++)
    if (!CheckScriptStyle(scripts[s], why)) {
      Message(msg, len, why);
      return 1;
    }
  MPMCatalystAdaptor *a = new MPMCatalystAdaptor;
  a->processor          = vtkCPProcessor::New();
  a->description        = vtkCPDataDescription::New();
  for (int c = 0; c < nchannels; c++) a->description->AddInput(channels[c]);
  /* the solver's communicator, not Catalyst's default MPI_COMM_WORLD */
  vtkMPICommunicatorOpaqueComm opaque(&comm);
  int                          ok = a->processor->Initialize(opaque);
  for (int s = 0; ok && s < nscripts; s++) {
    vtkSmartPointer<vtkCPPythonPipeline> p = vtkCPPythonPipeline::CreateAndInitializePipeline(scripts[s], 2);
    if (!p) {
      Message(msg, len, std::string("-catalyst_script ") + scripts[s] + ": Catalyst could not register the script (see the messages above)");
      ok = 0;
    } else ok = a->processor->AddPipeline(p);
  }
  if (!ok) {
    if (msg && !msg[0]) Message(msg, len, "Catalyst initialization failed");
    MPMCatalystAdaptorFinalize(&a);
    return 1;
  }
  *out = a;
  return 0;
}

extern "C" int MPMCatalystAdaptorWants(MPMCatalystAdaptor *a, int64_t step, double time)
{
  a->description->SetTimeData(time, (vtkIdType)step);
  return a->processor->RequestDataDescription(a->description) != 0;
}

/* One solver array as a VTK array of its type (copied). */
static vtkSmartPointer<vtkDataArray> Array(const MPMCatalystArray *a, int64_t n)
{
  vtkSmartPointer<vtkDataArray> arr;
  if (a->type == MPM_CATALYST_INT64) arr = vtkSmartPointer<vtkTypeInt64Array>::New();
  else if (a->type == MPM_CATALYST_INT32) arr = vtkSmartPointer<vtkIntArray>::New();
  else arr = vtkSmartPointer<vtkDoubleArray>::New();
  arr->SetName(a->name);
  arr->SetNumberOfComponents(a->ncomp);
  arr->SetNumberOfTuples(n);
  const size_t size = a->type == MPM_CATALYST_INT32 ? 4 : 8;
  if (n > 0) std::memcpy(arr->GetVoidPointer(0), a->data, size * (size_t)n * (size_t)a->ncomp);
  return arr;
}

/* One vertex cell per point: offsets 0..n, connectivity 0..n-1. */
static vtkSmartPointer<vtkCellArray> Vertices(int64_t n)
{
  vtkNew<vtkIdTypeArray> offsets, conn;
  offsets->SetNumberOfTuples(n + 1);
  conn->SetNumberOfTuples(n);
  for (int64_t q = 0; q <= n; q++) offsets->SetValue(q, q);
  for (int64_t q = 0; q < n; q++) conn->SetValue(q, q);
  vtkNew<vtkCellArray> cells;
  cells->SetData(offsets, conn);
  return cells.GetPointer();
}

/* The points are the "position" array; every other array is point data. */
static vtkSmartPointer<vtkPolyData> Particles(const MPMCatalystFrame *f)
{
  vtkNew<vtkPolyData> pd;
  vtkNew<vtkPoints>   pts;
  for (int k = 0; k < f->narrays; k++) {
    const MPMCatalystArray *a = &f->arrays[k];
    if (!std::strcmp(a->name, "position")) pts->SetData(Array(a, f->n));
    else pd->GetPointData()->AddArray(Array(a, f->n));
  }
  pd->SetPoints(pts);
  pd->SetVerts(Vertices(f->n));
  return pd.GetPointer();
}

/* The objects' surfaces: each piece its own points, line cells in 2D,
 * triangles in 3D; cell data "object" (the index into the field data's
 * "object_names"). */
static vtkSmartPointer<vtkPolyData> Surfaces(const MPMCatalystSurface *s)
{
  vtkNew<vtkPolyData>    pd;
  vtkNew<vtkPoints>      pts;
  vtkNew<vtkDoubleArray> xyz;
  vtkNew<vtkIntArray>    obj;
  vtkNew<vtkStringArray> names;
  const int64_t          np = s->n * s->dim;
  xyz->SetNumberOfComponents(3);
  xyz->SetNumberOfTuples(np);
  if (np > 0) std::memcpy(xyz->GetVoidPointer(0), s->points, sizeof(double) * 3 * (size_t)np);
  pts->SetData(xyz);
  vtkNew<vtkIdTypeArray> offsets, conn;
  offsets->SetNumberOfTuples(s->n + 1);
  conn->SetNumberOfTuples(np);
  for (int64_t q = 0; q <= s->n; q++) offsets->SetValue(q, q * s->dim);
  for (int64_t q = 0; q < np; q++) conn->SetValue(q, q);
  vtkNew<vtkCellArray> cells;
  cells->SetData(offsets, conn);
  obj->SetName("object");
  obj->SetNumberOfTuples(s->n);
  for (int64_t q = 0; q < s->n; q++) obj->SetValue(q, s->object[q]);
  names->SetName("object_names");
  for (int k = 0; k < s->nnames; k++) names->InsertNextValue(s->names[k]);
  pd->SetPoints(pts);
  if (s->dim == 2) pd->SetLines(cells);
  else pd->SetPolys(cells);
  pd->GetCellData()->AddArray(obj);
  pd->GetFieldData()->AddArray(names);
  return pd.GetPointer();
}

/* Run-wide facts the scripts use to frame the camera (the same on every
 * rank, unlike the local data bounds): dimension and domain box. */
static vtkSmartPointer<vtkFieldData> UserData(const MPMCatalystFrame *f)
{
  vtkNew<vtkFieldData>   fd;
  vtkNew<vtkDoubleArray> box;
  vtkNew<vtkIntArray>    dim;
  box->SetName("domain_bounds");
  box->SetNumberOfTuples(6);
  for (int c = 0; c < 3; c++) {
    box->SetValue(2 * c, f->lo[c]);
    box->SetValue(2 * c + 1, f->hi[c]);
  }
  dim->SetName("dim");
  dim->InsertNextValue(f->dim);
  fd->AddArray(box);
  fd->AddArray(dim);
  return fd.GetPointer();
}

extern "C" int MPMCatalystAdaptorCoProcess(MPMCatalystAdaptor *a, int nframes, const MPMCatalystFrame *f, const MPMCatalystSurface *surf, char *msg, size_t len)
{
  /* RequestDataDescription set the time data; CoProcess resets it afterwards */
  a->description->SetUserData(UserData(f));
  for (int c = 0; c < nframes; c++) a->description->GetInputDescriptionByName(f[c].channel)->SetGrid(Particles(&f[c]));
  if (surf) a->description->GetInputDescriptionByName("objects")->SetGrid(Surfaces(surf));
  if (!a->processor->CoProcess(a->description)) {
    Message(msg, len, "Catalyst co-processing failed at step " + std::to_string(f->step) +
                          ": a -catalyst_script pipeline failed (ParaView prints Python tracebacks on rank 0 only)");
    return 1;
  }
  return 0;
}

extern "C" void MPMCatalystAdaptorFinalize(MPMCatalystAdaptor **pa)
{
  MPMCatalystAdaptor *a = *pa;
  if (!a) return;
  a->processor->Finalize();
  a->processor->Delete();
  a->description->Delete();
  delete a;
  *pa = nullptr;
}
