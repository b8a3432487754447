#include "optim/grad_clip.h"

#include "kernels/cpu/optimizer.h"

namespace parallm {

double grad_sum_squares(const ParameterSet& params) {
  double s = 0.0;
  for (int i = 0; i < params.size(); ++i) s += cpu::sum_squares(params.grad({i}), params.numel(i));
  return s;
}

double clip_grads(const ParameterSet& params, double norm, double clip) {
  if (clip <= 0.0) return 1.0;
  double coef = clip / (norm + 1e-6);
  if (coef >= 1.0) return 1.0;
  // Padding between tensors is zero, so scaling the flat buffer is exact.
  cpu::scale_inplace(params.flat_grads().data<float>(), params.total_numel(),
                     static_cast<float>(coef));
  return coef;
}

}  // namespace parallm
