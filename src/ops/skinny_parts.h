// Inside the ops only: a SkinnyPart list with its W and C pointers turned
// into the addresses the CPU kernel uses (the test device's host ones).
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/cpu/skinny_gemm.h"
#include "ops/stream.h"

namespace parallm::ops {

class HostSkinnyParts {
 public:
  HostSkinnyParts(const Stream& s, const cpu::SkinnyPart* parts, int64_t n) : parts_(parts) {
    if (s.device() == Device::CPU) return;
    copy_.assign(parts, parts + n);
    for (cpu::SkinnyPart& p : copy_) {
      p.W = s.operand(p.W);
      p.C = s.operand(p.C);
    }
    parts_ = copy_.data();
  }
  const cpu::SkinnyPart* parts() const { return parts_; }

 private:
  const cpu::SkinnyPart* parts_;
  std::vector<cpu::SkinnyPart> copy_;
};

}  // namespace parallm::ops
