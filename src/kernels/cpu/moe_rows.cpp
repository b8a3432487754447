// MoE row moves (see moe_rows.h). The per-row work is a few hundred
// elements, so threads take whole fed rows; below kParallelMin elements one
// thread is faster.
#include "kernels/cpu/moe_rows.h"

#include <cstring>

namespace parallm::cpu {
namespace {

constexpr int64_t kParallelMin = 32768;  // elements moved

bool parallel(const AssignedRows& r, int64_t C) { return r.nfed * r.k * C > kParallelMin; }

}  // namespace

void moe_gather(float* send, const float* x, const AssignedRows& r, int64_t C) {
#pragma omp parallel for schedule(static) if (parallel(r, C))
  for (int64_t i = 0; i < r.nfed; ++i)
    for (int64_t a = r.fed[i] * r.k; a < (r.fed[i] + 1) * r.k; ++a)
      if (r.send_row[a] >= 0)
        std::memcpy(send + r.send_row[a] * C, x + i * C, static_cast<size_t>(C) * sizeof(float));
}

void moe_combine(float* out, const float* y, const float* gate, const AssignedRows& r, int64_t C) {
#pragma omp parallel for schedule(static) if (parallel(r, C))
  for (int64_t i = 0; i < r.nfed; ++i) {
    float* o = out + i * C;
    std::memset(o, 0, static_cast<size_t>(C) * sizeof(float));
    for (int64_t a = r.fed[i] * r.k; a < (r.fed[i] + 1) * r.k; ++a) {
      if (r.send_row[a] < 0) continue;
      const float g = gate[a], *ya = y + r.send_row[a] * C;
#pragma omp simd
      for (int64_t j = 0; j < C; ++j) o[j] += g * ya[j];
    }
  }
}

void moe_combine_backward(float* dy, float* dgate, const float* dout, const float* y,
                          const float* gate, const AssignedRows& r, int64_t C) {
#pragma omp parallel for schedule(static) if (parallel(r, C))
  for (int64_t i = 0; i < r.nfed; ++i) {
    const float* d = dout + i * C;
    for (int64_t a = r.fed[i] * r.k; a < (r.fed[i] + 1) * r.k; ++a) {
      if (r.send_row[a] < 0) continue;
      const float* ya = y + r.send_row[a] * C;
      float* dya = dy + r.send_row[a] * C;
      double dot = 0.0;
      for (int64_t j = 0; j < C; ++j) dot += static_cast<double>(d[j]) * ya[j];
      dgate[a] = static_cast<float>(dot);
      const float g = gate[a];
#pragma omp simd
      for (int64_t j = 0; j < C; ++j) dya[j] += g * d[j];
    }
  }
}

void moe_gather_backward(float* dx, const float* dsend, const AssignedRows& r, int64_t C) {
#pragma omp parallel for schedule(static) if (parallel(r, C))
  for (int64_t i = 0; i < r.nfed; ++i) {
    float* dxi = dx + i * C;
    for (int64_t a = r.fed[i] * r.k; a < (r.fed[i] + 1) * r.k; ++a) {
      if (r.send_row[a] < 0) continue;
      const float* ds = dsend + r.send_row[a] * C;
#pragma omp simd
      for (int64_t j = 0; j < C; ++j) dxi[j] += ds[j];
    }
  }
}

}  // namespace parallm::cpu
