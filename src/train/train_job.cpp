// run_train_job as a list of named assembly steps, in the order they run:
// validate -> the grid's groups -> the model and its weights -> resume the
// values -> the Trainer (data loaders, the parallel wrappers -- DataParallel
// with ZeRO, the pipeline step -- and the optimizer, see Trainer's
// constructor) -> resume the optimizer and step -> banner -> the loop with
// its checkpoints -> pictures, evaluation, the HF export.
#include "train/train_job.h"

#include <fmt/ostream.h>

#include <chrono>
#include <cmath>
#include <iostream>
#include <optional>

#include "base/error.h"
#include "grid/rank_grid.h"
#include "io/checkpoint/checkpoint_dir.h"
#include "io/hf_model.h"
#include "io/peft_adapter.h"
#include "model/lora/qlora_base.h"
#include "nn/op_tap.h"
#include "ops/host_runtime.h"
#include "plan/flops.h"
#include "checkpoint/checkpoint_export.h"
#include "checkpoint/checkpoint_load.h"
#include "checkpoint/checkpoint_save.h"
#include "checkpoint/resume_candidates.h"
#include "train/resilience/planted_failure.h"
#include "train/resilience/planted_slow_rank.h"
#include "train/resilience/straggler_monitor.h"
#include "train/checkpoint_cadence.h"
#include "train/config/pipeline_config.h"
#include "train/gemm_peak_cache.h"
#include "train/pipeline_trace.h"
#include "train/progress_log.h"
#include "comm/rank_groups.h"
#include "train/trainer.h"
#include "train/verify/planted_faults.h"

namespace parallm {
namespace {
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// --init-from: the shape comes from the Hugging Face directory; dropout,
// which its config.json does not carry here, stays the run's.
ModelConfig init_from_model(const RunConfig& rc) {
  ModelConfig m = read_hf_model_config(rc.train.checkpoint.init_from);
  m.attn_dropout = rc.model.attn_dropout;
  m.hidden_dropout = rc.model.hidden_dropout;
  m.lora = rc.model.lora;
  return m;
}

// Random init from the seed, or the weights of --init-from; LoRA adapters
// (A Kaiming-uniform, B zero) always from the seed.
void init_weights(Transformer& model, const TrainConfig& t) {
  const bool lora = model.config().lora.enabled();
  if (lora) model.params().init_random(t.training.seed);
  if (t.checkpoint.init_from.empty()) {
    model.base_params().init_random(t.training.seed);
  } else {
    load_hf_weights(t.checkpoint.init_from, model);
  }
  if (!t.checkpoint.lora_adapter.empty()) load_peft_adapter(t.checkpoint.lora_adapter, model);
}

// A resume in two halves: the values go in before the Trainer (and ZeRO)
// takes its shards; the optimizer state, step, schedule clock and loss
// scale once the Trainer exists.
struct Resume {
  OpenedCheckpoint ck;
  Clock::time_point started;
};

// --load DIR, or under --resume the newest checkpoint of --save and
// --snapshot whose files pass their digests (the verification is
// collective, so every rank moves on to the same next candidate).
Resume resume_values(const RunConfig& rc, Transformer& model, comm::Communicator* world,
                     std::ostream& log) {
  const std::vector<std::string> candidates = resume_candidates(rc.train.checkpoint);
  Resume r{.started = Clock::now()};
  if (candidates.empty()) return r;
  for (size_t i = 0;; ++i) {
    try {
      r.ck = open_checkpoint(candidates[i], world);
      break;
    } catch (const Error& e) {
      if (i + 1 == candidates.size()) throw;
      fmt::print(log, "{}: {}; resuming from the next newest, {}\n", candidates[i], e.what(),
                 candidates[i + 1]);
    }
  }
  std::string note = check_resume_compatible(r.ck.state, rc.model, rc.train, r.ck.dir);
  if (!note.empty()) fmt::print(log, "{}\n", note);
  check_checkpoint_covers_model(r.ck, model.params(), rc.model);  // (a pipeline stage: its subset)
  load_checkpoint_values(r.ck, model.params(), rc.model.vocab_size);
  return r;
}

void resume_trainer(Resume& r, const ModelConfig& mc, Transformer& model, Trainer& trainer,
                    std::ostream& log) {
  if (!r.ck.shards) return;
  if (Optimizer* opt = trainer.data_parallel().optimizer())
    load_checkpoint_optimizer(r.ck, model.params(), *opt, mc.vocab_size);
  trainer.set_start_step(r.ck.state.step);
  trainer.restore_progress(r.ck.state.updates, r.ck.state.loss_scale);
  restore_expert_bias(model, r.ck.state);
  fmt::print(log, "resumed from {} (step {}, saved under {}; verified and loaded in {:.2f} s)\n",
             r.ck.dir, r.ck.state.step, layout_name(r.ck.state.layout), seconds_since(r.started));
  r.ck.shards.reset();  // unmaps the files
}

// The MFU denominator: --peak-tflops, or this machine's GEMM peak: the best
// of the measurement made now (best of 3 timed runs) and every earlier one
// kept in the per-machine cache, so a start-up disturbed by other work does
// not lower it. The trainer still raises it should a step run faster.
struct PeakFlops {
  double flops;
  std::string source;
};

PeakFlops peak_flops(const TrainConfig& t, const LaunchEnv& env, const JobDevice* device) {
  const Precision p = t.precision.matmul;
  if (t.logging.peak_tflops > 0) return {t.logging.peak_tflops * 1e12, "--peak-tflops"};
  if (device->kind() == Device::CUDA)
    return {device->peak_flops(),
            device->peak_flops() > 0
                ? fmt::format("the {} datasheet", device->name())
                : fmt::format("{}: no datasheet peak known, give --peak-tflops", device->name())};
  const char* kind = p == Precision::FP32 ? "fp32" : p == Precision::BF16 ? "bf16" : "fp16";
  const double now = measure_gemm_peak_flops(p, !t.precision.emulate_lowp_gemm);
  const std::string what = fmt::format("measured {} GEMM", kind);
  if (env.cache_dir.empty()) return {now, what + ", no cache directory"};
  const GemmPeakCache cache(env.cache_dir + "/gemm_peak.json");
  const std::string key =
      fmt::format("{} | {} threads | {}{}", cpu_model_name(), ops::host_threads(), kind,
                  t.precision.emulate_lowp_gemm ? " emulated" : "");
  const double before = cache.best(key);
  if (now > before) cache.record(key, now);
  return {std::max(now, before), fmt::format("{}: {:.1f} now, best before {:.1f} GFLOP/s in {}",
                                             what, now / 1e9, before / 1e9, cache.path())};
}

void print_banner(std::ostream& log, const RunConfig& rc, const Trainer& trainer,
                  const PeakFlops& peak) {
  const ModelConfig& m = rc.model;
  const TrainingConfig& tr = rc.train.training;
  const ParallelismConfig& par = rc.train.parallelism;
  fmt::print(log,
             "parallm: {} model, {:.2f}M parameters, {} layers, hidden {}, vocab {}; "
             "{} steps of {} x {} tokens (micro-batch {}, accumulation {}), {} threads, "
             "peak {:.1f} GFLOP/s ({})\n",
             arch_name(m.arch), m.num_parameters() / 1e6, m.n_layers, m.hidden, m.vocab_size,
             tr.steps, tr.global_batch_size, tr.seq_len, tr.micro_batch_size,
             rc.train.grad_accum_steps(), ops::host_threads(), peak.flops / 1e9, peak.source);
  fmt::print(log, "compute: {}\n", trainer.compute_summary());
  if (par.dp.dp > 1)
    fmt::print(log, "data parallel: dp {}, {}, ZeRO stage {}, buckets {} MiB, overlap {}\n",
               par.dp.dp, dp_mode_name(par.dp.mode), par.dp.zero, par.dp.bucket_mb,
               par.dp.overlap ? "on" : "off");
  if (par.tp > 1)
    fmt::print(log, "tensor parallel: tp {}, sequence parallel {}\n", par.tp,
               par.sequence_parallel ? "on" : "off");
  if (par.cp > 1)
    fmt::print(log, "context parallel: cp {}, {}{}, load-balanced causal chunks\n", par.cp,
               par.cp_comm,
               par.cp_comm == "a2a+ring" ? fmt::format(" (Ulysses degree {})", par.ulysses_degree)
                                         : std::string());
  if (par.pp > 1)
    fmt::print(log, "pipeline parallel: pp {}, schedule {}, virtual stages {}, micro-batches {}\n",
               par.pp, par.schedule, pipeline_spec(rc.train).virtual_stages,
               rc.train.grad_accum_steps());
}

// After the loop: the measured pipeline pictures (pp > 1), the validation
// loss, the closing line and the Hugging Face export (--save-hf).
void finish(const RunConfig& rc, const TrainJobOptions& opts, const RankGrid& grid,
            const RankGroups& groups, Transformer& model, Trainer& trainer,
            const ProgressLog& progress, comm::Communicator* world, int rank, std::ostream& log) {
  const ParallelismConfig& par = rc.train.parallelism;
  const LoggingConfig& lg = rc.train.logging;
  if (trainer.pipeline() != nullptr)
    write_pipeline_pictures(
        *world, grid, *trainer.pipeline(),
        fmt::format("measured {} schedule, pp {}, {} micro-batches{}", par.schedule, par.pp,
                    rc.train.grad_accum_steps(),
                    trainer.pipeline()->chunks() > 1
                        ? fmt::format(", {} virtual stages", trainer.pipeline()->chunks())
                        : std::string()),
        lg.trace_path, lg.timeline_path);
  double val = trainer.evaluate();
  fmt::print(log, "done: loss {:.4f} -> {:.4f}{}\n", progress.first_loss(), progress.last_loss(),
             std::isnan(val) ? std::string() : fmt::format(", validation loss {:.4f}", val));
  const std::string& hf = rc.train.checkpoint.save_hf_dir;
  if (hf.empty()) return;
  const auto t0 = Clock::now();
  save_hf_from_layout(hf, model, trainer.data_parallel(), *dtype_from_name(opts.save_dtype), rank,
                      groups.pp.get(), rc.train.checkpoint.init_from);
  fmt::print(log, "saved {} ({}, {:.2f} s)\n", hf, opts.save_dtype, seconds_since(t0));
}

}  // namespace

std::string resume_source(const CheckpointConfig& c) {
  const std::vector<std::string> all = resume_candidates(c);
  return all.empty() ? "" : all.front();
}

RunConfig checked_run_config(const TrainJobOptions& opts, int world_size) {
  RunConfig rc = opts.run;
  if (!rc.train.checkpoint.init_from.empty()) rc.model = init_from_model(rc);
  if (const std::string& a = rc.train.checkpoint.lora_adapter; !a.empty()) {
    const LoraConfig from_file = read_peft_config(a, rc.model);
    if (rc.model.lora.enabled())
      check_lora_matches(from_file, rc.model.lora, a);
    else
      rc.model.lora = from_file;
  }
  rc.train.parallelism.infer_dp(world_size);
  rc.train.validate(rc.model, world_size);
  // --load must find a checkpoint (checksums are verified once MPI runs).
  const std::string& load = rc.train.checkpoint.load_dir;
  PX_CHECK(load.empty() || has_checkpoint(load), "--load: no checkpoint in '{}'", load);
  auto save_dtype = dtype_from_name(opts.save_dtype);
  PX_CHECK(save_dtype == DType::F32 || save_dtype == DType::BF16,
           "--save-dtype must be F32 or BF16, got '{}'", opts.save_dtype);
  return rc;
}

double run_train_job(const TrainJobOptions& opts, const LaunchEnv& env, std::ostream& log_in,
                     comm::Communicator* world, JobDevice* device) {
  const int world_size = world ? world->size() : 1;
  const int rank = world ? world->rank() : 0;
  const RunConfig rc = checked_run_config(opts, world_size);
  const TrainConfig& t = rc.train;
  const ParallelismConfig& par = t.parallelism;
  // Before any work: a malformed planted slow rank is refused naming the value.
  const double slowdown = planted_slowdown(t.resilience.plant_slow_rank, rank, world_size);
  ops::set_host_threads(opts.threads);
  std::ostream null_log(nullptr);  // ranks other than 0 stay quiet
  std::ostream& log = rank == 0 ? log_in : null_log;
  // A run resumed at its last step has nothing left to train (every rank
  // reads the same state, so all return here together).
  if (const std::string from = resume_source(t.checkpoint); !from.empty()) {
    const auto peeked = peek_checkpoint(from);
    if (peeked && peeked->state.step == t.training.steps) {
      fmt::print(log, "nothing to do: the checkpoint {} is at step {} of {}\n", peeked->dir,
                 peeked->state.step, t.training.steps);
      return std::nan("");
    }
  }

  // The model's memory: the host's, the test device's, whose buffers the
  // groups then stage through host memory (docs/devices.md), or a GPU's.
  std::optional<HostJobDevice> host;
  if (device == nullptr) device = &host.emplace(t.training.device, world);
  PX_CHECK(device->kind() == t.training.device, "--device {}: the job was given a {} device",
           device_name(t.training.device), device_name(device->kind()));
  world = device->world();
  Allocator alloc(device->memory());

  const RankGrid grid(
      GridSizes{.tp = par.tp, .cp = par.cp, .dp = par.dp.dp, .pp = par.pp, .ep = par.ep},
      world_size);
  const RankGroups groups = split_groups(grid, world, rank);

  const TpGroup tp{.comm = par.tp > 1 ? groups.tp.get() : nullptr,
                   .sequence_parallel = par.sequence_parallel,
                   .on = &ops::Stream::of(alloc)};
  const EpGroup ep{.comm = par.ep > 1 ? groups.ep.get() : nullptr,
                   .split_over_tp = par.expert_tp > 1};
  CpGroup cp{.comm = groups.cp.get(), .mode = cp_comm_from_name(par.cp_comm)};
  cp.ulysses_degree = ulysses_degree_for(cp.mode, par.cp, par.ulysses_degree);
  const CpSubgroups cp_subgroups = make_cp_subgroups(cp);
  Transformer model(rc.model, alloc, tp, pipeline_stage(t, rc.model, grid.coord(rank).pp_rank), ep,
                    cp);
  // verify's hooks (docs/verify.md): before the Trainer, whose ZeRO-3 reads the fault's.
  std::unique_ptr<OpTap> tap;
  if (!t.training.dump_ops_dir.empty())
    tap = std::make_unique<OpTap>(fmt::format("{}/rank-{:05d}.ops", t.training.dump_ops_dir, rank));
  const FaultHooks faults = plant_fault(t.training.inject_fault, model);
  model.set_verify_hooks(tap.get(),
                         t.training.inject_fault == InjectedFault::None ? nullptr : &faults);
  init_weights(model, t);
  if (rc.model.lora.qlora) {  // after the full-precision base exists; a resume rebuilds it so
    const QloraBase q = quantize_base_nf4(model.base_params(), rc.model, tp, alloc);
    if (rank == 0)
      fmt::print(log, "qlora: {} block linear weights in NF4{} on rank 0, {:.4f} bits per weight\n",
                 q.weights, rc.model.lora.double_quant ? " (double quantisation)" : "",
                 q.bits_per_weight());
  }
  Resume resume = resume_values(rc, model, world, log);

  const PeakFlops peak = peak_flops(t, env, device);
  comm::Communicator* reduce_group = par.cp > 1      ? groups.dp_cp.get()
                                     : par.dp.dp > 1 ? groups.dp.get()
                                                     : nullptr;
  Trainer trainer(model, t, alloc, peak.flops, reduce_group,
                  PipelineGroups{groups.pp.get(), groups.embedding.get()}, groups.edp.get());
  trainer.set_op_tap(tap.get());
  resume_trainer(resume, rc.model, model, trainer, log);
  print_banner(log, rc, trainer, peak);

  ProgressLog progress(log, env.stderr_is_tty && &log == &std::cerr, t);
  CheckpointCadence cadence(rc, opts.checkpoint_shard_hook, model, trainer, world, rank, log);
  const auto planted = failure_for(parse_planted_failures(t.resilience.plant_failures),
                                   env.restart_count, rank);
  StragglerMonitor stragglers(t.resilience, world, log, grid.coord(rank).pp_rank);
  trainer.set_rank_times([&](const StepStats& s) { return stragglers.on_step(s); });
  trainer.plant_slow_compute(slowdown);
  trainer.run(
      [&](const StepStats& s) {
        progress.on_step(s);
        if (s.peak_raised)
          fmt::print(log,
                     "note: step {} ran at {:.1f} GFLOP/s per rank (hardware FLOPs), above the "
                     "peak in use: the MFU/HFU peak is raised to it\n",
                     s.step, s.peak_flops / 1e9);
      },
      [&](int64_t done) {
        maybe_fail(planted, done);
        return cadence.after_step(done);
      });
  cadence.finish();
  finish(rc, opts, grid, groups, model, trainer, progress, world, rank, log);
  return progress.last_loss();
}

}  // namespace parallm
