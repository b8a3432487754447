// `parallm train --config FILE.toml [overrides]`: flags override the file
// (Megatron's names where one exists), then the job runs.
#include <iostream>
#include <memory>

#include "base/env.h"
#include "base/error.h"
#include "cli/commands.h"
#include "comm/mpi/mpi_runtime.h"
#include "model/config.h"
#include "model/model_catalog.h"
#include "train/train_job.h"

namespace parallm::cli {

namespace {
struct TrainFlags {
  std::string config, preset, dp_mode, precision, recompute, on_nan;
  bool emulate_lowp_gemm = false;
  bool no_overlap = false;
  bool sequence_parallel = false;
  bool nesterov = false;
  bool resume = false;
  TrainJobOptions job;
  TrainConfig t;  // flag targets; copied over the file's values when given
  std::vector<std::pair<CLI::Option*, std::function<void(TrainConfig&)>>> overrides;
};

template <class T>
void flag(CLI::App* sub, TrainFlags& f, const std::string& names, T TrainConfig::*member,
          const std::string& help) {
  CLI::Option* o = sub->add_option(names, f.t.*member, help);
  f.overrides.emplace_back(o, [&f, member](TrainConfig& dst) { dst.*member = f.t.*member; });
}
}  // namespace

void add_train_command(CLI::App& app, CommandRegistry& reg) {
  auto f = std::make_shared<TrainFlags>();
  CLI::App* sub = app.add_subcommand("train", "train a model");
  sub->add_option("--config", f->config, "run file (TOML with [model], [data], [train])");
  sub->add_option("--model", f->preset, "model preset when no config is given (e.g. gpt2-tiny)");
  flag(sub, *f, "--init-from", &TrainConfig::init_from, "start from a Hugging Face directory");
  flag(sub, *f, "--data", &TrainConfig::train_files, "training token shards");
  flag(sub, *f, "--val-data", &TrainConfig::val_files, "validation token shards");
  flag(sub, *f, "--steps,--train-iters", &TrainConfig::steps, "optimizer steps");
  flag(sub, *f, "--micro-batch-size", &TrainConfig::micro_batch_size, "sequences per micro-batch");
  flag(sub, *f, "--global-batch-size", &TrainConfig::global_batch_size,
       "sequences per optimizer step (gradient accumulation when larger than the micro-batch)");
  flag(sub, *f, "--seq-len,--seq-length", &TrainConfig::seq_len, "tokens per sequence");
  flag(sub, *f, "--lr", &TrainConfig::lr, "peak learning rate");
  flag(sub, *f, "--warmup", &TrainConfig::warmup, "linear warmup steps");
  flag(sub, *f, "--min-lr-ratio", &TrainConfig::min_lr_ratio, "final lr as a fraction of --lr");
  flag(sub, *f, "--weight-decay", &TrainConfig::weight_decay, "weight decay: decoupled (adamw, muon's AdamW part) or L2 (sgd, momentum, adam)");
  flag(sub, *f, "--optimizer", &TrainConfig::optimizer,
       "sgd, momentum, adam, adamw (default) or muon (docs/optimizers.md)");
  flag(sub, *f, "--momentum", &TrainConfig::momentum, "SGD momentum (optimizer momentum; default 0.9)");
  CLI::Option* nesterov = sub->add_flag("--nesterov", f->nesterov, "Nesterov momentum (optimizer momentum)");
  f->overrides.emplace_back(nesterov, [](TrainConfig& dst) { dst.nesterov = true; });
  flag(sub, *f, "--muon-momentum", &TrainConfig::muon_momentum, "Muon Nesterov momentum (0.95)");
  flag(sub, *f, "--muon-ns-steps", &TrainConfig::muon_ns_steps, "Muon Newton-Schulz steps (5)");
  flag(sub, *f, "--muon-lr", &TrainConfig::muon_lr,
       "Muon peak lr for the block matrices (0.02); the others take --lr with AdamW");
  flag(sub, *f, "--muon-weight-decay", &TrainConfig::muon_weight_decay,
       "Muon decoupled weight decay (0)");
  flag(sub, *f, "--clip-grad", &TrainConfig::clip_grad, "global gradient-norm clip (0: off)");
  flag(sub, *f, "--seed", &TrainConfig::seed, "seed for initialisation and data order");
  flag(sub, *f, "--attention-dropout", &TrainConfig::attention_dropout,
       "dropout probability on attention probabilities (default 0)");
  flag(sub, *f, "--hidden-dropout", &TrainConfig::hidden_dropout,
       "dropout probability on attention and MLP outputs (default 0)");
  flag(sub, *f, "--log-interval", &TrainConfig::log_interval, "steps between log lines");
  flag(sub, *f, "--eval-interval", &TrainConfig::eval_interval, "steps between validations");
  flag(sub, *f, "--metrics", &TrainConfig::metrics_path, "JSONL metrics file");
  flag(sub, *f, "--peak-tflops", &TrainConfig::peak_tflops,
       "per-rank peak TFLOP/s for MFU/HFU (default: the measured GEMM peak)");
  flag(sub, *f, "--save", &TrainConfig::save_dir,
       "distributed checkpoints: DIR/step-NNNNNNN at the end and every --save-interval steps");
  flag(sub, *f, "--save-interval", &TrainConfig::save_interval, "steps between checkpoints");
  flag(sub, *f, "--keep", &TrainConfig::keep, "keep the newest N checkpoints (default: all)");
  flag(sub, *f, "--exit-interval", &TrainConfig::exit_interval,
       "save and stop after a step divisible by N (the lr schedule stays that of --steps)");
  flag(sub, *f, "--load", &TrainConfig::load_dir,
       "resume from the latest checkpoint in DIR (or a step directory), in any layout");
  CLI::Option* resume =
      sub->add_flag("--resume", f->resume, "resume from --save DIR when it holds a checkpoint");
  f->overrides.emplace_back(resume, [](TrainConfig& dst) { dst.resume = true; });
  flag(sub, *f, "--save-hf", &TrainConfig::save_hf_dir,
       "write a Hugging Face directory at the end (any layout)");
  sub->add_option("--save-dtype", f->job.save_dtype, "F32 or BF16");
  sub->add_option("--threads", f->job.threads, "CPU threads (default: OMP_NUM_THREADS or all)");
  auto dp_flag = [&](const std::string& names, auto member, const std::string& help) {
    CLI::Option* o = sub->add_option(names, f->t.dp.*member, help);
    f->overrides.emplace_back(o, [f, member](TrainConfig& dst) { dst.dp.*member = f->t.dp.*member; });
  };
  dp_flag("--dp", &DpOptions::dp, "data parallel size (must equal the number of ranks)");
  dp_flag("--zero", &DpOptions::zero, "ZeRO stage: 0, 1 (optimizer), 2 (+ gradients), 3 (+ parameters)");
  dp_flag("--bucket-mb", &DpOptions::bucket_mb, "gradient bucket size in MiB (default 25)");
  CLI::Option* mode = sub->add_option("--dp-mode", f->dp_mode, "allreduce or ps");
  f->overrides.emplace_back(mode, [f](TrainConfig& dst) { dst.dp.mode = dp_mode_from_name(f->dp_mode); });
  CLI::Option* no_overlap =
      sub->add_flag("--no-overlap", f->no_overlap, "reduce gradients after backward, not during it");
  f->overrides.emplace_back(no_overlap, [](TrainConfig& dst) { dst.dp.overlap = false; });
  flag(sub, *f, "--tp,--tensor-model-parallel-size", &TrainConfig::tp,
       "tensor parallel size (world = dp x tp)");
  CLI::Option* sp = sub->add_flag("--sequence-parallel", f->sequence_parallel,
                                  "norms and residuals on 1/tp of the tokens (needs --tp > 1)");
  f->overrides.emplace_back(sp, [](TrainConfig& dst) { dst.sequence_parallel = true; });
  // Mixed precision, NaN handling, recomputation (docs/mixed_precision.md, docs/recompute.md).
  auto named = [&](const std::string& names, std::string& target, const std::string& help,
                   std::function<void(TrainConfig&)> apply) {
    f->overrides.emplace_back(sub->add_option(names, target, help), std::move(apply));
  };
  named("--precision", f->precision, "fp32, bf16 or fp16 matmuls (fp32 master weights)",
        [f](TrainConfig& d) { d.precision = precision_from_name(f->precision); });
  named("--recompute", f->recompute, "activation recomputation: none, selective or full",
        [f](TrainConfig& d) { d.recompute = recompute_from_name(f->recompute); });
  named("--on-nan", f->on_nan, "a NaN/Inf loss or gradient: stop (default) or skip the step",
        [f](TrainConfig& d) { d.skip_nonfinite = on_nan_from_name(f->on_nan); });
  CLI::Option* emu = sub->add_flag("--emulate-lowp-gemm", f->emulate_lowp_gemm,
                                   "bf16: round inputs and use the f32 GEMM, not oneDNN's bf16 kernels");
  f->overrides.emplace_back(emu, [](TrainConfig& d) { d.emulate_lowp_gemm = true; });
  auto ls_flag = [&](const std::string& names, auto member, const std::string& help) {
    CLI::Option* o = sub->add_option(names, f->t.loss_scale.*member, help);
    f->overrides.emplace_back(
        o, [f, member](TrainConfig& d) { d.loss_scale.*member = f->t.loss_scale.*member; });
  };
  ls_flag("--initial-loss-scale", &LossScalerConfig::initial_scale, "fp16: first loss scale (65536)");
  ls_flag("--min-loss-scale", &LossScalerConfig::min_scale, "fp16: the scale never backs off below this (1)");
  ls_flag("--loss-scale-window", &LossScalerConfig::window,
          "fp16: clean steps before the scale doubles (1000)");
  ls_flag("--hysteresis", &LossScalerConfig::hysteresis,
          "fp16: overflowing steps tolerated before the scale halves (2)");

  flag(sub, *f, "--pp,--pipeline-model-parallel-size", &TrainConfig::pp,
       "pipeline stages (world = pp x dp x tp)");
  flag(sub, *f, "--schedule", &TrainConfig::schedule,
       "pipeline schedule: gpipe, 1f1b, interleaved or zb (default 1f1b)");
  flag(sub, *f, "--virtual-stages", &TrainConfig::virtual_stages,
       "model chunks per pipeline stage (interleaved schedule)");
  flag(sub, *f, "--pp-layers", &TrainConfig::pp_layers,
       "layers per virtual stage, e.g. 3,5,5,3 (default: even split)");
  flag(sub, *f, "--trace", &TrainConfig::trace_path, "Chrome trace JSON of every rank (pp > 1)");
  flag(sub, *f, "--timeline", &TrainConfig::timeline_path,
       "SVG of the measured pipeline schedule (the least disturbed step; pp > 1)");

  reg.actions.emplace_back(sub, [f]() {
    PX_CHECK(f->config.empty() || f->preset.empty(), "give --config or --model, not both");
    if (!f->config.empty()) {
      f->job.run = load_run_config(f->config);
    } else {
      f->job.run.model = catalog_model(f->preset.empty() ? "gpt2-tiny" : f->preset);
    }
    for (auto& [opt, apply] : f->overrides)
      if (opt->count() > 0) apply(f->job.run.train);
    const LaunchEnv env = read_launch_env();
    // Checked on every rank before MPI starts, reported by rank 0 only.
    try {
      f->job.run = checked_run_config(f->job, env.world_size);
    } catch (const Error&) {
      if (env.rank != 0) return 1;
      throw;
    }
    return comm::run_mpi_job([&](comm::MpiRuntime& rt) {
      auto world = rt.world();
      run_train_job(f->job, env, std::cerr, world.get());
      return 0;
    });
  });
}

}  // namespace parallm::cli
