// TrainConfig: everything a training run needs besides the model shape, read
// once from a TOML file ([model], [data], [train] tables) and then overridden
// by command-line flags. validate() checks every constraint before any
// allocation and names the values.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "optim/optimizer_config.h"
#include "optim/loss_scaler.h"
#include "parallel/data/dp_options.h"
#include "plan/memory_model.h"

namespace parallm {

struct TrainConfig {
  std::vector<std::string> train_files;
  std::vector<std::string> val_files;
  std::string init_from;  // HF directory; empty = random init from seed
  int64_t steps = 100;
  int64_t micro_batch_size = 4;
  int64_t global_batch_size = 4;
  int64_t seq_len = 128;
  double lr = 1e-3;
  int64_t warmup = 10;
  double min_lr_ratio = 0.1;
  double weight_decay = 0.1;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double clip_grad = 1.0;
  // --optimizer sgd|momentum|adam|adamw|muon and its settings (docs/optimizers.md).
  std::string optimizer = "adamw";
  double momentum = 0.9;       // SGD momentum (--momentum)
  bool nesterov = false;       // --nesterov (optimizer momentum)
  double muon_momentum = 0.95;
  int64_t muon_ns_steps = 5;
  double muon_lr = 0.02;       // Muon's peak lr; the schedule scales it like lr
  double muon_weight_decay = 0.0;
  uint64_t seed = 1234;
  // Dropout probabilities copied into the ModelConfig (--attention-dropout,
  // --hidden-dropout; [train] attention_dropout, hidden_dropout).
  double attention_dropout = 0.0;
  double hidden_dropout = 0.0;
  bool shuffle = true;
  int64_t log_interval = 10;
  int64_t eval_interval = 0;  // 0: evaluate only at the end (when val files exist)
  int64_t eval_batches = 8;
  std::string metrics_path;
  // Distributed checkpoints (docs/checkpoints.md): --save DIR writes
  // DIR/step-NNNNNNN every save_interval steps (0: only at the end) and at
  // an exit; --load DIR resumes from its latest (an error when there is
  // none); --resume resumes from --save DIR when it holds one.
  std::string save_dir;
  int64_t save_interval = 0;
  int keep = 0;               // newest checkpoints kept (0: all)
  int64_t exit_interval = 0;  // stop cleanly after a step divisible by this (0: never)
  std::string load_dir;
  bool resume = false;
  std::string save_hf_dir;  // a Hugging Face directory at the end of training
  DpOptions dp;  // data parallelism (dp == 1: one process)
  int tp = 1;    // tensor parallel size (--tp); world = dp x tp
  bool sequence_parallel = false;  // --sequence-parallel (needs tp > 1 to matter)
  // Pipeline parallelism (docs/pipeline.md): world = pp x dp x tp.
  int pp = 1;                       // --pp: pipeline stages
  std::string schedule = "1f1b";    // --schedule gpipe|1f1b|interleaved|zb
  int virtual_stages = 1;           // --virtual-stages: model chunks per stage (interleaved)
  std::string pp_layers;            // --pp-layers 3,5,5,3: layers per virtual stage (empty: even)
  std::string trace_path;           // --trace FILE.json: Chrome trace of every rank (pp > 1)
  std::string timeline_path;        // --timeline FILE.svg: measured schedule of one step
  double peak_tflops = 0;  // MFU/HFU denominator per rank (--peak-tflops); 0: measure GEMM peak
  // Mixed precision, NaN handling and recomputation (docs/mixed_precision.md,
  // docs/recompute.md): --precision, --emulate-lowp-gemm (convert + f32 GEMM
  // even where oneDNN has bf16 kernels), fp16 loss scaling (--initial-loss-scale,
  // --min-loss-scale, --loss-scale-window, --hysteresis), --on-nan skip|stop
  // (fp32/bf16; fp16 always skips an overflowing step), --recompute.
  Precision precision = Precision::FP32;
  bool emulate_lowp_gemm = false;
  LossScalerConfig loss_scale;
  bool skip_nonfinite = false;
  Recompute recompute = Recompute::None;

  // Micro-batches per optimizer step on each data-parallel rank.
  int64_t grad_accum_steps() const { return global_batch_size / (micro_batch_size * dp.dp); }
  void validate(const ModelConfig& m) const;
  // The optimizer settings above as the optimizers take them.
  OptimizerConfig optimizer_config() const;
};

struct RunConfig {
  ModelConfig model;
  TrainConfig train;
};

// --on-nan: "skip" -> true, "stop" -> false; anything else throws.
bool on_nan_from_name(const std::string& s);

// Reads a TOML run file. Unknown keys are errors (they are usually typos).
RunConfig load_run_config(const std::string& path);

}  // namespace parallm
