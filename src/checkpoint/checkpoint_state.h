// The training state a checkpoint records beside the tensors
// (train_state.json, written by rank 0): how far training got, what it needs
// to continue exactly (data position, seed of the counter-based RNG, learning-
// rate schedule, optimizer step count, loss scale) and the layout and model
// it was saved under, and (`run`) the whole run configuration, so that
// `--load DIR` alone continues the run (docs/checkpoints.md). The RNG has no
// hidden state: masks and data order are keyed by (seed, step), so the seed
// and the step reproduce them.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/transformer.h"
#include "train/config/train_config.h"

namespace parallm {

constexpr const char* kTrainStateName = "train_state.json";

struct CheckpointLayout {
  int world = 1, dp = 1, tp = 1, pp = 1, zero = 0;
  std::string dp_mode = "allreduce";
  bool sequence_parallel = false;
  int cp = 1, ep = 1;  // absent in checkpoints from before cp / ep: 1
};

struct TrainingState {
  int64_t step = 0;              // optimizer steps completed = the next step to run
  int64_t consumed_samples = 0;  // data position: samples of the global order used
  int64_t global_batch_size = 0;
  int64_t seq_len = 0;
  uint64_t seed = 0;
  // The learning-rate schedule the run follows (warmup + cosine over steps).
  double lr = 0, min_lr_ratio = 0;
  int64_t warmup = 0, total_steps = 0;
  std::string optimizer = "adamw";  // --optimizer name; its state tensors are named by torch
  int64_t optimizer_step = 0;       // the optimizer's step count (Adam bias correction)
  int64_t updates = 0;              // optimizer updates so far: the lr schedule's clock
  LossScalerState loss_scale;       // fp16 dynamic loss scaling (scale 1: none)
  CheckpointLayout layout;
  ModelConfig model;  // with its LoRA settings (model.lora) when adapters are trained
  // Under LoRA the checkpoint holds only the adapters: the base they belong
  // to (--init-from; empty: the seed's random base).
  std::string lora_base;
  // The run's settings (model, data, training, optimizer, schedule,
  // parallelism, checkpoints, precision, logging); absent in checkpoints
  // written before it was recorded.
  std::optional<RunConfig> run;
  // The MoE layers' aux-loss-free expert bias (L x E, every layer; empty:
  // none), identical on every rank, so rank 0 writes it here whole.
  std::vector<float> moe_expert_bias;
};

// The state after `completed` steps of a run configured by cfg.
TrainingState training_state_of(const ModelConfig& model, const TrainConfig& cfg,
                                const CheckpointLayout& layout, int64_t completed,
                                int64_t optimizer_step, int64_t updates = -1,
                                const LossScalerState& loss_scale = {});
nlohmann::json training_state_json(const TrainingState& s);
TrainingState training_state_from_json(const nlohmann::json& j, const std::string& source);
std::string layout_name(const CheckpointLayout& l);  // "dp 2 x tp 2 (ZeRO-1)"
// The run a resume starts from when nothing is given again: the recorded
// `run`, or, for a checkpoint without one, the defaults with what the state
// does record (model, seed, batch geometry, schedule, optimizer, layout).
// Where the weights came from (--init-from, --load) is not carried over: the
// checkpoint is now the source.
RunConfig resumable_run(const TrainingState& s);

// Refuses a resume whose run would not continue the saved one (model, seed,
// batch geometry); names the field and both values. Differences in the lr
// schedule are allowed and returned as a note ("" when none).
std::string check_resume_compatible(const TrainingState& saved, const ModelConfig& model,
                                    const TrainConfig& cfg, const std::string& source);

// Puts the saved expert bias into the model when it has one (a checkpoint
// without it, e.g. from a run without the bias: zeros stay).
void restore_expert_bias(Transformer& model, const TrainingState& s);

}  // namespace parallm
