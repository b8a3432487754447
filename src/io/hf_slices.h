// Reading one Hugging Face tensor into the parameters a rank holds: each
// internal part is a shard of its global tensor (shard_dim, shard_begin), and
// only that shard's rows or columns are read from the file. Used for base
// models (hf_model.cpp) and PEFT adapters (peft_adapter.cpp) alike.
#pragma once
#include "io/hf_layout.h"
#include "io/safetensors.h"

namespace parallm {

// n elements of e from element `begin`, converted to float.
void read_elements(const SafetensorsFile& st, const TensorEntry& e, int64_t begin, int64_t n,
                   float* dst);
// Scatters HF tensor t (entry e) into the parameters of ps that this rank holds.
void scatter_hf_slices(const SafetensorsFile& st, const TensorEntry& e, const ParameterSet& ps,
                       const HfTensor& t);

}  // namespace parallm
