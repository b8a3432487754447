// The communication mappings of tensor and sequence parallelism (Megatron's
// f / g operators), each named by its forward action, with its backward
// beside it. Buffers are row-major (rows, cols) fp32. The communicator
// counts each call's traffic (tp_traffic in tp_group.h). With an inactive
// group every mapping is the identity (a copy where the buffers differ).
#pragma once
#include <cstdint>

#include "parallel/tensor/tp_group.h"

namespace parallm {

// copy_to_tp_region: forward identity (the caller reads its input as is);
// backward all-reduce of the input gradient, in place.
void copy_to_tp_region_backward(const TpGroup& g, float* dx, int64_t n);

// reduce_from_tp_region: forward all-reduce (sum), in place;
// backward identity.
void reduce_from_tp_region(const TpGroup& g, float* x, int64_t n);

// scatter_to_tp_region: forward keeps this rank's block of the last
// dimension, out (rows, cols / tp) from in (rows, cols);
// backward gather_from_tp_region.
void scatter_to_tp_region(const TpGroup& g, float* out, const float* in, int64_t rows,
                          int64_t cols);

// gather_from_tp_region: forward all-gather along the last dimension,
// out (rows, cols_local * tp) from in (rows, cols_local);
// backward scatter_to_tp_region.
void gather_from_tp_region(const TpGroup& g, float* out, const float* in, int64_t rows,
                           int64_t cols_local);

// gather_from_sequence_region: forward all-gather of the token rows,
// full (rows_local * tp, cols) from local (rows_local, cols);
// backward reduce_scatter_to_sequence_region (of the gradient).
void gather_from_sequence_region(const TpGroup& g, float* full, const float* local,
                                 int64_t rows_local, int64_t cols);

// reduce_scatter_to_sequence_region: forward sum over ranks and keep this
// rank's block of rows, local (rows_local, cols) from full (rows_local * tp,
// cols); backward gather_from_sequence_region (of the gradient).
void reduce_scatter_to_sequence_region(const TpGroup& g, float* local, const float* full,
                                       int64_t rows_local, int64_t cols);

// The region a block's attention or MLP runs in, entered from the residual
// stream and left back into it: plain tp uses copy_to / reduce_from, sequence
// parallel gather_from_sequence / reduce_scatter_to_sequence.
// enter: full (N, C) from the stream's rows (N or N/tp); a plain-tp caller may
// skip it and read the stream itself.
void enter_tp_region(const TpGroup& g, float* full, const float* stream, int64_t N, int64_t C);
// enter's backward: dstream (rows, C) += reduction of dfull (N, C), which is
// overwritten (used as the reduction buffer).
void enter_tp_region_backward(const TpGroup& g, float* dstream, float* dfull,
                              int64_t N, int64_t C);
// leave: stream (rows, C) = sum over ranks of partial (N, C); partial may be
// overwritten.
void leave_tp_region(const TpGroup& g, float* stream, float* partial, int64_t N, int64_t C);
// leave's backward: dfull (N, C) from dstream (rows, C): identity under plain
// tp (copied), all-gather under sequence parallelism.
void leave_tp_region_backward(const TpGroup& g, float* dfull, const float* dstream, int64_t N,
                              int64_t C);

}  // namespace parallm
