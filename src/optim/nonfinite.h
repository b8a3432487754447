// Where a NaN/Inf sits, for the message of a refused step (--on-nan): the
// first parameter, in the order backward completes them (TrainableModel::
// grad_segments: head and final norm first, embedding last), whose gradient
// holds a non-finite value, and the first parameter (registration order)
// whose value does. Each rank scans what it holds; the caller reduces the
// keys (min) over its groups, so every rank names the same parameters.
#pragma once
#include <cstdint>
#include <limits>
#include <string>

#include "model/contract/model_contract.h"

namespace parallm {

inline constexpr int64_t kNoNonfinite = std::numeric_limits<int32_t>::max();

// g[k] is the gradient of flat element begin + k, for k < end - begin.
// Returns the parameter's position in backward order, or kNoNonfinite.
int64_t first_nonfinite_grad(const TrainableModel& model, const float* g, int64_t begin, int64_t end);
// The first parameter index whose value (flat buffer) is non-finite, or
// kNoNonfinite (also when the flat values are released, as under ZeRO-3).
int64_t first_nonfinite_value(const ParameterSet& ps);
// The parameter at position `key` of backward order (key from first_nonfinite_grad).
std::string grad_order_name(const TrainableModel& model, int64_t key);

}  // namespace parallm
