// The safetensors reader and writer (models/safetensors.h): a round trip of every dtype batchlab
// writes, and each way a file can be malformed, refused with the file's name and the reason. The
// files the Python package writes are read in tests/cli/hf_interchange_test.cpp.
#include "models/safetensors.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/errors.h"

namespace batchlab::models {
namespace {

namespace fs = std::filesystem;

struct SafetensorsFiles {
  fs::path dir = fs::temp_directory_path() / ("batchlab-safetensors-" + std::to_string(::getpid()) +
                                              "-" + std::to_string(std::rand()));
  SafetensorsFiles() { fs::create_directories(dir); }
  ~SafetensorsFiles() { fs::remove_all(dir); }

  // A file of a header given as text (its length written before it) and `data` bytes after it.
  std::string raw(const std::string& name, const std::string& header, size_t data_bytes) const {
    std::string bytes;
    for (int i = 0; i < 8; ++i)
      bytes.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
    bytes += header + std::string(data_bytes, '\0');
    return write(name, bytes);
  }
  std::string write(const std::string& name, const std::string& bytes) const {
    const auto path = (dir / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
};

// The InputError's message for reading `path`, or "" when it reads.
std::string refusal(const std::string& path) {
  try {
    read_safetensors(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Safetensors, RoundTripsEveryDtypeWithValuesNamesAndMetadata) {
  SafetensorsFiles files;
  const auto x = torch::arange(12, torch::kFloat).reshape({3, 4}) / 4;
  const StateDict entries = {{"f32", x},
                             {"f16", x.to(torch::kHalf)},
                             {"bf16", x.to(torch::kBFloat16)},
                             {"f64", x.to(torch::kDouble)},
                             {"count", torch::tensor(int64_t{7})},
                             {"empty", torch::zeros({0, 5})},
                             {"t", x.t()}};  // not contiguous: written as its values
  const auto bytes = safetensors_bytes(entries, {{"format", "pt"}});
  // The header is padded to a multiple of 8, so the data start aligned.
  uint64_t header = 0;
  for (int i = 7; i >= 0; --i) header = (header << 8) | static_cast<uint8_t>(bytes[i]);
  EXPECT_EQ(header % 8, 0u);
  const auto path = files.write("all.safetensors", std::string(bytes.begin(), bytes.end()));
  const auto read = read_safetensors(path);
  ASSERT_EQ(read.tensors.size(), entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(read.tensors[i].first, entries[i].first);
    EXPECT_EQ(read.tensors[i].second.scalar_type(), entries[i].second.scalar_type());
    EXPECT_TRUE(torch::equal(read.tensors[i].second, entries[i].second)) << entries[i].first;
  }
  EXPECT_EQ(read.metadata.at("format"), "pt");
  EXPECT_TRUE(is_safetensors_path(path));
  EXPECT_FALSE(is_safetensors_path("model.pt"));
}

TEST(Safetensors, MalformedFilesAreRefusedNamingTheFileAndWhatIsWrong) {
  SafetensorsFiles files;
  const std::string f32 = R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})";
  struct Case {
    std::string path;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {files.write("short.safetensors", "abc"), "shorter than the 8-byte header length"},
      {files.write("long_header.safetensors",
                   std::string("\xff\x00\x00\x00\x00\x00\x00\x00", 8) + "{}"),
       "header length 255 runs past the end of the file (10 bytes)"},
      {files.raw("not_json.safetensors", "{\"a\": [1, 2", 0), "is not a JSON object"},
      {files.raw("list.safetensors", "[1, 2]", 0), "is not a JSON object"},
      {files.raw("fields.safetensors", R"({"a": {"dtype": "F32"}})", 0),
       "tensor a: expected an object with dtype, shape and data_offsets"},
      {files.raw("dtype.safetensors",
                 R"({"a": {"dtype": "F8_E9", "shape": [2], "data_offsets": [0, 2]}})", 2),
       "tensor a: unknown dtype F8_E9"},
      {files.raw("range.safetensors", f32, 4),
       "tensor a: data_offsets [0, 8] out of range: the data after the header holds 4 bytes"},
      {files.raw("reversed.safetensors",
                 R"({"a": {"dtype": "F32", "shape": [0], "data_offsets": [8, 0]}})", 8),
       "tensor a: data_offsets [8, 0] out of range"},
      {files.raw("size.safetensors",
                 R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", 8),
       "tensor a: data_offsets [0, 8] span 8 bytes, but shape [3] of F32 needs 12"},
      {files.raw("overlap.safetensors",
                 R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                     "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                 12),
       "tensors a [0, 8] and b [4, 12] overlap"},
      {files.raw("gap.safetensors",
                 R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 8),
       "bytes [0, 4) of the data belong to no tensor (before a)"},
      {files.raw("trailing.safetensors", f32, 12), "the last 4 belong to no tensor"},
      {files.raw("shape.safetensors",
                 R"({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", 4),
       "tensor a: shape [-1] holds a value that is no size"},
      {files.raw("metadata.safetensors", R"({"__metadata__": {"format": 1}})", 0),
       "__metadata__.format is not a string"},
  };
  for (const auto& c : cases) {
    const std::string message = refusal(c.path);
    EXPECT_NE(message.find(c.path + ": not a valid safetensors file: "), std::string::npos)
        << c.path << ": " << message;
    EXPECT_NE(message.find(c.reason), std::string::npos) << c.reason << "\n" << message;
  }
  EXPECT_NE(refusal((files.dir / "missing.safetensors").string()).find("cannot be read"),
            std::string::npos);
}

// A header nested 200,000 deep (400 KB) parsed, then overflowed the stack when the error message
// printed the value (exit 139); the package refuses more than 128 levels, and so does batchlab.
TEST(Safetensors, DeeplyNestedHeaderIsRefusedNamingTheFileNotACrash) {
  SafetensorsFiles files;
  const size_t levels = 200'000;
  const std::string header = "{\"a\": " + std::string(levels, '[') + std::string(levels, ']') + "}";
  const std::string path = files.raw("deep.safetensors", header, 0);
  const std::string message = refusal(path);
  EXPECT_NE(message.find(path + ": the safetensors header nests arrays and objects more than 128 "
                                "levels deep"),
            std::string::npos)
      << message;
}

// A tensor entry that is a huge list is reported by its first characters, not in full.
TEST(Safetensors, ErrorMessagesQuoteAnExcerptOfALongValue) {
  SafetensorsFiles files;
  std::string list = "[0";
  for (int i = 0; i < 100'000; ++i) list += ",0";
  list += "]";
  const std::string path = files.raw("list_entry.safetensors", "{\"a\": " + list + "}", 0);
  const std::string message = refusal(path);
  EXPECT_NE(message.find("tensor a: expected an object with dtype, shape and data_offsets, got "
                         "[0,0,0"),
            std::string::npos)
      << message.substr(0, 300);
  EXPECT_NE(message.find("... (200003 characters)"), std::string::npos) << message.substr(0, 300);
  EXPECT_LT(message.size(), 1000u);
}

TEST(Safetensors, ReadWeightsFileChoosesTheFormatByExtension) {
  SafetensorsFiles files;
  const StateDict entries = {{"w", torch::ones({2, 2})}};
  const auto bytes = safetensors_bytes(entries, {});
  const auto st = files.write("w.safetensors", std::string(bytes.begin(), bytes.end()));
  write_state_dict(entries, (files.dir / "w.pt").string());
  EXPECT_TRUE(torch::equal(read_weights_file(st)[0].second, entries[0].second));
  EXPECT_TRUE(
      torch::equal(read_weights_file((files.dir / "w.pt").string())[0].second, entries[0].second));
  // A torch.save file misnamed .safetensors is refused as what it claims to be.
  fs::copy_file(files.dir / "w.pt", files.dir / "pt.safetensors");
  EXPECT_NE(refusal((files.dir / "pt.safetensors").string()).find("runs past the end"),
            std::string::npos);
}

}  // namespace
}  // namespace batchlab::models
