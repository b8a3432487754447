// Hugging Face directories out of any layout: from a distributed checkpoint
// (`parallm export`), read into a one-process model through the same
// slice-mapping loader that resumes training, or from a running job at its
// end (--save-hf), gathered over ZeRO-3 and tensor-parallel shards and
// pipeline stages.
// Invariant: the exported tensors are the full, unpadded HF tensors whatever
// the layout the weights came from.
#pragma once
#include <cstdint>
#include <string>

#include "comm/communicator.h"
#include "model/transformer.h"
#include "parallel/data/data_parallel.h"

namespace parallm {

struct ExportResult {
  std::string checkpoint;  // the step directory read
  int64_t step = 0;
  ModelConfig model;
};

// One process: checkpoint (a directory with `latest`, or a step directory)
// -> out_dir (config.json + model.safetensors, or sharded above
// max_shard_bytes > 0). Verifies the checkpoint first.
// A LoRA checkpoint (adapters only) gives a PEFT adapter directory, or with
// merge_lora its recorded base with the adapters merged in.
ExportResult export_checkpoint_to_hf(const std::string& checkpoint, const std::string& out_dir,
                                     DType dtype, int64_t max_shard_bytes = 0,
                                     bool merge_lora = false);

// Collective over the job: world rank 0 writes dir from the full parameters;
// under pp (the pp group, rank = stage) the other stages send theirs to it.
// Under LoRA dir is a PEFT adapter directory instead (base_model: its
// base_model_name_or_path).
void save_hf_from_layout(const std::string& dir, Transformer& model, DataParallel& dp, DType dtype,
                         int world_rank, comm::Communicator* pp = nullptr,
                         const std::string& base_model = "");

}  // namespace parallm
