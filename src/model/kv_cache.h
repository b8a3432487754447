// KvCache: the keys and values of every layer for a set of sequence slots,
// so decoding a token reads the past instead of recomputing it. Per layer,
// k and v are (slots, max_len, kv_heads, head_dim) fp32, the layout the
// attention kernel reads for one batch row (B = 1, Tk = length). kv_heads is
// this rank's share under tensor parallelism (the groups its query heads
// use). Each slot has its own length, so sequences of different lengths
// share one cache without padding; positions of a slot are 0..length-1.
// A pipeline stage caches only its own layers (global layer indices).
#pragma once
#include <cstdint>
#include <vector>

#include "model/config.h"
#include "model/model_stage.h"
#include "parallel/tensor/tp_group.h"
#include "tensor/tensor.h"

namespace parallm {

// A run of `count` consecutive tokens of one slot, starting at the slot's
// current length: a prompt (prefill) or one new token (decode).
struct CacheSpan {
  int slot = 0;
  int64_t count = 0;
};

class KvCache {
 public:
  // layers: the global layers cached (count 0: all of them).
  KvCache(const ModelConfig& cfg, const TpGroup& tp, int slots, int64_t max_len, Allocator& alloc,
          LayerRange layers = {});
  int slots() const { return static_cast<int>(length_.size()); }
  int64_t max_len() const { return max_len_; }
  int64_t kv_heads() const { return kv_heads_; }
  int64_t head_dim() const { return head_dim_; }
  int64_t length(int slot) const { return length_.at(static_cast<size_t>(slot)); }
  // (max_len, kv_heads, head_dim) rows of one (global) layer and slot.
  float* k(int64_t layer, int slot) { return row(k_, layer, slot); }
  float* v(int64_t layer, int slot) { return row(v_, layer, slot); }
  // Throws, naming the numbers, when a span would run past max_len.
  void check_spans(const std::vector<CacheSpan>& spans) const;
  // After every layer has written a forward's spans: their tokens count.
  void advance(const std::vector<CacheSpan>& spans);
  void reset(int slot) { length_.at(static_cast<size_t>(slot)) = 0; }

 private:
  float* row(std::vector<Tensor>& t, int64_t layer, int slot);
  LayerRange layers_;
  int64_t max_len_ = 0, kv_heads_ = 0, head_dim_ = 0;
  std::vector<Tensor> k_, v_;  // per layer
  std::vector<int64_t> length_;
};

}  // namespace parallm
