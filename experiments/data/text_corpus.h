// Text corpora for BERT pretraining: finding the raw text files, tokenizing them into packed token
// shards (`batchlab data pack-text`), and resolving data.path for dataset "text".
//
// One file is one document. A file is read line by line; each non-empty line is encoded on its
// own (the unit SentencePiece was trained on) and the lines' ids are concatenated. Files that
// encode to nothing are skipped and counted.
//
// data.path for dataset "text" may be
//   - a pack-text output directory (it has index.txt): used as is; the tokenizer is data.tokenizer,
//     or <data.path>/tokenizer.model (pack-text copies it there). A corrupt or truncated shard
//     stops the run with its path, or, with data.skip_corrupt, is left out and reported on stderr
//     (TokenShards::skipped() counts them);
//   - a raw text file or directory (default: the reStructuredText sources of python3.11-doc): the
//     tokenizer (data.tokenizer, or one trained on the corpus with model.vocab_size pieces) and the
//     shards are built once into a cache directory, keyed by the corpus files (paths, sizes,
//     modification times) and the tokenizer settings, and reused by every later run:
//       $BATCHLAB_CACHE_DIR, else $XDG_CACHE_HOME/batchlab, else $HOME/.cache/batchlab,
//     then text/<key>/ under it. The cache entry is built in a temporary directory and renamed
//     into place, so concurrent jobs of a sweep never read a half-built one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/config/data_config.h"
#include "experiments/data/token_shards.h"
#include "experiments/data/tokenizer.h"

namespace batchlab::data {

inline constexpr const char* kDefaultTextCorpus = "/usr/share/doc/python3.11/html/_sources";
inline constexpr const char* kTokenizerFileName = "tokenizer.model";

// Files given explicitly are taken whatever their name; directories are walked recursively for
// *.txt, *.rst, *.md and *.text. Sorted and deduplicated, so the document order never depends on
// the file system. Throws InputError naming a path that does not exist, or when nothing is found.
std::vector<std::string> list_text_files(const std::vector<std::string>& paths);

struct PackTextOptions {
  int64_t shard_bytes = int64_t{256} << 20;
  int64_t threads = 0;  // encoding threads; 0 = hardware concurrency
};

struct PackTextSummary {
  int64_t files = 0;
  int64_t documents = 0;      // files that produced tokens
  int64_t empty_skipped = 0;  // files that produced none
  int64_t tokens = 0;
  std::vector<TokenShardInfo> shards;
};

// Tokenizes `files` (one document each, in the given order) into shards in `out_dir` and copies
// the tokenizer's model file there as tokenizer.model. Throws InputError/DataError naming the
// file or directory at fault.
PackTextSummary pack_text(const std::vector<std::string>& files, const Tokenizer& tokenizer,
                          const std::string& out_dir, const PackTextOptions& options);

struct TextCorpus {
  std::shared_ptr<const TokenShards> shards;
  std::shared_ptr<const Tokenizer> tokenizer;
  std::string tokenizer_sha256;  // of the tokenizer's model file
  std::string source;            // what data.path resolved to (the shard directory read)
};

// The cache root described above (not created here).
std::string text_cache_root();

// Resolves data.path as described above. `vocab_size` is used only when a tokenizer must be
// trained. Prints one line to stderr when it builds a cache entry (a minute or so for the default
// corpus). Throws InputError/DataError naming the path at fault, DataError when the shards'
// vocabulary differs from the tokenizer's, and DataError naming both hashes when
// data.tokenizer_sha256 is set and the tokenizer file has other bytes.
TextCorpus prepare_text_corpus(const config::DataConfig& data, int64_t vocab_size);

// The vocabulary a text model over `corpus` is built with: the tokenizer's. model.vocab_size cannot
// tell "left at the default" from "set to the default": the default (BERT's WordPiece size) defers
// to the tokenizer, any other value must agree with it (InputError naming both and the fix).
int64_t model_vocab_size(const TextCorpus& corpus, int64_t configured);

}  // namespace batchlab::data
