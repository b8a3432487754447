// The parameters a training dist test compares after its run: every tensor
// this rank holds, by name, gathered whole over tp (a pipeline stage holds a
// subset of the names). Reads the data-parallel owner's full flat copy, so it
// is called on every rank of the groups (the gathers are collective).
#pragma once
#include "common/trajectory_match.h"
#include "parallel/tensor/gather_parameters.h"
#include "train/trainer.h"

namespace parallm::testing {

inline NamedParams whole_parameters(Trainer& tr, const ParameterSet& ps, const TpGroup& tp) {
  const std::vector<float> flat = tr.data_parallel().full_parameters();
  NamedParams out;
  for (int i = 0; i < ps.size(); ++i)
    out[ps.spec(i).name] = gather_tp_parameter(ps, i, flat.data() + ps.offset(i), tp);
  return out;
}

}  // namespace parallm::testing
