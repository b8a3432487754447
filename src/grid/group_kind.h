// GroupKind: the named communication groups of the rank grid, and their
// names as they appear in `parallm grid` output and JSON ("tp", "dp_cp", ...).
// Dense kinds vary some of (tp, cp, dp, pp); expert kinds vary some of
// (tp, ep, edp, pp); "embedding" joins the first and last pipeline stage.
#pragma once
#include <array>
#include <string_view>

namespace parallm {

enum class GroupKind {
  kTp,         // tensor parallel: layer shards, all-reduce / all-gather per layer
  kCp,         // context parallel: sequence shards of attention (ring, Ulysses)
  kDp,         // data parallel (without cp)
  kPp,         // pipeline: one rank per stage, point-to-point sends
  kDpCp,       // dense gradient reduction: every replica of a dense parameter shard
  kTpCp,       // tp x cp: the ranks that split one stage of one dp replica
  kMp,         // model parallel tp x pp (Megatron's model-parallel group)
  kEp,         // expert parallel: token all-to-all between expert owners
  kEdp,        // expert data parallel: expert gradient reduction
  kTpEp,       // tp x ep: ranks that hold different slices of one expert layer
  kTpEpPp,     // tp x ep x pp: all distinct expert shards (expert gradient norm)
  kEmbedding,  // first and last pp stage: tied input/output embedding gradients
};

inline constexpr std::array<GroupKind, 12> kAllGroupKinds = {
    GroupKind::kTp,   GroupKind::kCp,   GroupKind::kDp,   GroupKind::kPp,
    GroupKind::kDpCp, GroupKind::kTpCp, GroupKind::kMp,   GroupKind::kEp,
    GroupKind::kEdp,  GroupKind::kTpEp, GroupKind::kTpEpPp, GroupKind::kEmbedding};

std::string_view group_kind_name(GroupKind kind);
// Inverse of group_kind_name; throws parallm::Error naming the known kinds.
GroupKind group_kind_from_name(std::string_view name);
// Groups of expert layers (ep, edp, tp_ep, tp_ep_pp): only distinct from
// dense ones when ep > 1.
bool is_expert_group(GroupKind kind);

}  // namespace parallm
