// GroupKind: the named communication groups of the rank grid, and their
// names as they appear in `parallm grid` output and JSON ("tp", "dp_cp", ...).
// Dense kinds vary some of (tp, cp, dp, pp); expert kinds vary some of
// (tp, ep, edp, pp); "embedding" joins the first and last pipeline stage.
#pragma once
#include <array>
#include <string_view>

namespace parallm {

enum class GroupKind {
  Tp,         // tensor parallel: layer shards, all-reduce / all-gather per layer
  Cp,         // context parallel: sequence shards of attention (ring, Ulysses)
  Dp,         // data parallel (without cp)
  Pp,         // pipeline: one rank per stage, point-to-point sends
  DpCp,       // dense gradient reduction: every replica of a dense parameter shard
  TpCp,       // tp x cp: the ranks that split one stage of one dp replica
  Mp,         // model parallel tp x pp (Megatron's model-parallel group)
  Ep,         // expert parallel: token all-to-all between expert owners
  Edp,        // expert data parallel: expert gradient reduction
  TpEp,       // tp x ep: ranks that hold different slices of one expert layer
  TpEpPp,     // tp x ep x pp: all distinct expert shards (expert gradient norm)
  Embedding,  // first and last pp stage: tied input/output embedding gradients
};

inline constexpr std::array<GroupKind, 12> kAllGroupKinds = {
    GroupKind::Tp,   GroupKind::Cp,   GroupKind::Dp,     GroupKind::Pp,
    GroupKind::DpCp, GroupKind::TpCp, GroupKind::Mp,     GroupKind::Ep,
    GroupKind::Edp,  GroupKind::TpEp, GroupKind::TpEpPp, GroupKind::Embedding};

std::string_view group_kind_name(GroupKind kind);
// Inverse of group_kind_name; throws parallm::Error naming the known kinds.
GroupKind group_kind_from_name(std::string_view name);
// Groups of expert layers (ep, edp, tp_ep, tp_ep_pp): only distinct from
// dense ones when ep > 1.
bool is_expert_group(GroupKind kind);

}  // namespace parallm
