// A job's records file folded into a sweep database (`batchlab results ingest --db SWEEP.db
// RECORDS.db`, results/ingest.h): the input is the records file, checked as the command checks it
// (results/database_file.h), then ingested into a database of the harness's own. The store's
// refusal of bad input is StoreInputError (exit 2), which is not an InputError: both are expected.
#include <memory>
#include <string>

#include "fuzz/fuzz_support.h"
#include "results/database_file.h"
#include "results/errors.h"
#include "results/ingest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace batchlab;
  static const auto target =
      std::make_unique<results::Ingester>((fuzz::scratch_dir() / "sweep.db").string());
  const std::string records = fuzz::write_file("records.db", fuzz::as_text(data, size));
  // A previous input's journal would be replayed into this one.
  std::filesystem::remove(records + "-wal");
  std::filesystem::remove(records + "-shm");
  std::filesystem::remove(records + "-journal");
  try {
    results::check_database_path(records, results::DatabaseUse::kRecords, "records file");
    target->ingest(records);
  } catch (const results::StoreInputError&) {
  }
  return 0;
}
