// The MoE layer's row moves on the GPU, the twins of kernels/cpu/moe_rows.h
// (same AssignedRows, but its fed and send_row point to device memory). One
// block per fed row; each fed row writes only its own output row and its own
// send rows, in slot order, as the CPU's threads do, so there are no atomics
// and results are the same every run. Invariant (the CPU's too): fed rows are
// distinct and every kept assignment has a send row of its own.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cpu/moe_rows.h"

namespace parallm::cuda {

// send[send_row[a]] = x[i] for every kept assignment a of fed row i.
// send: (S, C), x: (nfed, C).
void moe_gather(float* send, const float* x, const cpu::AssignedRows& r, int64_t C, cudaStream_t s);

// out[i] = sum over kept a, in slot order, of gate[a] * y[send_row[a]].
// out: (nfed, C) overwritten, y: (S, C), gate: (routing rows x k).
void moe_combine(float* out, const float* y, const float* gate, const cpu::AssignedRows& r,
                 int64_t C, cudaStream_t s);

// moe_combine's backward: dgate[a] = <dout[i], y[send_row[a]]> (double
// accumulation) and dy[send_row[a]] += gate[a] * dout[i]. Dropped
// assignments' dgate is left as it is.
void moe_combine_backward(float* dy, float* dgate, const float* dout, const float* y,
                          const float* gate, const cpu::AssignedRows& r, int64_t C, cudaStream_t s);

// moe_gather's backward: dx[i] += dsend[send_row[a]] for every kept a, in slot order.
void moe_gather_backward(float* dx, const float* dsend, const cpu::AssignedRows& r, int64_t C,
                         cudaStream_t s);

}  // namespace parallm::cuda
