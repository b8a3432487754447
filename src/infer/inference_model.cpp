// InferenceModel loading (see inference_model.h).
#include "infer/inference_model.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "data/byte_tokenizer.h"
#include "io/hf_model.h"
#include "parallel/pipeline/stage_partition.h"
#include "train/checkpoint_load.h"

namespace parallm {

namespace {
std::vector<int32_t> hf_eos_ids(const std::string& dir, int64_t vocab) {
  std::ifstream f(std::filesystem::path(dir) / "config.json");
  const nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
  std::vector<int32_t> ids;
  if (j.is_discarded() || !j.contains("eos_token_id")) return ids;
  const nlohmann::json& e = j["eos_token_id"];
  auto add = [&](const nlohmann::json& v) {
    if (v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() < vocab)
      ids.push_back(v.get<int32_t>());
  };
  if (e.is_array())
    for (const auto& v : e) add(v);
  else
    add(e);
  return ids;
}

// The layers of stage pp_rank of pp, split as training splits them.
ModelStage generation_stage(const ModelConfig& cfg, int pp_rank, int pp) {
  ModelStage s;
  if (pp == 1) return s;
  const pipeline::StagePartition p =
      pipeline::partition_layers(static_cast<int>(cfg.n_layers), pp, 1);
  const pipeline::ChunkLayers& cl = p.at(pp_rank, 0);
  s.embedding = cl.has_embedding;
  s.head = cl.has_head;
  s.chunks.push_back({cl.first_layer, cl.num_layers});
  return s;
}
}  // namespace

InferenceModel::InferenceModel(const ModelSource& src, const Placement& where, Precision precision,
                               comm::Communicator* world)
    : alloc_(std::make_unique<Allocator>()) {
  PX_CHECK(src.hf_dir.empty() != src.checkpoint.empty(),
           "give exactly one of a model directory and a checkpoint");
  if (!src.hf_dir.empty()) {
    const ModelConfig cfg = read_hf_model_config(src.hf_dir);
    model_ = std::make_unique<Transformer>(cfg, *alloc_, where.tp,
                                           generation_stage(cfg, where.pp_rank, where.pp));
    load_hf_weights(src.hf_dir, *model_);
    eos_ = hf_eos_ids(src.hf_dir, cfg.vocab_size);
  } else {
    const OpenedCheckpoint ck = open_checkpoint(src.checkpoint, world);
    PX_CHECK(!ck.state.model.lora.enabled(),
             "{} holds LoRA adapters only: merge them first (parallm export --merge-lora "
             "--checkpoint {} --out DIR) and serve DIR",
             ck.dir, src.checkpoint);
    model_ =
        std::make_unique<Transformer>(ck.state.model, *alloc_, where.tp,
                                      generation_stage(ck.state.model, where.pp_rank, where.pp));
    model_->params().init_random(0);  // every element is overwritten below
    check_checkpoint_covers_model(ck, model_->params(), ck.state.model);
    load_checkpoint_values(ck, model_->params(), ck.state.model.vocab_size);
    restore_expert_bias(*model_, ck.state);
    if (ck.state.model.vocab_size > ByteTokenizer::kEndOfText) eos_ = {ByteTokenizer::kEndOfText};
  }
  if (precision != Precision::FP32) {
    matmul_ = std::make_unique<MatmulPrecision>(precision, model_->base_params(), *alloc_);
    model_->set_compute(matmul_.get(), Recompute::None);
  }
}

InferenceModel::~InferenceModel() {
  model_.reset();  // before the allocator and the precision copy it may use
  matmul_.reset();
}

}  // namespace parallm
