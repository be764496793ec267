#include "core/config/batch_geometry.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/config/preconditions.h"
#include "core/errors.h"

namespace batchlab::config {

int64_t micro_batch(int64_t global, int64_t micro, int64_t world) {
  if (micro > 0) return micro;
  if (world < 1 || global % world != 0) return 0;
  return global / world;
}

std::optional<int64_t> accumulation(int64_t global, int64_t micro, int64_t world) {
  const int64_t m = micro_batch(global, micro, world);
  if (global <= 0 || world < 1 || m <= 0 || global % world != 0) return std::nullopt;
  const int64_t per_device = global / world;
  if (per_device % m != 0) return std::nullopt;
  return per_device / m;
}

int64_t micro_batch_for_accumulation(int64_t global, int64_t accum, int64_t world) {
  if (global <= 0 || accum <= 0 || world < 1 || global % world != 0) return 0;
  const int64_t per_device = global / world;
  return per_device % accum == 0 ? per_device / accum : 0;
}

int64_t steps_per_epoch(int64_t train_size, int64_t global) {
  return global > 0 && train_size > 0 ? train_size / global : 0;
}

int64_t examples_per_device(const BatchGeometry& g) { return g.micro * g.accum; }

int64_t batch_multiple(int64_t micro, int64_t world) { return world * std::max<int64_t>(micro, 1); }

BatchGeometry make_batch_geometry(int64_t global, int64_t micro, int64_t world,
                                  int64_t train_size) {
  BatchGeometry g;
  g.global = global;
  g.world = world;
  g.micro = micro_batch(global, micro, world);
  const auto accum = accumulation(global, micro, world);
  // validate_batch_geometry checked this for the run's world size when the config was read.
  expect(accum.has_value(), "make_batch_geometry",
         fmt::format("batch.global = {} is not world_size ({}) x micro ({}) x a whole "
                     "accumulation count",
                     global, world, g.micro));
  g.accum = *accum;
  g.steps_per_epoch = steps_per_epoch(train_size, global);
  g.dropped_per_epoch = train_size - g.steps_per_epoch * global;
  if (g.steps_per_epoch == 0) {
    throw InputError(fmt::format(
        "batch.global = {} is larger than the training set ({} examples): no full batch per epoch; "
        "lower batch.global or use more data (data.train_size)",
        global, train_size));
  }
  return g;
}

}  // namespace batchlab::config
