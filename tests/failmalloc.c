/* Fault injection for tests/test_faults.py, loaded with LD_PRELOAD into
 * one rank: once the file named by $MPM_FAULT_TRIGGER exists, every
 * allocation of at least $MPM_FAULT_MIN_BYTES bytes fails, as when a rank
 * runs out of memory.  Smaller allocations, and all of them before the
 * trigger, go to the C library. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

static int Fail(size_t size)
{
  static size_t min = 0;
  static int    fired = 0;
  const char   *trigger = getenv("MPM_FAULT_TRIGGER");
  if (!min) {
    const char *m = getenv("MPM_FAULT_MIN_BYTES");
    min           = m ? (size_t)strtoull(m, NULL, 10) : (size_t)-1;
  }
  if (size < min || !trigger) return 0;
  if (!fired) fired = access(trigger, F_OK) == 0;
  return fired;
}

void *malloc(size_t size)
{
  static void *(*next)(size_t);
  if (!next) *(void **)&next = dlsym(RTLD_NEXT, "malloc");
  return Fail(size) ? NULL : next(size);
}

void *calloc(size_t n, size_t size)
{
  static void *(*next)(size_t, size_t);
  if (!next) *(void **)&next = dlsym(RTLD_NEXT, "calloc");
  return Fail(n * size) ? NULL : next(n, size);
}

void *realloc(void *p, size_t size)
{
  static void *(*next)(void *, size_t);
  if (!next) *(void **)&next = dlsym(RTLD_NEXT, "realloc");
  return Fail(size) ? NULL : next(p, size);
}

int posix_memalign(void **p, size_t align, size_t size)
{
  static int (*next)(void **, size_t, size_t);
  if (!next) *(void **)&next = dlsym(RTLD_NEXT, "posix_memalign");
  return Fail(size) ? ENOMEM : next(p, align, size);
}
