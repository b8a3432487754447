// Hugging Face model directories: config.json + model.safetensors, written
// atomically (a directory is complete or absent) and read with validation of
// names, shapes and dtypes against the config.
#pragma once
#include <filesystem>
#include <functional>
#include <string>

#include "model/transformer.h"

namespace parallm {

// dtype: F32 or BF16 storage. Above max_shard_bytes (> 0) of tensor data the
// weights are split over model-0000k-of-0000n.safetensors files with a
// model.safetensors.index.json, as HF's save_pretrained does.
void save_hf_model(const std::string& dir, const Transformer& model, DType dtype,
                   int64_t max_shard_bytes = 0);
// Fills a sibling temporary directory and renames it to dir, so a failure
// never leaves a half-written directory at dir.
void write_dir_atomically(const std::string& dir,
                          const std::function<void(const std::filesystem::path&)>& fill);
// Reads dir/config.json.
ModelConfig read_hf_model_config(const std::string& dir);
// Loads dir/model.safetensors (or a sharded model.safetensors.index.json)
// into model's parameters; every expected tensor must be present with the
// right shape, and unexpected tensors are errors. Under tensor parallelism
// each rank reads only the rows/columns of its shards (padded vocabulary
// rows are left as they are). A pipeline stage reads only the tensors it
// holds (the last stage's copy of a tied table included).
void load_hf_weights(const std::string& dir, Transformer& model);

}  // namespace parallm
