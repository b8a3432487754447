// PagedKvCache: sizing, pools and span checks (see paged_kv_cache.h).
#include "model/kv_cache/paged_kv_cache.h"

#include "base/error.h"
#include "model/layers/attention.h"

namespace parallm {
namespace {

int64_t kv_heads_per_rank(const ModelConfig& cfg, int tp) {
  return cfg.n_kv_heads * kv_replicas(cfg, tp) / tp;
}

LayerRange all_if_empty(const ModelConfig& cfg, LayerRange layers) {
  return layers.count == 0 ? LayerRange{0, static_cast<int>(cfg.n_layers)} : layers;
}

}  // namespace

int64_t PagedKvCache::bytes_per_block(const ModelConfig& cfg, int tp, int64_t block_size,
                                      LayerRange layers, KvDType kv) {
  PX_CHECK(tp >= 1 && block_size >= 1, "KV block geometry needs tp ({}) and block size ({}) >= 1",
           tp, block_size);
  return 2 * all_if_empty(cfg, layers).count * block_size * kv_heads_per_rank(cfg, tp) *
         cfg.head_dim * kv_dtype_bytes(kv);
}

int64_t PagedKvCache::blocks_for_bytes(const ModelConfig& cfg, int tp, int64_t block_size,
                                       int64_t bytes, LayerRange layers, KvDType kv) {
  PX_CHECK(bytes >= 0, "KV cache memory must not be negative, got {} bytes", bytes);
  const int64_t per = bytes_per_block(cfg, tp, block_size, layers, kv);
  return per > 0 ? bytes / per : 0;
}

PagedKvCache::PagedKvCache(const ModelConfig& cfg, const TpGroup& tp, int64_t num_blocks,
                           int64_t block_size, Allocator& alloc, LayerRange layers, KvDType kv)
    : num_blocks_(num_blocks),
      block_size_(block_size),
      kv_heads_(kv_heads_per_rank(cfg, tp.size())),
      head_dim_(cfg.head_dim),
      layers_(all_if_empty(cfg, layers)),
      kv_(kv) {
  PX_CHECK(num_blocks >= 1 && block_size >= 1,
           "the paged KV cache needs at least one block ({}) of at least one token ({})",
           num_blocks, block_size);
  PX_CHECK(num_blocks <= INT32_MAX, "{} KV blocks exceed the block id range", num_blocks);
  PX_CHECK(
      layers_.first >= 0 && layers_.count >= 1 && layers_.first + layers_.count <= cfg.n_layers,
      "KV cache layers [{}, {}) are outside the model's {} layers", layers_.first,
      layers_.first + layers_.count, cfg.n_layers);
  // Before the pools are allocated: the GPU's paged attention reads f32 only.
  PX_CHECK(kv == KvDType::F32 || ops::Stream::of(alloc).backend() == nullptr,
           "--kv-dtype {}: the GPU's paged attention reads an f32 KV cache only; use --kv-dtype "
           "f32 with --device cuda (16-bit caches run on the CPU)",
           kv_dtype_name(kv));
  // Activation: forward state that lives as long as the server (or the generation).
  for (int l = 0; l < layers_.count; ++l) {
    k_.push_back(Tensor::zeros(alloc, {num_blocks, block_size, kv_heads_, head_dim_},
                               kv_tensor_dtype(kv), MemTag::Activation));
    v_.push_back(Tensor::zeros(alloc, {num_blocks, block_size, kv_heads_, head_dim_},
                               kv_tensor_dtype(kv), MemTag::Activation));
  }
}

int64_t PagedKvCache::bytes() const {
  int64_t b = 0;
  for (const Tensor& t : k_) b += static_cast<int64_t>(t.nbytes());
  for (const Tensor& t : v_) b += static_cast<int64_t>(t.nbytes());
  return b;
}

const Tensor& PagedKvCache::pool(const std::vector<Tensor>& t, int64_t layer) const {
  PX_CHECK(layer >= layers_.first && layer < layers_.first + layers_.count,
           "layer {} is not in this KV cache (layers [{}, {}))", layer, layers_.first,
           layers_.first + layers_.count);
  return t[static_cast<size_t>(layer - layers_.first)];
}

void PagedKvCache::check_spans(const std::vector<PagedSpan>& spans) const {
  for (size_t i = 0; i < spans.size(); ++i) {
    const PagedSpan& s = spans[i];
    PX_CHECK(s.count >= 1 && s.pos0 >= 0, "paged span {} has pos0 {} and count {}", i, s.pos0,
             s.count);
    const int64_t need = (s.pos0 + s.count + block_size_ - 1) / block_size_;
    PX_CHECK(static_cast<int64_t>(s.blocks.size()) >= need,
             "paged span {} reaches position {} but its table has {} blocks of {} (needs {})", i,
             s.pos0 + s.count - 1, s.blocks.size(), block_size_, need);
    for (int64_t b = 0; b < need; ++b)
      PX_CHECK(s.blocks[b] >= 0 && s.blocks[b] < num_blocks_,
               "paged span {}: block {} is {}, outside the pool [0, {})", i, b, s.blocks[b],
               num_blocks_);
  }
}

PagedTables::PagedTables(const ops::Stream& s, Allocator& a, const std::vector<PagedSpan>& spans)
    : all_([&] {
        std::vector<int32_t> all;
        for (const PagedSpan& sp : spans) all.insert(all.end(), sp.blocks.begin(), sp.blocks.end());
        return all;
      }()),
      tables_(s, a, all_) {
  int64_t at = 0;
  for (const PagedSpan& sp : spans) {
    const int64_t n = static_cast<int64_t>(sp.blocks.size());
    seqs_.push_back({sp.count, sp.pos0, tables_.get() + at, n});
    at += n;
  }
}

void PagedKvCache::write(int64_t layer, const ops::PagedSeq& seq, const float* k_rows,
                         const float* v_rows) {
  const int64_t row = kv_heads_ * head_dim_;
  if (const auto t = kv_lowp(kv_)) {
    ops::paged_kv_write(stream(), k_pool(layer).half_bits(), *t, num_blocks_, block_size_, row,
                        seq.blocks, seq.n_blocks, seq.q_pos0, seq.Tq, k_rows);
    ops::paged_kv_write(stream(), v_pool(layer).half_bits(), *t, num_blocks_, block_size_, row,
                        seq.blocks, seq.n_blocks, seq.q_pos0, seq.Tq, v_rows);
    return;
  }
  ops::paged_kv_write(stream(), k(layer), num_blocks_, block_size_, row, seq.blocks,
                      seq.n_blocks, seq.q_pos0, seq.Tq, k_rows);
  ops::paged_kv_write(stream(), v(layer), num_blocks_, block_size_, row, seq.blocks,
                      seq.n_blocks, seq.q_pos0, seq.Tq, v_rows);
}

void PagedKvCache::attention(int64_t layer, float* out, const float* q,
                             const std::vector<ops::PagedSeq>& seqs, const ops::PagedAttnDims& d,
                             double scale) const {
  const int64_t n = static_cast<int64_t>(seqs.size());
  if (const auto t = kv_lowp(kv_)) {
    ops::paged_attention_forward(stream(), out, nullptr, q, k_pool(layer).half_bits(),
                                 v_pool(layer).half_bits(), *t, seqs.data(), n, d, scale);
    return;
  }
  ops::paged_attention_forward(stream(), out, nullptr, q, k(layer),
                               v(layer), seqs.data(), n, d, scale);
}

void PagedKvCache::write(int64_t layer, const PagedSpan& s, const float* k_rows,
                         const float* v_rows) {
  const PagedTables t(stream(), allocator(), {s});
  write(layer, t.seqs()[0], k_rows, v_rows);
}

std::vector<ops::PagedSeq> PagedKvCache::kernel_seqs(const std::vector<PagedSpan>& spans) {
  std::vector<ops::PagedSeq> out;
  out.reserve(spans.size());
  for (const PagedSpan& s : spans)
    out.push_back({s.count, s.pos0, s.blocks.data(), static_cast<int64_t>(s.blocks.size())});
  return out;
}

ops::PagedAttnDims PagedKvCache::attn_dims(int64_t q_heads) const {
  return {q_heads, kv_heads_, head_dim_, block_size_, num_blocks_};
}

}  // namespace parallm
