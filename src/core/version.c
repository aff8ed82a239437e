/* The version recorded in every output file: the project version and the
 * `git describe` of the commit that was built (src/version.cmake). */
#include "core.h"
#include "mpm_version.h"

const char *MPMVersion(void) { return MPM_VERSION; }
