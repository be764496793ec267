// PLACEHOLDER until the image-data work lands in this session: replaced by the real packer.
#include "cli/args.h"
#include "cli/data_commands.h"

namespace batchlab::cli {
int cmd_data_pack(const std::vector<std::string>&) {
  throw UsageError("batchlab data pack is not built yet");
}
}  // namespace batchlab::cli
