#include "parallel/tensor/gather_parameters.h"
#include "ops/copy.h"

#include <cstring>

namespace parallm {

std::vector<float> gather_tp_parameter(const ParameterSet& ps, int i, const float* local,
                                       const TpGroup& tp) {
  const ParamSpec& s = ps.spec(i);
  const int64_t n = ps.numel(i);
  // Experts are replicated over tp (their shard_dim is the ep split) unless
  // split over tp as well (expert tensor parallelism: tp_dim).
  const int dim = s.expert ? s.tp_dim : s.shard_dim;
  if (!tp.active() || dim < 0) {  // local may be a device's buffer
    std::vector<float> whole(static_cast<size_t>(n));
    ops::copy_to_host(ps.stream(), whole.data(), local, whole.size() * sizeof(float));
    return whole;
  }
  const int P = tp.size();
  std::vector<float> blocks(static_cast<size_t>(n * P));
  tp.comm->all_gather(local, blocks.data(), static_cast<size_t>(n), DType::F32);
  // Shards are equal slices along shard_dim: with `outer` the product of the
  // dimensions before it and `inner` the slice's elements per outer index,
  // shard q's block j lands at outer j, offset q * inner. Shard q is held by
  // ranks q * reps .. q * reps + reps - 1 (reps > 1: replicated k/v heads).
  const int reps = s.tp_replicas, shards = P / reps;
  int64_t outer = 1;
  for (int d = 0; d < dim; ++d) outer *= s.shape[d];
  const int64_t inner = n / outer;
  std::vector<float> full(static_cast<size_t>(n * shards));
  for (int q = 0; q < shards; ++q)
    for (int64_t j = 0; j < outer; ++j)
      std::memcpy(full.data() + (j * shards + q) * inner, blocks.data() + q * reps * n + j * inner,
                  static_cast<size_t>(inner) * sizeof(float));
  return full;
}

}  // namespace parallm
