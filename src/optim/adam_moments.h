// AdamMoments: what Adam and AdamW share: two moment buffers of `capacity`
// floats (8 bytes/param, tag optimizer), element k belonging to flat element
// begin + k, hyper-parameters, and the walk over the owned range that hands
// each parameter's elements to the update kernel with its weight decay (0
// for parameters not marked for decay). The two differ only in the kernel:
// L2 decay in the gradient (Adam) or decoupled decay (AdamW).
#pragma once
#include "base/error.h"
#include "kernels/cpu/optimizer.h"
#include "optim/optimizer.h"

namespace parallm {

class AdamMoments : public Optimizer {
 public:
  std::vector<OptimizerState> state() override {
    return {{"exp_avg", &m_, {{begin_, end_}}}, {"exp_avg_sq", &v_, {{begin_, end_}}}};
  }
  const Tensor& exp_avg() const { return m_; }
  const Tensor& exp_avg_sq() const { return v_; }

 protected:
  AdamMoments(const ParameterSet& params, const cpu::AdamWParams& hyper, Allocator& alloc,
              int64_t begin, int64_t end, int64_t capacity)
      : Optimizer(begin, end), hyper_(hyper) {
    PX_CHECK(0 <= begin && begin <= end && end <= params.total_numel() && capacity >= end - begin,
             "optimizer range [{}, {}) (capacity {}) does not fit {} parameters", begin, end,
             capacity, params.total_numel());
    m_ = Tensor::zeros(alloc, {capacity}, DType::F32, MemTag::Optimizer);
    v_ = Tensor::zeros(alloc, {capacity}, DType::F32, MemTag::Optimizer);
  }
  // One step of the owned range: kernel(p, g, m, v, n, hyper) per parameter.
  template <class Kernel>
  void update(const ParameterSet& params, double lr, float* p, const float* g, Kernel kernel) {
    ++step_;
    float* m = m_.data<float>();
    float* v = v_.data<float>();
    for_each_param_in(params, begin_, end_, [&](int i, int64_t lo, int64_t hi) {
      cpu::AdamWParams h = hyper_;
      h.lr = lr;
      h.step = step_;
      if (!params.spec(i).weight_decay) h.weight_decay = 0.0;
      const int64_t k = lo - begin_;
      kernel(p + k, g + k, m + k, v + k, hi - lo, h);
    });
  }

 private:
  cpu::AdamWParams hyper_;  // lr and step are filled in per update
  Tensor m_, v_;
};

}  // namespace parallm
