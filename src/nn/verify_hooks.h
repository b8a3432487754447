// What `parallm verify` (docs/verify.md) threads through a training run:
// an OpTap that records named layer outputs with their place in the
// one-process tensor, and FaultHooks, the places where a deliberate bug may
// be planted so the tests can show verify finds it (the bugs themselves,
// named by InjectedFault, live with verify: train/verify/planted_faults.h).
// Both ride in LayerContext (null when off, which is always outside verify);
// nothing here is global.
// Invariant: a TapBox says exactly which slice of the one-process tensor of
// the same micro-batch (same global samples) the recorded values are.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

namespace parallm {

namespace ops {
class Stream;
}

// A planted bug (--inject-fault; train/verify/planted_faults.h says where
// each acts).
enum class InjectedFault { None, TpReduceScale, PpDropMicroBatch, Zero3ShardOffset };
InjectedFault injected_fault_from_name(const std::string& name);
const char* injected_fault_name(InjectedFault f);

// The places a planted bug may act. Each is empty unless a test planted
// one, and the production code calls a hook only when it is set: unset, a
// hook costs a null test, and no production path names a bug.
struct FaultHooks {
  // After a row-parallel reduce (the MLP's output projection under tp) of
  // layer `layer`: its n output values on stream s.
  std::function<void(const ops::Stream& s, int layer, float* out, int64_t n)> after_tp_reduce;
  // Whether the chunk holding virtual stage `virtual_stage` (of
  // `virtual_stages` along the model, wherever the schedule places it) skips
  // micro-batch `micro_batch` (forward, and a zero gradient sent back).
  std::function<bool(int virtual_stage, int virtual_stages, int micro_batch)> skip_micro_batch;
  // Elements ZeRO-3's gather shifts the first owner's piece of unit
  // `segment` by (0: none).
  std::function<int64_t(int segment)> zero3_piece_shift;
};

// Where a (rows, cols) record sits in the one-process (full_rows, full_cols)
// matrix of its micro-batch: rows are the micro-batch's B*T tokens (a
// sequence-parallel slice: its rows), cols the features (a tp slice: its columns).
struct TapBox {
  int64_t row0 = 0, rows = 0, full_rows = 0;
  int64_t col0 = 0, cols = 0, full_cols = 0;
};

enum class TapPass { Forward = 0, Backward = 1 };

class OpTap;  // nn/op_tap.h

}  // namespace parallm
