#include <fmt/format.h>

#include <functional>
#include <map>

#include "cli/app.h"
#include "cli/args.h"
#include "cli/data_commands.h"

namespace batchlab::cli {

namespace {

constexpr const char* kDataUsage =
    "batchlab data <subcommand> [arguments]\n"
    "subcommands:\n"
    "  pack SRC_DIR --out DIR [options]          image folder -> packed, pre-resized shards\n"
    "  tokenizer FILE... --out MODEL [options]   train a SentencePiece tokenizer on raw text\n"
    "  pack-text FILE... --out DIR [options]     tokenize text into packed token shards\n"
    "run `batchlab data <subcommand> --help` for its options";

}  // namespace

int cmd_data(const std::vector<std::string>& args) {
  using Handler = std::function<int(const std::vector<std::string>&)>;
  const std::map<std::string, Handler> handlers = {{"pack", cmd_data_pack},
                                                   {"tokenizer", cmd_data_tokenizer},
                                                   {"pack-text", cmd_data_pack_text}};
  auto it = handlers.find(subcommand(args, kDataUsage));
  if (it == handlers.end()) {
    throw UsageError(fmt::format("unknown subcommand 'data {}'\nusage: {}", args[0], kDataUsage));
  }
  return it->second(std::vector<std::string>(args.begin() + 1, args.end()));
}

}  // namespace batchlab::cli
