// KvCache storage and per-slot lengths (see kv_cache.h).
#include "model/kv_cache.h"

#include "base/error.h"
#include "model/layers/attention.h"

namespace parallm {

KvCache::KvCache(const ModelConfig& cfg, const TpGroup& tp, int slots, int64_t max_len,
                 Allocator& alloc, LayerRange layers)
    : layers_(layers.count == 0 ? LayerRange{0, static_cast<int>(cfg.n_layers)} : layers),
      max_len_(max_len),
      kv_heads_(cfg.n_kv_heads * kv_replicas(cfg, tp.size()) / tp.size()),
      head_dim_(cfg.head_dim),
      length_(static_cast<size_t>(slots), 0) {
  PX_CHECK(slots >= 1 && max_len >= 1, "KV cache needs slots ({}) and max_len ({}) >= 1", slots,
           max_len);
  PX_CHECK(
      layers_.first >= 0 && layers_.count >= 1 && layers_.first + layers_.count <= cfg.n_layers,
      "KV cache layers [{}, {}) are outside the model's {} layers", layers_.first,
      layers_.first + layers_.count, cfg.n_layers);
  // Activation: the cache is forward state, freed when generation ends.
  for (int l = 0; l < layers_.count; ++l) {
    k_.push_back(Tensor::zeros(alloc, {slots, max_len, kv_heads_, head_dim_}, DType::F32,
                               MemTag::Activation));
    v_.push_back(Tensor::zeros(alloc, {slots, max_len, kv_heads_, head_dim_}, DType::F32,
                               MemTag::Activation));
  }
}

float* KvCache::row(std::vector<Tensor>& t, int64_t layer, int slot) {
  PX_CHECK(slot >= 0 && slot < slots(), "KV cache slot {} is outside [0, {})", slot, slots());
  PX_CHECK(layer >= layers_.first && layer < layers_.first + layers_.count,
           "layer {} is not in this KV cache (layers [{}, {}))", layer, layers_.first,
           layers_.first + layers_.count);
  return t.at(static_cast<size_t>(layer - layers_.first)).data<float>() +
         slot * max_len_ * kv_heads_ * head_dim_;
}

void KvCache::check_spans(const std::vector<CacheSpan>& spans) const {
  for (const CacheSpan& s : spans) {
    PX_CHECK(s.slot >= 0 && s.slot < slots(), "KV cache slot {} is outside [0, {})", s.slot,
             slots());
    PX_CHECK(s.count >= 1, "empty span for KV cache slot {}", s.slot);
    PX_CHECK(length(s.slot) + s.count <= max_len_,
             "KV cache slot {} holds {} tokens; {} more exceed its capacity {}", s.slot,
             length(s.slot), s.count, max_len_);
  }
}

void KvCache::advance(const std::vector<CacheSpan>& spans) {
  for (const CacheSpan& s : spans) length_.at(static_cast<size_t>(s.slot)) += s.count;
}

}  // namespace parallm
