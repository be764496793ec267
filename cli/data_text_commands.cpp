// PLACEHOLDER until the text-data work lands in this session: replaced by the real commands.
#include "cli/args.h"
#include "cli/data_commands.h"

namespace batchlab::cli {
int cmd_data_tokenizer(const std::vector<std::string>&) {
  throw UsageError("batchlab data tokenizer is not built yet");
}
int cmd_data_pack_text(const std::vector<std::string>&) {
  throw UsageError("batchlab data pack-text is not built yet");
}
}  // namespace batchlab::cli
