// plant_fault (planted_faults.h).
#include "train/verify/planted_faults.h"

#include "ops/optimizer.h"

namespace parallm {

FaultHooks plant_fault(InjectedFault f, const Transformer& model) {
  FaultHooks h;
  switch (f) {
    case InjectedFault::None:
      break;
    case InjectedFault::TpReduceScale:
      h.after_tp_reduce = [](const ops::Stream& s, int layer, float* out, int64_t n) {
        if (layer == kFaultLayer) ops::scale_inplace(s, out, n, 1.01f);
      };
      break;
    case InjectedFault::PpDropMicroBatch:
      // The head's chunk (the last virtual stage, wherever the schedule places it).
      h.skip_micro_batch = [](int virtual_stage, int virtual_stages, int micro_batch) {
        return virtual_stages > 1 && virtual_stage == virtual_stages - 1 &&
               micro_batch == kFaultMicroBatch;
      };
      break;
    case InjectedFault::Zero3ShardOffset:
      h.zero3_piece_shift = [unit = model.block_segment(kFaultLayer)](int segment) -> int64_t {
        return segment == unit ? 1 : 0;
      };
      break;
  }
  return h;
}

}  // namespace parallm
