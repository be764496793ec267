// A checkpoint's pickles are walked before LibTorch reads them (core/train/checkpoint_pickles.h):
// what they declare must fit the archive, or the file is a CheckpointError naming it and the
// record (exit 2). The first case is the input fuzz/checkpoint_fuzz.cpp found (issue 45): a rank
// file of 5.7 KB whose data.pkl claims an 890 MB string made LibTorch take 1.5 GB and 8 s before
// it refused the record as too short.
#include "core/train/checkpoint_pickles.h"

#include <caffe2/serialize/in_memory_adapter.h>
#include <caffe2/serialize/inline_container.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include "core/config/sha256.h"
#include "core/errors.h"
#include "core/train/checkpoint.h"
#include "core/train/checkpoint_code.h"
#include "tests/temp_dir.h"

namespace batchlab::train {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;
constexpr const char* kRunId = "0123456789abcdef";
constexpr size_t kHeader = 8 + 8 + 32;  // magic, payload length, SHA-256 (checkpoint.h)

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The framed file `path` with its archive's record `record` changed by `edit`, written back with
// the right checksum: what a hand (or a fuzzer) can make that the checksum does not catch.
void rewrite_record(const fs::path& path, const std::string& record,
                    const std::function<void(std::string&)>& edit) {
  const std::string payload = read_file(path).substr(kHeader);
  caffe2::serialize::PyTorchStreamReader reader(
      std::make_shared<caffe2::serialize::MemoryReadAdapter>(payload.data(),
                                                             static_cast<off_t>(payload.size())));
  std::string archive;
  caffe2::serialize::PyTorchStreamWriter writer([&archive](const void* p, size_t n) -> size_t {
    archive.append(static_cast<const char*>(p), n);
    return n;
  });
  for (const std::string& name : reader.getAllRecords()) {
    if (name == "version" || name == ".data/version" || name == "byteorder" ||
        name == ".data/serialization_id") {
      continue;
    }
    auto [data, size] = reader.getRecord(name);
    std::string bytes(static_cast<const char*>(data.get()), size);
    if (name == record) edit(bytes);
    writer.writeRecord(name, bytes.data(), bytes.size());
  }
  writer.writeEndOfFile();
  config::Sha256 sha;
  sha.update(archive);
  const auto digest = sha.digest();
  const uint64_t length = archive.size();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write("BLCKPT01", 8);
  out.write(reinterpret_cast<const char*>(&length), sizeof length);
  out.write(reinterpret_cast<const char*>(digest.data()),
            static_cast<std::streamsize>(digest.size()));
  out << archive;
}

void rewrite_data_pkl(const fs::path& path, const std::function<void(std::string&)>& edit) {
  rewrite_record(path, "data.pkl", edit);
}

// Replaces the first occurrence of `from` in `bytes` (which must hold it).
void replace_first(std::string& bytes, const std::string& from, const std::string& to) {
  const size_t at = bytes.find(from);
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, from.size(), to);
}

// The message load_model_weights refuses the file with ("" when it reads it).
std::string refusal(const fs::path& path) {
  torch::nn::Linear model(3, 2);
  try {
    load_model_weights(path.string(), kRunId, *model);
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "";
}

long peak_rss_kb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

struct RankFile {
  test_support::TempDir dir{"ckpt-pickles"};
  fs::path path;
  RankFile() {
    CheckpointStore store(dir.path.string());
    path = store.save_rank_state(kRunId, 7, 1);
  }
};

TEST(CheckpointPickles, AStringLongerThanItsRecordIsRefusedBeforeAnythingIsAllocated) {
  RankFile file;
  // The run id's BINUNICODE: its 4-byte length (16) becomes 0x35310010 = 892,403,728 bytes.
  rewrite_data_pkl(file.path, [](std::string& pkl) {
    replace_first(pkl, "X\x10\x00\x00\x00"s + kRunId, "X\x10\x00\x31\x35"s + kRunId);
  });
  const long before = peak_rss_kb();
  const std::string message = refusal(file.path);
  EXPECT_NE(message.find(file.path.string() + ": record data.pkl of the checkpoint cannot be read "
                                              "safely: the pickle program is truncated"),
            std::string::npos)
      << message;
  // LibTorch alone took 1.5 GB for this file; the walk takes next to nothing.
  EXPECT_LT(peak_rss_kb() - before, 256 * 1024) << "KB of peak memory added";
}

// Found by fuzz_checkpoint (fifth runs; fuzz/corpus/checkpoint/oom-1.7gb-string-in-a-debug-table
// .records): the source's debug table is a pickle too, which LibTorch unpickles when a code record
// does not lex, allocating what its strings claim (1.7 GB from a 2.6 KB file). Its first string's
// 4-byte length (24) becomes 0x35310018 = 892,403,736 bytes.
TEST(CheckpointPickles, ASourceDebugTableIsWalkedLikeDataPkl) {
  RankFile file;
  rewrite_record(file.path, "code/__torch__.py.debug_pkl", [](std::string& table) {
    replace_first(table, "X\x18\x00\x00\x00"s + "FORMAT", "X\x18\x00\x31\x35"s + "FORMAT");
  });
  const long before = peak_rss_kb();
  const std::string message = refusal(file.path);
  EXPECT_NE(message.find(file.path.string() + ": record code/__torch__.py.debug_pkl of the "
                                              "checkpoint cannot be read safely"),
            std::string::npos)
      << message;
  EXPECT_LT(peak_rss_kb() - before, 256 * 1024) << "KB of peak memory added";
}

TEST(CheckpointPickles, AMemoSlotPastTheProgramIsRefused) {
  RankFile file;
  // A LONG_BINPUT to slot 2^31 - 1 right after PROTO 2 and the first GLOBAL's BINPUT 0.
  rewrite_data_pkl(file.path,
                   [](std::string& pkl) { replace_first(pkl, "q\x00"s, "r\xff\xff\xff\x7f"s); });
  EXPECT_NE(refusal(file.path).find("names memo slot 2147483647 in a program of"),
            std::string::npos)
      << refusal(file.path);
}

TEST(CheckpointPickles, AStorageLargerThanItsRecordIsRefused) {
  RankFile file;
  // The CPU generator's state: a ByteStorage of 5,056 elements (BININT2 0x13c0) in record data/1,
  // then the tensor's size (5,056). The storage now claims 65,535.
  rewrite_data_pkl(file.path,
                   [](std::string& pkl) { replace_first(pkl, "M\xc0\x13"s, "M\xff\xff"s); });
  EXPECT_NE(refusal(file.path).find("claims 65535 elements of 1 bytes, but its record data/1 "
                                    "holds 5056 bytes"),
            std::string::npos)
      << refusal(file.path);
}

TEST(CheckpointPickles, ATensorPastTheEndOfItsStorageIsRefused) {
  RankFile file;
  // The tensor's size (the second BININT2 5,056) becomes 65,535 over the 5,056-byte storage.
  rewrite_data_pkl(file.path, [](std::string& pkl) {
    const size_t first = pkl.find("M\xc0\x13"s);
    ASSERT_NE(first, std::string::npos);
    const size_t second = pkl.find("M\xc0\x13"s, first + 1);
    ASSERT_NE(second, std::string::npos);
    pkl.replace(second, 3, "M\xff\xff"s);
  });
  EXPECT_NE(refusal(file.path).find("reaches past the end of its storage of 5056 elements"),
            std::string::npos)
      << refusal(file.path);
}

TEST(CheckpointPickles, DeepNestingIsRefused) {
  RankFile file;
  // 200,000 nested lists in place of the program.
  rewrite_data_pkl(file.path, [](std::string& pkl) {
    pkl = "\x80\x02"s + std::string(200'000, ']') + std::string(199'999, 'a') + ".";
  });
  EXPECT_NE(refusal(file.path).find("its objects nest more than 128 levels deep"),
            std::string::npos)
      << refusal(file.path);
}

// The module types' TorchScript source, which LibTorch compiles recursively: 200,000 nested
// parentheses, an operator chain as long, blocks nested 3,000 deep. Each ended the process with a
// stack overflow before the check (the first was tried; the others are refused on their shape).
TEST(CheckpointPickles, DeeplyNestedCodeIsRefused) {
  const auto refused = [](const std::string& appended) {
    RankFile file;
    rewrite_record(file.path, "code/__torch__.py",
                   [&](std::string& code) { code += "\ndef f(x):\n  return " + appended + "\n"; });
    return refusal(file.path);
  };
  EXPECT_NE(refused(std::string(200'000, '(') + "x" + std::string(200'000, ')'))
                .find("record code/__torch__.py of the checkpoint cannot be read safely: brackets "
                      "nest more than 64 deep"),
            std::string::npos);
  std::string chain = "x";
  for (int i = 0; i < 100'000; ++i) chain += "+x";
  EXPECT_NE(refused(chain).find("a line longer than 8192 characters"), std::string::npos);
  std::string blocks = "x\n";
  for (int i = 1; i < 3'000; ++i) blocks += std::string(2 * i, ' ') + "if x:\n";
  EXPECT_NE(refused(blocks).find("indented"), std::string::npos);
  // Comments and strings may hold any brackets (a rank file has no weights: that is the refusal).
  EXPECT_EQ(refused("x # " + std::string(1'000, '(')).find("cannot be read safely"),
            std::string::npos);
  EXPECT_EQ(refused("'" + std::string(1'000, '[') + "'").find("cannot be read safely"),
            std::string::npos);
}

// Found by fuzz_checkpoint (under AddressSanitizer: a read one byte past the record): a code
// record that ends in the indentation of its last line. The input is in
// fuzz/corpus/checkpoint/crash-code-record-ending-in-indentation.records.
TEST(CheckpointPickles, CodeEndingInIndentationIsScannedToItsEndOnly) {
  EXPECT_EQ(checkpoint_code_problem("x: str\n "), "");
  EXPECT_EQ(checkpoint_code_problem("  "), "");
  EXPECT_NE(checkpoint_code_problem(std::string(600, ' ')), "");
}

TEST(CheckpointPickles, FilesBatchlabWroteAreRead) {
  test_support::TempDir dir("ckpt-pickles");
  CheckpointStore store(dir.path.string());
  torch::nn::Linear model(3, 2);
  store.save_best(kRunId, {3, "val_acc", 0.5}, *model);
  EXPECT_EQ(load_model_weights(store.best_path(), kRunId, *model), 3);
  std::vector<std::string> warnings;
  const std::string rank = store.save_rank_state(kRunId, 7, 1);
  EXPECT_TRUE(store.load_rank_state(kRunId, 7, 1, warnings));
  EXPECT_TRUE(warnings.empty());
}

}  // namespace
}  // namespace batchlab::train
