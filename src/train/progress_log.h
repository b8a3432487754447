// ProgressLog: the job's per-step line (loss, lr, grad norm, time, tok/s,
// MFU, and exposed comm / bubble / loss scale where they apply), printed
// every log_interval steps, or redrawn in place on a TTY; a skipped step
// always gets its own line. Remembers the first and last loss for the
// job's closing line.
#pragma once
#include <ostream>

#include "train/config/train_config.h"
#include "train/trainer.h"

namespace parallm {

class ProgressLog {
 public:
  // tty: log is a terminal (one line redrawn in place).
  ProgressLog(std::ostream& log, bool tty, const TrainConfig& cfg);
  void on_step(const StepStats& s);
  double first_loss() const { return first_loss_; }
  double last_loss() const { return last_loss_; }

 private:
  std::ostream& log_;
  bool tty_;
  int64_t steps_, log_interval_;
  bool dist_, pipeline_, fp16_;
  bool have_first_ = false;
  double first_loss_ = 0.0, last_loss_ = 0.0;
};

}  // namespace parallm
