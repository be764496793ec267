// `batchlab data tokenizer` and `batchlab data pack-text`: the text half of dataset preparation
// (experiments/data/tokenizer.h, experiments/data/text_corpus.h).
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "cli/app.h"
#include "cli/args.h"
#include "cli/data_commands.h"
#include "experiments/data/text_corpus.h"
#include "experiments/data/token_shards.h"
#include "experiments/data/tokenizer.h"

namespace batchlab::cli {
namespace {

constexpr const char* kTokenizerUsage =
    "batchlab data tokenizer FILE_OR_DIR... --out MODEL_PREFIX --vocab-size N\n"
    "         [--model-type unigram|bpe] [--character-coverage X] [--max-sentences N] [--threads "
    "N]\n"
    "  trains a SentencePiece model on the lines of the files (directories: *.txt, *.rst, *.md,\n"
    "  *.text, recursively) and writes MODEL_PREFIX.model and MODEL_PREFIX.vocab; ids 0-4 are\n"
    "  [PAD] [UNK] [CLS] [SEP] [MASK]";

constexpr const char* kPackTextUsage =
    "batchlab data pack-text FILE_OR_DIR... --tokenizer MODEL --out DIR [--shard-mb M] [--threads "
    "N]\n"
    "  tokenizes each file as one document into packed token shards in DIR (uint16 ids when the\n"
    "  vocabulary fits, else uint32; document boundaries, index.txt with a CRC-32 per shard) and\n"
    "  copies the tokenizer there as tokenizer.model: DIR is what data.path of a \"text\" "
    "experiment\n"
    "  can point at";

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// A positive integer option within [lo, hi]; a UsageError naming it otherwise.
std::optional<long long> bounded(const Args& args, const std::string& name, long long lo,
                                 long long hi) {
  auto v = args.integer(name);
  if (v && (*v < lo || *v > hi)) {
    throw UsageError(
        fmt::format("--{} = {}: must be in [{}, {}]\nusage: {}", name, *v, lo, hi, args.usage()));
  }
  return v;
}

std::vector<std::string> inputs(const Args& args) {
  if (args.positionals().empty()) {
    throw UsageError(
        fmt::format("missing FILE_OR_DIR (the text to read)\nusage: {}", args.usage()));
  }
  return data::list_text_files(args.positionals());
}

}  // namespace

int cmd_data_tokenizer(const std::vector<std::string>& argv) {
  Args args(argv,
            {{"out"},
             {"vocab-size"},
             {"model-type"},
             {"character-coverage"},
             {"max-sentences"},
             {"threads"}},
            kTokenizerUsage);
  auto out = args.value("out");
  if (!out) throw UsageError(fmt::format("missing --out MODEL_PREFIX\nusage: {}", args.usage()));
  const auto vocab = bounded(args, "vocab-size", data::kFirstOrdinaryId + 1, int64_t{1} << 31);
  if (!vocab) throw UsageError(fmt::format("missing --vocab-size N\nusage: {}", args.usage()));

  data::TokenizerTrainOptions options;
  options.vocab_size = *vocab;
  options.model_type = args.value("model-type").value_or(options.model_type);
  if (options.model_type != "unigram" && options.model_type != "bpe") {
    throw UsageError(fmt::format("--model-type = {}: use unigram or bpe\nusage: {}",
                                 options.model_type, args.usage()));
  }
  if (auto c = args.value("character-coverage")) {
    char* end = nullptr;
    options.character_coverage = std::strtod(c->c_str(), &end);
    if (end != c->c_str() + c->size() || !(options.character_coverage > 0.0) ||
        options.character_coverage > 1.0) {
      throw UsageError(fmt::format(
          "--character-coverage = {}: must be a number in (0, 1]\nusage: {}", *c, args.usage()));
    }
  }
  if (auto n = bounded(args, "max-sentences", 1, int64_t{1} << 40)) options.max_sentences = *n;
  if (auto n = bounded(args, "threads", 1, 1024)) options.threads = *n;

  // "--out x.model" is read as the prefix "x", the file the user meant to get.
  std::string prefix = *out;
  if (std::filesystem::path(prefix).extension() == ".model") {
    prefix = std::filesystem::path(prefix).replace_extension().string();
  }
  const auto files = inputs(args);
  const auto t0 = std::chrono::steady_clock::now();
  data::train_tokenizer(files, prefix, options);
  const auto tokenizer = data::Tokenizer::load(prefix + ".model");
  fmt::print("trained a {} tokenizer of {} pieces on {} file(s) in {:.1f} s: {}.model ({}.vocab)\n",
             options.model_type, tokenizer.vocab_size(), files.size(), seconds_since(t0), prefix,
             prefix);
  return kExitOk;
}

int cmd_data_pack_text(const std::vector<std::string>& argv) {
  Args args(argv, {{"tokenizer"}, {"out"}, {"shard-mb"}, {"threads"}}, kPackTextUsage);
  auto model = args.value("tokenizer");
  if (!model) throw UsageError(fmt::format("missing --tokenizer MODEL\nusage: {}", args.usage()));
  auto out = args.value("out");
  if (!out) throw UsageError(fmt::format("missing --out DIR\nusage: {}", args.usage()));
  data::PackTextOptions options;
  if (auto mb = bounded(args, "shard-mb", 1, 1 << 20)) options.shard_bytes = *mb << 20;
  if (auto n = bounded(args, "threads", 1, 1024)) options.threads = *n;
  const auto tokenizer = data::Tokenizer::load(*model);
  const auto files = inputs(args);

  const auto t0 = std::chrono::steady_clock::now();
  const auto summary = data::pack_text(files, tokenizer, *out, options);
  const double seconds = seconds_since(t0);
  fmt::print(
      "packed {} document(s) ({} empty file(s) skipped), {} tokens as {} into {} shard(s) "
      "in {:.1f} s: {}\n",
      summary.documents, summary.empty_skipped, summary.tokens,
      data::token_bytes_for_vocab(tokenizer.vocab_size()) == 2 ? "uint16" : "uint32",
      summary.shards.size(), seconds, *out);
  return kExitOk;
}

}  // namespace batchlab::cli
