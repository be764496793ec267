// LARS's update (lars.h has the rule and its source) through ATen's multi-tensor ops: the path of
// parameters the fused CPU loops do not take, that is every parameter on a GPU (and, with
// LarsOptions::fused(false), CPU parameters too, which is how the tests compare it with the fused
// loops and the golden trajectories).
//
// Per bucket (one parameter group's tensors of one device and dtype, foreach_common.h), with P, G,
// B the lists of parameters, gradients and momentum buffers:
//   adapted groups:   norms ||P||, ||G|| -> ONE host read for every bucket of the step ->
//                     ratio per tensor on the host (the fused path's formula, LARC included) ->
//                     D = (G + wd * P) * ratio   (scalar list)
//   not adapted:      D = G + wd * P   (G itself without weight decay; never written)
//   lr_in_momentum:   D = lr * D
//   momentum:         B = mu * B + D;  U = nesterov ? D + mu * B : B      (else U = D)
//   P += -(lr_in_momentum ? 1 : lr) * U
//
// Kernel launches per step, counted as ATen operators dispatched (foreach_lars_test.cpp measures
// them and checks that they do not grow with the number of tensors):
//   per bucket:  the final add, +1 weight decay, +1 ratio multiply (adapted), +1 lr_in_momentum,
//                +2 momentum buffer, +1 Nesterov; an adapted bucket adds 2 norms + 2 stacks +
//                2 casts before the read;
//   per step:    4 for the read when any bucket is adapted (2 cats, 1 stack, the copy).
//   Measured, two groups (decay/adapted, excluded/not), Nesterov, weight decay: 20 ops per step for
//   6 tensors and for 60; the per-tensor path: 840 for 60 tensors (14 per tensor).
// So about 8 x buckets + 4, where buckets = groups x (devices x dtype mixes), usually 2. On CUDA
// each `_foreach_*` op is ceil(tensors / T) kernel launches, T = 30 to 110 tensors per launch and
// at most ~20M elements per launch: for ResNet-50 (161 tensors, 25.6M parameters) 2 to 6 launches
// per op, some 40-80 per step, against ~2,000 for the per-tensor path.
// Host reads: exactly one per step when any group is adapted, none otherwise.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "core/optim/lars.h"

namespace batchlab::optim::detail {

struct LarsForeachItem {
  at::Tensor param;
  at::Tensor grad;
  LarsParamState* state = nullptr;  // momentum buffer already allocated when momentum != 0
  const LarsOptions* options = nullptr;
  int64_t group = 0;
};

// One LARS update of `items`, any device.
void lars_foreach_step(const std::vector<LarsForeachItem>& items);

}  // namespace batchlab::optim::detail
