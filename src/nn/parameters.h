// ParameterSet: every trainable tensor of a model, laid out in one flat fp32
// buffer (tag parameter) with a parallel flat gradient buffer (tag gradient),
// so data parallelism and the optimizer can work on contiguous ranges.
// Each entry records its global shape and the slice it holds, and is
// initialised from a counter-based RNG keyed by (seed, name, global element
// index): a shard holds exactly the slice of the full tensor (principle 1).
// A frozen set (allocate(alloc, false)) has no gradients at all.
// Layers reach values and gradients only through value()/grad(), which read
// per-parameter pointers: by default into the flat buffers, but ZeRO rebinds
// a unit's range to a gathered or staging buffer (bind_values/bind_grads)
// and may release the flat buffers it no longer needs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ops/nf4.h"
#include "ops/quant.h"
#include "tensor/tensor.h"

namespace parallm {

// Uniform: U(-init_std, init_std) (LoRA's A, as PyTorch's kaiming_uniform_).
enum class InitKind { Normal, Ones, Zeros, Uniform };

struct ParamSpec {
  std::string name;                   // internal name, e.g. "layers.0.attn.q.weight"
  std::vector<int64_t> shape;         // local shape
  std::vector<int64_t> global_shape;  // full tensor shape (== shape when unsharded)
  int shard_dim = -1;                 // dimension split across ranks, -1 for none
  int64_t shard_begin = 0;            // first global index along shard_dim
  InitKind init = InitKind::Normal;
  double init_std = 0.02;
  bool weight_decay = true;  // false for norms and biases
  // Replicated over tp, but each tp rank's gradient covers only its slice of
  // the sequence (norms, row-parallel biases, positions under sequence
  // parallelism): the model sums it over the tp group after backward.
  bool tp_partial_grad = false;
  // Consecutive tp ranks holding this same shard (key/value heads when
  // n_kv_heads < tp): each computes a partial gradient from its own query
  // heads, and the model sums it over those ranks after backward.
  int tp_replicas = 1;
  // Replicated over tp, and each tp rank's gradient is a partial sum with or
  // without sequence parallelism (LoRA's A of a column-parallel linear, B of
  // a row-parallel one): the model sums it over the tp group after backward.
  bool tp_grad_sum = false;
  // A copy of a parameter that another pipeline stage owns (the last stage's
  // tied token table): updated like any other, counted once in the norm.
  bool pipeline_copy = false;
  // An MoE expert weight (docs/moe.md): dimension 0 counts experts, split
  // over the ep group when shard_dim == 0; its gradient is reduced over the
  // expert-data-parallel group instead of dp.
  bool expert = false;
  // An expert tensor split over tp as well (expert tensor parallelism,
  // --expert-tp = tp; docs/moe.md): the dimension split over the tp group
  // (1: fc / gate / up rows and fc's bias, 2: proj / down columns) and this
  // rank's first global index along it; shard_dim stays ep's split of
  // dimension 0. -1: the expert tensor is replicated over tp.
  int tp_dim = -1;
  int64_t tp_begin = 0;
};

struct ParamRef {
  int index = -1;
};

class ParameterSet {
 public:
  // Registration happens before allocate(); refs stay valid afterwards.
  ParamRef add(ParamSpec spec);
  // with_grads false: a frozen set (the base under LoRA): values only, no
  // gradient buffer, and grad() returns null for every parameter.
  void allocate(Allocator& alloc, bool with_grads = true);
  bool frozen() const { return frozen_; }
  // Inference: frees the gradient buffer; the set is frozen from now on (a
  // GGUF model's linear weights then take their quantised form, set_quant).
  void freeze();
  // Where ops on these parameters and gradients run (their allocator's device).
  const ops::Stream& stream() const {
    return alloc_ != nullptr ? ops::Stream::of(*alloc_) : ops::Stream::host();
  }
  bool allocated() const { return !value_ptr_.empty(); }

  float* value(ParamRef r) const { return value_ptr_[r.index]; }
  float* grad(ParamRef r) const { return grad_ptr_[r.index]; }
  // Points parameters [first, last) at base, laid out as in the flat buffer:
  // parameter i at base + offset(i) - offset(first). The range must hold
  // offset(last) - offset(first) floats (offset(size()) == total_numel()).
  void bind_values(int first, int last, float* base);
  void bind_grads(int first, int last, float* base);
  // Back to the flat buffers (which must still be allocated).
  void bind_flat();
  // Frees a flat buffer; its parameters must be rebound before use (ZeRO-2
  // keeps only a gradient shard, ZeRO-3 a value shard too).
  void release_flat_values();
  void release_flat_grads();
  Tensor value_tensor(int i) const;
  Tensor grad_tensor(int i) const;

  int size() const { return static_cast<int>(specs_.size()); }
  const ParamSpec& spec(int i) const { return specs_[i]; }
  int64_t offset(int i) const { return i < size() ? offsets_[i] : total_; }
  int64_t numel(int i) const;
  int find(const std::string& name) const;  // -1 when absent
  int64_t total_numel() const { return total_; }

  // QLoRA: the NF4 form of a frozen parameter (null: it is held in f32).
  const ops::Nf4Weight* nf4(ParamRef r) const {
    return nf4_.empty() ? nullptr : nf4_[static_cast<size_t>(r.index)].get();
  }
  bool any_nf4() const { return !nf4_.empty(); }
  // Gives frozen parameter i its NF4 form; its f32 value stays until
  // drop_nf4_values().
  void set_nf4(int i, std::shared_ptr<const ops::Nf4Weight> w);
  // Inference: the GGUF block form of a frozen linear weight (null: f32).
  const ops::QuantWeight* quant(ParamRef r) const {
    return quant_.empty() ? nullptr : quant_[static_cast<size_t>(r.index)].get();
  }
  bool any_quant() const { return !quant_.empty(); }
  // Gives frozen parameter i its block form; its f32 value stays until
  // drop_nf4_values(), or for good with keep_value (a tied token table: the
  // embedding gathers f32 rows, the head multiplies by the blocks).
  void set_quant(int i, std::shared_ptr<const ops::QuantWeight> w, bool keep_value = false);
  // Held in a quantised form (NF4 or GGUF blocks) that its GEMMs read.
  bool quantized(int i) const {
    return (!nf4_.empty() && nf4_[static_cast<size_t>(i)]) ||
           (!quant_.empty() && quant_[static_cast<size_t>(i)]);
  }
  // Rebuilds the flat value buffer without the quantised parameters' f32
  // values (the others keep theirs, bit for bit), so of those only their
  // NF4 or block bytes remain.
  void drop_nf4_values(Allocator& alloc);
  // f32 floats the flat value buffer holds (total_numel() minus dropped values).
  int64_t f32_value_numel() const { return values_.defined() ? values_.numel() : 0; }

  const Tensor& flat_values() const { return values_; }
  const Tensor& flat_grads() const { return grads_; }
  void zero_grads() const {
    if (grads_.defined()) grads_.zero_();
  }
  void init_random(uint64_t seed) const;

 private:
  std::vector<ParamSpec> specs_;
  std::vector<int64_t> offsets_;
  int64_t total_ = 0;
  Tensor values_;
  Tensor grads_;
  std::vector<float*> value_ptr_, grad_ptr_;
  bool frozen_ = false;
  const Allocator* alloc_ = nullptr;  // the allocator of allocate() (null: not yet)
  std::vector<std::shared_ptr<const ops::Nf4Weight>> nf4_;  // per parameter, or empty
  std::vector<std::shared_ptr<const ops::QuantWeight>> quant_;  // per parameter, or empty
  std::vector<char> keep_value_;  // per parameter: its f32 value outlives drop_nf4_values
  std::vector<int64_t> compact_offsets_;  // after drop_nf4_values: offsets in values_ (-1: quantised)
};

}  // namespace parallm
