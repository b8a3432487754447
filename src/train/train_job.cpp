#include "train/train_job.h"

#include <fmt/ostream.h>

#include <cmath>
#include <iostream>

#include "grid/rank_grid.h"
#include "io/hf_model.h"
#include "kernels/cpu/threads.h"
#include "plan/flops.h"
#include "train/trainer.h"

namespace parallm {

RunConfig checked_run_config(const TrainJobOptions& opts, int world_size) {
  RunConfig rc = opts.run;
  if (!rc.train.init_from.empty()) rc.model = read_hf_model_config(rc.train.init_from);
  rc.train.validate(rc.model);
  validate_dp_layout(rc.train.dp, world_size, rc.train.global_batch_size,
                     rc.train.micro_batch_size, rc.train.tp);
  PX_CHECK(rc.train.tp == 1 || rc.train.init_from.empty(),
           "--init-from with tp {} is not supported yet (Hugging Face weights are loaded whole)",
           rc.train.tp);
  PX_CHECK(rc.train.tp == 1 || rc.train.save_dir.empty(),
           "saving with tp {} is not supported yet (the shards would need gathering)",
           rc.train.tp);
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

  // This rank's data- and tensor-parallel groups, from the grid (tp fastest).
  std::unique_ptr<comm::Communicator> dp_group, tp_group;
  if (world_size > 1) {
    RankGrid grid(GridSizes{.tp = rc.train.tp, .dp = rc.train.dp.dp}, world_size);
    auto split = [&](GroupKind kind, const char* name) {
      const int g = grid.group_index(kind, rank);
      return world->split(g, grid.rank_in_group(kind, rank), fmt::format("{}[{}]", name, g));
    };
    dp_group = split(GroupKind::kDp, "dp");
    tp_group = split(GroupKind::kTp, "tp");
  }
  TpGroup tp{.comm = rc.train.tp > 1 ? tp_group.get() : nullptr,
             .sequence_parallel = rc.train.sequence_parallel};

  Allocator alloc;
  rc.model.attn_dropout = rc.train.attention_dropout;
  rc.model.hidden_dropout = rc.train.hidden_dropout;
  Transformer model(rc.model, alloc, tp);
  if (rc.train.init_from.empty()) {
    model.params().init_random(rc.train.seed);
  } else {
    load_hf_weights(rc.train.init_from, model);
  }
  const bool measured = rc.train.peak_tflops <= 0;
  double peak = measured ? measure_gemm_peak_flops() : rc.train.peak_tflops * 1e12;
  Trainer trainer(model, rc.train, alloc, peak, rc.train.dp.dp > 1 ? dp_group.get() : nullptr);
  fmt::print(log,
             "parallm: {} model, {:.2f}M parameters, {} layers, hidden {}, vocab {}; "
             "{} steps of {} x {} tokens (micro-batch {}, accumulation {}), {} threads, "
             "peak {:.1f} GFLOP/s ({})\n",
             arch_name(rc.model.arch), rc.model.num_parameters() / 1e6, rc.model.n_layers,
             rc.model.hidden, rc.model.vocab_size, rc.train.steps, rc.train.global_batch_size,
             rc.train.seq_len, rc.train.micro_batch_size, rc.train.grad_accum_steps(),
             cpu::num_threads(), peak / 1e9, measured ? "measured GEMM" : "--peak-tflops");
  fmt::print(log, "compute: {}\n", trainer.compute_summary());
  if (rc.train.dp.dp > 1)
    fmt::print(log, "data parallel: dp {}, {}, ZeRO stage {}, buckets {} MiB, overlap {}\n",
               rc.train.dp.dp, dp_mode_name(rc.train.dp.mode), rc.train.dp.zero,
               rc.train.dp.bucket_mb, rc.train.dp.overlap ? "on" : "off");

  double first_loss = 0.0, last_loss = 0.0;
  const bool tty = env.stderr_is_tty && &log == &std::cerr;
  if (rc.train.tp > 1)
    fmt::print(log, "tensor parallel: tp {}, sequence parallel {}\n", rc.train.tp,
               rc.train.sequence_parallel ? "on" : "off");
  const bool dist = rc.train.dp.dp > 1 || rc.train.tp > 1;
  trainer.run([&](const StepStats& s) {
    if (s.step == 0) first_loss = s.loss;
    last_loss = s.loss;
    bool last = s.step + 1 == rc.train.steps;
    std::string line = fmt::format(
        "step {:>5}/{} | loss {:.4f} | lr {:.2e} | grad norm {:.3f} | {:.0f} ms | {:.0f} tok/s | "
        "MFU {:.1f}%",
        s.step + 1, rc.train.steps, s.loss, s.lr, s.grad_norm, s.step_seconds * 1e3,
        s.tokens_per_s, s.mfu * 100);
    if (dist) line += fmt::format(" | exposed comm {:.0f} ms", s.exposed_comm_ms);
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
  });
  double val = trainer.evaluate();
  fmt::print(log, "done: loss {:.4f} -> {:.4f}{}\n", first_loss, last_loss,
             std::isnan(val) ? std::string() : fmt::format(", validation loss {:.4f}", val));
  // ZeRO-3 ranks hold only shards: gather the full vector (collective) and
  // point the model at it for saving.
  std::vector<float> full;
  if (!rc.train.save_dir.empty() && dist && rc.train.dp.zero >= 3) {
    full = trainer.data_parallel().full_parameters();
    model.params().bind_values(0, model.params().size(), full.data());
  }
  if (!rc.train.save_dir.empty() && rank == 0) {
    save_hf_model(rc.train.save_dir, model, *save_dtype);
    fmt::print(log, "saved {} ({})\n", rc.train.save_dir, opts.save_dtype);
  }
  return last_loss;
}

}  // namespace parallm
