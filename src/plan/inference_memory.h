// The memory of serving a model: its weights plus the KV cache, per rank of a
// tp x pp layout. Each cached token holds a key and a value vector for every
// layer of the rank's stage and every key/value head of its tp shard:
// 2 x layers x kv_heads x head_dim x bytes (with fewer key/value groups than
// tp ranks a group is replicated, so each rank still holds one). The rank
// with the most layers and the first stage's weights (the embedding) bound
// what fits; the largest batch x context follows from the bytes left.
#pragma once
#include <cstdint>

#include "model/config.h"
#include "nn/precision.h"

namespace parallm {

struct InferenceMemoryQuery {
  ModelConfig model;
  int tp = 1, pp = 1;
  Precision weights = Precision::BF16;   // storage of the weights
  Precision kv_cache = Precision::BF16;  // storage of cached keys and values
  int64_t batch = 1;                     // sequences held at once
  int64_t context = 0;                   // tokens per sequence; 0: model.max_positions

  void validate() const;  // layout and sizes, with the values in the message
};

struct InferenceMemory {
  int64_t params_per_rank = 0;
  int64_t layers_per_rank = 0;
  int64_t kv_heads_per_rank = 0;
  double weights = 0;             // bytes
  double kv_bytes_per_token = 0;  // bytes per cached token on this rank
  double kv_cache = 0;            // batch x context tokens
  double total() const { return weights + kv_cache; }
};

InferenceMemory estimate_inference_memory(const InferenceMemoryQuery& q);

// Cached tokens that fit beside the weights in device_bytes (0 when even the
// weights do not fit).
int64_t max_cached_tokens(const InferenceMemoryQuery& q, double device_bytes);

}  // namespace parallm
