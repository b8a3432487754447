// The MoE layer's row moves between token order and expert order: a fed
// row i's top-k assignments a = fed[i] * k + j each go to send row
// send_row[a] (-1: dropped), and come back weighted by the gate. Every
// function runs over fed rows in parallel; each fed row writes only its own
// output row and its own send rows, in slot order, so results do not depend
// on the thread count.
#pragma once
#include <cstdint>

namespace parallm::cpu {

struct AssignedRows {
  const int64_t* fed = nullptr;       // (nfed): the routing row of each fed row
  int64_t nfed = 0, k = 0;            // fed rows, assignments per routing row
  const int64_t* send_row = nullptr;  // (routing rows x k): send row or -1
};

// send[send_row[a]] = x[i] for every kept assignment a of fed row i.
// send: (S, C), x: (nfed, C).
void moe_gather(float* send, const float* x, const AssignedRows& r, int64_t C);

// out[i] = sum over kept a, in slot order, of gate[a] * y[send_row[a]].
// out: (nfed, C) overwritten, y: (S, C), gate: (routing rows x k).
void moe_combine(float* out, const float* y, const float* gate, const AssignedRows& r, int64_t C);

// moe_combine's backward: dgate[a] = <dout[i], y[send_row[a]]> (double
// accumulation) and dy[send_row[a]] += gate[a] * dout[i]. Dropped
// assignments' dgate is left as it is.
void moe_combine_backward(float* dy, float* dgate, const float* dout, const float* y,
                          const float* gate, const AssignedRows& r, int64_t C);

// moe_gather's backward: dx[i] += dsend[send_row[a]] for every kept a.
void moe_gather_backward(float* dx, const float* dsend, const AssignedRows& r, int64_t C);

}  // namespace parallm::cpu
