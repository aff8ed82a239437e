/* C interface of the ParaView Catalyst adaptor (catalyst_adaptor.cxx, C++,
 * built only with MPM_HAVE_CATALYST).  Plain C types only, so catalyst.c
 * needs no VTK header; errors come back as a nonzero return value and a
 * message, because C++ exceptions must not cross into C. */
#ifndef MPM_CATALYST_ADAPTOR_H
#define MPM_CATALYST_ADAPTOR_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct MPMCatalystAdaptor MPMCatalystAdaptor;

/* One point-data array: n x ncomp values of the given type. */
enum { MPM_CATALYST_DOUBLE = 0, MPM_CATALYST_INT64 = 1, MPM_CATALYST_INT32 = 2 };
typedef struct {
  const char *name;
  int         type;  /* MPM_CATALYST_* */
  int         ncomp; /* 1 or 3 */
  const void *data;
} MPMCatalystArray;

/* This rank's particles of one species at one step, for the channel of
 * that name: the solver's output arrays, the one named "position" (3
 * components) as the points.  Arrays are borrowed for the call only (the
 * adaptor copies what it keeps). */
typedef struct {
  const char             *channel;
  int64_t                 step;
  double                  time;
  int                     dim;
  int64_t                 n; /* particles on this rank */
  int                     narrays;
  const MPMCatalystArray *arrays;
  double                  lo[3], hi[3]; /* the domain box (lo[2] = hi[2] = 0 in 2D) */
} MPMCatalystFrame;

/* The collision objects' surfaces at one step, for the channel "objects":
 * n pieces (segments in 2D, triangles in 3D) of dim points each, points
 * (n x dim x 3), and per piece the index of its object in names (the
 * deck's -objects; nnames of them).  Borrowed for the call. */
typedef struct {
  int                dim;
  int64_t            n;
  const double      *points;
  const int32_t     *object;
  int                nnames;
  const char *const *names;
} MPMCatalystSurface;

/* Collective.  Sets MPM_CATALYST_OUTPUT_DIR=outdir for the scripts (before
 * Python starts, so os.environ sees it), declares the channels (one per
 * species: a script reads the ones it names in TrivialProducer), checks
 * each script's style and registers it.  ParaView imports the scripts at
 * the first co-processing call, so a Python error in a script surfaces
 * there. */
int  MPMCatalystAdaptorInitialize(MPI_Comm comm, const char *outdir, int nchannels, const char *const *channels, int nscripts, const char *const *scripts, MPMCatalystAdaptor **a,
                                  char *msg, size_t len);
/* Collective.  1 if some pipeline runs at this step (then call CoProcess). */
int  MPMCatalystAdaptorWants(MPMCatalystAdaptor *a, int64_t step, double time);
/* Collective.  Hands the particles of every channel (nframes, in the order
 * of Initialize's channels) and, if surf is not NULL, the objects' surfaces
 * (channel "objects", declared at Initialize) to the pipelines; 0 on
 * success. */
int  MPMCatalystAdaptorCoProcess(MPMCatalystAdaptor *a, int nframes, const MPMCatalystFrame *f, const MPMCatalystSurface *surf, char *msg, size_t len);
/* Collective.  Finalizes the pipelines (they may write last files). */
void MPMCatalystAdaptorFinalize(MPMCatalystAdaptor **a);

#ifdef __cplusplus
}
#endif
#endif
