// InferenceModel: a Transformer ready to generate, loaded from a Hugging
// Face directory (config.json + safetensors) or from a training checkpoint
// of any layout (read directly through the slice-mapping loader), split
// over the tp group given and cut into pipeline stages as training cuts
// them (even layer split), with fp32 or bf16 GEMMs. Owns the allocator the
// model's buffers come from, so it outlives them.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "model/transformer.h"
#include "nn/matmul_precision.h"
#include "comm/rank_groups.h"

namespace parallm {

struct ModelSource {
  std::string hf_dir;      // one of: a Hugging Face directory,
  std::string checkpoint;  // a checkpoint directory or a step directory,
  std::string gguf;        // a llama.cpp .gguf file (docs/gguf.md)
  // --quantize q8_0 | q4_0 | q4_k_m: the f32 weights of a directory or a
  // checkpoint quantised at load (infer/quantize_weights.h); "" keeps them.
  std::string quantize;
};
// --model PATH: a path ending in .gguf moves from hf_dir to gguf.
void select_gguf(ModelSource& s);

class InferenceModel {
 public:
  // Where this rank sits: its tp group and its pipeline stage of pp, and
  // the memory of the model's device (null: the host's).
  struct Placement {
    TpGroup tp;
    int pp_rank = 0, pp = 1;
    MemoryResource* memory = nullptr;
  };
  // world: the communicator the checkpoint is verified over (null: one
  // process).
  InferenceModel(const ModelSource& src, const Placement& where, Precision precision,
                 comm::Communicator* world);
  ~InferenceModel();
  Transformer& model() { return *model_; }
  // End-of-sequence ids: config.json's eos_token_id (an id or a list) for a
  // HF directory; tokenizer.ggml.eos_token_id (and eot, eom) for GGUF; else
  // the byte tokenizer's end of text when in the vocabulary.
  const std::vector<int32_t>& eos_ids() const { return eos_; }

 private:
  // The weights' pages as huge pages (huge_pages.h), 16-bit copies made now.
  void use_huge_pages();

  std::unique_ptr<Allocator> alloc_;
  std::unique_ptr<Transformer> model_;
  std::unique_ptr<MatmulPrecision> matmul_;
  std::vector<int32_t> eos_;
};

// This rank's place in the tp x pp grid of a generation or serving job
// (groups split from it), its model on `memory`.
InferenceModel::Placement inference_placement(const RankGrid& grid, const RankGroups& groups,
                                              int rank, MemoryResource& memory);

}  // namespace parallm
