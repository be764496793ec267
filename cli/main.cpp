#include "cli/allocator_tuning.h"
#include "cli/app.h"

int main(int argc, char** argv) {
  // Before anything allocates tensors: see allocator_tuning.h for why.
  batchlab::cli::tune_allocator();
  return batchlab::cli::run_app(argc, argv);
}
