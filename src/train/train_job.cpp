#include "train/train_job.h"

#include <fmt/ostream.h>

#include <chrono>
#include <cmath>
#include <iostream>

#include "grid/rank_grid.h"
#include "io/checkpoint/checkpoint_dir.h"
#include "io/hf_model.h"
#include "kernels/cpu/threads.h"
#include "plan/flops.h"
#include "train/checkpoint_export.h"
#include "train/checkpoint_load.h"
#include "train/checkpoint_save.h"
#include "train/pipeline_trace.h"
#include "train/trainer.h"

namespace parallm {
namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

RunConfig checked_run_config(const TrainJobOptions& opts, int world_size) {
  RunConfig rc = opts.run;
  if (!rc.train.init_from.empty()) rc.model = read_hf_model_config(rc.train.init_from);
  rc.train.validate(rc.model);
  validate_dp_layout(rc.train.dp, world_size, rc.train.global_batch_size,
                     rc.train.micro_batch_size, rc.train.tp, rc.train.pp);
  validate_pipeline(rc.train, rc.model);
  // --load must find a checkpoint (checksums are verified once MPI runs).
  PX_CHECK(rc.train.load_dir.empty() || has_checkpoint(rc.train.load_dir),
           "--load: no checkpoint in '{}'", rc.train.load_dir);
  auto save_dtype = dtype_from_name(opts.save_dtype);
  PX_CHECK(save_dtype == DType::F32 || save_dtype == DType::BF16,
           "--save-dtype must be F32 or BF16, got '{}'", opts.save_dtype);
  return rc;
}

double run_train_job(const TrainJobOptions& opts, const LaunchEnv& env, std::ostream& log_in,
                     comm::Communicator* world) {
  const int world_size = world ? world->size() : 1;
  const int rank = world ? world->rank() : 0;
  RunConfig rc = checked_run_config(opts, world_size);
  auto save_dtype = dtype_from_name(opts.save_dtype);
  cpu::set_num_threads(opts.threads);
  std::ostream null_log(nullptr);  // ranks other than 0 stay quiet
  std::ostream& log = rank == 0 ? log_in : null_log;

  // This rank's data-, tensor- and pipeline-parallel groups, from the grid
  // (tp fastest, then dp, then pp).
  std::unique_ptr<comm::Communicator> dp_group, tp_group, pp_group, embed_group;
  const RankGrid grid(GridSizes{.tp = rc.train.tp, .dp = rc.train.dp.dp, .pp = rc.train.pp},
                      world_size);
  if (world_size > 1) {
    auto split = [&](GroupKind kind, const char* name) {
      const int g = grid.group_index(kind, rank);
      return world->split(g, grid.rank_in_group(kind, rank), fmt::format("{}[{}]", name, g));
    };
    dp_group = split(GroupKind::Dp, "dp");
    tp_group = split(GroupKind::Tp, "tp");
    if (rc.train.pp > 1) {
      pp_group = split(GroupKind::Pp, "pp");
      embed_group = split(GroupKind::Embedding, "embedding");  // null on middle stages
    }
  }
  TpGroup tp{.comm = rc.train.tp > 1 ? tp_group.get() : nullptr,
             .sequence_parallel = rc.train.sequence_parallel};

  Allocator alloc;
  rc.model.attn_dropout = rc.train.attention_dropout;
  rc.model.hidden_dropout = rc.train.hidden_dropout;
  Transformer model(rc.model, alloc, tp,
                    pipeline_stage(rc.train, rc.model, grid.coord(rank).pp_rank));
  if (rc.train.init_from.empty()) {
    model.params().init_random(rc.train.seed);
  } else {
    load_hf_weights(rc.train.init_from, model);
  }
  // Resume: --load DIR, or --resume from --save DIR when it holds a checkpoint.
  std::string resume_from = rc.train.load_dir;
  if (resume_from.empty() && rc.train.resume && has_checkpoint(rc.train.save_dir))
    resume_from = rc.train.save_dir;
  OpenedCheckpoint ck;
  const auto load_start = std::chrono::steady_clock::now();
  if (!resume_from.empty()) {
    ck = open_checkpoint(resume_from, world);
    std::string note = check_resume_compatible(ck.state, rc.model, rc.train, ck.dir);
    if (!note.empty()) fmt::print(log, "{}\n", note);
    check_checkpoint_covers_model(ck, model.params(), rc.model);  // (a pipeline stage: its subset)
    load_checkpoint_values(ck, model.params(), rc.model.vocab_size);
  }
  const bool measured = rc.train.peak_tflops <= 0;
  double peak = measured ? measure_gemm_peak_flops(rc.train.precision, !rc.train.emulate_lowp_gemm)
                         : rc.train.peak_tflops * 1e12;
  Trainer trainer(model, rc.train, alloc, peak, rc.train.dp.dp > 1 ? dp_group.get() : nullptr,
                  PipelineGroups{pp_group.get(), embed_group.get()});
  if (ck.shards) {
    if (Optimizer* opt = trainer.data_parallel().optimizer())
      load_checkpoint_optimizer(ck, model.params(), *opt, rc.model.vocab_size);
    trainer.set_start_step(ck.state.step);
    trainer.restore_progress(ck.state.updates, ck.state.loss_scale);
    fmt::print(log, "resumed from {} (step {}, saved under {}; verified and loaded in {:.2f} s)\n",
               ck.dir, ck.state.step, layout_name(ck.state.layout), seconds_since(load_start));
    ck.shards.reset();  // unmaps the files
  }
  const char* gemm_kind = rc.train.precision == Precision::FP32   ? "fp32"
                          : rc.train.precision == Precision::BF16 ? "bf16"
                                                                  : "fp16";
  fmt::print(log,
             "parallm: {} model, {:.2f}M parameters, {} layers, hidden {}, vocab {}; "
             "{} steps of {} x {} tokens (micro-batch {}, accumulation {}), {} threads, "
             "peak {:.1f} GFLOP/s ({})\n",
             arch_name(rc.model.arch), rc.model.num_parameters() / 1e6, rc.model.n_layers,
             rc.model.hidden, rc.model.vocab_size, rc.train.steps, rc.train.global_batch_size,
             rc.train.seq_len, rc.train.micro_batch_size, rc.train.grad_accum_steps(),
             cpu::num_threads(), peak / 1e9,
             measured ? fmt::format("measured {} GEMM", gemm_kind) : std::string("--peak-tflops"));
  fmt::print(log, "compute: {}\n", trainer.compute_summary());
  if (rc.train.dp.dp > 1)
    fmt::print(log, "data parallel: dp {}, {}, ZeRO stage {}, buckets {} MiB, overlap {}\n",
               rc.train.dp.dp, dp_mode_name(rc.train.dp.mode), rc.train.dp.zero,
               rc.train.dp.bucket_mb, rc.train.dp.overlap ? "on" : "off");

  double first_loss = 0.0, last_loss = 0.0;
  bool have_first = false;
  const bool tty = env.stderr_is_tty && &log == &std::cerr;
  if (rc.train.tp > 1)
    fmt::print(log, "tensor parallel: tp {}, sequence parallel {}\n", rc.train.tp,
               rc.train.sequence_parallel ? "on" : "off");
  if (rc.train.pp > 1)
    fmt::print(log, "pipeline parallel: pp {}, schedule {}, virtual stages {}, micro-batches {}\n",
               rc.train.pp, rc.train.schedule, rc.train.virtual_stages,
               rc.train.grad_accum_steps());
  const bool dist = rc.train.dp.dp > 1 || rc.train.tp > 1 || rc.train.pp > 1;
  const CheckpointLayout layout{world_size, rc.train.dp.dp, rc.train.tp, rc.train.pp,
                                rc.train.dp.zero, std::string(dp_mode_name(rc.train.dp.mode)),
                                rc.train.sequence_parallel};
  const TrainConfig& tc = rc.train;
  auto after_step = [&](int64_t done) {
    const bool exit = tc.exit_interval > 0 && done % tc.exit_interval == 0 && done < tc.steps;
    const bool save = !tc.save_dir.empty() &&
                      ((tc.save_interval > 0 && done % tc.save_interval == 0) || exit ||
                       done == tc.steps);
    if (save) {
      const auto t0 = std::chrono::steady_clock::now();
      const Optimizer* opt = trainer.optimizer();
      TrainingState st =
          training_state_of(rc.model, tc, layout, done, opt ? opt->steps_taken() : done,
                            trainer.updates(), trainer.loss_scaler().state());
      std::string dir = save_checkpoint({tc.save_dir, tc.keep, opts.checkpoint_shard_hook}, st,
                                        model, trainer.data_parallel(), world);
      if (rank == 0)
        fmt::print(log, "saved checkpoint {} ({:.1f} MB in {:.2f} s)\n", dir,
                   directory_bytes(dir) / 1e6, seconds_since(t0));
    }
    if (exit) fmt::print(log, "exit interval {}: stopping after step {}\n", tc.exit_interval, done);
    return exit;
  };
  trainer.run([&](const StepStats& s) {
    if (!have_first) first_loss = s.loss;
    have_first = true;
    last_loss = s.loss;
    bool last = s.step + 1 == rc.train.steps;
    std::string line = fmt::format(
        "step {:>5}/{} | loss {:.4f} | lr {:.2e} | grad norm {:.3f} | {:.0f} ms | {:.0f} tok/s | "
        "MFU {:.1f}%",
        s.step + 1, rc.train.steps, s.loss, s.lr, s.grad_norm, s.step_seconds * 1e3,
        s.tokens_per_s, s.mfu * 100);
    if (dist) line += fmt::format(" | exposed comm {:.0f} ms", s.exposed_comm_ms);
    if (rc.train.pp > 1) line += fmt::format(" | bubble {:.1f}%", s.bubble_fraction * 100);
    if (rc.train.precision == Precision::FP16) line += fmt::format(" | loss scale {}", s.loss_scale);
    if (s.skipped) {  // always its own line, whatever the log interval
      fmt::print(log, "{}step {} skipped: non-finite loss or gradients ({})\n", tty ? "\n" : "",
                 s.step + 1, s.nonfinite);
    }
    if (tty) {
      fmt::print(log, "\r{}\x1b[K", line);
      if (last) fmt::print(log, "\n");
    } else if (s.step % rc.train.log_interval == 0 || last) {
      fmt::print(log, "{}\n", line);
    }
    log.flush();
  }, after_step);
  if (trainer.pipeline() != nullptr)
    write_pipeline_pictures(
        *world, grid, *trainer.pipeline(),
        fmt::format("measured {} schedule, pp {}, {} micro-batches{}", rc.train.schedule,
                    rc.train.pp, rc.train.grad_accum_steps(),
                    rc.train.virtual_stages > 1
                        ? fmt::format(", {} virtual stages", rc.train.virtual_stages)
                        : std::string()),
        rc.train.trace_path, rc.train.timeline_path);
  double val = trainer.evaluate();
  fmt::print(log, "done: loss {:.4f} -> {:.4f}{}\n", first_loss, last_loss,
             std::isnan(val) ? std::string() : fmt::format(", validation loss {:.4f}", val));
  if (!rc.train.save_hf_dir.empty()) {
    const auto t0 = std::chrono::steady_clock::now();
    save_hf_from_layout(rc.train.save_hf_dir, model, trainer.data_parallel(), *save_dtype, rank,
                        pp_group.get());
    fmt::print(log, "saved {} ({}, {:.2f} s)\n", rc.train.save_hf_dir, opts.save_dtype,
               seconds_since(t0));
  }
  return last_loss;
}

}  // namespace parallm
