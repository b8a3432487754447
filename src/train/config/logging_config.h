// LoggingConfig: the [logging] table: what the run reports and where:
// progress lines, the validation loss, the JSONL metrics file and its
// TensorBoard twin, the MFU
// denominator, and (pp > 1) the Chrome trace and the measured timeline of
// the pipeline schedule.
#pragma once
#include <cstdint>
#include <string>

namespace parallm {

struct LoggingConfig {
  int64_t log_interval = 10;
  int64_t eval_interval = 0;  // 0: evaluate only at the end (when val files exist)
  int64_t eval_batches = 8;
  std::string metrics_path;   // --metrics FILE.jsonl
  std::string tensorboard_dir;  // --tensorboard DIR: event files with the same scalars
  double peak_tflops = 0;     // MFU/HFU denominator per rank (--peak-tflops); 0: measure GEMM peak
  std::string trace_path;     // --trace FILE.json: Chrome trace of every rank (pp > 1)
  std::string timeline_path;  // --timeline FILE.svg: measured schedule of one step (pp > 1)

  void validate() const;
};

}  // namespace parallm
