// A stand-in for flock(2) that fails as it does on a mount without file locks (ENOLCK), loaded
// with LD_PRELOAD by tests/sweeps/slurm_submit_cli_test.cpp: no such mount can be made here.
#include <sys/file.h>

#include <cerrno>

extern "C" int flock(int /*fd*/, int /*operation*/) {
  errno = ENOLCK;
  return -1;
}
