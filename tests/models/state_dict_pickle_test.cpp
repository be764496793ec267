#include "models/state_dict_pickle.h"

#include <caffe2/serialize/inline_container.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/errors.h"

namespace batchlab::models {
namespace {

using namespace std::string_literals;  // programs contain NUL bytes

std::vector<char> bytes(const std::string& s) { return std::vector<char>(s.begin(), s.end()); }

// BINUNICODE of a short ASCII string.
std::string unicode(const std::string& s) {
  std::string out = "X";
  out += static_cast<char>(s.size());
  out += std::string(3, '\0');
  return out + s;
}

// A zip archive holding `program` as data.pkl, as torch.save lays it out.
std::vector<char> archive_with(const std::string& program) {
  std::vector<char> out;
  caffe2::serialize::PyTorchStreamWriter writer([&out](const void* data, size_t n) -> size_t {
    const char* p = static_cast<const char*>(data);
    out.insert(out.end(), p, p + n);
    return n;
  });
  writer.writeRecord("data.pkl", program.data(), program.size());
  writer.writeEndOfFile();
  return out;
}

const std::string kProto2 = "\x80\x02";
const std::string kOrderedDictGlobal = "ccollections\nOrderedDict\n";

TEST(StateDictPickle, OrderedDictBecomesADict) {
  // OrderedDict() memoized in 0 and 1; a later OrderedDict() through the memo (BINGET 0).
  const std::string program = kProto2 + kOrderedDictGlobal + "q\x00)Rq\x01("s + unicode("a") +
                              "h\x00)R"s + unicode("b") + "K\x01u.";
  const std::string expected =
      kProto2 + "}q\x00q\x01("s + unicode("a") + "}" + unicode("b") + "K\x01u.";
  EXPECT_EQ(rewrite_state_dict_pickle(bytes(program), "f.pt"), bytes(expected));
  const torch::IValue value = torch::pickle_load(archive_with(expected));
  ASSERT_TRUE(value.isGenericDict());
  EXPECT_EQ(value.toGenericDict().size(), 2u);
}

TEST(StateDictPickle, SetItemAndAppendBecomeTheirBatchForms) {
  // {"k": [1]} written with SETITEM and APPEND: MARKs go before the key and the list element.
  const std::string program = kProto2 + "}" + unicode("k") + "]K\x01" + "as.";
  const std::string expected = kProto2 + "}(" + unicode("k") + "](K\x01" + "eu.";
  EXPECT_EQ(rewrite_state_dict_pickle(bytes(program), "f.pt"), bytes(expected));
  const torch::IValue value = torch::pickle_load(archive_with(expected));
  ASSERT_TRUE(value.isGenericDict());
  EXPECT_EQ(value.toGenericDict().at("k").toList().size(), 1u);
}

TEST(StateDictPickle, TopLevelBuildKeepsTheAttributesBeside) {
  // OrderedDict with `_metadata` = {"": {"version": 1}}, as a state_dict pickles it.
  const std::string program = kProto2 + kOrderedDictGlobal + "q\x00)Rq\x01}"s +
                              unicode("_metadata") + "h\x00)R"s + unicode("") + "}" +
                              unicode("version") + "K\x01sssb.";
  const std::vector<char> rewritten = rewrite_state_dict_pickle(bytes(program), "f.pt");
  EXPECT_EQ(static_cast<uint8_t>(rewritten[rewritten.size() - 2]), 0x86);  // TUPLE2
  const torch::IValue value =
      torch::pickle_load(archive_with(std::string(rewritten.begin(), rewritten.end())));
  ASSERT_TRUE(value.isTuple());
  EXPECT_TRUE(value.toTupleRef().elements()[0].isGenericDict());
  EXPECT_TRUE(value.toTupleRef().elements()[1].toGenericDict().contains("_metadata"));
}

TEST(StateDictPickle, ProgramsItCannotReadAreInputErrors) {
  const auto message = [](const std::string& program) -> std::string {
    try {
      rewrite_state_dict_pickle(bytes(program), "weights.pt");
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  // Truncated: BINUNICODE announces 9 bytes, 2 follow; no STOP.
  EXPECT_NE(message(kProto2 + "X\x09\x00\x00\x00"s + "ab")
                .find("weights.pt: cannot read the "
                      "state_dict: the pickle program is "
                      "truncated"),
            std::string::npos);
  EXPECT_NE(message(kProto2 + "N").find("without STOP"), std::string::npos);
  // Protocol 4's SHORT_BINUNICODE.
  EXPECT_NE(message(std::string("\x80\x04\x8c\x01") + "a.").find("opcode 0x8c"), std::string::npos);
  // OrderedDict called with arguments.
  EXPECT_NE(message(kProto2 + kOrderedDictGlobal + "]\x85R.").find("used other than"),
            std::string::npos);
  // SETITEM with nothing to set.
  EXPECT_NE(message(kProto2 + "}s.").find("malformed"), std::string::npos);
}

std::string pickle_refusal(const std::string& program) {
  try {
    rewrite_state_dict_pickle(bytes(program), "deep.pt");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// 200,000 nested lists (400 KB) would be built by LibTorch's unpickler and destroyed recursively.
TEST(StateDictPickle, ObjectsNestedPastTheBoundAreRefusedBeforeLibTorchBuildsThem) {
  const size_t levels = 200'000;
  const std::string deep = kProto2 + std::string(levels, ']') + std::string(levels - 1, 'a') + ".";
  EXPECT_NE(
      pickle_refusal(deep).find("deep.pt: cannot read the state_dict: its objects nest more than "
                                "128 levels deep"),
      std::string::npos)
      << pickle_refusal(deep);
  const std::string shallow = kProto2 + std::string(127, ']') + std::string(126, 'a') + ".";
  EXPECT_EQ(pickle_refusal(shallow), "");
}

// A chain built through the memo keeps the stack two items high: each list is appended to the
// previous one after that one was memoized, as torch.save fills its memoized dicts.
TEST(StateDictPickle, NestingBuiltThroughTheMemoIsMeasuredToo) {
  std::string program = kProto2 + "]q\x00"s;
  // "]q\x01" "a0h\x01": the literal is split so that 'a' is not read as a hex digit of \x01.
  for (int i = 0; i < 200; ++i)
    program +=
        "]q\x01"
        "a0h\x01"s;
  program += "0h\x00."s;
  EXPECT_NE(pickle_refusal(program).find("nest more than 128 levels"), std::string::npos)
      << pickle_refusal(program);
  EXPECT_NE(pickle_refusal(kProto2 + "]q\x00h\x00"
                                     "a."s)
                .find("an object holds itself"),
            std::string::npos);
}

// fuzz_state_dict's finding (fuzz/corpus/state_dict/oom-memo-slot-0x72727272.pkl): one
// LONG_BINPUT naming slot 0x72727272 had LibTorch's unpickler size its memo table at 30.7 GB.
TEST(StateDictPickle, AMemoSlotPastTheProgramsLengthIsRefusedBeforeLibTorchMakesRoomForIt) {
  const std::string far = kProto2 + "}r\x72\x72\x72\x72."s;
  EXPECT_NE(pickle_refusal(far).find("deep.pt: cannot read the state_dict: a PUT at byte 3 names "
                                     "memo slot 1920103026 in a program of 4 instructions"),
            std::string::npos)
      << pickle_refusal(far);
  // torch.save numbers its slots from 0 up; the last slot a program can fill still passes.
  EXPECT_EQ(pickle_refusal(kProto2 + "}r\x04\x00\x00\x00."s), "");
}

TEST(StateDictPickle, ArchivesOfLibTorchPassThrough) {
  c10::Dict<std::string, torch::Tensor> dict;
  dict.insert("w", torch::arange(6, torch::kFloat).view({2, 3}));
  dict.insert("n", torch::tensor(int64_t{5}));
  const std::vector<char> loadable = make_loadable_by_libtorch(torch::pickle_save(dict), "x.pt");
  const auto loaded = torch::pickle_load(loadable).toGenericDict();
  ASSERT_EQ(loaded.size(), 2u);
  EXPECT_TRUE(torch::equal(loaded.at("w").toTensor(), dict.at("w")));
  EXPECT_EQ(loaded.at("n").toTensor().item<int64_t>(), 5);

  EXPECT_THROW(make_loadable_by_libtorch(bytes("PK but not really a zip"), "y.pt"), InputError);
}

}  // namespace
}  // namespace batchlab::models
