#include "parallel/zero/expert_shards.h"

#include <algorithm>

namespace parallm {
namespace {

int64_t total_of(const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  int64_t n = 0;
  for (const auto& [lo, hi] : ranges) n += hi - lo;
  return n;
}

void broadcast_spans(comm::Communicator& g, const std::vector<FlatSpan>& spans, float* v,
                     int root) {
  for (const FlatSpan& s : spans)
    g.broadcast(v + s.begin, static_cast<size_t>(s.size()), DType::F32, root);
}

}  // namespace

ExpertShards::ExpertShards(ShardLayout dense,
                           std::vector<std::pair<int64_t, int64_t>> expert_ranges, int edp)
    : dense_(dense), experts_(std::move(expert_ranges)), expert_layout_{total_of(experts_), edp} {}

std::vector<FlatSpan> ExpertShards::dense_spans(int dp_rank) const {
  std::vector<FlatSpan> out;
  int64_t at = dense_.begin(dp_rank);
  const int64_t end = dense_.end(dp_rank);
  for (const auto& [lo, hi] : experts_) {
    if (hi <= at || lo >= end) continue;
    if (lo > at) out.push_back({at, lo});
    at = std::max(at, hi);
  }
  if (at < end) out.push_back({at, end});
  return out;
}

std::vector<FlatSpan> ExpertShards::expert_spans(int edp_rank) const {
  // Virtual index v runs over the expert ranges end to end.
  const int64_t vb = expert_layout_.begin(edp_rank), ve = expert_layout_.end(edp_rank);
  std::vector<FlatSpan> out;
  int64_t v = 0;
  for (const auto& [lo, hi] : experts_) {
    const int64_t a = std::max(vb, v), b = std::min(ve, v + (hi - lo));
    if (a < b) out.push_back({lo + (a - v), lo + (b - v)});
    v += hi - lo;
  }
  return out;
}

std::vector<FlatSpan> ExpertShards::owned(int dp_rank, int edp_rank) const {
  std::vector<FlatSpan> out = dense_spans(dp_rank);
  for (const FlatSpan& s : expert_spans(edp_rank)) out.push_back(s);
  std::sort(out.begin(), out.end(),
            [](const FlatSpan& a, const FlatSpan& b) { return a.begin < b.begin; });
  return out;
}

std::vector<SpanOwners> ExpertShards::owner_tables(comm::Communicator& dp,
                                                   comm::Communicator* edp) const {
  SpanOwners dense{&dp, {}}, experts{edp, {}};
  for (int r = 0; r < dp.size(); ++r) dense.spans.push_back(dense_spans(r));
  for (int r = 0; r < experts.size(); ++r) experts.spans.push_back(expert_spans(r));
  return {dense, experts};
}

void ExpertShards::sync(comm::Communicator& dp, comm::Communicator* edp, float* values) const {
  for (int o = 0; o < dp.size(); ++o) broadcast_spans(dp, dense_spans(o), values, o);
  if (edp == nullptr || edp->size() == 1) return;
  for (int o = 0; o < edp->size(); ++o) broadcast_spans(*edp, expert_spans(o), values, o);
}

}  // namespace parallm
