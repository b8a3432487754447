// `parallm calibrate`'s kernel half: times this machine's CPU kernels (the
// ones the training step calls, in fp32) at a thread count and returns them
// as OpCosts (plan/op_costs.h): the linear layer forward and backward on a
// grid of shapes, attention forward and backward at a few sequence lengths,
// each element-wise kernel per element, the optimizer step per parameter and
// memcpy's bandwidth. Each figure is the fastest of a few timed rounds, as
// the GEMM peak is (a slower round is the machine's other work, not ours),
// taken in passes over all figures so one figure's rounds lie far apart.
// With fewer threads than cores, the other cores run a GEMM meanwhile: in a
// multi-rank job every core is busy with some rank, and cores share memory
// bandwidth, caches and clock headroom, so an idle neighbour would flatter
// the measurement.
#pragma once
#include <cstdint>
#include <vector>

#include "plan/op_costs.h"

namespace parallm {

struct KernelCalibration {
  // Powers of two where training shapes live (a micro-batch's rows, tp-split
  // widths); the step-time model interpolates between them.
  std::vector<int64_t> rows = {64, 256, 512, 1024, 2048, 4096};
  std::vector<int64_t> widths = {32, 128, 256, 512, 1024, 2048};  // the grid's in and out sides
  // Attention at head dim 64 over lengths up to long contexts (a query
  // block's scores against 8192 keys, 2 MB, no longer stay in a core's
  // cache), and at attn_dim_seq over head dims.
  std::vector<int64_t> attn_seq = {128, 512, 2048, 8192};
  std::vector<int64_t> attn_dims = {32, 64, 128};
  int64_t attn_dim_seq = 512;
  double round_s = 0.02;  // a timed round runs the kernel at least this long
  int rounds = 3;
};

// `busy_cores`: cores kept busy alongside (each by one thread running GEMMs).
OpCosts measure_kernel_costs(int threads, int busy_cores, const KernelCalibration& k);

}  // namespace parallm
