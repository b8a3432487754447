// Grouped linear forward/backward (see grouped_gemm.h): every group's
// linear is one whole GEMM (one per product), as a per-group loop would
// call it. Groups holding more than 1/threads of the rows, or at least
// kRowsPerThread rows per thread, run one after another with all threads;
// the rest run in one OpenMP region, one group per thread at a time.
// Routed loads are uneven at every dispatch (the busiest of 4 experts takes
// about 1.8x the mean in bench/plan/validation_moe.toml), and whole groups
// dealt to 2 threads left one thread idle: with each sizeable group on all
// threads that model's expert forward + backward took 13% less (2 threads,
// AMD EPYC). Small groups still share the threads, as a GEMM of a few rows
// per thread runs well below its rate. Cutting a group's GEMM into tiles
// was measured slower on this CPU (a 64-feature weight-gradient tile ran at
// half the speed of the whole GEMM, bench/moe_gemm_bench.cpp). A group run
// side by side gets the bits of a one-thread call, which for a large shape
// can differ from an all-thread call's (docs/gemm.md). The 16-bit variants
// run the groups in order, each on LowpGemm with all threads (its cache is
// not thread-safe).
#include "kernels/cpu/grouped_gemm.h"

#include <vector>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/threads.h"

namespace parallm::cpu {
namespace {

// Rows per thread from which a group's GEMM runs well on all threads.
constexpr int64_t kRowsPerThread = 128;

// body(g) for every group with rows: the large ones first, each with all
// threads, then the others in parallel, each on one thread.
template <class Body>
void for_groups(const int64_t* offsets, int64_t groups, const Body& body) {
  const int64_t total = offsets[groups] - offsets[0];
  const int64_t threads = num_threads();
  std::vector<int64_t> small;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t rows = offsets[g + 1] - offsets[g];
    if (rows == 0) continue;
    if (threads > 1 && (rows * threads > total || rows >= kRowsPerThread * threads))
      body(g);
    else
      small.push_back(g);
  }
  const int64_t n = static_cast<int64_t>(small.size());
  // One small group (or one thread) is called directly: inside a region
  // of one thread (`if` false) oneDNN's own parallel region is a nested
  // one, and the validation MoE model's lone small groups ran about 10x
  // slower per row there (1.26 s against 0.13 s over 6 steps, 2 threads).
  if (threads == 1 || n == 1) {
    for (int64_t g : small) body(g);
    return;
  }
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t i = 0; i < n; ++i) body(small[i]);
}

}  // namespace

void grouped_linear_forward(float* out, const float* inp, const float* weight, const float* bias,
                            const int64_t* offsets, int64_t groups, int64_t IC, int64_t OC) {
  for_groups(offsets, groups, [&](int64_t g) {
    const int64_t r0 = offsets[g];
    linear_forward<float>(out + r0 * OC, inp + r0 * IC, weight + g * OC * IC,
                          bias ? bias + g * OC : nullptr, offsets[g + 1] - r0, IC, OC);
  });
}

void grouped_linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                             const float* inp, const float* weight, const int64_t* offsets,
                             int64_t groups, int64_t IC, int64_t OC) {
  for_groups(offsets, groups, [&](int64_t g) {
    const int64_t r0 = offsets[g];
    linear_backward<float>(dinp ? dinp + r0 * IC : nullptr,
                           dweight ? dweight + g * OC * IC : nullptr,
                           dbias ? dbias + g * OC : nullptr, dout + r0 * OC, inp + r0 * IC,
                           weight + g * OC * IC, offsets[g + 1] - r0, IC, OC);
  });
}

void grouped_linear_forward_loop(float* out, const float* inp, const float* weight,
                                 const float* bias, const int64_t* offsets, int64_t groups,
                                 int64_t IC, int64_t OC) {
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t r0 = offsets[g], rows = offsets[g + 1] - r0;
    if (rows > 0)
      linear_forward<float>(out + r0 * OC, inp + r0 * IC, weight + g * OC * IC,
                            bias ? bias + g * OC : nullptr, rows, IC, OC);
  }
}

void grouped_linear_forward_lowp(const LowpGemm& gemm, Allocator& scratch, float* out,
                                 const uint16_t* inp, const uint16_t* weight, const float* bias,
                                 const int64_t* offsets, int64_t groups, int64_t IC, int64_t OC) {
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t r0 = offsets[g], rows = offsets[g + 1] - r0;
    if (rows == 0) continue;
    float* o = out + r0 * OC;
    gemm.gemm(false, true, rows, OC, IC, inp + r0 * IC, IC, weight + g * OC * IC, IC, 0.0f, o, OC,
              scratch);
    if (bias == nullptr) continue;
    const float* b = bias + g * OC;
    for (int64_t n = 0; n < rows; ++n)
      for (int64_t j = 0; j < OC; ++j) o[n * OC + j] += b[j];
  }
}

void grouped_linear_backward_lowp(const LowpGemm& gemm, Allocator& scratch, float* dinp,
                                  float* dweight, float* dbias, const uint16_t* dout,
                                  const float* dout_f32, const uint16_t* inp,
                                  const uint16_t* weight, const int64_t* offsets, int64_t groups,
                                  int64_t IC, int64_t OC) {
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t r0 = offsets[g], rows = offsets[g + 1] - r0;
    if (rows == 0) continue;
    const uint16_t* d = dout + r0 * OC;
    if (dinp != nullptr)
      gemm.gemm(false, false, rows, IC, OC, d, OC, weight + g * OC * IC, IC, 1.0f, dinp + r0 * IC,
                IC, scratch);
    if (dweight != nullptr)
      gemm.gemm(true, false, OC, IC, rows, d, OC, inp + r0 * IC, IC, 1.0f, dweight + g * OC * IC,
                IC, scratch);
    if (dbias != nullptr)  // the fp32 kernel's fixed-order row sum
      linear_backward<float>(nullptr, nullptr, dbias + g * OC, dout_f32 + r0 * OC, nullptr, nullptr,
                             rows, IC, OC);
  }
}

}  // namespace parallm::cpu
