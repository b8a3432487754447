#include "nn/parameters.h"

#include "base/rng.h"

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
  frozen_ = !with_grads;
  values_ = Tensor::zeros(alloc, {total_}, DType::F32, MemTag::Parameter);
  if (with_grads) grads_ = Tensor::zeros(alloc, {total_}, DType::F32, MemTag::Gradient);
  bind_flat();
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

int64_t ParameterSet::numel(int i) const { return numel_of(specs_[i].shape); }

Tensor ParameterSet::value_tensor(int i) const {
  return values_.flat_range(offsets_[i], numel(i)).view(Shape(specs_[i].shape));
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
    float* v = value_ptr_[i];
    PX_CHECK(v != nullptr, "init_random: parameter '{}' is not bound", s.name);
    int64_t n = numel(i);
    if (s.init != InitKind::Normal && s.init != InitKind::Uniform) {
      float fill = s.init == InitKind::Ones ? 1.0f : 0.0f;
      for (int64_t j = 0; j < n; ++j) v[j] = fill;
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
        int64_t coord = idx[d] + (static_cast<int>(d) == s.shard_dim ? s.shard_begin : 0);
        g = g * s.global_shape[d] + coord;
      }
      const auto gi = static_cast<uint64_t>(g);
      v[j] = static_cast<float>(s.init == InitKind::Uniform
                                    ? s.init_std * (2.0 * uniform_at(key, gi) - 1.0)
                                    : s.init_std * normal_at(key, gi));
    }
  }
}

}  // namespace parallm
