// ParameterServer: the parameter-server technique on a dp group (seed 002):
// dp rank 0 is the server. Gradients are summed onto it in buckets
// overlapped with backward (a reduce, not an all-reduce); only the server
// keeps optimizer state and updates, then broadcasts the parameters to the
// workers. Kept beside Ddp to compare one-root traffic with all-reduce.
#pragma once
#include <memory>

#include "parallel/data/data_parallel.h"
#include "parallel/data/grad_reducer.h"

namespace parallm {

class ParameterServer : public DataParallel {
 public:
  // dp: at least two ranks.
  ParameterServer(TrainableModel& model, comm::Communicator* dp, const DpOptions& opts,
                  const OptimizerConfig& optim, Allocator& alloc);
  void begin_micro_batch(bool last) override;

 protected:
  void finish_reduction() override;
  void update(double lr, float* grads) override;

 private:
  bool is_server() const { return dp_rank() == 0; }
  std::unique_ptr<GradReducer> reducer_;
};

}  // namespace parallm
