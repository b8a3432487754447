// WeightGradQueue: parameter-gradient work deferred out of a backward pass,
// for the zero-bubble split of backward into B (input gradient, on the
// critical path) and W (weight gradient, run later to fill bubbles). A
// linear layer whose LayerContext carries a queue computes dinp (and its
// small bias gradient) at once and enqueues its dW GEMM with private copies
// of dout and the input (tag activation: held until W runs). Invariant:
// run() adds exactly what the undeferred backward would have added.
#pragma once
#include <functional>
#include <vector>

#include "nn/layer_context.h"
#include "nn/matmul_precision.h"
#include "ops/copy.h"

namespace parallm {

class WeightGradQueue {
 public:
  // dW (out, in) += dout^T inp, later; dout (N, out), inp (N, in).
  void defer_linear(const LayerContext& c, ParamRef w, const float* dout, const float* inp,
                    int64_t in, int64_t out) {
    const int64_t N = c.N();
    Tensor d = c.activation({N, out}), x = c.activation({N, in});
    ops::copy(c.stream(), d.data<float>(), dout, static_cast<size_t>(N * out) * sizeof(float));
    ops::copy(c.stream(), x.data<float>(), inp, static_cast<size_t>(N * in) * sizeof(float));
    // The context carries the GEMM precision (valid for the whole step).
    work_.push_back([=] {
      linear_backward(c, nullptr, c.params.grad(w), nullptr, d.data<float>(), x.data<float>(), w, N,
                      in, out);
    });
  }
  bool empty() const { return work_.empty(); }
  void run() {
    for (auto& f : work_) f();
    work_.clear();
  }

 private:
  std::vector<std::function<void()>> work_;
};

}  // namespace parallm
