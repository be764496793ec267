// MLM batch building rate: sequences per second on one thread, from memory-mapped uint16 token
// shards to a masked batch (stream copy with document separators, [CLS]/[SEP], exact 80/10/10
// masking, the output tensors). Target (issue 7): at least 20,000 sequences of 128 per second per
// thread. The shards are written once to a temporary directory: 8M random tokens of an 8000-piece
// vocabulary in documents of 50-2000 tokens (document boundaries cost a binary search per row).
//
//   ./build/bench/mlm_batch_bench --benchmark_repetitions=5
//
// Reported counters: seq/s (sequences per second, the target's unit) and tok/s.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "experiments/data/mlm_batch.h"
#include "experiments/data/token_shards.h"

namespace {

using batchlab::data::MlmBatchBuilder;
using batchlab::data::MlmBatchOptions;
using batchlab::data::SplitMix64;

constexpr int64_t kVocab = 8000;
constexpr int64_t kTokens = int64_t{8} << 20;

// The shard directory, written on first use and removed at exit.
struct Corpus {
  std::filesystem::path dir;
  std::shared_ptr<const batchlab::data::TokenShards> shards;

  Corpus() {
    dir = std::filesystem::temp_directory_path() /
          ("batchlab-mlm-bench-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    batchlab::data::TokenShardWriter writer(dir.string(), kVocab, int64_t{64} << 20);
    SplitMix64 rng(1);
    for (int64_t written = 0; written < kTokens;) {
      std::vector<int32_t> doc(50 + rng.below(1951));
      for (auto& t : doc) t = 5 + static_cast<int32_t>(rng.below(kVocab - 5));
      written += static_cast<int64_t>(doc.size());
      writer.add_document(doc);
    }
    writer.finish();
    shards = batchlab::data::TokenShards::open(dir.string());
  }
  ~Corpus() {
    shards.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

Corpus& corpus() {
  static Corpus c;
  return c;
}

// Args: batch size, sequence length, sentence pairs (0/1).
void BM_MlmBatch(benchmark::State& state) {
  const int64_t batch = state.range(0), seq_len = state.range(1);
  MlmBatchOptions o;
  o.seq_len = seq_len;
  o.sentence_pair = state.range(2) != 0;
  o.vocab_size = kVocab;
  o.threads = 1;
  auto& c = corpus();
  const MlmBatchBuilder builder(batchlab::data::split_stream(c.shards).train, o);
  // Random example order, as an epoch's permutation gives.
  SplitMix64 rng(7);
  std::vector<int64_t> indices(static_cast<size_t>(batch));
  uint64_t step = 0;
  for (auto _ : state) {
    for (auto& i : indices) i = static_cast<int64_t>(rng.below(builder.size()));
    auto b = builder.build(indices.data(), batch, seq_len, ++step);
    benchmark::DoNotOptimize(b.input_ids.data_ptr());
  }
  const auto sequences = static_cast<double>(state.iterations() * batch);
  state.counters["seq/s"] = benchmark::Counter(sequences, benchmark::Counter::kIsRate);
  state.counters["tok/s"] = benchmark::Counter(sequences * seq_len, benchmark::Counter::kIsRate);
}

BENCHMARK(BM_MlmBatch)
    ->ArgNames({"batch", "seq", "pairs"})
    ->Args({256, 128, 0})
    ->Args({256, 128, 1})
    ->Args({64, 512, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
