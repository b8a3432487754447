// Activation recomputation (docs/recompute.md): the one place that says
// what each mode keeps for backward and what backward rebuilds. The layers
// ask these questions instead of testing the mode; the memory model
// (plan/parallm_activations.cpp) counts the same tensors.
//   none       every activation a backward reads is saved.
//   selective  (Korthikanti et al. 2022) the large tensors that are cheap to
//              rebuild are not kept: the block norms' outputs (rebuilt from
//              the saved residual stream) and the MLP's activation (rebuilt
//              from its pre-activation). MoE experts keep theirs.
//   full       a block saves only its input; backward reruns its forward
//              with `none` and then runs the block's backward.
#pragma once
#include <string>

namespace parallm {

enum class Recompute { None, Selective, Full };

Recompute recompute_from_name(const std::string& s);  // none | selective | full
std::string recompute_name(Recompute r);

// A block's forward keeps nothing; its backward reruns the forward.
inline bool reruns_block_forward(Recompute r) { return r == Recompute::Full; }
// The norms' outputs live only until their matmuls have read them.
inline bool drops_norm_outputs(Recompute r) { return r == Recompute::Selective; }
// The MLP's activation is workspace, rebuilt from the pre-activation in backward.
inline bool rebuilds_mlp_activation(Recompute r) { return r == Recompute::Selective; }

}  // namespace parallm
