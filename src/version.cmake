# Writes ${OUT} (mpm_version.h) with the project version and `git describe`,
# rewriting it only when it changes, so every build records the current commit.
execute_process(COMMAND git describe --always --dirty --tags WORKING_DIRECTORY ${SRC}
  OUTPUT_VARIABLE GIT_VERSION OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT GIT_VERSION)
  set(GIT_VERSION "unknown")
endif()
set(TEXT "#define MPM_VERSION \"${PROJECT_VERSION}-${GIT_VERSION}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} OLD)
endif()
if(NOT "${OLD}" STREQUAL "${TEXT}")
  file(WRITE ${OUT} "${TEXT}")
endif()
