#include "optim/muon.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "ops/optimizer.h"
#include "optim/newton_schulz.h"
#include "parallel/tensor/gather_parameters.h"

namespace parallm {

bool Muon::is_matrix(const ParamSpec& s) {
  return s.shape.size() == 2 && s.name.rfind("layers.", 0) == 0;
}

namespace {
void push_span(std::vector<FlatSpan>& spans, int64_t b, int64_t e) {
  if (b >= e) return;
  if (!spans.empty() && spans.back().end == b)
    spans.back().end = e;
  else
    spans.push_back({b, e});
}
}  // namespace

Muon::Muon(const ParameterSet& params, const OptimizerConfig& cfg, Allocator& alloc, int64_t begin,
           int64_t end, const TpGroup& tp, comm::Communicator* shard_group, int64_t shard_size)
    : Optimizer(begin, end), cfg_(cfg), alloc_(alloc), tp_(tp), shard_group_(shard_group) {
  PX_CHECK(0 <= begin && begin <= end && end <= params.total_numel(),
           "optimizer range [{}, {}) does not fit {} parameters", begin, end, params.total_numel());
  PX_CHECK(shard_size > 0 || shard_group == nullptr, "muon: shard size {} must be positive",
           shard_size);
  PX_CHECK(shard_group != nullptr || (begin == 0 && end == params.total_numel()),
           "muon owns the range [{}, {}) of {} parameters but has no shard group to assemble "
           "whole matrices from",
           begin, end, params.total_numel());
  // Owned matrix elements go to momentum_ in flat order; every other owned
  // element (padding included) to the AdamW moments, so the two cover [begin, end).
  int64_t mat = 0, other = 0;
  for (int i = 0; i < params.size(); ++i) {
    const int64_t off = params.offset(i), n = params.numel(i), slot_end = params.offset(i + 1);
    const bool m = is_matrix(params.spec(i));
    matrix_.push_back(m);
    cut_.push_back(m && shard_group != nullptr && shard_group->size() > 1 && n > 0 &&
                   off / shard_size != (off + n - 1) / shard_size);
    const int64_t lo = std::max(begin, off), hi = std::min(end, slot_end);
    const int64_t data_hi = std::min(hi, off + n);  // owned elements before the padding
    if (m) {
      slot_.push_back(mat);
      mat += std::max<int64_t>(0, data_hi - lo);
      push_span(matrix_spans_, lo, data_hi);
      const int64_t pad_lo = std::max(lo, off + n);
      push_span(other_spans_, pad_lo, hi);
      other += std::max<int64_t>(0, hi - pad_lo);
    } else {
      slot_.push_back(other);
      push_span(other_spans_, lo, hi);
      other += std::max<int64_t>(0, hi - lo);
    }
  }
  momentum_ = Tensor::zeros(alloc, {mat}, DType::F32, MemTag::Optimizer);
  m_ = Tensor::zeros(alloc, {other}, DType::F32, MemTag::Optimizer);
  v_ = Tensor::zeros(alloc, {other}, DType::F32, MemTag::Optimizer);
}

void Muon::step_range(const ParameterSet& params, double lr, float* p, const float* g) {
  ++step_;
  const float mu = static_cast<float>(cfg_.muon_momentum);
  const double lr_m = lr * cfg_.muon_lr_ratio();
  const float decay = static_cast<float>(1.0 - lr_m * cfg_.muon_weight_decay);
  for (int i = 0; i < params.size(); ++i) {
    const int64_t off = params.offset(i), n = params.numel(i);
    const int64_t lo = std::max(begin_, off), hi = std::min(end_, off + n);  // owned elements
    if (!matrix_[i]) {
      if (hi <= lo) continue;
      ops::AdamWParams h{.lr = lr,
                         .beta1 = cfg_.beta1,
                         .beta2 = cfg_.beta2,
                         .eps = cfg_.eps,
                         .weight_decay = params.spec(i).weight_decay ? cfg_.weight_decay : 0.0,
                         .step = step_};
      ops::adamw_step(params.stream(), p + (lo - begin_), g + (lo - begin_),
                      m_.data<float>() + slot_[i], v_.data<float>() + slot_[i], hi - lo, h);
      continue;
    }
    // A cut matrix: every shard rank takes part in its all-reduce, owner or
    // not. Whole on one rank: only that rank (and its tp peers, which own
    // the same range) handles it.
    if (!cut_[i] && hi <= lo) continue;
    // u: this rank's tp slice of the momentum update, zero where another
    // ZeRO rank owns it (the sum over the shard group fills those in).
    Tensor u = Tensor::zeros(alloc_, {n}, DType::F32, MemTag::Workspace);
    float* ud = u.data<float>();
    float* buf = momentum_.data<float>() + slot_[i];
    for (int64_t f = lo; f < hi; ++f) {  // the reference's lerp form
      const float gf = g[f - begin_];
      float& b = buf[f - lo];
      b += (1.0f - mu) * (gf - b);
      ud[f - off] = gf + mu * (b - gf);
    }
    if (cut_[i])
      shard_group_->all_reduce(ud, static_cast<size_t>(n), DType::F32, comm::ReduceOp::Sum);
    // Whole matrix: gathered over tp when sharded (identical on every tp rank).
    const ParamSpec& s = params.spec(i);
    std::vector<float> full = gather_tp_parameter(params, i, ud, tp_);
    const bool sharded = tp_.active() && s.shard_dim >= 0;
    const int64_t R = sharded ? s.global_shape[0] : s.shape[0];
    const int64_t C = sharded ? s.global_shape[1] : s.shape[1];
    PX_CHECK(static_cast<int64_t>(full.size()) == R * C,
             "muon: {} gathered {} elements, expected {} x {}", s.name, full.size(), R, C);
    if (hi <= lo) continue;  // nothing of it here: skip the orthogonalisation
    newton_schulz_orthogonalise(full.data(), R, C, cfg_.muon_ns_steps, alloc_);
    const float step = static_cast<float>(
        lr_m * std::sqrt(std::max(1.0, static_cast<double>(R) / static_cast<double>(C))));
    // Local element e = (r, c) of the (shape[0], shape[1]) slice sits at
    // (r0 + r, c0 + c) of the whole matrix.
    const int64_t r0 = sharded && s.shard_dim == 0 ? s.shard_begin : 0;
    const int64_t c0 = sharded && s.shard_dim == 1 ? s.shard_begin : 0;
    const int64_t lc = s.shape[1];
    for (int64_t f = lo; f < hi; ++f) {
      const int64_t e = f - off;
      float& pf = p[f - begin_];
      pf = pf * decay - step * full[(r0 + e / lc) * C + c0 + e % lc];
    }
  }
}

std::vector<OptimizerState> Muon::state() {
  return {{"momentum_buffer", &momentum_, matrix_spans_},
          {"exp_avg", &m_, other_spans_},
          {"exp_avg_sq", &v_, other_spans_}};
}

}  // namespace parallm
