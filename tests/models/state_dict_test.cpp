#include "models/state_dict.h"

#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/errors.h"
#include "models/resnet.h"

namespace batchlab::models {
namespace {

namespace fs = std::filesystem;

class StateDictFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("batchlab_state_dict_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

ResNet small_resnet18(uint64_t seed) {
  torch::manual_seed(seed);
  ResNetOptions o;
  o.depth = 18;
  o.stem = ResNetStem::kSmall;
  o.num_classes = 10;
  return ResNet(o);
}

// The InputError message of `body`, or "" when it did not throw one.
template <class Body>
std::string input_error_of(Body body) {
  try {
    body();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST_F(StateDictFiles, RoundTripRestoresParametersAndBuffers) {
  ResNet source = small_resnet18(1);
  source.train();
  source.forward(torch::randn({4, 3, 16, 16}));  // non-trivial running statistics
  save_state_dict(source, path("a.pt"));
  EXPECT_FALSE(fs::exists(path("a.pt.tmp")));

  ResNet target = small_resnet18(2);
  load_state_dict(target, path("a.pt"));
  const StateDict expected = state_dict(source);
  const StateDict actual = state_dict(target);
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(actual[i].first, expected[i].first);
    EXPECT_TRUE(torch::equal(actual[i].second, expected[i].second)) << expected[i].first;
  }
  EXPECT_EQ(target.named_buffers()["bn1.num_batches_tracked"].item<int64_t>(), 1);

  // read_state_dict keeps the file's order and dtypes.
  const StateDict read = read_state_dict(path("a.pt"));
  ASSERT_EQ(read.size(), expected.size());
  EXPECT_EQ(read.front().first, "conv1.weight");
  EXPECT_EQ(read[5].first, "bn1.num_batches_tracked");
  EXPECT_EQ(read[5].second.scalar_type(), torch::kLong);
}

TEST_F(StateDictFiles, StateDictOrderIsModuleByModule) {
  // Own parameters, own buffers, then children: bn1's buffers come before layer1's parameters.
  const StateDict entries = state_dict(small_resnet18(0));
  std::vector<std::string> names;
  for (const auto& e : entries) names.push_back(e.first);
  const std::vector<std::string> head(names.begin(), names.begin() + 8);
  EXPECT_EQ(head,
            (std::vector<std::string>{"conv1.weight", "bn1.weight", "bn1.bias", "bn1.running_mean",
                                      "bn1.running_var", "bn1.num_batches_tracked",
                                      "layer1.0.conv1.weight", "layer1.0.bn1.weight"}));
  EXPECT_EQ(names.back(), "fc.bias");
  // Entries share storage with the module (detached aliases, not copies).
  ResNet net = small_resnet18(0);
  EXPECT_EQ(state_dict(net).front().second.data_ptr(),
            net.named_parameters()["conv1.weight"].data_ptr());
}

TEST_F(StateDictFiles, MismatchNamesTheFileAndEveryKindOfProblem) {
  ResNet net = small_resnet18(0);
  StateDict entries = state_dict(net);
  StateDict edited;
  for (auto& [name, tensor] : entries) {
    if (name == "layer1.0.conv1.weight") continue;                // missing
    if (name == "fc.weight") tensor = torch::zeros({1000, 512});  // wrong shape
    edited.emplace_back(name, tensor);
  }
  edited.emplace_back("head.weight", torch::zeros({3}));  // unexpected
  write_state_dict(edited, path("bad.pt"));

  const torch::Tensor before = net.named_parameters()["conv1.weight"].clone();
  const std::string message = input_error_of([&] { load_state_dict(net, path("bad.pt")); });
  EXPECT_NE(message.find(path("bad.pt")), std::string::npos) << message;
  EXPECT_NE(message.find("missing keys (1): layer1.0.conv1.weight"), std::string::npos) << message;
  EXPECT_NE(message.find("unexpected keys (1): head.weight"), std::string::npos) << message;
  EXPECT_NE(message.find("shape mismatches (1): fc.weight (file [1000, 512], model [10, 512])"),
            std::string::npos)
      << message;
  // Nothing was copied.
  EXPECT_TRUE(torch::equal(net.named_parameters()["conv1.weight"], before));
}

TEST_F(StateDictFiles, ManyMissingKeysAreCountedNotAllPrinted) {
  write_state_dict({{"only.weight", torch::zeros({1})}}, path("one.pt"));
  ResNet net = small_resnet18(0);
  const std::string message = input_error_of([&] { load_state_dict(net, path("one.pt")); });
  // 122 entries less the 20 batch counters, which may be absent.
  EXPECT_NE(
      message.find("missing keys (102): conv1.weight, bn1.weight, bn1.bias, bn1.running_mean"),
      std::string::npos)
      << message;
  EXPECT_NE(message.find("(77 more)"), std::string::npos) << message;
}

TEST_F(StateDictFiles, MissingBatchCountersAreTreatedAsZero) {
  // Files from before PyTorch 0.4.1 have no num_batches_tracked; PyTorch loads them with 0.
  ResNet source = small_resnet18(1);
  StateDict entries;
  for (auto& e : state_dict(source)) {
    if (e.first.find("num_batches_tracked") == std::string::npos) entries.push_back(e);
  }
  ResNet target = small_resnet18(2);
  target.train();
  target.forward(torch::randn({2, 3, 8, 8}));
  load_state_dict(target, entries, "old.pth");
  EXPECT_EQ(target.named_buffers()["layer1.0.bn1.num_batches_tracked"].item<int64_t>(), 0);
  EXPECT_TRUE(
      torch::equal(target.named_parameters()["fc.weight"], source.named_parameters()["fc.weight"]));
}

TEST_F(StateDictFiles, UnreadableFilesNameThePath) {
  EXPECT_NE(input_error_of([&] { read_state_dict(path("absent.pt")); }).find(path("absent.pt")),
            std::string::npos);

  {
    std::ofstream out(path("garbage.pt"), std::ios::binary);
    out << "this is not a zip archive at all, just text";
  }
  const std::string garbage = input_error_of([&] { read_state_dict(path("garbage.pt")); });
  EXPECT_NE(garbage.find(path("garbage.pt")), std::string::npos) << garbage;
  EXPECT_NE(garbage.find("torch.save"), std::string::npos) << garbage;

  // A valid archive cut in half.
  ResNet net = small_resnet18(0);
  save_state_dict(net, path("whole.pt"));
  {
    std::ifstream in(path("whole.pt"), std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream out(path("half.pt"), std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
  }
  const std::string half = input_error_of([&] { read_state_dict(path("half.pt")); });
  EXPECT_NE(half.find(path("half.pt")), std::string::npos) << half;

  // Not a mapping of names to tensors.
  c10::impl::GenericDict mixed(c10::StringType::get(), c10::AnyType::get());
  mixed.insert("step", int64_t{3});
  const std::vector<char> bytes = torch::pickle_save(mixed);
  {
    std::ofstream out(path("mixed.pt"), std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  const std::string mixed_message = input_error_of([&] { read_state_dict(path("mixed.pt")); });
  EXPECT_NE(mixed_message.find("not a name -> tensor pair"), std::string::npos) << mixed_message;
}

TEST_F(StateDictFiles, EachKindOfWrongFileIsNamedForWhatItIs) {
  ResNet net = small_resnet18(0);
  save_state_dict(net, path("whole.pt"));
  std::ifstream in(path("whole.pt"), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto write = [&](const std::string& name, const std::string& content) {
    std::ofstream(path(name), std::ios::binary) << content;
    return path(name);
  };
  const auto message = [&](const std::string& file) {
    const std::string m = input_error_of([&] { read_state_dict(file); });
    EXPECT_NE(m.find(file), std::string::npos) << m;
    return m;
  };
  EXPECT_NE(message(write("half.pt", bytes.substr(0, bytes.size() / 2))).find("truncated"),
            std::string::npos);
  EXPECT_NE(message(write("empty.pt", "")).find("the file is empty"), std::string::npos);
  EXPECT_NE(message(write("text.pt", "weights: none\n")).find("not a torch.save archive"),
            std::string::npos);
  EXPECT_NE(message(write("legacy.pt", std::string("\x80\x02\x8a\x0alegacy", 10)))
                .find("legacy (pre-1.6, non-zip) format"),
            std::string::npos);

  // torch.jit.save's archive is a zip with data.pkl too, but holds code, not a state_dict.
  torch::jit::Module scripted("m");
  scripted.register_parameter("w", torch::zeros({2}), false);
  scripted.save(path("scripted.pt"));
  EXPECT_NE(message(path("scripted.pt")).find("a TorchScript archive (torch.jit.save)"),
            std::string::npos);

  // A pickled list of tensors (torch.save([a, b], f)) is no mapping.
  c10::List<torch::Tensor> list;
  list.push_back(torch::zeros({2}));
  const std::vector<char> pickled = torch::pickle_save(list);
  EXPECT_NE(message(write("list.pt", std::string(pickled.begin(), pickled.end())))
                .find("holds a GenericList, not a state_dict"),
            std::string::npos);
}

TEST_F(StateDictFiles, MatchingLoadCopiesWhatFitsAndListsTheRest) {
  // A 1000-class file into a 10-class model: the head stays, everything else is copied.
  torch::manual_seed(5);
  ResNetOptions thousand;
  thousand.depth = 18;
  thousand.stem = ResNetStem::kSmall;
  thousand.num_classes = 1000;
  ResNet source(thousand);
  StateDict entries = state_dict(source);
  entries.emplace_back("extra.weight", torch::ones({1}));
  ResNet target = small_resnet18(6);
  const torch::Tensor head_before = target.named_parameters()["fc.weight"].clone();

  const StateDictFit fit = load_matching_state_dict(target, entries);
  EXPECT_TRUE(fit.missing.empty());
  EXPECT_EQ(fit.unexpected, std::vector<std::string>{"extra.weight"});
  EXPECT_EQ(fit.mismatched,
            (std::vector<std::string>{"fc.weight (file [1000, 512], model [10, 512])",
                                      "fc.bias (file [1000], model [10])"}));
  EXPECT_FALSE(fit.exact());
  EXPECT_TRUE(torch::equal(target.named_parameters()["fc.weight"], head_before));
  EXPECT_TRUE(torch::equal(target.named_parameters()["layer4.1.conv2.weight"],
                           source.named_parameters()["layer4.1.conv2.weight"]));
  EXPECT_TRUE(torch::equal(target.named_buffers()["bn1.running_var"],
                           source.named_buffers()["bn1.running_var"]));
  EXPECT_EQ(format_name_list({"a", "b", "c"}, 2), "a, b, ... (1 more)");
}

TEST_F(StateDictFiles, UnwritablePathIsAnInputError) {
  ResNet net = small_resnet18(0);
  EXPECT_THROW(save_state_dict(net, path("no/such/dir/x.pt")), InputError);
}

}  // namespace
}  // namespace batchlab::models
