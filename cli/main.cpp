#include "cli/app.h"

int main(int argc, char** argv) { return batchlab::cli::run_app(argc, argv); }
