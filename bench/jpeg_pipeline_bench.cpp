// The image pipeline's throughput per thread, next to libjpeg-turbo's own decoder benchmark
// (tjbench, Debian libjpeg-turbo-progs) on the same files, in one run.
//
// Writes (once, reused afterwards) ImageNet-sized JPEGs: 500x375, quality 90, 4:2:0, with
// natural-image-like content (1/f value noise, hard-edged shapes, regions of texture; about 100 KB
// each, like an ImageNet photo of that size), as an image folder, and packs them (`batchlab data
// pack` code) raw at 256 and 160 px and as JPEG. Then measures, one thread each:
//   BM_DecodeFullSize     TurboJPEG full-size decode of the in-memory files (tjbench's measurement)
//   BM_JpegPipeline       training transform from the folder: read, header, random-resized-crop
//                         geometry, DCT-scaled decode, resize to 224, flip
//   BM_JpegPipelineEval   evaluation transform (resize 256, center 224) from the folder
//   BM_Packed/<kind>      training transform from packed shards (raw 256, raw 160, jpeg 256)
//   BM_ResizeOwn/Torch    the resize step alone: our uint8 resampler vs torch's interpolate
//   BM_Loader/<workers>   whole batches of 64 through BatchLoader's worker threads
// and finally runs tjbench on a sample of the files and prints the ratios the issue asks for:
// pipeline >= 70% of tjbench's full-size decode rate per thread, packed >= 5x the JPEG pipeline.
//
// Run (idle machine): build/jpeg_pipeline_bench
// Quick check:        build/jpeg_pipeline_bench --benchmark_min_time=0.1 --tjbench-time=0.2
// Options: --images=N (default 200), --tjbench-files=N (default 8), --tjbench-time=S (default 1),
//          --bench-dir=DIR (default $TMPDIR/batchlab_jpeg_bench_v2_N), plus Google Benchmark's.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "experiments/data/batch_loader.h"
#include "experiments/data/image_folder.h"
#include "experiments/data/image_resample.h"
#include "experiments/data/jpeg_codec.h"
#include "experiments/data/packed_source.h"
#include "experiments/data/packed_writer.h"
#include "experiments/data/transforms.h"

namespace {

using namespace batchlab;
using namespace batchlab::data;
namespace fs = std::filesystem;

constexpr int64_t kWidth = 500, kHeight = 375;
constexpr int kQuality = 90;
constexpr int64_t kClasses = 4;

struct BenchFiles {
  fs::path root;
  std::vector<std::string> files;           // the training JPEGs
  std::vector<std::vector<uint8_t>> bytes;  // the same, in memory
  std::shared_ptr<const ImageSource> folder;
  std::map<std::string, std::shared_ptr<const ImageSource>> packs;  // raw256, raw160, jpeg256
};
BenchFiles g_files;

// A photo-like RGB image: smooth 1/f-ish value noise over several octaves (sky, surfaces,
// shading), a dozen hard-edged ellipses (objects), and sensor grain. Its JPEG at quality 90 is in
// ImageNet's usual range of bytes per pixel, which is what decode time depends on.
std::vector<uint8_t> natural_image(int64_t w, int64_t h, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::vector<float> img(static_cast<size_t>(w * h * 3));
  for (int c = 0; c < 3; ++c) {
    const float base = 60 + 120 * u(rng);
    for (int64_t i = 0; i < w * h; ++i) img[static_cast<size_t>(i * 3 + c)] = base;
  }
  for (int cell : {96, 48, 24, 12, 6, 3, 2}) {
    const float amp = 8.0f * std::pow(static_cast<float>(cell), 0.5f);
    const int64_t gw = w / cell + 2, gh = h / cell + 2;
    std::vector<float> g(static_cast<size_t>(gw * gh * 3));
    for (auto& v : g) v = (u(rng) - 0.5f) * 2 * amp;
    for (int64_t y = 0; y < h; ++y) {
      const float fy = static_cast<float>(y) / cell;
      const auto y0 = static_cast<int64_t>(fy);
      float ty = fy - y0;
      ty = ty * ty * (3 - 2 * ty);
      for (int64_t x = 0; x < w; ++x) {
        const float fx = static_cast<float>(x) / cell;
        const auto x0 = static_cast<int64_t>(fx);
        float tx = fx - x0;
        tx = tx * tx * (3 - 2 * tx);
        for (int64_t c = 0; c < 3; ++c) {
          auto at = [&](int64_t yy, int64_t xx) {
            return g[static_cast<size_t>((yy * gw + xx) * 3 + c)];
          };
          img[static_cast<size_t>((y * w + x) * 3 + c)] +=
              (1 - ty) * ((1 - tx) * at(y0, x0) + tx * at(y0, x0 + 1)) +
              ty * ((1 - tx) * at(y0 + 1, x0) + tx * at(y0 + 1, x0 + 1));
        }
      }
    }
  }
  for (int s = 0; s < 12; ++s) {
    const float cx = u(rng) * w, cy = u(rng) * h, rx = 10 + u(rng) * w / 4,
                ry = 10 + u(rng) * h / 4;
    const float col[3] = {(u(rng) - 0.5f) * 120, (u(rng) - 0.5f) * 120, (u(rng) - 0.5f) * 120};
    for (int64_t y = std::max<int64_t>(0, static_cast<int64_t>(cy - ry));
         y < std::min<int64_t>(h, static_cast<int64_t>(cy + ry)); ++y) {
      for (int64_t x = std::max<int64_t>(0, static_cast<int64_t>(cx - rx));
           x < std::min<int64_t>(w, static_cast<int64_t>(cx + rx)); ++x) {
        const float dx = (x - cx) / rx, dy = (y - cy) / ry;
        if (dx * dx + dy * dy >= 1) continue;
        for (int64_t c = 0; c < 3; ++c)
          img[static_cast<size_t>((y * w + x) * 3 + c)] += col[c] * (1 - 0.5f * dx);
      }
    }
  }
  // Texture: grain whose strength varies smoothly over the image (foliage and fur next to sky and
  // walls), from sigma 6 up to 46 where a coarse value-noise mask is high.
  const int64_t cell = 80, gw = w / cell + 2;
  std::vector<float> mask(static_cast<size_t>(gw * (h / cell + 2)));
  for (auto& v : mask) v = u(rng);
  std::normal_distribution<float> grain(0.f, 1.f);
  std::vector<uint8_t> out(img.size());
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      const float fy = static_cast<float>(y) / cell, fx = static_cast<float>(x) / cell;
      const auto y0 = static_cast<int64_t>(fy), x0 = static_cast<int64_t>(fx);
      const float ty = fy - y0, tx = fx - x0;
      auto at = [&](int64_t yy, int64_t xx) { return mask[static_cast<size_t>(yy * gw + xx)]; };
      const float m = (1 - ty) * ((1 - tx) * at(y0, x0) + tx * at(y0, x0 + 1)) +
                      ty * ((1 - tx) * at(y0 + 1, x0) + tx * at(y0 + 1, x0 + 1));
      const float sigma = 6.0f + 40.0f * std::clamp((m - 0.35f) * 2.0f, 0.0f, 1.0f);
      for (int64_t c = 0; c < 3; ++c) {
        const auto i = static_cast<size_t>((y * w + x) * 3 + c);
        out[i] = static_cast<uint8_t>(std::clamp(img[i] + sigma * grain(rng), 0.f, 255.f));
      }
    }
  }
  return out;
}

void write_file(const fs::path& path, const std::vector<uint8_t>& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

// The image folder (train/c<k>/, a few val/ images) and its packs, made once per directory.
void prepare(const fs::path& root, int64_t images) {
  const fs::path done = root / "complete";
  if (!fs::exists(done)) {
    std::printf("writing %lld JPEGs (%lldx%lld, quality %d) and packs to %s ...\n",
                static_cast<long long>(images), static_cast<long long>(kWidth),
                static_cast<long long>(kHeight), kQuality, root.c_str());
    fs::remove_all(root);
    JpegEncoder encoder;
    for (int64_t i = 0; i < images + 2 * kClasses; ++i) {
      const auto rgb = natural_image(kWidth, kHeight, static_cast<uint64_t>(i));
      const bool val = i >= images;
      const fs::path path = root / "folder" / (val ? "val" : "train") /
                            ("c" + std::to_string(i % kClasses)) /
                            ("img_" + std::to_string(i) + ".JPEG");
      write_file(path, encoder.encode({rgb.data(), kWidth, kHeight, kWidth * 3}, kQuality));
    }
    for (const auto& [name, size, format] :
         std::vector<std::tuple<std::string, int64_t, PackFormat>>{
             {"raw256", 256, PackFormat::raw},
             {"raw160", 160, PackFormat::raw},
             {"jpeg256", 256, PackFormat::jpeg}}) {
      PackOptions o;
      o.size = size;
      o.format = format;
      o.quality = kQuality;
      pack_image_folder((root / "folder").string(), (root / name).string(), o);
    }
    std::ofstream(done) << "ok\n";
  }
  auto folder = std::make_shared<FolderImageSource>(scan_image_folder((root / "folder").string()));
  g_files.root = root;
  g_files.files = folder->index().train.files;
  size_t total = 0;
  for (const auto& f : g_files.files) {
    g_files.bytes.emplace_back();
    read_file_bytes(f, g_files.bytes.back());
    total += g_files.bytes.back().size();
  }
  std::printf("%zu training JPEGs, mean %.1f KB\n", g_files.files.size(),
              static_cast<double>(total) / static_cast<double>(g_files.files.size()) / 1024.0);
  g_files.folder = folder;
  for (const char* name : {"raw256", "raw160", "jpeg256"}) {
    g_files.packs[name] = std::make_shared<PackedImageSource>((root / name).string(), false);
  }
}

void set_rate(benchmark::State& state, int64_t images_per_iteration, int64_t threads = 1) {
  const double n = static_cast<double>(state.iterations() * images_per_iteration);
  state.counters["images/s"] = benchmark::Counter(n, benchmark::Counter::kIsRate);
  state.counters["images/s/thread"] =
      benchmark::Counter(n / static_cast<double>(threads), benchmark::Counter::kIsRate);
}

void BM_DecodeFullSize(benchmark::State& state) {
  JpegDecoder decoder;
  size_t i = 0;
  for (auto _ : state) {
    const auto& b = g_files.bytes[i++ % g_files.bytes.size()];
    benchmark::DoNotOptimize(decoder.decode(b.data(), b.size(), {1, 1}, "bench").pixels);
  }
  set_rate(state, 1);
}
BENCHMARK(BM_DecodeFullSize)->UseRealTime()->Unit(benchmark::kMicrosecond);

// One sample at a time through the same code the loader threads run (load_sample).
void run_pipeline(benchmark::State& state, const ImageSource& source, bool train) {
  auto reader = source.make_reader();
  ResampleScratch scratch;
  TransformSpec spec;  // 224, eval 256, min scale 0.08
  std::vector<uint8_t> out(static_cast<size_t>(3 * spec.image_size * spec.image_size));
  const int64_t n = source.size(Split::train);
  int64_t i = 0;
  for (auto _ : state) {
    const std::optional<uint64_t> seed =
        train ? std::optional<uint64_t>(sample_seed(7, i)) : std::nullopt;
    load_sample(*reader, Split::train, i % n, spec, seed, out.data(), scratch);
    benchmark::DoNotOptimize(out.data());
    ++i;
  }
  set_rate(state, 1);
}

void BM_JpegPipeline(benchmark::State& state) { run_pipeline(state, *g_files.folder, true); }
BENCHMARK(BM_JpegPipeline)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_JpegPipelineEval(benchmark::State& state) { run_pipeline(state, *g_files.folder, false); }
BENCHMARK(BM_JpegPipelineEval)->UseRealTime()->Unit(benchmark::kMicrosecond);

const char* kPackNames[] = {"raw256", "raw160", "jpeg256"};
void BM_Packed(benchmark::State& state) {
  const char* name = kPackNames[state.range(0)];
  state.SetLabel(name);
  run_pipeline(state, *g_files.packs.at(name), true);
}
BENCHMARK(BM_Packed)->Arg(0)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);

// The resize step alone on a decoded 500x375 image: a 400x300 crop to 224x224.
void BM_ResizeOwn(benchmark::State& state) {
  const auto rgb = natural_image(kWidth, kHeight, 1);
  ResampleScratch scratch;
  std::vector<uint8_t> out(3 * 224 * 224);
  for (auto _ : state) {
    resample_crop({rgb.data(), kWidth, kHeight, kWidth * 3}, {50, 40, 400, 300}, 224, 224, true,
                  PixelLayout::chw, out.data(), scratch);
    benchmark::DoNotOptimize(out.data());
  }
  set_rate(state, 1);
}
BENCHMARK(BM_ResizeOwn)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_ResizeTorch(benchmark::State& state) {
  at::set_num_threads(1);
  const auto rgb = natural_image(kWidth, kHeight, 1);
  const auto image =
      torch::from_blob(const_cast<uint8_t*>(rgb.data()), {kHeight, kWidth, 3}, torch::kUInt8);
  namespace F = torch::nn::functional;
  for (auto _ : state) {
    // Same work as BM_ResizeOwn: crop, to float planes, antialiased bilinear, flip, back to uint8.
    auto crop =
        image.slice(0, 40, 340).slice(1, 50, 450).permute({2, 0, 1}).unsqueeze(0).to(torch::kFloat);
    auto resized = F::interpolate(crop, F::InterpolateFuncOptions()
                                            .size(std::vector<int64_t>{224, 224})
                                            .mode(torch::kBilinear)
                                            .align_corners(false)
                                            .antialias(true));
    auto out = resized.flip(3).round_().clamp_(0, 255).to(torch::kUInt8);
    benchmark::DoNotOptimize(out.data_ptr());
  }
  set_rate(state, 1);
}
BENCHMARK(BM_ResizeTorch)->UseRealTime()->Unit(benchmark::kMicrosecond);

// Whole batches through the loader's threads (on-demand requests, as at the first step).
void BM_Loader(benchmark::State& state) {
  const int64_t workers = state.range(0);
  LoaderOptions o;
  o.workers = workers;
  BatchLoader loader(g_files.folder, TransformSpec{}, o);
  const int64_t batch = 64, n = g_files.folder->size(Split::train);
  uint64_t seed = 0;
  for (auto _ : state) {
    auto idx = torch::arange(static_cast<int64_t>(seed * batch),
                             static_cast<int64_t>(seed * batch) + batch, torch::kInt64)
                   .remainder(n);
    benchmark::DoNotOptimize(loader.load(Split::train, idx, ++seed).images.data_ptr());
  }
  set_rate(state, batch, std::max<int64_t>(1, workers));
}
BENCHMARK(BM_Loader)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);

// Records each benchmark's images/s while printing as usual.
class RateReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> rates;
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs) {
      auto it = r.counters.find("images/s/thread");
      if (it != r.counters.end() && r.run_type == Run::RT_Iteration)
        rates[r.benchmark_name()] = it->second.value;
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

// tjbench's full-size decompression rate (Mpixels/s, the last column of its -quiet table) on one
// file, or a negative value when it cannot be run.
double tjbench_mpix(const std::string& file, double seconds) {
  const std::string cmd = "tjbench '" + file + "' -rgb -nowrite -quiet -benchtime " +
                          std::to_string(seconds) + " -warmup " + std::to_string(seconds / 2) +
                          " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return -1;
  std::array<char, 512> line{};
  double mpix = -1;
  while (std::fgets(line.data(), line.size(), pipe)) {
    if (std::strncmp(line.data(), "RGB", 3) != 0) continue;
    std::string s(line.data());
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    mpix = std::atof(s.substr(s.find_last_of(" \t") + 1).c_str());
  }
  return pclose(pipe) == 0 ? mpix : -1;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t images = 200, tj_files = 8;
  double tj_time = 1.0;
  std::string dir;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--images=", 9) == 0) {
      images = std::atoll(argv[i] + 9);
    } else if (std::strncmp(argv[i], "--tjbench-files=", 16) == 0) {
      tj_files = std::atoll(argv[i] + 16);
    } else if (std::strncmp(argv[i], "--tjbench-time=", 15) == 0) {
      tj_time = std::atof(argv[i] + 15);
    } else if (std::strncmp(argv[i], "--bench-dir=", 12) == 0) {
      dir = argv[i] + 12;
    } else {
      args.push_back(argv[i]);
    }
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  if (dir.empty()) {
    dir =
        (fs::temp_directory_path() / ("batchlab_jpeg_bench_v2_" + std::to_string(images))).string();
  }
  prepare(dir, images);

  RateReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);

  // tjbench on an evenly spread sample of the same files: images/s = Mpixels/s / pixels per image.
  double tj_seconds_per_image = 0;
  int64_t measured = 0;
  for (int64_t k = 0; k < tj_files && k < static_cast<int64_t>(g_files.files.size()); ++k) {
    const auto& f =
        g_files
            .files[static_cast<size_t>(k) * g_files.files.size() / static_cast<size_t>(tj_files)];
    const double mpix = tjbench_mpix(f, tj_time);
    if (mpix <= 0) continue;
    tj_seconds_per_image += static_cast<double>(kWidth * kHeight) / (mpix * 1e6);
    ++measured;
  }
  auto rate = [&](const char* name) {
    auto it = reporter.rates.find(name);
    return it == reporter.rates.end() ? 0.0 : it->second;
  };
  const double pipeline = rate("BM_JpegPipeline/real_time");
  const double own_decode = rate("BM_DecodeFullSize/real_time");
  std::printf("\n== per-thread images/s (500x375, quality 90) ==\n");
  if (measured == 0) {
    std::printf("tjbench: not run (install libjpeg-turbo-progs); our own full-size decode: %.0f\n",
                own_decode);
  } else {
    const double tj = static_cast<double>(measured) / tj_seconds_per_image;
    std::printf(
        "tjbench full-size decode (%lld files): %.0f images/s   [in-process TurboJPEG: %.0f]\n",
        static_cast<long long>(measured), tj, own_decode);
    if (pipeline > 0) {
      std::printf(
          "JPEG training pipeline:                %.0f images/s = %.2f x tjbench "
          "(target >= 0.70: %s)\n",
          pipeline, pipeline / tj, pipeline / tj >= 0.7 ? "met" : "MISSED");
    }
  }
  for (int k = 0; k < 3; ++k) {
    const double r = rate(("BM_Packed/" + std::to_string(k) + "/real_time").c_str());
    if (r > 0 && pipeline > 0) {
      std::printf(
          "packed %-8s training pipeline:     %.0f images/s = %.1f x the JPEG pipeline%s\n",
          kPackNames[k], r, r / pipeline,
          k == 0 ? (r / pipeline >= 5 ? " (target >= 5: met)" : " (target >= 5: MISSED)") : "");
    }
  }
  return 0;
}
