// The narrow model contract: what the wrappers need of a model, and no
// more. TrainableModel is what data parallelism (DDP, the parameter server,
// ZeRO-1/2/3) and the optimizers' checks see: the trained parameters, the
// gradient segments in the order backward completes them, the hooks that
// fire as segments complete and before each unit's passes, and the groups
// a gradient is reduced over. StagedModel adds what the pipeline runtime
// drives: one chunk of layers for one micro-batch, forward, backward (with
// zero-bubble's deferred weight half), loss and release. The Transformer
// (model/transformer.h) implements both; the wrappers compile against this
// header alone (the layer check holds parallel/data, zero, pipeline and
// optim to it), as Megatron's DDP and torchtitan's parallelize wrap any
// module through a small interface.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "nn/parameters.h"
#include "nn/verify_hooks.h"
#include "parallel/expert/ep_group.h"
#include "parallel/tensor/tp_group.h"
#include "parallel/tensor/vocab_parallel_cross_entropy.h"
#include "tensor/tensor.h"

namespace parallm {

// A flat range [begin, end) of params().flat_grads(), made of the
// parameters [first_param, end_param) of params().
struct GradSegment {
  int64_t begin = 0, end = 0;
  int first_param = 0, end_param = 0;
};

// Which pass of a unit the unit hook announces.
enum class UnitPass { Forward, Backward };

// Dropout of one training micro-batch: seed (0: no dropout) and the global
// sample number of its first row; masks depend only on these and global
// positions, so every tp / sp / dp layout drops the same elements.
struct DropoutKey {
  uint64_t seed = 0;
  int64_t sample_offset = 0;
};

class TrainableModel {
 public:
  virtual ~TrainableModel() = default;
  // What is trained: gradients accumulate into params().grads.
  virtual ParameterSet& params() = 0;
  virtual const ParameterSet& params() const = 0;
  // Where the model's tensors live (its device's memory).
  virtual Allocator& allocator() const = 0;
  // Ranges whose gradients complete together, in the order backward
  // completes them; they tile params().flat_grads().
  virtual const std::vector<GradSegment>& grad_segments() const = 0;
  // Called with a segment index once its gradients are final for the
  // micro-batch (an empty function: no calls).
  virtual void set_grad_ready_hook(std::function<void(int)> hook) = 0;
  // Called with a segment index just before that unit's forward and before
  // its backward (ZeRO-3 gathers the unit's parameters there).
  virtual void set_unit_hook(std::function<void(UnitPass, int)> hook) = 0;
  // The groups the layers split over: gradients of tp-replicated
  // parameters and the global norm reduce over tp, expert gradients over
  // expert-dp (ep active).
  virtual const TpGroup& tp() const = 0;
  virtual const EpGroup& ep() const = 0;
  // The hooks of a bug `parallm verify`'s tests planted (null outside them).
  virtual const FaultHooks* fault_hooks() const = 0;
};

class StagedModel : public TrainableModel {
 public:
  // One micro-batch as a chunk sees it; inputs/targets are copied when read.
  struct StageBatch {
    const int32_t* inputs = nullptr;   // (B, T): read by the embedding chunk (every chunk
                                       // under packed documents)
    const int32_t* targets = nullptr;  // (B, T): read by the head chunk
    int64_t B = 0, T = 0;
    double grad_scale = 0.0;
    DropoutKey dropout;
  };
  // Chunks (virtual stages) this process holds.
  virtual int num_chunks() const = 0;
  // The residual stream a chunk passes on for a (B, T) micro-batch: rows
  // (B*T/cp, divided by tp under sp) of width stream_width().
  virtual int64_t stream_rows(int64_t B, int64_t T) const = 0;
  virtual int64_t stream_width() const = 0;
  // Chunk `chunk` forward for one micro-batch, keeping what backward needs:
  // in is the previous virtual stage's (rows, C) output (ignored by the
  // embedding chunk); returns this chunk's (undefined for the head chunk).
  virtual Tensor chunk_forward(int chunk, int micro_batch, const StageBatch& b, Tensor in) = 0;
  // Its backward given dout (ignored by the head chunk); returns dinp
  // (undefined for the embedding chunk); loss: the head chunk's sum. With
  // defer_weights the weight gradients wait for chunk_backward_weights.
  virtual Tensor chunk_backward(int chunk, int micro_batch, const Tensor& dout,
                                bool defer_weights, LossSum* loss) = 0;
  virtual void chunk_backward_weights(int chunk, int micro_batch) = 0;
  // Evaluation: the head chunk's loss of a forward already run, releasing
  // its state; drop_chunk releases any chunk's state.
  virtual LossSum chunk_loss(int chunk, int micro_batch) = 0;
  virtual void drop_chunk(int chunk, int micro_batch) = 0;
  // (micro-batch, chunk) pairs whose forward state is held (0 after a step).
  virtual int chunks_in_flight() const = 0;
};

}  // namespace parallm
