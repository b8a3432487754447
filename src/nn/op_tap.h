// OpTap: the file one rank's `parallm verify --dump-ops` records go to
// (nn/verify_hooks.h says what a record means). Records are appended in
// execution order and flushed, so a rank that fails leaves what it reached.
#pragma once
#include <fstream>
#include <string>

#include "nn/verify_hooks.h"
#include "ops/stream.h"

namespace parallm {

// Appends records to one file per rank, in execution order. Format per
// record: name length (i32), name, i64 {sample_offset, layer, pass, row0,
// rows, full_rows, col0, cols, full_cols}, then rows*cols f32.
class OpTap {
 public:
  explicit OpTap(const std::string& path);
  // data: rows x cols, row-major, contiguous, a buffer of stream s's device
  // (copied to the host to be written). sample_offset: the global sample
  // number (within the step) of the micro-batch's row 0.
  void record(const ops::Stream& s, const std::string& op, int layer, TapPass pass,
              int64_t sample_offset, const TapBox& box, const float* data);

 private:
  std::ofstream out_;
};

}  // namespace parallm
