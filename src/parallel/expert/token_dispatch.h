// TokenDispatch: moves expert inputs to the ranks that own the experts and
// the outputs back (GShard / Megatron's all-to-all token dispatcher).
// Forward dispatch: this rank's rows, sorted by global expert (so by owner
// rank, then local expert), go to their owners with one all-to-all-v after
// an all-to-all of the per-expert counts; the owner regroups what it
// received expert-major (expert, then source rank) so its local experts run
// as one grouped GEMM. combine() is the exact inverse (the backward of
// dispatch, and dispatch the backward of combine). Without ep both are
// copies. Zero rows to a rank or an expert are fine. The rows are buffers
// of the stream's device; the staging buffers come from `a`.
#pragma once
#include <cstdint>
#include <vector>

#include "ops/stream.h"
#include "parallel/expert/ep_group.h"

namespace parallm {

class TokenDispatch {
 public:
  TokenDispatch() = default;
  // Collective over ep: rows_per_expert (E) is how many rows this rank
  // sends to each global expert.
  TokenDispatch(const EpGroup& ep, const std::vector<int64_t>& rows_per_expert);

  int64_t send_rows() const { return send_rows_; }
  int64_t recv_rows() const { return recv_rows_; }
  // (E_local + 1) row offsets of each local expert in the expert-major layout.
  const std::vector<int64_t>& expert_offsets() const { return expert_offsets_; }

  // send (send_rows, C), sorted by global expert -> out (recv_rows, C) expert-major.
  void dispatch(const ops::Stream& s, Allocator& a, const EpGroup& ep, const float* send,
                float* out, int64_t C) const;
  // in (recv_rows, C) expert-major -> back (send_rows, C) in dispatch's send order.
  void combine(const ops::Stream& s, Allocator& a, const EpGroup& ep, const float* in, float* back,
               int64_t C) const;

 private:
  int P_ = 1;
  int64_t local_ = 0;
  int64_t send_rows_ = 0, recv_rows_ = 0;
  std::vector<int64_t> send_counts_;  // (P, E_local): rows to rank r's local expert e
  std::vector<int64_t> recv_counts_;  // (P, E_local): rows from rank s for local expert e
  std::vector<int64_t> expert_offsets_;
};

}  // namespace parallm
