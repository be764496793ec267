// A BERT encoder layer (models/bert_layer.h) against PyTorch's own torch.nn.TransformerEncoderLayer
// (post-LN, and pre-LN with norm_first=True; exact GELU, batch_first, dropout 0, eps 1e-12) from
// the virtualenv's torch (the build batchlab links): same weights, same input, same key padding
// mask, outputs within 1e-5 relative. tests/models/transformer_reference.py writes the fixtures
// into a temporary directory.
//
// PyTorch 1.13 runs its fused "fast path" (torch._transformer_encoder_layer_fwd) in eval mode
// under no_grad, and the plain Python path in training (dropout 0 here, so both are
// deterministic); the fixture has both outputs. At real positions all three agree. At padded
// positions PyTorch's single layer (no nested tensors, unlike TransformerEncoder) computes the
// padded queries against the real keys on both of its paths, as batchlab does, so they agree there
// too; the test checks that against the Python path and prints the fast path's difference.
#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "models/bert_attention.h"
#include "models/bert_layer.h"
#include "tests/test_paths.h"

namespace batchlab::models {
namespace {

namespace fs = std::filesystem;

const char* const kPython = test_paths::peer_python();
constexpr double kBertTolerance = 1e-5;

std::map<std::string, torch::Tensor> load_fixture(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + file.string());
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  const c10::IValue value = torch::pickle_load(bytes);
  std::map<std::string, torch::Tensor> out;
  for (const auto& item : value.toGenericDict()) {
    out[item.key().toStringRef()] = item.value().toTensor();
  }
  return out;
}

class BertLayerEquivalence : public ::testing::Test {
 protected:
  // One Python run for both cases (importing torch takes a second or two).
  static void SetUpTestSuite() {
    char pattern[] = "/tmp/batchlab_bert_equivalence_XXXXXX";
    const char* dir = mkdtemp(pattern);
    ASSERT_NE(dir, nullptr);
    dir_ = dir;
    const std::string script =
        std::string(test_paths::source_dir()) + "/tests/models/transformer_reference.py";
    const std::string command = std::string(kPython) + " " + script + " " + dir_.string() + " > " +
                                (dir_ / "python.log").string() + " 2>&1";
    if (std::system(command.c_str()) != 0) {
      const std::string probe = std::string(kPython) + " -c 'import torch' > /dev/null 2>&1";
      if (std::system(probe.c_str()) != 0) {
        error_ = std::string(kPython) +
                 " cannot import torch: run bash scripts/setup.sh (it installs the pinned torch "
                 "wheel into .venv/)";
      } else {
        std::ifstream log(dir_ / "python.log");
        error_ =
            "transformer_reference.py failed:\n" +
            std::string((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
      }
    }
  }
  static void TearDownTestSuite() {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  // Copies the reference layer's weights into `layer` by name and checks every parameter of the
  // BERT layer was assigned exactly once.
  static void load_weights(BertLayerImpl& layer, const std::map<std::string, torch::Tensor>& f) {
    const auto s = [&](const std::string& name) { return f.at("state." + name); };
    // in_proj_weight [3d, d] stacks the query, key and value projections in that order.
    const auto w = s("self_attn.in_proj_weight").chunk(3, 0);
    const auto b = s("self_attn.in_proj_bias").chunk(3, 0);
    const std::map<std::string, torch::Tensor> mapped = {
        {"attention.self.query.weight", w[0]},
        {"attention.self.query.bias", b[0]},
        {"attention.self.key.weight", w[1]},
        {"attention.self.key.bias", b[1]},
        {"attention.self.value.weight", w[2]},
        {"attention.self.value.bias", b[2]},
        {"attention.output.dense.weight", s("self_attn.out_proj.weight")},
        {"attention.output.dense.bias", s("self_attn.out_proj.bias")},
        {"attention.output.LayerNorm.weight", s("norm1.weight")},
        {"attention.output.LayerNorm.bias", s("norm1.bias")},
        {"intermediate.dense.weight", s("linear1.weight")},
        {"intermediate.dense.bias", s("linear1.bias")},
        {"output.dense.weight", s("linear2.weight")},
        {"output.dense.bias", s("linear2.bias")},
        {"output.LayerNorm.weight", s("norm2.weight")},
        {"output.LayerNorm.bias", s("norm2.bias")},
    };
    torch::NoGradGuard no_grad;
    auto params = layer.named_parameters();
    ASSERT_EQ(params.size(), mapped.size());
    for (const auto& [name, value] : mapped) {
      ASSERT_TRUE(params.contains(name)) << name;
      ASSERT_EQ(params[name].sizes(), value.sizes()) << name;
      params[name].copy_(value);
    }
  }

  // max |a - b| / max |b| over the selected rows of [B, T, d].
  static double relative_error(const torch::Tensor& a, const torch::Tensor& b,
                               const torch::Tensor& rows) {
    const torch::Tensor x = a.index({rows}), y = b.index({rows});
    return (x - y).abs().max().item<double>() / y.abs().max().item<double>();
  }

  void check_case(const std::string& file, bool norm_first) {
    ASSERT_TRUE(error_.empty()) << error_;
    const auto fixture = load_fixture(dir_ / file);
    const torch::Tensor input = fixture.at("input");           // float [B, T, d]
    const torch::Tensor padding = fixture.at("padding_mask");  // bool [B, T]
    const torch::Tensor reference = fixture.at("output_reference");
    const torch::Tensor fastpath = fixture.at("output_fastpath");
    ASSERT_TRUE(padding.any().item<bool>());
    ASSERT_FALSE(padding.all(1).any().item<bool>()) << "every sequence keeps a real token";

    BertConfig config;
    config.name = "equivalence";
    config.hidden = input.size(2);
    config.num_heads = 4;
    config.intermediate = fixture.at("state.linear1.weight").size(0);
    config.dropout = 0.0;
    config.attention_dropout = 0.0;
    config.norm_first = norm_first;
    BertLayer layer(config);
    load_weights(*layer, fixture);
    layer->eval();
    torch::NoGradGuard no_grad;
    const torch::Tensor ours =
        layer->forward(input, additive_padding_mask(padding, input.scalar_type()));

    const torch::Tensor real = padding.logical_not();
    const double vs_reference = relative_error(ours, reference, real);
    const double vs_fastpath = relative_error(ours, fastpath, real);
    const double padded_vs_reference = relative_error(ours, reference, padding);
    const double padded_vs_fastpath = relative_error(ours, fastpath, padding);
    std::cout << file << ": max relative error at real positions " << vs_reference
              << " (Python path), " << vs_fastpath << " (fast path); at padded positions "
              << padded_vs_reference << " (Python path), " << padded_vs_fastpath
              << " (fast path)\n";
    RecordProperty("max_rel_error_real", std::to_string(std::max(vs_reference, vs_fastpath)));
    RecordProperty("max_rel_error_padded", std::to_string(padded_vs_reference));
    EXPECT_LT(vs_reference, kBertTolerance);
    EXPECT_LT(vs_fastpath, kBertTolerance);
    EXPECT_LT(padded_vs_reference, kBertTolerance);

    // The comparison can fail: swapping the two LayerNorms (a plausible mapping mistake) moves
    // the output far beyond the tolerance.
    {
      auto params = layer->named_parameters();
      params["attention.output.LayerNorm.weight"].copy_(fixture.at("state.norm2.weight"));
      params["output.LayerNorm.weight"].copy_(fixture.at("state.norm1.weight"));
      const torch::Tensor wrong =
          layer->forward(input, additive_padding_mask(padding, input.scalar_type()));
      EXPECT_GT(relative_error(wrong, reference, real), 1e-2);
    }
  }

  static inline fs::path dir_;
  static inline std::string error_;
};

TEST_F(BertLayerEquivalence, PostLnMatchesTransformerEncoderLayer) {
  check_case("encoder_layer_post_ln.pt", /*norm_first=*/false);
}

TEST_F(BertLayerEquivalence, PreLnMatchesTransformerEncoderLayerNormFirst) {
  check_case("encoder_layer_pre_ln.pt", /*norm_first=*/true);
}

}  // namespace
}  // namespace batchlab::models
