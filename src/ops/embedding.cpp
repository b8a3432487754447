#include "ops/embedding.h"

#include "kernels/cpu/embedding.h"
#include "ops/device_backend.h"

namespace parallm::ops {

void embedding_forward(const Stream& s, float* out, const int32_t* tokens, const float* table,
                       int64_t N, int64_t C, int64_t row_begin, int64_t rows, bool accumulate) {
  if (const DeviceBackend* b = s.backend()) return b->embedding_forward(out, tokens, table, N, C, row_begin, rows, accumulate);
  require_cpu_kernels(s, "embedding_forward");
  cpu::embedding_forward(s.operand(out), s.operand(tokens), s.operand(table), N, C, row_begin, rows,
                         accumulate);
}

void embedding_backward(const Stream& s, float* dtable, const int32_t* tokens, const float* dout,
                        int64_t N, int64_t C, int64_t row_begin, int64_t rows) {
  if (const DeviceBackend* b = s.backend()) return b->embedding_backward(dtable, tokens, dout, N, C, row_begin, rows);
  require_cpu_kernels(s, "embedding_backward");
  cpu::embedding_backward(s.operand(dtable), s.operand(tokens), s.operand(dout), N, C, row_begin,
                          rows);
}

}  // namespace parallm::ops
