#include "nn/parameters.h"

#include <algorithm>

#include "base/rng.h"
#include "ops/copy.h"
#include "ops/nf4.h"

namespace parallm {

ParamRef ParameterSet::add(ParamSpec spec) {
  PX_CHECK(!allocated(), "parameter '{}' registered after allocation", spec.name);
  PX_CHECK(find(spec.name) < 0, "parameter '{}' registered twice", spec.name);
  if (spec.global_shape.empty()) spec.global_shape = spec.shape;
  PX_CHECK(spec.global_shape.size() == spec.shape.size(), "parameter '{}': rank mismatch",
           spec.name);
  offsets_.push_back(total_);
  // Pad each tensor to 16 floats so every parameter starts 64-byte aligned.
  total_ += (numel_of(spec.shape) + 15) / 16 * 16;
  specs_.push_back(std::move(spec));
  return ParamRef{static_cast<int>(specs_.size()) - 1};
}

void ParameterSet::allocate(Allocator& alloc, bool with_grads) {
  alloc_ = &alloc;
  frozen_ = !with_grads;
  values_ = Tensor::zeros(alloc, {total_}, DType::F32, MemTag::Parameter);
  if (with_grads) grads_ = Tensor::zeros(alloc, {total_}, DType::F32, MemTag::Gradient);
  bind_flat();
}

void ParameterSet::freeze() {
  PX_CHECK(allocated(), "freeze() needs an allocated parameter set");
  grads_ = Tensor();
  grad_ptr_.assign(size(), nullptr);
  frozen_ = true;
}

void ParameterSet::bind_values(int first, int last, float* base) {
  PX_CHECK(0 <= first && first <= last && last <= size(), "bad parameter range [{}, {})", first,
           last);
  for (int i = first; i < last; ++i) value_ptr_[i] = base + (offsets_[i] - offsets_[first]);
}

void ParameterSet::bind_grads(int first, int last, float* base) {
  PX_CHECK(0 <= first && first <= last && last <= size(), "bad parameter range [{}, {})", first,
           last);
  for (int i = first; i < last; ++i) grad_ptr_[i] = base + (offsets_[i] - offsets_[first]);
}

void ParameterSet::bind_flat() {
  PX_CHECK(values_.defined() && (grads_.defined() || frozen_),
           "bind_flat after a flat buffer was released");
  value_ptr_.assign(size(), nullptr);
  grad_ptr_.assign(size(), nullptr);
  if (!compact_offsets_.empty()) {
    for (int i = 0; i < size(); ++i)
      if (compact_offsets_[i] >= 0) value_ptr_[i] = values_.data<float>() + compact_offsets_[i];
    return;  // (a set with NF4 parameters is frozen: no gradients)
  }
  bind_values(0, size(), values_.data<float>());
  if (!frozen_) bind_grads(0, size(), grads_.data<float>());
}

void ParameterSet::release_flat_values() {
  values_ = Tensor();
  value_ptr_.assign(size(), nullptr);
}

void ParameterSet::release_flat_grads() {
  grads_ = Tensor();
  grad_ptr_.assign(size(), nullptr);
}

void ParameterSet::set_nf4(int i, std::shared_ptr<const ops::Nf4Weight> w) {
  PX_CHECK(frozen_, "parameter '{}': only a frozen set holds NF4 weights", specs_[i].name);
  PX_CHECK(compact_offsets_.empty(), "parameter '{}' given NF4 after the f32 values were dropped",
           specs_[i].name);
  const auto& sh = specs_[i].shape;
  PX_CHECK(sh.size() == 2 && w->rows() == sh[0] && w->cols() == sh[1],
           "parameter '{}': NF4 weight ({}, {}) does not match its shape", specs_[i].name,
           w->rows(), w->cols());
  if (nf4_.empty()) nf4_.resize(static_cast<size_t>(size()));
  nf4_[static_cast<size_t>(i)] = std::move(w);
}

void ParameterSet::set_quant(int i, std::shared_ptr<const ops::QuantWeight> w, bool keep_value) {
  PX_CHECK(frozen_, "parameter '{}': only a frozen set holds quantised weights", specs_[i].name);
  PX_CHECK(compact_offsets_.empty(),
           "parameter '{}' given a quantised form after the f32 values were dropped",
           specs_[i].name);
  const auto& sh = specs_[i].shape;
  PX_CHECK(sh.size() == 2 && w->rows() == sh[0] && w->cols() == sh[1],
           "parameter '{}': {} weight ({}, {}) does not match its shape", specs_[i].name,
           ops::quant_traits(w->type()).name, w->rows(), w->cols());
  if (quant_.empty()) {
    quant_.resize(static_cast<size_t>(size()));
    keep_value_.resize(static_cast<size_t>(size()), 0);
  }
  quant_[static_cast<size_t>(i)] = std::move(w);
  keep_value_[static_cast<size_t>(i)] = keep_value ? 1 : 0;
}

void ParameterSet::drop_nf4_values(Allocator& alloc) {
  PX_CHECK(values_.defined() && compact_offsets_.empty(),
           "drop_nf4_values needs the flat f32 values, once");
  if (nf4_.empty() && quant_.empty()) return;
  compact_offsets_.assign(static_cast<size_t>(size()), -1);
  int64_t total = 0;
  for (int i = 0; i < size(); ++i) {
    if (quantized(i) && (keep_value_.empty() || !keep_value_[static_cast<size_t>(i)])) continue;
    compact_offsets_[i] = total;
    total += (numel(i) + 15) / 16 * 16;  // the same 64-byte alignment
  }
  Tensor compact =
      Tensor::zeros(alloc, {std::max<int64_t>(total, 1)}, DType::F32, MemTag::Parameter);
  for (int i = 0; i < size(); ++i)
    if (compact_offsets_[i] >= 0)
      ops::copy(stream(), compact.data<float>() + compact_offsets_[i], value_ptr_[i],
                static_cast<size_t>(numel(i)) * sizeof(float));
  values_ = std::move(compact);  // the full f32 buffer is freed here
  bind_flat();
}

int64_t ParameterSet::numel(int i) const { return numel_of(specs_[i].shape); }

Tensor ParameterSet::value_tensor(int i) const {
  PX_CHECK(compact_offsets_.empty() || compact_offsets_[i] >= 0,
           "parameter '{}' is quantised: it has no f32 value", specs_[i].name);
  const int64_t at = compact_offsets_.empty() ? offsets_[i] : compact_offsets_[i];
  return values_.flat_range(at, numel(i)).view(Shape(specs_[i].shape));
}

Tensor ParameterSet::grad_tensor(int i) const {
  return grads_.flat_range(offsets_[i], numel(i)).view(Shape(specs_[i].shape));
}

int ParameterSet::find(const std::string& name) const {
  for (int i = 0; i < size(); ++i)
    if (specs_[i].name == name) return i;
  return -1;
}

void ParameterSet::init_random(uint64_t seed) const {
  PX_CHECK(!value_ptr_.empty(), "init_random before allocate");
  for (int i = 0; i < size(); ++i) {
    const ParamSpec& s = specs_[i];
    float* target = value_ptr_[i];
    PX_CHECK(target != nullptr, "init_random: parameter '{}' is not bound", s.name);
    int64_t n = numel(i);
    // A device's values are drawn on the host, then copied over.
    std::vector<float> staged;
    float* v = target;
    if (alloc_ != nullptr && alloc_->device() != Device::CPU) {
      staged.resize(static_cast<size_t>(n));
      v = staged.data();
    }
    const auto finish = [&] {
      if (v != target)
        ops::copy_to_device(stream(), target, v, static_cast<size_t>(n) * sizeof(float));
    };
    if (s.init != InitKind::Normal && s.init != InitKind::Uniform) {
      float fill = s.init == InitKind::Ones ? 1.0f : 0.0f;
      for (int64_t j = 0; j < n; ++j) v[j] = fill;
      finish();
      continue;
    }
    uint64_t key = stream_key(seed, s.name);
    // Map each local element to its global row-major index so any shard of
    // the tensor draws exactly the values of the unsharded tensor.
    const size_t rank = s.shape.size();
    std::vector<int64_t> idx(rank, 0);
#pragma omp parallel for schedule(static) firstprivate(idx)
    for (int64_t j = 0; j < n; ++j) {
      int64_t rem = j;
      for (size_t d = rank; d-- > 0;) {
        idx[d] = rem % s.shape[d];
        rem /= s.shape[d];
      }
      int64_t g = 0;
      for (size_t d = 0; d < rank; ++d) {
        int64_t coord = idx[d] + (static_cast<int>(d) == s.shard_dim ? s.shard_begin : 0) +
                        (static_cast<int>(d) == s.tp_dim ? s.tp_begin : 0);
        g = g * s.global_shape[d] + coord;
      }
      const auto gi = static_cast<uint64_t>(g);
      v[j] = static_cast<float>(s.init == InitKind::Uniform
                                    ? s.init_std * (2.0 * uniform_at(key, gi) - 1.0)
                                    : s.init_std * normal_at(key, gi));
    }
    finish();
  }
}

}  // namespace parallm
