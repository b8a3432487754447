// Global-norm gradient clipping with torch.nn.utils.clip_grad_norm_ semantics:
// scale by clip / (norm + 1e-6) when the norm exceeds clip.
#pragma once
#include "model/parameters.h"

namespace parallm {

// Sum of squares of every gradient this rank owns (in double). Distributed
// callers reduce it over their groups before taking the square root.
double grad_sum_squares(const ParameterSet& params);
// Scales the gradients if norm > clip (clip <= 0 disables); returns the factor.
double clip_grads(const ParameterSet& params, double norm, double clip);

}  // namespace parallm
