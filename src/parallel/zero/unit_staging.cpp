#include "parallel/zero/unit_staging.h"

#include <algorithm>

namespace parallm {

UnitSlots::UnitSlots(const std::vector<GradSegment>& segments, Allocator& alloc)
    : segs_(segments), slots_(3) {
  int64_t rot = 1;
  for (size_t s = 0; s + 1 < segs_.size(); ++s) rot = std::max(rot, segs_[s].end - segs_[s].begin);
  const int64_t pin = std::max<int64_t>(1, segs_.back().end - segs_.back().begin);
  for (int i = 0; i < 2; ++i)
    slots_[i].buf = Tensor::zeros(alloc, {rot}, DType::F32, MemTag::Communication);
  slots_[2].buf = Tensor::zeros(alloc, {pin}, DType::F32, MemTag::Communication);
}

UnitSlot* UnitSlots::find(int s) {
  for (auto& sl : slots_)
    if (sl.segment == s) return &sl;
  return nullptr;
}

UnitSlot& UnitSlots::pick(int s, const UnitSlot* busy) {
  if (s == pinned_segment()) return pinned();
  if (UnitSlot* f = find(s)) {
    f->stamp = ++clock_;
    return *f;
  }
  // The rotating slot not in use; without one in use, the older one.
  UnitSlot* a = &slots_[0];
  UnitSlot* b = &slots_[1];
  UnitSlot* out = a == busy ? b : b == busy ? a : (a->stamp <= b->stamp ? a : b);
  out->stamp = ++clock_;
  return *out;
}

int64_t UnitSlots::bytes() const {
  int64_t b = 0;
  for (const auto& sl : slots_) b += sl.buf.nbytes();
  return b;
}

}  // namespace parallm
