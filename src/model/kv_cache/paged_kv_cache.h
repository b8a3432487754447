// PagedKvCache: the storage of the paged KV cache that `parallm serve` runs
// on. Per layer of this rank, k and v pools of (num_blocks, block_size,
// kv_heads, head_dim) of the cache's KvDType (f32, or bf16 / f16 rounded on
// write and widened on read), the layout kernels/cpu/paged_attention.h reads;
// kv_heads is this rank's share under tensor parallelism (its query heads' groups).
// Which blocks a sequence owns is decided on rank 0 (model/kv_cache/block_pool.h,
// block_tables.h) and reaches every rank in the step's PagedSpans, so the
// storage holds no per-sequence state and is identical on all ranks.
// Invariant: a span writes only positions pos0 .. pos0+count-1 of its table.
#pragma once
#include <cstdint>
#include <vector>

#include "model/config.h"
#include "model/kv_cache/kv_dtype.h"
#include "model/model_stage.h"
#include "nn/op_buffers.h"
#include "ops/attention.h"
#include "parallel/tensor/tp_group.h"
#include "tensor/tensor.h"

namespace parallm {

// One sequence's new tokens in a forward: positions pos0 .. pos0+count-1,
// after pos0 positions already in the cache; blocks is its block table
// (logical block i holds positions i*block_size ..), covering pos0 + count.
struct PagedSpan {
  int64_t pos0 = 0;
  int64_t count = 0;
  std::vector<int32_t> blocks;
};

// The spans' block tables where the cache's ops read them (uploaded once
// to a device; on the host stream, a host array) and the kernel's view of
// the spans over them.
class PagedTables {
 public:
  PagedTables(const ops::Stream& s, Allocator& a, const std::vector<PagedSpan>& spans);
  PagedTables(const PagedTables&) = delete;
  PagedTables& operator=(const PagedTables&) = delete;
  const std::vector<ops::PagedSeq>& seqs() const { return seqs_; }

 private:
  std::vector<int32_t> all_;  // every span's table, one after another
  OnDevice<int32_t> tables_;
  std::vector<ops::PagedSeq> seqs_;
};

class PagedKvCache {
 public:
  // Bytes of one block over the given layers (k and v, of kv's size) on a
  // rank of a tp-way split; layers.count 0: all of cfg's layers.
  static int64_t bytes_per_block(const ModelConfig& cfg, int tp, int64_t block_size,
                                 LayerRange layers = {}, KvDType kv = KvDType::F32);
  // How many blocks fit in `bytes` (rounded down; 0 when not even one).
  static int64_t blocks_for_bytes(const ModelConfig& cfg, int tp, int64_t block_size, int64_t bytes,
                                  LayerRange layers = {}, KvDType kv = KvDType::F32);

  // Pools for the given global layers (a pipeline stage's; count 0: all of
  // them), tagged Activation. A 16-bit kv needs CPU kernels (the host or the
  // test device): on a GPU it throws, naming --kv-dtype.
  PagedKvCache(const ModelConfig& cfg, const TpGroup& tp, int64_t num_blocks, int64_t block_size,
               Allocator& alloc, LayerRange layers = {}, KvDType kv = KvDType::F32);

  int64_t num_blocks() const { return num_blocks_; }
  int64_t block_size() const { return block_size_; }
  int64_t kv_heads() const { return kv_heads_; }
  int64_t head_dim() const { return head_dim_; }
  LayerRange layers() const { return layers_; }
  KvDType kv_dtype() const { return kv_; }
  int64_t bytes() const;  // of all pools

  // The (num_blocks, block_size, kv_heads, head_dim) pools of a (global)
  // layer, as stored; k() and v() are an f32 cache's values (they throw on
  // a 16-bit one).
  const Tensor& k_pool(int64_t layer) const { return pool(k_, layer); }
  const Tensor& v_pool(int64_t layer) const { return pool(v_, layer); }
  float* k(int64_t layer) { return k_pool(layer).data<float>(); }
  float* v(int64_t layer) { return v_pool(layer).data<float>(); }
  const float* k(int64_t layer) const { return k_pool(layer).data<float>(); }
  const float* v(int64_t layer) const { return v_pool(layer).data<float>(); }

  // Throws, naming the numbers, unless every span is non-empty and its
  // table covers its positions with blocks of this pool.
  void check_spans(const std::vector<PagedSpan>& spans) const;
  // Stores the span's count rows of keys and values, (count, kv_heads *
  // head_dim) each, at its positions in the layer's pools.
  // seq: a span as the kernels see it (PagedTables), its table on the
  // cache's device; the rows are buffers of that device too.
  void write(int64_t layer, const ops::PagedSeq& seq, const float* k_rows, const float* v_rows);
  void write(int64_t layer, const PagedSpan& s, const float* k_rows, const float* v_rows);
  // The kernel's view of the spans (pointing into them; keep them alive),
  // for a cache on the host.
  static std::vector<ops::PagedSeq> kernel_seqs(const std::vector<PagedSpan>& spans);
  // The stream of the cache's pools and an allocator of their memory.
  const ops::Stream& stream() const { return ops::Stream::of(k_.at(0)); }
  Allocator& allocator() const { return *k_.at(0).allocator(); }
  // Kernel dims for q_heads query heads (this rank's) over this pool.
  ops::PagedAttnDims attn_dims(int64_t q_heads) const;
  // Paged attention of q (N, q_heads, head_dim) over the layer's pools into
  // out (same shape), for the sequences of the step (PagedTables::seqs()).
  // d: attn_dims(q_heads), with the layer's window.
  void attention(int64_t layer, float* out, const float* q, const std::vector<ops::PagedSeq>& seqs,
                 const ops::PagedAttnDims& d, double scale) const;

 private:
  const Tensor& pool(const std::vector<Tensor>& t, int64_t layer) const;
  int64_t num_blocks_ = 0, block_size_ = 0, kv_heads_ = 0, head_dim_ = 0;
  LayerRange layers_;
  KvDType kv_ = KvDType::F32;
  std::vector<Tensor> k_, v_;  // per layer of the range
};

}  // namespace parallm
