// The input side of a tensor-parallel region (attention, MLP) as the layers
// see it. Forward: the full (N, C) input is the residual stream itself, or,
// under sequence parallelism, the stream's rows gathered into a workspace
// (gathered again in backward instead of being saved whole). Backward: the
// input gradient is accumulated into a buffer that finish() reduces into the
// stream's gradient (all-reduce, or reduce-scatter under sp); without tp it is
// the stream's gradient itself and finish() does nothing.
#pragma once
#include "nn/layer_context.h"
#include "parallel/tensor/mappings.h"

namespace parallm {

class RegionInput {
 public:
  RegionInput(const LayerContext& c, const TpGroup& tp, const float* stream, int64_t C)
      : x_(stream) {
    if (!tp.sp()) return;
    buf_ = c.workspace({c.N(), C});
    enter_tp_region(tp, buf_.data<float>(), stream, c.N(), C);
    x_ = buf_.data<float>();
  }
  const float* get() const { return x_; }
  // Frees the gathered copy once the region's input matmuls are done.
  void release() {
    buf_ = Tensor();
    x_ = nullptr;
  }

 private:
  Tensor buf_;
  const float* x_;
};

class RegionInputGrad {
 public:
  RegionInputGrad(const LayerContext& c, const TpGroup& tp, float* dstream, int64_t C)
      : tp_(tp), dstream_(dstream), dx_(dstream), N_(c.N()), C_(C) {
    if (!tp.active()) return;
    buf_ = c.workspace({c.N(), C});
    dx_ = buf_.data<float>();
  }
  float* get() const { return dx_; }
  void finish() {
    if (tp_.active()) enter_tp_region_backward(tp_, dstream_, dx_, N_, C_);
  }

 private:
  const TpGroup& tp_;
  float* dstream_;
  float* dx_;
  int64_t N_, C_;
  Tensor buf_;
};

}  // namespace parallm
