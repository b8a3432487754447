// The second half of `parallm verify`: where a layout first leaves the
// one-process result. Both runs repeat step 1 with --dump-ops (every rank
// records each layer's outputs and input gradients with their place in the
// one-process tensor, nn/verify_hooks.h); the one-process records are walked
// in execution order and the first one whose layout pieces differ beyond
// the tolerance, or are missing or do not cover it, is the answer.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace parallm {

struct OpRecord {
  std::string op;
  int64_t sample_offset = 0;
  int layer = -1;
  int pass = 0;  // 0 forward, 1 backward
  int64_t row0 = 0, rows = 0, full_rows = 0, col0 = 0, cols = 0, full_cols = 0;
  int rank = 0;  // the file it came from
  std::vector<float> values;
};

// Every record of every rank file (rank-NNNNN.ops) in dir, in file order.
std::vector<OpRecord> read_op_dumps(const std::string& dir);

struct OpDivergence {
  bool found = false;
  std::string op;
  int layer = -1;
  int pass = 0;
  int64_t sample_offset = 0, samples = 0;  // the micro-batch's global samples
  int rank = -1;                           // the layout rank of the worst piece (-1: none)
  double rel = 0;                          // max |layout - one| / max |one|
  std::string problem;                     // "differs", "missing", "incomplete"
  int64_t compared = 0;                    // one-process records walked before it
};

// seq_len: tokens per sample (rows / seq_len = samples of a record).
OpDivergence first_divergence(const std::vector<OpRecord>& reference,
                              const std::vector<OpRecord>& layout, int64_t seq_len,
                              double tolerance);

// "layer 1, mlp.proj (forward), rank 0, samples 0-1: differs, max rel diff 9.9e-03"
std::string describe(const OpDivergence& d);

}  // namespace parallm
