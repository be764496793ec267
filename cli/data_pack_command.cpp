// `batchlab data pack SRC_DIR --out DIR [--size S] [--shard-mb M] [--workers N] [--format raw|jpeg]
// [--quality Q] [--skip-corrupt]`: an ImageNet-style folder -> packed, pre-resized shards that
// data.dataset = "imagenet" reads when data.path points at DIR (experiments/data/packed_writer.h).
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "cli/app.h"
#include "cli/args.h"
#include "cli/data_commands.h"
#include "experiments/data/packed_writer.h"

namespace batchlab::cli {

namespace {

constexpr const char* kPackUsage =
    "batchlab data pack SRC_DIR --out DIR [--size S] [--shard-mb M] [--workers N] "
    "[--format raw|jpeg] [--quality Q] [--skip-corrupt]\n"
    "  SRC_DIR          ImageNet layout: SRC_DIR/train/<class>/*.JPEG (and "
    "SRC_DIR/val/<class>/*.JPEG)\n"
    "  --out DIR        where the shards and pack.index go\n"
    "  --size S         shorter side of the stored images, pixels (default 256; smaller images "
    "are\n"
    "                   kept as they are)\n"
    "  --shard-mb M     shard size limit in MiB (default 256)\n"
    "  --workers N      decoding threads (default: all cores)\n"
    "  --format F       raw: decoded RGB, read with no decoding (fastest, about 10x larger);\n"
    "                   jpeg: re-encoded at --quality (default raw)\n"
    "  --quality Q      JPEG quality of --format jpeg (default 90)\n"
    "  --skip-corrupt   leave unreadable images out (listed) instead of stopping at the first";

double positive_number(const Args& args, const std::string& name, double fallback) {
  const auto v = args.value(name);
  if (!v) return fallback;
  char* end = nullptr;
  const double x = std::strtod(v->c_str(), &end);
  if (end != v->c_str() + v->size() || !(x > 0.0)) {
    throw UsageError(
        fmt::format("--{} = {}: must be a positive number\nusage: {}", name, *v, args.usage()));
  }
  return x;
}

}  // namespace

int cmd_data_pack(const std::vector<std::string>& argv) {
  Args args(argv,
            {{"out"},
             {"size"},
             {"shard-mb"},
             {"workers"},
             {"format"},
             {"quality"},
             {"skip-corrupt", false, false}},
            kPackUsage);
  const std::string src = args.positional("SRC_DIR");
  const auto out = args.value("out");
  if (!out) throw UsageError(fmt::format("missing --out DIR\nusage: {}", args.usage()));

  data::PackOptions options;
  options.size = args.integer("size").value_or(options.size);
  options.shard_mb = positive_number(args, "shard-mb", options.shard_mb);
  options.workers = args.integer("workers").value_or(options.workers);
  if (auto f = args.value("format")) options.format = data::parse_pack_format(*f, "--format");
  options.quality = static_cast<int>(args.integer("quality").value_or(options.quality));
  options.skip_corrupt = args.flag("skip-corrupt");

  const auto t0 = std::chrono::steady_clock::now();
  const auto report = data::pack_image_folder(src, *out, options, [](const std::string& line) {
    fmt::print("{}\n", line);
    std::fflush(stdout);
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const auto& s : report.skipped) fmt::print(stderr, "skipped: {}\n", s);
  fmt::print(
      "packed {} training and {} validation images ({}, shorter side {}) into {} shards, "
      "{:.1f} MiB, in {:.1f} s ({:.0f} images/s): {}\n",
      report.train, report.val, data::to_string(options.format), options.size, report.shards,
      static_cast<double>(report.bytes) / (1024.0 * 1024.0), seconds,
      static_cast<double>(report.train + report.val) / std::max(seconds, 1e-9), *out);
  if (!report.skipped.empty()) {
    fmt::print("skipped {} unreadable images (listed above)\n", report.skipped.size());
  }
  return kExitOk;
}

}  // namespace batchlab::cli
