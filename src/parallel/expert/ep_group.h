// EpGroup: what an MoE layer needs to run expert parallel: the ep
// communicator (null or size 1: every expert on this rank). The ep group
// folds data-parallel ranks (grid/rank_grid.h): its ranks hold different
// tokens and different experts. Passed to the model at construction, like
// TpGroup; every rank of the group builds the same model, so the
// all-to-alls line up call for call. split_over_tp: expert tensor
// parallelism (--expert-tp = tp, docs/moe.md): each expert's linears are
// split over the layer's tp group as a dense MLP's are, and the ep group is
// then one per tp rank (ranks with the same tp rank), as it always is.
#pragma once
#include <cstdint>

#include "base/error.h"
#include "comm/communicator.h"

namespace parallm {

struct EpGroup {
  comm::Communicator* comm = nullptr;
  bool split_over_tp = false;

  int size() const { return comm ? comm->size() : 1; }
  int rank() const { return comm ? comm->rank() : 0; }
  bool active() const { return size() > 1; }
  // Experts this rank holds; throws unless ep divides the experts.
  int64_t local_experts(int64_t num_experts) const {
    PX_CHECK(num_experts % size() == 0, "num_experts ({}) is not divisible by ep ({})", num_experts,
             size());
    return num_experts / size();
  }
};

}  // namespace parallm
