// The MoE layer's row moves between token order and expert order (gather
// to the send buffer, weighted combine back) and their backward.
// Kernels: kernels/cpu/moe_rows.h.
#pragma once
#include <cstdint>

#include "kernels/cpu/moe_rows.h"
#include "ops/stream.h"

namespace parallm::ops {

using cpu::AssignedRows;  // its fed and send_row are buffers of the stream's device

// send[send_row[a]] = x[i] for every kept assignment a of fed row i.
void moe_gather(const Stream& s, float* send, const float* x, const AssignedRows& r, int64_t C);
// out[i] = sum over kept a, in slot order, of gate[a] * y[send_row[a]].
void moe_combine(const Stream& s, float* out, const float* y, const float* gate,
                 const AssignedRows& r, int64_t C);
void moe_combine_backward(const Stream& s, float* dy, float* dgate, const float* dout,
                          const float* y, const float* gate, const AssignedRows& r, int64_t C);
void moe_gather_backward(const Stream& s, float* dx, const float* dsend, const AssignedRows& r,
                         int64_t C);

}  // namespace parallm::ops
