// `parallm train --config FILE.toml [overrides]`: flags override the file
// (Megatron's names where one exists), then the job runs. Each flag writes
// the one field of the configuration tree its TOML key does
// (train/train_config.h); the groups below follow the tables. A resume
// (--load, or --resume with a checkpoint in --save) starts from the run the
// checkpoint recorded: checkpoint < --model < --config < --deepspeed < flags.
#include <iostream>
#include <memory>

#include "base/env.h"
#include "base/error.h"
#include "cli/commands.h"
#include "comm/mpi/mpi_runtime.h"
#include "device/cuda/open_job_device.h"
#include "model/config.h"
#include "model/model_catalog.h"
#include "train/checkpoint_load.h"
#include "train/config/deepspeed_config.h"
#include "train/train_job.h"

namespace parallm::cli {

namespace {
// Flags given on the command line, applied over the run file in order.
struct TrainFlags {
  std::string config, preset, deepspeed;
  TrainJobOptions job;
  std::vector<std::pair<CLI::Option*, std::function<void(RunConfig&)>>> overrides;
};

// A valued flag stored in the field `field(run)` returns.
template <class Field>
void flag(CLI::App* sub, TrainFlags& f, const std::string& names, Field field,
          const std::string& help) {
  using T = std::remove_reference_t<decltype(field(std::declval<RunConfig&>()))>;
  auto value = std::make_shared<T>();
  CLI::Option* o = sub->add_option(names, *value, help);
  f.overrides.emplace_back(o, [value, field](RunConfig& rc) { field(rc) = *value; });
}
// A flag whose value is a name that `parse` turns into the field's type.
template <class Field, class Parse>
void named(CLI::App* sub, TrainFlags& f, const std::string& names, Field field, Parse parse,
           const std::string& help) {
  auto value = std::make_shared<std::string>();
  CLI::Option* o = sub->add_option(names, *value, help);
  f.overrides.emplace_back(o, [value, field, parse](RunConfig& rc) { field(rc) = parse(*value); });
}
// A switch: present sets the field to `to`.
template <class Field>
void on_off(CLI::App* sub, TrainFlags& f, const std::string& names, Field field, bool to,
            const std::string& help) {
  CLI::Option* o = sub->add_flag(names, help);
  f.overrides.emplace_back(o, [field, to](RunConfig& rc) { field(rc) = to; });
}
#define FIELD(path) \
  [](RunConfig & rc) -> auto& { return rc.path; }

// LoRA fine-tuning (docs/lora.md): the base is frozen, only adapters train.
void add_lora_flags(CLI::App* sub, TrainFlags& f) {
  named(
      sub, f, "--lora-rank", FIELD(model.lora.rank),
      [](const std::string& s) {
        int64_t r = 0;
        try {
          r = std::stoll(s);
        } catch (const std::exception&) {
          PX_FAIL("--lora-rank must be a positive integer, got '{}'", s);
        }
        PX_CHECK(r > 0, "--lora-rank must be positive, got {}", r);
        return r;
      },
      "LoRA rank r: adapters on --lora-targets, base frozen (default: no LoRA)");
  flag(sub, f, "--lora-alpha", FIELD(model.lora.alpha), "LoRA alpha: scale alpha / r (default 8)");
  flag(sub, f, "--lora-dropout", FIELD(model.lora.dropout),
       "dropout on the adapters' input (default 0)");
  named(sub, f, "--lora-targets", FIELD(model.lora.targets), parse_lora_targets,
        "linears with adapters: q,k,v,o,gate,up,down (LLaMA), q,k,v,o,fc,proj (GPT-2), or "
        "all-linear");
  on_off(sub, f, "--use-rslora", FIELD(model.lora.rslora), true,
         "rank-stabilised LoRA: scale alpha / sqrt(r)");
  // The names and meanings of `parallm memory --qlora --double-quant`.
  on_off(sub, f, "--qlora", FIELD(model.lora.qlora), true,
         "QLoRA (needs --lora-rank): every block linear's frozen base weight in NF4 (4 bits + "
         "an fp32 absmax per 64 weights), dequantised tile by tile inside its GEMM");
  on_off(sub, f, "--double-quant", FIELD(model.lora.double_quant), true,
         "with --qlora: absmax quantised to 8 bits in blocks of 256 (4.127 bits per weight)");
}

void add_model_and_data_flags(CLI::App* sub, TrainFlags& f) {
  flag(sub, f, "--attention-dropout", FIELD(model.attn_dropout),
       "dropout probability on attention probabilities (default 0)");
  flag(sub, f, "--hidden-dropout", FIELD(model.hidden_dropout),
       "dropout probability on attention and MLP outputs (default 0)");
  add_lora_flags(sub, f);
  flag(sub, f, "--data", FIELD(train.data.train),
       "training data: llm.c token shards and/or Megatron dataset prefixes (PREFIX.bin + "
       "PREFIX.idx), or a blend in Megatron's syntax: 0.7 PREFIX_A 0.3 PREFIX_B");
  flag(sub, f, "--val-data", FIELD(train.data.val),
       "validation data: llm.c token shards and/or Megatron dataset prefixes");
  // Packed documents (docs/context_parallel.md, "Packed documents").
  on_off(sub, f, "--reset-attention-mask", FIELD(train.data.docs.reset_attention_mask), true,
         "attend only within the token's document (documents end at --eod-token)");
  on_off(sub, f, "--reset-position-ids", FIELD(train.data.docs.reset_position_ids), true,
         "positions restart at 0 after every --eod-token");
  on_off(sub, f, "--eod-mask-loss", FIELD(train.data.docs.eod_mask_loss), true,
         "no loss where the input token is --eod-token");
  flag(sub, f, "--eod-token", FIELD(train.data.docs.eod),
       "end-of-document token id (default 256, the byte tokenizer's end-of-text)");
}

void add_moe_flags(CLI::App* sub, TrainFlags& f) {
  // The preset first: flags apply in registration order, so an explicit
  // --moe-router-topk still wins over it.
  auto preset = std::make_shared<std::string>();
  CLI::Option* p = sub->add_option(
      "--moe-router-preset", *preset,
      "switch (top-1, softmax then top-k), gshard (top-2, renormalised) or mixtral (top-k "
      "then softmax)");
  f.overrides.emplace_back(p, [preset](RunConfig& rc) { rc.model.moe.apply_preset(*preset); });
  flag(sub, f, "--num-experts", FIELD(model.moe.num_experts),
       "experts per MoE layer (0: dense MLPs; docs/moe.md)");
  flag(sub, f, "--moe-router-topk", FIELD(model.moe.topk), "experts per token (default 2)");
  {  // an integer or a per-layer list: sets one form, clears the other
    auto freq = std::make_shared<std::string>();
    CLI::Option* o = sub->add_option(
        "--moe-layer-freq", *freq,
        "k: layer l is an MoE layer when l % k == 0 (default 1: every layer); or one 0/1 per "
        "layer (1: MoE) as a list expression, e.g. [0,1,0,1] or ([1]*3+[0])*2");
    f.overrides.emplace_back(o, [freq](RunConfig& rc) { rc.model.moe.set_layer_freq(*freq); });
  }
  flag(sub, f, "--moe-ffn-hidden-size", FIELD(model.moe.ffn_hidden_size),
       "features of each routed expert (default 0: the model's intermediate size)");
  named(sub, f, "--moe-router-order", FIELD(model.moe.order), router_order_from_name,
        "softmax-topk (default) or topk-softmax");
  on_off(sub, f, "--moe-renormalize", FIELD(model.moe.renormalize), true,
         "divide the kept top-k probabilities by their sum (softmax-topk)");
  named(
      sub, f, "--moe-capacity-factor", FIELD(model.moe.capacity_factor),
      [](const std::string& s) { return std::optional<double>(std::stod(s)); },
      "expert capacity per sequence: ceil(T x topk x factor / E) (default: dropless)");
  named(sub, f, "--moe-token-drop-policy", FIELD(model.moe.drop_policy), drop_policy_from_name,
        "which tokens an expert over capacity keeps: position (default) or probs");
  flag(sub, f, "--moe-aux-loss-coeff", FIELD(model.moe.aux_loss_coeff),
       "Switch load-balancing loss coefficient (default 0)");
  flag(sub, f, "--moe-z-loss-coeff", FIELD(model.moe.z_loss_coeff),
       "router z-loss coefficient (default 0)");
  flag(sub, f, "--moe-shared-expert-intermediate-size", FIELD(model.moe.shared_intermediate),
       "features of an always-on shared expert MLP beside the routed ones (0: none)");
  on_off(sub, f, "--moe-shared-expert-gate", FIELD(model.moe.shared_expert_gate), true,
         "scale the shared expert per token by sigmoid(x . w) (Qwen2-MoE)");
  named(sub, f, "--moe-router-score-function", FIELD(model.moe.score), score_function_from_name,
        "softmax (default) or sigmoid (DeepSeek-V3: top-k of sigmoid(logits), gates "
        "normalised over the k when k > 1)");
  on_off(sub, f, "--moe-router-enable-expert-bias", FIELD(model.moe.expert_bias), true,
         "aux-loss-free balancing: a per-layer bias on the sigmoid scores for the choice only, "
         "moved after each step by rate x sign(mean load - load)");
  flag(sub, f, "--moe-router-bias-update-rate", FIELD(model.moe.bias_update_rate),
       "the expert bias's step per update (default 1e-3)");
  flag(sub, f, "--ep,--expert-model-parallel-size", FIELD(train.parallelism.ep),
       "expert parallel size: experts split over ep ranks of dp (divides dp)");
  flag(sub, f, "--expert-tp,--expert-tensor-parallel-size", FIELD(train.parallelism.expert_tp),
       "tensor parallel size of the experts: 1 (whole experts on every tp rank, default)");
}

void add_training_flags(CLI::App* sub, TrainFlags& f) {
  flag(sub, f, "--steps,--train-iters", FIELD(train.training.steps), "optimizer steps");
  flag(sub, f, "--micro-batch-size", FIELD(train.training.micro_batch_size),
       "sequences per micro-batch");
  flag(sub, f, "--global-batch-size", FIELD(train.training.global_batch_size),
       "sequences per optimizer step (gradient accumulation when larger than the micro-batch)");
  flag(sub, f, "--seq-len,--seq-length", FIELD(train.training.seq_len), "tokens per sequence");
  flag(sub, f, "--seed", FIELD(train.training.seed), "seed for initialisation and data order");
  flag(sub, f, "--clip-grad", FIELD(train.training.clip_grad),
       "global gradient-norm clip (0: off)");
  named(sub, f, "--recompute", FIELD(train.training.recompute), recompute_from_name,
        "activation recomputation: none, selective or full");
  named(sub, f, "--device", FIELD(train.training.device), device_from_name,
        "cpu (default), cuda (each rank's GPU, NCCL between them: docs/cuda.md) or test (the "
        "CPU test device, whose memory host code cannot read: docs/devices.md)");
  // `parallm verify`'s own flags (docs/verify.md), hidden from --help.
  flag(sub, f, "--dump-ops", FIELD(train.training.dump_ops_dir),
       "verify: each rank records its layer outputs and gradients in DIR");
  named(sub, f, "--inject-fault", FIELD(train.training.inject_fault), injected_fault_from_name,
        "verify's tests only: plant a bug (tp-reduce-scale, pp-drop-microbatch, "
        "zero3-shard-offset)");
  sub->get_option("--dump-ops")->group("");
  sub->get_option("--inject-fault")->group("");
}

void add_optimizer_flags(CLI::App* sub, TrainFlags& f) {
  named(sub, f, "--optimizer", FIELD(train.optimizer.kind), optimizer_from_name,
        "sgd, momentum, adam, adamw (default) or muon (docs/optimizers.md)");
  flag(sub, f, "--lr", FIELD(train.optimizer.lr), "peak learning rate");
  flag(sub, f, "--weight-decay", FIELD(train.optimizer.weight_decay),
       "weight decay: decoupled (adamw, muon's AdamW part) or L2 (sgd, momentum, adam)");
  flag(sub, f, "--momentum", FIELD(train.optimizer.momentum),
       "SGD momentum (optimizer momentum; default 0.9)");
  on_off(sub, f, "--nesterov", FIELD(train.optimizer.nesterov), true,
         "Nesterov momentum (optimizer momentum)");
  flag(sub, f, "--muon-momentum", FIELD(train.optimizer.muon_momentum),
       "Muon Nesterov momentum (0.95)");
  flag(sub, f, "--muon-ns-steps", FIELD(train.optimizer.muon_ns_steps),
       "Muon Newton-Schulz steps (5)");
  flag(sub, f, "--muon-lr", FIELD(train.optimizer.muon_lr),
       "Muon peak lr for the block matrices (0.02); the others take --lr with AdamW");
  flag(sub, f, "--muon-weight-decay", FIELD(train.optimizer.muon_weight_decay),
       "Muon decoupled weight decay (0)");
  flag(sub, f, "--warmup", FIELD(train.lr_schedule.warmup), "linear warmup steps");
  named(sub, f, "--lr-decay-style", FIELD(train.lr_schedule.decay_style), decay_style_from_name,
        "after warmup: cosine (default), linear or constant");
  flag(sub, f, "--min-lr-ratio", FIELD(train.lr_schedule.min_lr_ratio),
       "final lr as a fraction of --lr");
}

void add_parallelism_flags(CLI::App* sub, TrainFlags& f) {
  flag(sub, f, "--dp", FIELD(train.parallelism.dp.dp),
       "data parallel size (default: the ranks / (tp x pp x cp))");
  flag(sub, f, "--zero", FIELD(train.parallelism.dp.zero),
       "ZeRO stage: 0, 1 (optimizer), 2 (+ gradients), 3 (+ parameters)");
  named(
      sub, f, "--dp-mode", FIELD(train.parallelism.dp.mode),
      [](const std::string& s) { return dp_mode_from_name(s); }, "allreduce or ps");
  flag(sub, f, "--bucket-mb", FIELD(train.parallelism.dp.bucket_mb),
       "gradient bucket size in MiB (default 25)");
  on_off(sub, f, "--no-overlap", FIELD(train.parallelism.dp.overlap), false,
         "reduce gradients after backward, not during it");
  flag(sub, f, "--tp,--tensor-model-parallel-size", FIELD(train.parallelism.tp),
       "tensor parallel size (world = dp x tp)");
  on_off(sub, f, "--sequence-parallel", FIELD(train.parallelism.sequence_parallel), true,
         "norms and residuals on 1/tp of the tokens (needs --tp > 1)");
  flag(sub, f, "--cp,--context-parallel-size", FIELD(train.parallelism.cp),
       "context parallel size: each sequence split over cp ranks (world = pp x dp x cp x tp)");
  flag(sub, f, "--cp-comm", FIELD(train.parallelism.cp_comm),
       "context parallel attention: ring, a2a (Ulysses) or a2a+ring (default ring)");
  flag(sub, f, "--ulysses-degree", FIELD(train.parallelism.ulysses_degree),
       "a2a+ring: ranks of each all-to-all group (divides --cp)");
  flag(sub, f, "--pp,--pipeline-model-parallel-size", FIELD(train.parallelism.pp),
       "pipeline stages (world = pp x dp x tp)");
  flag(sub, f, "--schedule", FIELD(train.parallelism.schedule),
       "pipeline schedule: gpipe, 1f1b, interleaved or zb (default 1f1b)");
  flag(sub, f, "--virtual-stages", FIELD(train.parallelism.virtual_stages),
       "model chunks per pipeline stage (interleaved schedule)");
  flag(sub, f, "--pp-layers", FIELD(train.parallelism.pp_layers),
       "layers per virtual stage, e.g. 3,5,5,3 (default: even split)");
}

void add_checkpoint_flags(CLI::App* sub, TrainFlags& f) {
  flag(sub, f, "--init-from", FIELD(train.checkpoint.init_from),
       "start from a Hugging Face directory");
  flag(sub, f, "--save", FIELD(train.checkpoint.save_dir),
       "distributed checkpoints: DIR/step-NNNNNNN at the end and every --save-interval steps");
  flag(sub, f, "--save-interval", FIELD(train.checkpoint.save_interval),
       "steps between checkpoints");
  flag(sub, f, "--keep", FIELD(train.checkpoint.keep),
       "keep the newest N checkpoints (default: all)");
  flag(sub, f, "--exit-interval", FIELD(train.checkpoint.exit_interval),
       "save and stop after a step divisible by N (the lr schedule stays that of --steps)");
  flag(sub, f, "--load", FIELD(train.checkpoint.load_dir),
       "resume from the latest checkpoint in DIR (or a step directory), in any layout");
  on_off(sub, f, "--resume", FIELD(train.checkpoint.resume), true,
         "resume from --save DIR when it holds a checkpoint");
  flag(sub, f, "--lora-adapter", FIELD(train.checkpoint.lora_adapter),
       "PEFT LoRA adapter directory the adapters start from (sets the LoRA flags)");
  flag(sub, f, "--save-hf", FIELD(train.checkpoint.save_hf_dir),
       "write a Hugging Face directory at the end (any layout)");
  sub->add_option("--save-dtype", f.job.save_dtype, "F32 or BF16");
}

// Mixed precision and NaN handling (docs/mixed_precision.md).
void add_precision_flags(CLI::App* sub, TrainFlags& f) {
  named(sub, f, "--precision", FIELD(train.precision.matmul), precision_from_name,
        "fp32, bf16 or fp16 matmuls (fp32 master weights)");
  on_off(sub, f, "--emulate-lowp-gemm", FIELD(train.precision.emulate_lowp_gemm), true,
         "bf16: round inputs and use the f32 GEMM, not oneDNN's bf16 kernels");
  on_off(sub, f, "--allow-tf32", FIELD(train.precision.allow_tf32), true,
         "--device cuda: let fp32 GEMMs use TF32 tensor cores (off: true fp32)");
  named(sub, f, "--on-nan", FIELD(train.precision.skip_nonfinite), on_nan_from_name,
        "a NaN/Inf loss or gradient: stop (default) or skip the step");
  flag(sub, f, "--initial-loss-scale", FIELD(train.precision.loss_scale.initial_scale),
       "fp16: first loss scale (65536)");
  flag(sub, f, "--min-loss-scale", FIELD(train.precision.loss_scale.min_scale),
       "fp16: the scale never backs off below this (1)");
  flag(sub, f, "--loss-scale-window", FIELD(train.precision.loss_scale.window),
       "fp16: clean steps before the scale doubles (1000)");
  flag(sub, f, "--hysteresis", FIELD(train.precision.loss_scale.hysteresis),
       "fp16: overflowing steps tolerated before the scale halves (2)");
}

void add_logging_flags(CLI::App* sub, TrainFlags& f) {
  flag(sub, f, "--log-interval", FIELD(train.logging.log_interval), "steps between log lines");
  flag(sub, f, "--eval-interval", FIELD(train.logging.eval_interval), "steps between validations");
  flag(sub, f, "--metrics", FIELD(train.logging.metrics_path), "JSONL metrics file");
  flag(sub, f, "--tensorboard,--tensorboard-dir", FIELD(train.logging.tensorboard_dir),
       "TensorBoard event files in DIR (the metrics' scalars)");
  flag(sub, f, "--peak-tflops", FIELD(train.logging.peak_tflops),
       "per-rank peak TFLOP/s for MFU/HFU (default: the measured GEMM peak)");
  flag(sub, f, "--trace", FIELD(train.logging.trace_path),
       "Chrome trace JSON of every rank (pp > 1)");
  flag(sub, f, "--timeline", FIELD(train.logging.timeline_path),
       "SVG of the measured pipeline schedule (the least disturbed step; pp > 1)");
}
#undef FIELD

// What --deepspeed accepted without a parallm meaning, said once (rank 0).
void report_deepspeed(const DeepSpeedResult& ds, const std::string& path) {
  if (!ds.runtime_only.empty()) {
    std::string keys;
    for (const auto& k : ds.runtime_only) keys += (keys.empty() ? "" : ", ") + k;
    std::cerr << "parallm: " << path << ": ignoring DeepSpeed runtime-only keys: " << keys << "\n";
  }
  for (const auto& n : ds.notes) std::cerr << "parallm: " << path << ": " << n << "\n";
}

// The flags that set the rank grid's sizes: any of them and the layout is
// the flags' alone (a resume does not keep the checkpoint's).
constexpr const char* kLayoutFlags[] = {"--dp", "--tp", "--pp", "--cp", "--ep"};

bool given(const CLI::App* sub, const char* name) { return sub->get_option(name)->count() > 0; }

// The run a resume starts from, before --model, --config and the flags:
// the checkpoint's. Its layout stays when the job has as many ranks as the
// checkpoint was saved on and no layout flag is given; a layout flag starts
// the grid afresh (dp options such as ZeRO stay unless flagged).
RunConfig resume_base(const CLI::App* sub, const PeekedCheckpoint& saved, bool has_config,
                      int world_size) {
  RunConfig base = resumable_run(saved.state);
  bool layout_flag = false;
  for (const char* name : kLayoutFlags) layout_flag = layout_flag || given(sub, name);
  ParallelismConfig& par = base.train.parallelism;
  if (layout_flag) {
    const DpOptions dp = par.dp;
    par = ParallelismConfig{};
    par.dp = dp;
    par.dp.dp = 1;
  } else if (!has_config) {
    const CheckpointLayout& l = saved.state.layout;
    PX_CHECK(l.world == world_size,
             "{} was saved under {} on {} ranks and this job has {}: give the layout to resume "
             "under (--dp, --tp, --pp, --cp; the checkpoint reshards)",
             saved.dir, layout_name(l), l.world, world_size);
  }
  return base;
}

// The run this command line describes: the checkpoint's (when resuming),
// then --model or --config, --deepspeed and the flags, in that order.
void build_run(const CLI::App* sub, TrainFlags& f, const LaunchEnv& env) {
  PX_CHECK(f.config.empty() || f.preset.empty(), "give --config or --model, not both");
  // Where the run resumes from is the file's and the flags' to say.
  RunConfig probe = f.config.empty() ? RunConfig{} : load_run_config(f.config);
  for (auto& [opt, apply] : f.overrides)
    if (opt->count() > 0) apply(probe);
  const std::string from = resume_source(probe.train.checkpoint);
  const auto saved = from.empty() ? std::nullopt : peek_checkpoint(from);
  RunConfig& run = f.job.run;
  if (saved) {
    run = resume_base(sub, *saved, !f.config.empty(), env.world_size);
    if (!f.preset.empty()) run.model = catalog_model(f.preset);
    if (!f.config.empty()) run = load_run_config(f.config, run);
    if (env.rank == 0)
      std::cerr << "parallm: resuming with the run settings of " << saved->dir
                << (saved->state.run ? "" : " (an older checkpoint: its model, batch and schedule)")
                << "; flags given override them\n";
  } else if (!f.config.empty()) {
    run = load_run_config(f.config);
  } else {
    run.model = catalog_model(f.preset.empty() ? "gpt2-tiny" : f.preset);
  }
  DeepSpeedResult ds;
  if (!f.deepspeed.empty()) ds = apply_deepspeed_config(f.deepspeed, run);
  for (auto& [opt, apply] : f.overrides)
    if (opt->count() > 0) apply(run);
  run.train.parallelism.infer_dp(env.world_size);  // before DeepSpeed's batch arithmetic uses dp
  if (!f.deepspeed.empty()) {
    resolve_deepspeed_batch(ds.batch, run.train.parallelism.dp.dp, given(sub, "--micro-batch-size"),
                            given(sub, "--global-batch-size"), run.train.training);
    if (env.rank == 0) report_deepspeed(ds, f.deepspeed);
  }
}

}  // namespace

void add_train_command(CLI::App& app, CommandRegistry& reg) {
  auto f = std::make_shared<TrainFlags>();
  CLI::App* sub = app.add_subcommand("train", "train a model");
  sub->add_option("--config", f->config,
                  "run file (TOML: [model], [data], [training], [optimizer], [lr_schedule], "
                  "[parallelism], [checkpoint], [precision], [logging])");
  sub->add_option("--model", f->preset, "model preset when no config is given (e.g. gpt2-tiny)");
  sub->add_option("--deepspeed,--deepspeed-config", f->deepspeed,
                  "DeepSpeed JSON config mapped onto the run (after --config, before the "
                  "other flags; docs/ecosystem.md)");
  sub->add_option("--threads", f->job.threads, "CPU threads (default: OMP_NUM_THREADS or all)");
  add_model_and_data_flags(sub, *f);
  add_training_flags(sub, *f);
  add_moe_flags(sub, *f);
  add_optimizer_flags(sub, *f);
  add_parallelism_flags(sub, *f);
  add_checkpoint_flags(sub, *f);
  add_precision_flags(sub, *f);
  add_logging_flags(sub, *f);

  reg.actions.emplace_back(sub, [f, sub]() {
    const LaunchEnv env = read_launch_env();
    // Read and checked on every rank before MPI starts, reported by rank 0 only.
    try {
      build_run(sub, *f, env);
      f->job.run = checked_run_config(f->job, env.world_size);
    } catch (const Error&) {
      if (env.rank != 0) return 1;
      throw;
    }
    return comm::run_mpi_job([&](comm::MpiRuntime& rt) {
      auto world = rt.world();
      const TrainConfig& t = f->job.run.train;
      const auto device = open_job_device(t.training.device, world.get(), env.local_rank,
                                          t.precision.allow_tf32);
      run_train_job(f->job, env, std::cerr, world.get(), device.get());
      return 0;
    });
  });
}

}  // namespace parallm::cli
