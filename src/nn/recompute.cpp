#include "nn/recompute.h"

#include "base/error.h"

namespace parallm {

Recompute recompute_from_name(const std::string& s) {
  if (s == "none") return Recompute::None;
  if (s == "selective") return Recompute::Selective;
  if (s == "full") return Recompute::Full;
  PX_FAIL("unknown recompute mode '{}' (expected none, selective or full)", s);
}

std::string recompute_name(Recompute r) {
  switch (r) {
    case Recompute::None:
      return "none";
    case Recompute::Selective:
      return "selective";
    case Recompute::Full:
      return "full";
  }
  return "?";
}

}  // namespace parallm
