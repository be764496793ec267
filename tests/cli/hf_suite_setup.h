// The setup the Hugging Face interchange suites share (hf_interchange_test.cpp for BERT,
// hf_gpt2_interchange_test.cpp for GPT-2): a few documents of Debian's Python documentation
// copied into a scratch folder, a SentencePiece tokenizer trained on them through the binary, and
// one short run trained and exported with --format hf, each step's failure kept as a message
// for the suite's SetUp to report (a suite setup cannot ASSERT).
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/cli/cli_runner.h"
#include "tests/test_paths.h"

namespace batchlab::cli::testing {

inline const std::filesystem::path kPythonDocsLibrary =
    "/usr/share/doc/python3.11/html/_sources/library";

// tests/cli/hf_interchange.py `args` under the Python whose torch batchlab links (the pinned
// transformers, safetensors, torchvision and timm), stderr with stdout.
inline CommandResult run_hf_peer(const std::string& args) {
  const std::string script = std::string(test_paths::source_dir()) + "/tests/cli/hf_interchange.py";
  return run_shell(shell_quote(test_paths::peer_python()) + " " + shell_quote(script) + " " + args +
                   " 2>&1");
}

// Copies `docs` (names without ".rst.txt") into DIR/docs, points BATCHLAB_CACHE_DIR at DIR/cache
// and trains the tokenizer DIR/tok(.model) of `vocab` pieces on them. "" or what went wrong.
inline std::string prepare_docs_and_tokenizer(const TempDir& dir,
                                              const std::vector<std::string>& docs, int vocab) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(kPythonDocsLibrary)) {
    return kPythonDocsLibrary.string() + " is missing: scripts/setup.sh installs python3.11-doc";
  }
  fs::create_directories(dir.path / "docs");
  for (const auto& doc : docs) {
    fs::copy_file(kPythonDocsLibrary / (doc + ".rst.txt"), dir.path / "docs" / (doc + ".rst.txt"));
  }
  ::setenv("BATCHLAB_CACHE_DIR", (dir.path / "cache").c_str(), 1);
  const auto tok = run_batchlab("data tokenizer " + shell_quote((dir.path / "docs").string()) +
                                " --out " + shell_quote((dir.path / "tok").string()) +
                                " --vocab-size " + std::to_string(vocab));
  return tok.exit_code == 0 ? "" : "batchlab data tokenizer:\n" + tok.output;
}

// A run of `config` trained into DIR/`db` and exported with --format hf to DIR/hf.
struct HfExportedRun {
  std::string problem;  // "" when both commands succeeded
  std::string run_id;
  std::string export_output;
};

inline HfExportedRun train_and_export_hf(const TempDir& dir, const std::string& config,
                                         const std::string& db) {
  HfExportedRun out;
  const std::string db_path = (dir.path / db).string();
  const auto trained =
      run_batchlab("train " + shell_quote(config) + " --db " + shell_quote(db_path));
  out.run_id = run_id_of(trained.output);
  if (trained.exit_code != 0 || out.run_id.empty()) {
    out.problem = "batchlab train:\n" + trained.output;
    return out;
  }
  const auto exported =
      run_batchlab("export --db " + shell_quote(db_path) + " --run " + out.run_id +
                   " --format hf --out " + shell_quote((dir.path / "hf").string()));
  if (exported.exit_code != 0) out.problem = "batchlab export --format hf:\n" + exported.output;
  out.export_output = exported.output;
  return out;
}

}  // namespace batchlab::cli::testing
