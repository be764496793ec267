// A published steps-to-target table (`batchlab report --steps-csv FILE --columns SPEC`,
// analysis/steps_table.h), read and then reported as `report` does (the fit of S(B), its intervals
// and the critical batch's definitions). When the input's first line starts with "columns: ", the
// rest of that line is the --columns value and the table follows; otherwise the whole input is the
// table with the default columns.
#include <algorithm>
#include <string>

#include "analysis/steps_table.h"
#include "analysis/study_report.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace batchlab;
  auto text = fuzz::as_text(data, size);
  std::string columns;
  if (text.substr(0, 9) == "columns: ") {
    const size_t end = std::min(text.find('\n'), text.size());
    columns = std::string(text.substr(9, end - 9));
    text.remove_prefix(std::min(end + 1, text.size()));
  }
  const std::string path = fuzz::write_file("steps.csv", text);
  fuzz::refuse_only_as_input_error([&] {
    const auto records = analysis::read_steps_csv(path, analysis::parse_steps_columns(columns));
    const auto report = analysis::study_report_of(records);
    analysis::format_study_report(report, results::QueryFormat::kTable);
    analysis::format_study_report(report, results::QueryFormat::kJson);
  });
  return 0;
}
