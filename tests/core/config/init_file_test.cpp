// model.init_from as part of the run's identity: the loader checks the file and records its
// SHA-256 in model.init_sha256, which the canonical TOML (and so the run id) includes.
#include "core/config/init_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/config/loader.h"
#include "core/config/sha256.h"
#include "tests/core/config/config_test_util.h"

namespace batchlab::config {
namespace {

namespace fs = std::filesystem;
using testing::describe;
using testing::diagnostics_of;
using testing::parse_ok;

class InitFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("batchlab_init_file_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string write(const std::string& name, const std::string& bytes) const {
    const auto path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  static std::string config_with(const std::string& model_lines) {
    return "schema_version = 1\n[model]\n" + model_lines +
           "[batch]\nglobal = 256\n[schedule]\nepochs = 10\n";
  }
  static std::string init_line(const std::string& path) { return "init_from = \"" + path + "\"\n"; }

  fs::path dir_;
};

TEST_F(InitFile, RecordsTheFilesSha256InTheCanonicalText) {
  const auto path = write("a.pt", "weights A");
  const auto cfg = parse_ok(config_with(init_line(path)));
  EXPECT_EQ(cfg.model.init_sha256, sha256_hex("weights A"));
  EXPECT_TRUE(cfg.model.init_strict);
  const std::string canonical = to_canonical_toml(cfg);
  EXPECT_NE(canonical.find("init_sha256 = \"" + sha256_hex("weights A") + "\""), std::string::npos)
      << canonical;
  // The canonical text is a fixed point: read back (the hash checked against the file), the same.
  testing::expect_same_config(parse_ok(canonical), cfg);
  EXPECT_EQ(to_canonical_toml(parse_ok(canonical)), canonical);
}

TEST_F(InitFile, AnotherFileOrOtherContentsIsAnotherRunId) {
  const auto path = write("a.pt", "weights A");
  const std::string first = run_id(parse_ok(config_with(init_line(path))));
  write("a.pt", "weights B");  // same size, other bytes
  const std::string second = run_id(parse_ok(config_with(init_line(path))));
  EXPECT_NE(first, second);
  // The same bytes under another name: another path, another id as well.
  const auto copy = write("b.pt", "weights B");
  EXPECT_NE(run_id(parse_ok(config_with(init_line(copy)))), second);
  // And without init_from the run id is the one it always was: unused keys are not written.
  const std::string plain = to_canonical_toml(parse_ok(config_with("")));
  for (const char* key : {"init_from", "init_sha256", "init_strict"}) {
    EXPECT_EQ(plain.find(key), std::string::npos) << key << "\n" << plain;
  }
  const auto loose = parse_ok(config_with(init_line(path) + "init_strict = false\n"));
  EXPECT_NE(to_canonical_toml(loose).find("init_strict = false"), std::string::npos);
  EXPECT_NE(run_id(loose), second);
}

TEST_F(InitFile, AMissingFileIsADiagnosticNamingTheKeyAndThePath) {
  const auto path = (dir_ / "nope.pt").string();
  testing::expect_one(config_with(init_line(path)), "model.init_from", 3, 13, "no such file");
  const auto d = diagnostics_of(config_with(init_line(path)));
  ASSERT_EQ(d.size(), 1u) << describe(d);
  EXPECT_NE(d[0].value.find(path), std::string::npos) << d[0].to_string();
  EXPECT_NE(d[0].rule.find("torch.save(model.state_dict(), f)"), std::string::npos);
  // A folder is read as a Hugging Face save_pretrained folder: one without config.json is refused
  // as such (tests/cli/hf_interchange_test.cpp has the folders that load).
  testing::expect_one(config_with(init_line(dir_.string())), "model.init_from", 3, 13,
                      "a folder without config.json");
}

TEST_F(InitFile, ARecordedHashMustStillMatchTheFile) {
  const auto path = write("a.pt", "weights A");
  const auto job = to_canonical_toml(parse_ok(config_with(init_line(path))));
  write("a.pt", "weights changed after planning");
  const auto d = diagnostics_of(job);
  ASSERT_EQ(d.size(), 1u) << describe(d);
  EXPECT_EQ(d[0].key, "model.init_sha256");
  EXPECT_NE(d[0].rule.find("the file changed after this configuration was written"),
            std::string::npos)
      << d[0].to_string();
  EXPECT_NE(d[0].rule.find(sha256_hex("weights changed after planning")), std::string::npos);
  // Export reads recorded runs whose starting file may be gone: no file access, the hash kept.
  LoadOptions recorded;
  recorded.read_init_file = false;
  fs::remove(path);
  EXPECT_EQ(parse_ok(job, recorded).model.init_sha256, sha256_hex("weights A"));
}

TEST_F(InitFile, AHashWithoutAFileIsRefused) {
  testing::expect_one(config_with("init_sha256 = \"abc\"\n"), "model.init_sha256", 3, 15,
                      "only means something beside model.init_from");
}

TEST_F(InitFile, FileSha256SeesAChangedFile) {
  const auto path = write("c.pt", "one");
  EXPECT_EQ(file_sha256(path), sha256_hex("one"));
  write("c.pt", "three");  // another size: the remembered hash is not reused
  EXPECT_EQ(file_sha256(path), sha256_hex("three"));
  EXPECT_THROW(file_sha256((dir_ / "missing").string()), InputError);
}

}  // namespace
}  // namespace batchlab::config
