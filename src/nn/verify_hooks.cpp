#include "nn/verify_hooks.h"

#include "base/error.h"

namespace parallm {

InjectedFault injected_fault_from_name(const std::string& name) {
  if (name == "none" || name.empty()) return InjectedFault::None;
  if (name == "tp-reduce-scale") return InjectedFault::TpReduceScale;
  if (name == "pp-drop-microbatch") return InjectedFault::PpDropMicroBatch;
  if (name == "zero3-shard-offset") return InjectedFault::Zero3ShardOffset;
  PX_FAIL(
      "--inject-fault must be tp-reduce-scale, pp-drop-microbatch or zero3-shard-offset, got '{}'",
      name);
}

const char* injected_fault_name(InjectedFault f) {
  switch (f) {
    case InjectedFault::None:
      return "none";
    case InjectedFault::TpReduceScale:
      return "tp-reduce-scale";
    case InjectedFault::PpDropMicroBatch:
      return "pp-drop-microbatch";
    case InjectedFault::Zero3ShardOffset:
      return "zero3-shard-offset";
  }
  return "?";
}

}  // namespace parallm
