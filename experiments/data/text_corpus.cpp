#include "experiments/data/text_corpus.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "core/config/init_file.h"
#include "core/config/model_config.h"
#include "core/config/sha256.h"
#include "core/errors.h"

namespace batchlab::data {
namespace fs = std::filesystem;
namespace {

// Bumped whenever the packing rules change, so old cache entries are not reused.
constexpr int kCacheFormat = 1;

bool is_text_name(const fs::path& p) {
  static const std::set<std::string> kExtensions = {".txt", ".rst", ".md", ".text"};
  return kExtensions.count(p.extension().string()) > 0;
}

std::vector<int32_t> encode_file(const std::string& path, const Tokenizer& tokenizer) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(fmt::format("{}: cannot open for reading", path));
  std::vector<int32_t> ids;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t\f\v") == std::string::npos) continue;
    const auto line_ids = tokenizer.encode(line);
    ids.insert(ids.end(), line_ids.begin(), line_ids.end());
  }
  if (in.bad()) throw DataError(fmt::format("{}: read error", path));
  return ids;
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// Identity of a raw corpus and of how it is tokenized: any change to a file, to the file set or to
// the tokenizer settings gives another cache entry.
std::string corpus_key(const std::vector<std::string>& files, const std::string& tokenizer_spec) {
  config::Sha256 h;
  h.update(fmt::format("batchlab-text-cache {}\n{}\n", kCacheFormat, tokenizer_spec));
  for (const auto& f : files) {
    std::error_code ec;
    const auto size = fs::file_size(f, ec);
    const auto mtime = fs::last_write_time(f, ec).time_since_epoch().count();
    h.update(fmt::format("{}\t{}\t{}\n", fs::absolute(f).string(), size, mtime));
  }
  const auto d = h.digest();
  std::string hex;
  for (size_t i = 0; i < 8; ++i) hex += fmt::format("{:02x}", d[i]);
  return hex;
}

std::shared_ptr<const Tokenizer> load_shared(const std::string& path) {
  return std::make_shared<const Tokenizer>(Tokenizer::load(path));
}

// The tokenizer file's hash, refused when the config records another (data.tokenizer_sha256).
std::string checked_tokenizer_sha256(const std::string& path, const std::string& recorded) {
  const std::string sha = config::file_sha256(path);
  if (!recorded.empty() && sha != recorded) {
    throw DataError(fmt::format(
        "{}: the tokenizer has SHA-256 {}, but the run trained with data.tokenizer_sha256 = {}: "
        "the file was replaced since (a tokenizer retrained at the same vocabulary size maps text "
        "to ids the weights never saw). Put the tokenizer the run trained with back at {}; to "
        "train a new run with this one, remove data.tokenizer_sha256 from its config",
        path, sha, recorded, path));
  }
  return sha;
}

TextCorpus open_packed(const std::string& dir, const std::string& tokenizer_path,
                       const config::DataConfig& data) {
  const bool skip_corrupt = data.skip_corrupt;
  TextCorpus corpus;
  corpus.shards = TokenShards::open(dir, skip_corrupt);
  const auto& skipped = corpus.shards->skipped();
  if (!skipped.empty()) {
    fmt::print(stderr, "batchlab: data.skip_corrupt: {} corrupt token shard(s) of {} left out:\n",
               skipped.size(), dir);
    for (const auto& why : skipped) fmt::print(stderr, "  {}\n", why);
  }
  corpus.tokenizer = load_shared(tokenizer_path);
  corpus.tokenizer_sha256 = checked_tokenizer_sha256(tokenizer_path, data.tokenizer_sha256);
  corpus.source = dir;
  if (corpus.tokenizer->vocab_size() != corpus.shards->vocab_size()) {
    throw DataError(fmt::format(
        "{}: shards have a vocabulary of {} but the tokenizer {} has {} "
        "pieces; use the tokenizer the shards were packed with",
        dir, corpus.shards->vocab_size(), tokenizer_path, corpus.tokenizer->vocab_size()));
  }
  return corpus;
}

}  // namespace

std::vector<std::string> list_text_files(const std::vector<std::string>& paths) {
  std::set<std::string> found;
  for (const auto& p : paths) {
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) {
      found.insert(fs::path(p).lexically_normal().string());
    } else if (fs::is_directory(p, ec)) {
      for (auto it = fs::recursive_directory_iterator(
               p, fs::directory_options::follow_directory_symlink, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_regular_file() && is_text_name(it->path())) {
          found.insert(it->path().lexically_normal().string());
        }
      }
      if (ec) throw DataError(fmt::format("{}: cannot list: {}", p, ec.message()));
    } else {
      throw InputError(fmt::format("{}: no such file or directory", p));
    }
  }
  if (found.empty()) {
    throw InputError(
        fmt::format("no text files (*.txt, *.rst, *.md, *.text) in {}", fmt::join(paths, ", ")));
  }
  return {found.begin(), found.end()};
}

PackTextSummary pack_text(const std::vector<std::string>& files, const Tokenizer& tokenizer,
                          const std::string& out_dir, const PackTextOptions& options) {
  TokenShardWriter writer(out_dir, tokenizer.vocab_size(), options.shard_bytes);
  const int64_t threads = options.threads > 0
                              ? options.threads
                              : std::max<int64_t>(1, std::thread::hardware_concurrency());
  PackTextSummary summary;
  summary.files = static_cast<int64_t>(files.size());
  // Files are encoded in parallel a group at a time and written in order, so memory stays bounded
  // by one group and the shards do not depend on the thread count.
  const size_t group = static_cast<size_t>(64 * threads);
  for (size_t first = 0; first < files.size(); first += group) {
    const size_t count = std::min(group, files.size() - first);
    std::vector<std::vector<int32_t>> docs(count);
    std::vector<std::string> errors(count);
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i; (i = next.fetch_add(1)) < count;) {
        try {
          docs[i] = encode_file(files[first + i], tokenizer);
        } catch (const std::exception& e) {
          errors[i] = e.what();
        }
      }
    };
    std::vector<std::thread> pool;
    for (int64_t t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
    for (size_t i = 0; i < count; ++i) {
      if (!errors[i].empty()) throw DataError(errors[i]);
      if (docs[i].empty()) {
        ++summary.empty_skipped;
        continue;
      }
      writer.add_document(docs[i]);
      ++summary.documents;
      summary.tokens += static_cast<int64_t>(docs[i].size());
    }
  }
  if (summary.documents == 0) {
    throw InputError(fmt::format("{} file(s) ({}, ...) hold no text to pack", files.size(),
                                 files.empty() ? "" : files.front()));
  }
  const auto model_copy = fs::path(out_dir) / kTokenizerFileName;
  if (fs::absolute(tokenizer.path()) != fs::absolute(model_copy)) {
    fs::copy_file(tokenizer.path(), model_copy, fs::copy_options::overwrite_existing);
  }
  writer.finish();
  summary.shards = writer.shards();
  return summary;
}

std::string text_cache_root() {
  if (auto v = env_or_empty("BATCHLAB_CACHE_DIR"); !v.empty()) return v;
  if (auto v = env_or_empty("XDG_CACHE_HOME"); !v.empty())
    return (fs::path(v) / "batchlab").string();
  if (auto v = env_or_empty("HOME"); !v.empty())
    return (fs::path(v) / ".cache" / "batchlab").string();
  return (fs::temp_directory_path() / fmt::format("batchlab-cache-{}", ::getuid())).string();
}

TextCorpus prepare_text_corpus(const config::DataConfig& data, int64_t vocab_size) {
  const std::string path = data.path.empty() ? kDefaultTextCorpus : data.path;
  if (fs::is_directory(path) && fs::exists(fs::path(path) / kShardIndexName)) {
    const auto tok =
        data.tokenizer.empty() ? (fs::path(path) / kTokenizerFileName).string() : data.tokenizer;
    return open_packed(path, tok, data);
  }
  if (!fs::exists(path)) {
    throw InputError(fmt::format("data.path = {}: no such file or directory{}", path,
                                 data.path.empty() ? " (the default text corpus: install "
                                                     "python3.11-doc or set data.path)"
                                                   : ""));
  }
  const auto files = list_text_files({path});

  TokenizerTrainOptions train_options;
  train_options.vocab_size = vocab_size;
  std::string tokenizer_spec;
  if (!data.tokenizer.empty()) {
    Tokenizer::load(data.tokenizer);  // fail early, before anything is written
    tokenizer_spec = corpus_key({data.tokenizer}, "given tokenizer");
  } else {
    tokenizer_spec = fmt::format(
        "train vocab={} type={} coverage={} sentences={} threads={} seed={}",
        train_options.vocab_size, train_options.model_type, train_options.character_coverage,
        train_options.max_sentences, train_options.threads, train_options.seed);
  }
  const auto key = corpus_key(files, tokenizer_spec);
  const auto entry = fs::path(text_cache_root()) / "text" / key;
  const auto tokenizer_in = [&](const fs::path& dir) {
    return data.tokenizer.empty() ? (dir / kTokenizerFileName).string() : data.tokenizer;
  };
  if (fs::exists(entry / kShardIndexName))
    return open_packed(entry.string(), tokenizer_in(entry), data);

  const auto started = std::chrono::steady_clock::now();
  fmt::print(stderr, "batchlab: tokenizing {} ({} files) once into the cache {}\n", path,
             files.size(), entry.string());
  std::error_code ec;
  fs::create_directories(entry.parent_path(), ec);
  const auto tmp =
      fs::path(fmt::format("{}.tmp-{}-{}", entry.string(), ::getpid(),
                           std::chrono::steady_clock::now().time_since_epoch().count()));
  fs::create_directories(tmp, ec);
  if (ec)
    throw InputError(
        fmt::format("{}: cannot create the cache directory ({}); set "
                    "BATCHLAB_CACHE_DIR",
                    tmp.string(), ec.message()));
  try {
    std::string model = data.tokenizer;
    if (model.empty()) {
      train_tokenizer(files, (tmp / "tokenizer").string(), train_options);
      model = (tmp / "tokenizer.model").string();
    }
    pack_text(files, Tokenizer::load(model), tmp.string(), PackTextOptions{});
    fs::rename(tmp, entry, ec);
    // Another job finished the same entry first: identical content, keep theirs.
    if (ec) fs::remove_all(tmp, ec);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  fmt::print(stderr, "batchlab: text cache ready after {:.1f} s\n", seconds);
  return open_packed(entry.string(), tokenizer_in(entry), data);
}

int64_t model_vocab_size(const TextCorpus& corpus, int64_t configured) {
  const int64_t vocab = corpus.tokenizer->vocab_size();
  if (configured != config::ModelConfig{}.vocab_size && configured != vocab) {
    throw InputError(
        fmt::format("model.vocab_size = {} conflicts with the tokenizer {} ({} pieces): remove "
                    "model.vocab_size or set it to {}",
                    configured, corpus.tokenizer->path(), vocab, vocab));
  }
  return vocab;
}

}  // namespace batchlab::data
