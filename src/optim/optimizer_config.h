// Which optimizer a run uses and its hyper-parameters (--optimizer and the
// flags beside it), shared by the training loop, the optimizers and the
// memory model. The element-wise optimizers follow torch.optim semantics;
// Muon follows Keller Jordan's reference (docs/optimizers.md).
#pragma once
#include <string>
#include <string_view>

namespace parallm {

// SGDMomentum: torch.optim.SGD with momentum > 0 (dampening 0).
enum class OptimizerKind { SGD, SGDMomentum, Adam, AdamW, Muon };
// "sgd", "momentum" (or "sgd-momentum"), "adam", "adamw", "muon".
OptimizerKind optimizer_from_name(const std::string& s);
std::string_view optimizer_name(OptimizerKind k);

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::AdamW;
  // Adam / AdamW, and Muon's AdamW part (embeddings, head, norms, biases).
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  // Applied to parameters marked for decay (matrices and embeddings): L2
  // (added to the gradient) for SGD and Adam, decoupled for AdamW and Muon's
  // AdamW part.
  double weight_decay = 0.1;
  // SGD with momentum (torch.optim.SGD, dampening 0).
  double momentum = 0.9;
  bool nesterov = false;
  // Muon, for 2-D weight matrices inside the blocks: Nesterov momentum,
  // Newton-Schulz steps, its learning rate as a multiple of the schedule's
  // (Muon's updates have unit spectral norm; Keller Jordan uses lr 0.02 for
  // them beside a much smaller AdamW lr) and its decoupled weight decay.
  double muon_momentum = 0.95;
  int muon_ns_steps = 5;
  double muon_lr_ratio = 1.0;
  double muon_weight_decay = 0.0;

  // Ranges of the values, with the values in the message.
  void validate() const;
};

// fp32 bytes of optimizer state per parameter element (seed 002's table,
// REFERENCE.md "Optimizer state per parameter", in 4-byte units): SGD 0,
// momentum 4, Adam/AdamW 8. Muon: 4 per matrix element,
// 8 per other element (see Muon::is_matrix).
double optimizer_state_bytes_per_element(OptimizerKind k, bool muon_matrix);

}  // namespace parallm
