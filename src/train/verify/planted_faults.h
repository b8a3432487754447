// The bugs `parallm verify`'s tests plant (--inject-fault, docs/verify.md),
// each acting at exactly one place of a multi-rank layout, through the
// model's FaultHooks (nn/verify_hooks.h), so no production path names one:
// tp-reduce-scale: layer kFaultLayer's MLP row-parallel reduce result x 1.01;
// pp-drop-microbatch: the last pipeline stage's last chunk skips micro-batch
// kFaultMicroBatch (forward, and a zero gradient sent back);
// zero3-shard-offset: ZeRO-3 gathers layer kFaultLayer's unit with its first
// owner's piece one element late.
#pragma once
#include "model/transformer.h"
#include "nn/verify_hooks.h"

namespace parallm {

constexpr int kFaultLayer = 1;
constexpr int kFaultMicroBatch = 1;

// The hooks of fault f for this model (all empty for InjectedFault::None).
FaultHooks plant_fault(InjectedFault f, const Transformer& model);

}  // namespace parallm
