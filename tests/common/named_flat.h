// A one-process flat parameter vector (the layout of the one-process
// model's ParameterSet, alignment gaps included) cut into tensors by name,
// so trajectory_match.h compares it tensor by tensor. With `held` (one byte
// per element; a pipeline stage's tensors), only the tensors held whole.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/trajectory_match.h"
#include "model/transformer.h"

namespace parallm::testing {

inline NamedParams named_from_flat(const ModelConfig& m, const std::vector<float>& flat,
                                   const std::vector<uint8_t>* held = nullptr) {
  Allocator alloc;
  const Transformer one(m, alloc);
  const ParameterSet& ps = one.params();
  NamedParams out;
  for (int i = 0; i < ps.size(); ++i) {
    const auto begin = flat.begin() + ps.offset(i), end = begin + ps.numel(i);
    if (held != nullptr) {
      const auto h = held->begin() + ps.offset(i);
      if (std::find(h, h + ps.numel(i), uint8_t{0}) != h + ps.numel(i)) continue;
    }
    out[ps.spec(i).name].assign(begin, end);
  }
  return out;
}

}  // namespace parallm::testing
