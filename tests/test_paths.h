// Where the tests find the checkout, the reference data, the built binary and the peers' Python.
// Defined in one file generated at configure time (tests/test_paths.cpp.in), not as -D values on
// every test file: the test sources then carry no absolute path, and a clone at another path (CI,
// a second worktree) hits ccache for all of them; only the generated file is compiled anew.
#pragma once

namespace batchlab::test_paths {

// The checkout the tests were configured from.
const char* source_dir();
// The golden optimizer trajectories (the BATCHLAB_GOLDEN_DIR cache variable).
const char* golden_dir();
// The Python whose torch is the LibTorch batchlab links (cmake/find_torch.cmake): the peers
// (torchvision, torch.nn, torch.save) run under it, so both sides are one build.
const char* peer_python();
// The `batchlab` binary the CLI tests run: build/batchlab, or $BATCHLAB_TEST_BINARY when set (to
// run this suite against another build, e.g. one from before a change).
const char* binary();
// The dashboard tests' database, made by the CTest fixture serve_fixture_db.
const char* serve_fixture_db();
// A shared library whose flock(2) fails with ENOLCK, for LD_PRELOAD
// (tests/sweeps/flock_enolck_shim.cpp).
const char* flock_enolck_shim();

}  // namespace batchlab::test_paths
