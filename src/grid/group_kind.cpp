// Names of group kinds: snake_case joins of the dimensions a group spans.
#include "grid/group_kind.h"

#include <string>
#include <vector>

#include "base/error.h"

namespace parallm {

std::string_view group_kind_name(GroupKind kind) {
  switch (kind) {
    case GroupKind::kTp: return "tp";
    case GroupKind::kCp: return "cp";
    case GroupKind::kDp: return "dp";
    case GroupKind::kPp: return "pp";
    case GroupKind::kDpCp: return "dp_cp";
    case GroupKind::kTpCp: return "tp_cp";
    case GroupKind::kMp: return "mp";
    case GroupKind::kEp: return "ep";
    case GroupKind::kEdp: return "edp";
    case GroupKind::kTpEp: return "tp_ep";
    case GroupKind::kTpEpPp: return "tp_ep_pp";
    case GroupKind::kEmbedding: return "embedding";
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
  return kind == GroupKind::kEp || kind == GroupKind::kEdp || kind == GroupKind::kTpEp ||
         kind == GroupKind::kTpEpPp;
}

}  // namespace parallm
