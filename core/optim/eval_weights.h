// An optimizer whose parameters, while it trains, are not the weights to evaluate or keep.
//
// Schedule-Free AdamW (schedule_free_adamw.h) takes its gradients at y, an interpolation between
// the averaged sequence x and the base sequence z; the weights it reports (evaluation, checkpoints,
// best.pt, exports) are x. The schedulefree package leaves the swap to its user (optimizer.eval()
// before evaluating or saving, optimizer.train() after). Here TrainingOptimizer (factory.h) reaches
// the swap through this interface, and the trainer calls TrainingOptimizer's EvalWeights guard
// around every evaluation and checkpoint without knowing which optimizer it holds: for the others
// the guard does nothing.
#pragma once

namespace batchlab::optim {

class SwapsEvalWeights {
 public:
  virtual ~SwapsEvalWeights() = default;
  // Parameters <- the evaluation weights (x). A no-op when they already hold them.
  virtual void eval_weights() = 0;
  // Parameters <- the training weights (y), exactly as before eval_weights(). A no-op when they
  // already hold them.
  virtual void train_weights() = 0;
  // True while the parameters hold the evaluation weights (after eval_weights(), or after loading
  // a checkpoint saved in that state).
  virtual bool holds_eval_weights() const = 0;
};

}  // namespace batchlab::optim
