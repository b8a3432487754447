#include "train/progress_log.h"

#include <fmt/ostream.h>

namespace parallm {

ProgressLog::ProgressLog(std::ostream& log, bool tty, const TrainConfig& cfg)
    : log_(log),
      tty_(tty),
      steps_(cfg.training.steps),
      log_interval_(cfg.logging.log_interval),
      dist_(cfg.parallelism.world_size() > 1),
      pipeline_(cfg.parallelism.pp > 1),
      fp16_(cfg.precision.matmul == Precision::FP16) {}

void ProgressLog::on_step(const StepStats& s) {
  if (!have_first_) first_loss_ = s.loss;
  have_first_ = true;
  last_loss_ = s.loss;
  const bool last = s.step + 1 == steps_;
  std::string line = fmt::format(
      "step {:>5}/{} | loss {:.4f} | lr {:.2e} | grad norm {:.3f} | {:.0f} ms | {:.0f} tok/s | "
      "MFU {:.1f}%",
      s.step + 1, steps_, s.loss, s.lr, s.grad_norm, s.step_seconds * 1e3, s.tokens_per_s,
      s.mfu * 100);
  if (dist_) line += fmt::format(" | exposed comm {:.0f} ms", s.exposed_comm_ms);
  if (pipeline_) line += fmt::format(" | bubble {:.1f}%", s.bubble_fraction * 100);
  if (fp16_) line += fmt::format(" | loss scale {}", s.loss_scale);
  if (s.skipped) {  // always its own line, whatever the log interval
    fmt::print(log_, "{}step {} skipped: non-finite loss or gradients ({})\n", tty_ ? "\n" : "",
               s.step + 1, s.nonfinite);
  }
  if (tty_) {
    fmt::print(log_, "\r{}\x1b[K", line);
    if (last) fmt::print(log_, "\n");
  } else if (s.step % log_interval_ == 0 || last) {
    fmt::print(log_, "{}\n", line);
  }
  log_.flush();
}

}  // namespace parallm
