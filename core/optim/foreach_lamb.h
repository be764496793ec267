// LAMB's update (lamb.h has the rule and its source) through ATen's multi-tensor ops: the path of
// parameters the fused CPU loops do not take, that is every parameter on a GPU (and, with
// LambOptions::fused(false), CPU parameters too, which is how the tests compare it with the fused
// loops and the golden trajectories).
//
// Per bucket (one parameter group's tensors of one device and dtype, foreach_common.h), with P, G,
// M, V the lists of parameters, gradients, first and second moments:
//   G' = G * (1 / c)                     only when clipping changes anything (c: clip factor)
//   M = b1 * M;  M += b3 * G'            V = b2 * V;  V += (1 - b2) * G' * G'
//   D = sqrt(V) * inv_sqrt_bc2 + eps     (per-tensor bias corrections: scalar lists)
//   R = M * inv_bc1 / D  (+ wd * P)
//   adapted groups:     norms ||P||, ||R|| -> ONE host read for every bucket of the step ->
//                       ratio per tensor on the host (the fused path's formula) ->
//                       R *= -lr * ratio (scalar list);  P += R
//   not adapted:        P += -lr * R
//
// Kernel launches per step, counted as ATen operators dispatched (foreach_lamb_test.cpp measures
// them and checks that they do not grow with the number of tensors):
//   per bucket:  10 ops (moments, denominator, R), +1 with weight decay, +3 with a clip factor
//                (+1 when the factor is a host value other than 1, none when it is 1);
//                then 1 final add when not adapted, or 2 norms + 2 stacks + 2 casts before the
//                read and 2 after (the multiply by the ratio list, the add) when adapted;
//   per step:    4 for the read when any bucket is adapted (2 cats, 1 stack, the copy), and with
//                clipping 4 for the global gradient norm (grad_clip.h) + 2 for the clip factor.
//   Measured, two groups (decay/adapted, excluded/not), clipping, weight decay: 44 ops per step
//   for 6 tensors and for 60; the per-tensor path: 1,166 for 60 tensors (~19 per tensor).
// So about 20 x buckets + 10, where buckets = groups x (devices x dtype mixes), usually 2. On CUDA
// each `_foreach_*` op is ceil(tensors / T) kernel launches, T = 30 to 110 tensors per launch
// (fewer for ops over more lists) and at most ~20M elements per launch (320 blocks x 64K): for
// BERT-large (~400 tensors, 335M parameters) about 4 to 16 launches per op, 300-500 per step,
// against ~7,500 for the per-tensor path.
// Host reads: exactly one per step when any group is adapted, none otherwise.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "core/optim/grad_clip.h"
#include "core/optim/lamb.h"

namespace batchlab::optim::detail {

struct LambForeachItem {
  at::Tensor param;
  at::Tensor grad;
  LambParamState* state = nullptr;  // step already incremented for this update
  const LambOptions* options = nullptr;
  int64_t group = 0;
};

// One LAMB update of `items`, any device. `clip` is the global clip factor (undefined: none).
void lamb_foreach_step(const std::vector<LambForeachItem>& items, const ClipFactor& clip);

}  // namespace batchlab::optim::detail
