// [parallelism], [checkpoint], [precision] and [logging]: how the run is
// laid out, saved, rounded and reported. Flag names follow Megatron where
// one exists, with the short forms --dp --tp --pp --cp --ep.
#include "train/config/run_schema.h"

namespace parallm {
namespace {

void declare_parallelism(std::vector<Setting>& v) {
  const char* t = "parallelism";
  v.push_back(field_setting(t, "dp", "--dp", "data parallel size (default: the ranks / (tp x pp x cp))",
                            PX_FIELD(train.parallelism.dp.dp)));
  v.push_back(field_setting(t, "zero", "--zero",
                            "ZeRO stage: 0, 1 (optimizer), 2 (+ gradients), 3 (+ parameters)",
                            PX_FIELD(train.parallelism.dp.zero)));
  v.push_back(named_setting(
      t, "dp_mode", "--dp-mode", "allreduce or ps", PX_FIELD(train.parallelism.dp.mode),
      [](const std::string& s) { return dp_mode_from_name(s); }, dp_mode_name));
  v.push_back(field_setting(t, "bucket_mb", "--bucket-mb", "gradient bucket size in MiB (default 25)",
                            PX_FIELD(train.parallelism.dp.bucket_mb)));
  v.push_back(field_setting(t, "overlap_grad_reduce", "--no-overlap",
                            "reduce gradients after backward, not during it",
                            PX_FIELD(train.parallelism.dp.overlap))
                  .as_switch(false));
  v.push_back(field_setting(t, "tp", "--tp,--tensor-model-parallel-size",
                            "tensor parallel size (world = dp x tp)", PX_FIELD(train.parallelism.tp)));
  v.push_back(field_setting(t, "sequence_parallel", "--sequence-parallel",
                            "norms and residuals on 1/tp of the tokens (needs --tp > 1)",
                            PX_FIELD(train.parallelism.sequence_parallel))
                  .as_switch(true));
  v.push_back(field_setting(t, "pp", "--pp,--pipeline-model-parallel-size",
                            "pipeline stages (world = pp x dp x tp)", PX_FIELD(train.parallelism.pp)));
  v.push_back(field_setting(t, "schedule", "--schedule",
                            "pipeline schedule: gpipe, 1f1b, interleaved or zb (default 1f1b)",
                            PX_FIELD(train.parallelism.schedule)));
  v.push_back(field_setting(t, "virtual_stages", "--virtual-stages",
                            "model chunks per pipeline stage (interleaved schedule)",
                            PX_FIELD(train.parallelism.virtual_stages)));
  v.push_back(field_setting(t, "ep", "--ep,--expert-model-parallel-size",
                            "expert parallel size: experts split over ep ranks of dp (divides dp)",
                            PX_FIELD(train.parallelism.ep)));
  v.push_back(field_setting(t, "expert_tp", "--expert-tp,--expert-tensor-parallel-size",
                            "tensor parallel size of the experts: 1 (whole experts on every tp "
                            "rank, default)",
                            PX_FIELD(train.parallelism.expert_tp)));
  v.push_back(field_setting(t, "pp_layers", "--pp-layers",
                            "layers per virtual stage, e.g. 3,5,5,3 (default: even split)",
                            PX_FIELD(train.parallelism.pp_layers)));
  v.push_back(field_setting(t, "cp", "--cp,--context-parallel-size",
                            "context parallel size: each sequence split over cp ranks (world = pp x "
                            "dp x cp x tp)",
                            PX_FIELD(train.parallelism.cp)));
  v.push_back(field_setting(t, "cp_comm", "--cp-comm",
                            "context parallel attention: ring, a2a (Ulysses) or a2a+ring (default "
                            "ring)",
                            PX_FIELD(train.parallelism.cp_comm)));
  v.push_back(field_setting(t, "ulysses_degree", "--ulysses-degree",
                            "a2a+ring: ranks of each all-to-all group (divides --cp)",
                            PX_FIELD(train.parallelism.ulysses_degree)));
}

void declare_checkpoint(std::vector<Setting>& v) {
  const char* t = "checkpoint";
  v.push_back(field_setting(t, "init_from", "--init-from", "start from a Hugging Face directory",
                            PX_FIELD(train.checkpoint.init_from))
                  .path());
  v.push_back(field_setting(t, "load", "--load",
                            "resume from the latest checkpoint in DIR (or a step directory), in any "
                            "layout",
                            PX_FIELD(train.checkpoint.load_dir))
                  .path());
  v.push_back(field_setting(t, "resume", "--resume",
                            "resume from --save DIR when it holds a checkpoint",
                            PX_FIELD(train.checkpoint.resume))
                  .as_switch(true));
  v.push_back(field_setting(t, "save", "--save",
                            "distributed checkpoints: DIR/step-NNNNNNN at the end and every "
                            "--save-interval steps",
                            PX_FIELD(train.checkpoint.save_dir))
                  .path());
  v.push_back(field_setting(t, "save_interval", "--save-interval", "steps between checkpoints",
                            PX_FIELD(train.checkpoint.save_interval)));
  v.push_back(field_setting(t, "async_save", "--async-save",
                            "copy the state at the step boundary and write it in the background "
                            "(the step stalls for the copy only)",
                            PX_FIELD(train.checkpoint.async_save))
                  .as_switch(true));
  v.push_back(field_setting(t, "snapshot", "--snapshot",
                            "frequent snapshots in a fast directory (e.g. /dev/shm/JOB), written in "
                            "the background; the newest of these and --save is resumed",
                            PX_FIELD(train.checkpoint.snapshot_dir))
                  .path());
  v.push_back(field_setting(t, "snapshot_interval", "--snapshot-interval",
                            "steps between snapshots (the newest two are kept)",
                            PX_FIELD(train.checkpoint.snapshot_interval)));
  v.push_back(field_setting(t, "keep", "--keep", "keep the newest N checkpoints (default: all)",
                            PX_FIELD(train.checkpoint.keep)));
  v.push_back(field_setting(t, "exit_interval", "--exit-interval",
                            "save and stop after a step divisible by N (the lr schedule stays that "
                            "of --steps)",
                            PX_FIELD(train.checkpoint.exit_interval)));
  v.push_back(field_setting(t, "save_hf", "--save-hf",
                            "write a Hugging Face directory at the end (any layout)",
                            PX_FIELD(train.checkpoint.save_hf_dir))
                  .path());
  // Where the adapters start, once: a resume has them in the checkpoint.
  v.push_back(field_setting(t, "lora_adapter", "--lora-adapter",
                            "PEFT LoRA adapter directory the adapters start from (sets the LoRA "
                            "flags)",
                            PX_FIELD(train.checkpoint.lora_adapter))
                  .path()
                  .unrecorded());
}

// Mixed precision and NaN handling (docs/mixed_precision.md).
void declare_precision(std::vector<Setting>& v) {
  const char* t = "precision";
  v.push_back(named_setting(t, "matmul", "--precision",
                            "fp32, bf16 or fp16 matmuls (fp32 master weights)",
                            PX_FIELD(train.precision.matmul), precision_from_name, precision_name));
  v.push_back(field_setting(t, "emulate_lowp_gemm", "--emulate-lowp-gemm",
                            "bf16: round inputs and use the f32 GEMM, not oneDNN's bf16 kernels",
                            PX_FIELD(train.precision.emulate_lowp_gemm))
                  .as_switch(true));
  // A property of the device the run is on (not recorded, as --device is not).
  v.push_back(field_setting(t, "allow_tf32", "--allow-tf32",
                            "--device cuda: let fp32 GEMMs use TF32 tensor cores (off: true fp32)",
                            PX_FIELD(train.precision.allow_tf32))
                  .as_switch(true)
                  .unrecorded());
  v.push_back(field_setting(t, "initial_loss_scale", "--initial-loss-scale",
                            "fp16: first loss scale (65536)",
                            PX_FIELD(train.precision.loss_scale.initial_scale)));
  v.push_back(field_setting(t, "min_loss_scale", "--min-loss-scale",
                            "fp16: the scale never backs off below this (1)",
                            PX_FIELD(train.precision.loss_scale.min_scale)));
  v.push_back(field_setting(t, "growth_factor", "", "fp16: the scale's growth (2)",
                            PX_FIELD(train.precision.loss_scale.growth_factor)));
  v.push_back(field_setting(t, "backoff_factor", "", "fp16: the scale's back-off (0.5)",
                            PX_FIELD(train.precision.loss_scale.backoff_factor)));
  v.push_back(field_setting(t, "loss_scale_window", "--loss-scale-window",
                            "fp16: clean steps before the scale doubles (1000)",
                            PX_FIELD(train.precision.loss_scale.window)));
  v.push_back(field_setting(t, "hysteresis", "--hysteresis",
                            "fp16: overflowing steps tolerated before the scale halves (2)",
                            PX_FIELD(train.precision.loss_scale.hysteresis)));
  v.push_back(named_setting(
      t, "on_nan", "--on-nan", "a NaN/Inf loss or gradient: stop (default) or skip the step",
      PX_FIELD(train.precision.skip_nonfinite), on_nan_from_name,
      [](bool skip) { return std::string(skip ? "skip" : "stop"); }));
}

void declare_logging(std::vector<Setting>& v) {
  const char* t = "logging";
  v.push_back(field_setting(t, "log_interval", "--log-interval", "steps between log lines",
                            PX_FIELD(train.logging.log_interval)));
  v.push_back(field_setting(t, "eval_interval", "--eval-interval", "steps between validations",
                            PX_FIELD(train.logging.eval_interval)));
  v.push_back(field_setting(t, "eval_batches", "--eval-iters", "batches per validation (8)",
                            PX_FIELD(train.logging.eval_batches)));
  v.push_back(field_setting(t, "metrics", "--metrics", "JSONL metrics file",
                            PX_FIELD(train.logging.metrics_path))
                  .path());
  v.push_back(field_setting(t, "tensorboard", "--tensorboard,--tensorboard-dir",
                            "TensorBoard event files in DIR (the metrics' scalars)",
                            PX_FIELD(train.logging.tensorboard_dir))
                  .path());
  v.push_back(field_setting(t, "peak_tflops", "--peak-tflops",
                            "per-rank peak TFLOP/s for MFU/HFU (default: the measured GEMM peak)",
                            PX_FIELD(train.logging.peak_tflops)));
  v.push_back(field_setting(t, "trace", "--trace", "Chrome trace JSON of every rank (pp > 1)",
                            PX_FIELD(train.logging.trace_path))
                  .path());
  v.push_back(field_setting(t, "timeline", "--timeline",
                            "SVG of the measured pipeline schedule (the least disturbed step; pp > "
                            "1)",
                            PX_FIELD(train.logging.timeline_path))
                  .path());
}

}  // namespace

void declare_system_settings(RunSchema& s) {
  for (const char* t : {"parallelism", "checkpoint", "precision", "logging"})
    s.tables.push_back({t, {}});
  declare_parallelism(s.settings);
  declare_checkpoint(s.settings);
  declare_precision(s.settings);
  declare_logging(s.settings);
}

}  // namespace parallm
