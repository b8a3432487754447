// Inside the ops only: the allocator a CPU kernel takes its scratch from.
// On the host it is the caller's (Workspace-tagged, counted); on the test
// device the kernel needs host-addressable scratch, so it gets a host
// allocator of its own for the call, outside the device allocator's
// accounting, as cuBLAS's workspace is outside it on a GPU.
#pragma once
#include <optional>

#include "ops/stream.h"
#include "tensor/allocator.h"

namespace parallm::ops {

class KernelScratch {
 public:
  KernelScratch(const Stream& s, Allocator& a) : given_(&a) {
    if (s.device() != Device::CPU) own_.emplace();
  }
  Allocator& get() { return own_ ? *own_ : *given_; }

 private:
  Allocator* given_;
  std::optional<Allocator> own_;
};

}  // namespace parallm::ops
