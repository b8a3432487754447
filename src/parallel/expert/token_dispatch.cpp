// Token dispatch over the ep group (see token_dispatch.h). Received rows
// arrive source-major (rank s's rows for each local expert, in expert
// order); regroup() turns that into expert-major and back.
#include "parallel/expert/token_dispatch.h"

#include "nn/op_buffers.h"
#include "ops/copy.h"

namespace parallm {
namespace {

// Copies row blocks between the source-major and the expert-major layouts
// of counts (P, E): to_expert_major picks the direction.
void regroup(const ops::Stream& st, const std::vector<int64_t>& counts, int P, int64_t E,
             const float* in, float* out, int64_t C, bool to_expert_major) {
  std::vector<int64_t> src_off(P * E + 1, 0), exp_off(P * E + 1, 0);
  for (int s = 0; s < P; ++s)  // source-major offsets of block (s, e)
    for (int64_t e = 0; e < E; ++e) src_off[s * E + e + 1] = src_off[s * E + e] + counts[s * E + e];
  std::vector<int64_t> em(P * E, 0);  // expert-major offset of block (s, e)
  int64_t o = 0;
  for (int64_t e = 0; e < E; ++e)
    for (int s = 0; s < P; ++s) em[s * E + e] = o, o += counts[s * E + e];
  for (int s = 0; s < P; ++s)
    for (int64_t e = 0; e < E; ++e) {
      const int64_t n = counts[s * E + e] * C;
      if (n == 0) continue;
      const int64_t a = src_off[s * E + e] * C, b = em[s * E + e] * C;
      const size_t bytes = static_cast<size_t>(n) * sizeof(float);
      if (to_expert_major)
        ops::copy(st, out + b, in + a, bytes);
      else
        ops::copy(st, out + a, in + b, bytes);
    }
}

}  // namespace

TokenDispatch::TokenDispatch(const EpGroup& ep, const std::vector<int64_t>& rows_per_expert)
    : P_(ep.size()), local_(ep.local_experts(static_cast<int64_t>(rows_per_expert.size()))) {
  send_counts_ = rows_per_expert;  // global expert order is (rank, local expert)
  recv_counts_.assign(send_counts_.size(), 0);
  if (ep.active())
    ep.comm->all_to_all(send_counts_.data(), recv_counts_.data(), static_cast<size_t>(local_),
                        DType::I64);
  else
    recv_counts_ = send_counts_;
  for (int64_t n : send_counts_) send_rows_ += n;
  expert_offsets_.assign(local_ + 1, 0);
  for (int64_t e = 0; e < local_; ++e) {
    int64_t n = 0;
    for (int s = 0; s < P_; ++s) n += recv_counts_[s * local_ + e];
    expert_offsets_[e + 1] = expert_offsets_[e] + n;
  }
  recv_rows_ = expert_offsets_[local_];
}

void TokenDispatch::dispatch(const ops::Stream& st, Allocator& a, const EpGroup& ep,
                             const float* send, float* out, int64_t C) const {
  if (!ep.active()) {  // one rank: the send order is already expert-major
    ops::copy(st, out, send, static_cast<size_t>(send_rows_ * C) * sizeof(float));
    return;
  }
  std::vector<size_t> sc(P_, 0), rc(P_, 0);
  for (int r = 0; r < P_; ++r)
    for (int64_t e = 0; e < local_; ++e) {
      sc[r] += static_cast<size_t>(send_counts_[r * local_ + e] * C);
      rc[r] += static_cast<size_t>(recv_counts_[r * local_ + e] * C);
    }
  const OpScratch scratch(st, a);
  const Tensor recv = scratch.floats(recv_rows_ * C);
  ep.comm->all_to_all_v(send, sc, recv.data<float>(), rc, DType::F32);
  regroup(st, recv_counts_, P_, local_, recv.data<float>(), out, C, true);
}

void TokenDispatch::combine(const ops::Stream& st, Allocator& a, const EpGroup& ep, const float* in,
                            float* back, int64_t C) const {
  if (!ep.active()) {
    ops::copy(st, back, in, static_cast<size_t>(send_rows_ * C) * sizeof(float));
    return;
  }
  const OpScratch scratch(st, a);
  const Tensor src = scratch.floats(recv_rows_ * C);
  regroup(st, recv_counts_, P_, local_, in, src.data<float>(), C, false);
  std::vector<size_t> sc(P_, 0), rc(P_, 0);
  for (int r = 0; r < P_; ++r)
    for (int64_t e = 0; e < local_; ++e) {
      sc[r] += static_cast<size_t>(recv_counts_[r * local_ + e] * C);
      rc[r] += static_cast<size_t>(send_counts_[r * local_ + e] * C);
    }
  ep.comm->all_to_all_v(src.data<float>(), sc, back, rc, DType::F32);
}

}  // namespace parallm
