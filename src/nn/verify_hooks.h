// What `parallm verify` (docs/verify.md) threads through a training run:
// an OpTap that records named layer outputs with their place in the
// one-process tensor, and an InjectedFault, a deliberate bug that exists only
// so the tests can show verify finds it. Both ride in LayerContext (null /
// None when off, which is always outside verify); nothing here is global.
// Invariant: a TapBox says exactly which slice of the one-process tensor of
// the same micro-batch (same global samples) the recorded values are.
#pragma once
#include <cstdint>
#include <string>

namespace parallm {

// A planted bug, each acting at exactly one place of a multi-rank layout:
// tp-reduce-scale: layer kFaultLayer's MLP row-parallel reduce result x 1.01;
// pp-drop-microbatch: the last pipeline stage skips micro-batch 1 (forward,
// and a zero gradient sent back); zero3-shard-offset: ZeRO-3 gathers layer
// kFaultLayer's unit with its first owner's piece one element late.
enum class InjectedFault { None, TpReduceScale, PpDropMicroBatch, Zero3ShardOffset };
constexpr int kFaultLayer = 1;
constexpr int kFaultMicroBatch = 1;
InjectedFault injected_fault_from_name(const std::string& name);
const char* injected_fault_name(InjectedFault f);

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
