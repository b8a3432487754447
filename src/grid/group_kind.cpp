// Names of group kinds: snake_case joins of the dimensions a group spans.
#include "grid/group_kind.h"

#include <string>
#include <vector>

#include "base/error.h"

namespace parallm {

std::string_view group_kind_name(GroupKind kind) {
  switch (kind) {
    case GroupKind::Tp:
      return "tp";
    case GroupKind::Cp:
      return "cp";
    case GroupKind::Dp:
      return "dp";
    case GroupKind::Pp:
      return "pp";
    case GroupKind::DpCp:
      return "dp_cp";
    case GroupKind::TpCp:
      return "tp_cp";
    case GroupKind::Mp:
      return "mp";
    case GroupKind::Ep:
      return "ep";
    case GroupKind::Edp:
      return "edp";
    case GroupKind::TpEp:
      return "tp_ep";
    case GroupKind::TpEpPp:
      return "tp_ep_pp";
    case GroupKind::Embedding:
      return "embedding";
  }
  PX_FAIL("unknown GroupKind ({})", static_cast<int>(kind));
}

GroupKind group_kind_from_name(std::string_view name) {
  std::vector<std::string_view> known;
  for (GroupKind k : kAllGroupKinds) {
    if (group_kind_name(k) == name) return k;
    known.push_back(group_kind_name(k));
  }
  PX_FAIL("unknown group kind '{}' (known: {})", name, fmt::join(known, ", "));
}

bool is_expert_group(GroupKind kind) {
  return kind == GroupKind::Ep || kind == GroupKind::Edp || kind == GroupKind::TpEp ||
         kind == GroupKind::TpEpPp;
}

}  // namespace parallm
