// StepRunner: runs one planned forward of the server on every rank. Rank 0
// owns HTTP and the scheduler and calls run(); every other rank waits in
// follow() until rank 0 calls stop(). Each step rank 0 broadcasts the step
// (the tokens and each sequence's span with its block table) over the
// world, every rank runs its part (tp inside the layers, hidden rows
// between pp stages), and the last stage's tp rank 0 sends the logits to
// rank 0. Under pp a step runs as micro-batches of whole sequences in
// flight (infer/serve/pipeline_forward.h), split the same way on every rank.
// So the KV pools on all ranks see the same writes, and the block tables
// live only on rank 0.
#pragma once
#include <vector>

#include "comm/communicator.h"
#include "model/transformer.h"

namespace parallm::serve {

class StepRunner {
 public:
  // world: all ranks (null: one process); pp: this rank's pipeline group
  // (null: the model is whole). model and cache outlive the runner.
  // micro_batches: at most this many per step under pp (1: the step runs
  // whole, one stage after another), each of at least min_tokens rows
  // (split_micro_batches); the same on every rank.
  StepRunner(Transformer& model, PagedKvCache& cache, comm::Communicator* world,
             comm::Communicator* pp, int micro_batches = 1, int64_t min_tokens = 1);
  bool leader() const { return rank_ == 0; }
  const PagedKvCache& cache() const { return cache_; }
  // Rank 0: the logits (spans.size(), V) of each span's last token, on the host.
  // loras: the rows' served adapters (nn/row_lora.h; one process only).
  Tensor run(const std::vector<int32_t>& tokens, const std::vector<PagedSpan>& spans,
             const RowLoras* loras = nullptr);
  // Other ranks: runs every step rank 0 sends, returns after stop().
  void follow();
  // Rank 0: ends the followers' loops (once; later calls do nothing).
  void stop();

 private:
  Tensor forward(const std::vector<int32_t>& tokens, const std::vector<PagedSpan>& spans,
                 const RowLoras* loras = nullptr);
  Transformer& model_;
  PagedKvCache& cache_;
  comm::Communicator* world_;
  comm::Communicator* pp_;
  int rank_ = 0;
  int micro_batches_ = 1;
  int64_t min_tokens_ = 1;
  int sampler_ = 0;  // world rank of the last stage's tp rank 0
  bool stopped_ = false;
  Allocator host_;  // the host copy of a device's logits
};

}  // namespace parallm::serve
