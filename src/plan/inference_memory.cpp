#include "plan/inference_memory.h"

#include <cmath>

#include "base/error.h"
#include "model/layers/attention.h"
#include "plan/memory_model.h"

namespace parallm {
namespace {

double bytes_per_element(Precision p) { return p == Precision::FP32 ? 4.0 : 2.0; }

int64_t context_of(const InferenceMemoryQuery& q) {
  return q.context > 0 ? q.context : q.model.max_positions;
}

}  // namespace

void InferenceMemoryQuery::validate() const {
  model.validate();
  PX_CHECK(tp >= 1 && pp >= 1, "parallel sizes must be at least 1 (tp {}, pp {})", tp, pp);
  check_tp_divides(model, tp);
  PX_CHECK(model.n_layers >= pp, "num_layers ({}) is smaller than pp ({})", model.n_layers, pp);
  PX_CHECK(batch >= 1, "batch must be at least 1, got {}", batch);
  PX_CHECK(context >= 0 && context <= model.max_positions,
           "context ({}) must be between 1 and the model's max_positions ({})", context,
           model.max_positions);
}

InferenceMemory estimate_inference_memory(const InferenceMemoryQuery& q) {
  q.validate();
  const ModelConfig& m = q.model;
  // The weights the training model holds on the first stage, without any
  // training state: the same exact per-rank count (tp shards, padded vocab).
  MemoryQuery held;
  held.model = m;
  held.tp = q.tp;
  held.pp = q.pp;
  held.seq_len = 1;
  InferenceMemory r;
  r.params_per_rank = estimate_memory(held).params_per_rank;
  r.weights = static_cast<double>(r.params_per_rank) * bytes_per_element(q.weights);
  r.layers_per_rank = (m.n_layers + q.pp - 1) / q.pp;
  r.kv_heads_per_rank = m.n_kv_heads * kv_replicas(m, q.tp) / q.tp;
  r.kv_bytes_per_token = 2.0 * static_cast<double>(r.layers_per_rank * r.kv_heads_per_rank) *
                         static_cast<double>(m.head_dim) * bytes_per_element(q.kv_cache);
  r.kv_cache = r.kv_bytes_per_token * static_cast<double>(q.batch * context_of(q));
  return r;
}

int64_t max_cached_tokens(const InferenceMemoryQuery& q, double device_bytes) {
  const InferenceMemory r = estimate_inference_memory(q);
  if (device_bytes <= r.weights) return 0;
  return static_cast<int64_t>(std::floor((device_bytes - r.weights) / r.kv_bytes_per_token));
}

}  // namespace parallm
