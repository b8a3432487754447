// OptimizerConfig: which optimizer a run uses and every one of its settings
// (the [optimizer] table, --optimizer and the flags beside it), the one
// shape the training loop, the optimizers and the memory model read. The
// element-wise optimizers follow torch.optim semantics; Muon follows Keller
// Jordan's reference (docs/optimizers.md). validate() checks each bound once.
#pragma once
#include <string>
#include <string_view>

namespace parallm {

// SGDMomentum: torch.optim.SGD with momentum > 0 (dampening 0). Adam and
// AdamW differ only in the decay rule (optim/adam.h).
enum class OptimizerKind { SGD, SGDMomentum, Adam, AdamW, Muon };
// "sgd", "momentum" (or "sgd-momentum"), "adam", "adamw", "muon".
OptimizerKind optimizer_from_name(const std::string& s);
std::string_view optimizer_name(OptimizerKind k);

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::AdamW;
  // Peak learning rate; the schedule (optim/lr_schedule.h) scales it per step.
  double lr = 1e-3;
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
  // Newton-Schulz steps, its own peak learning rate (Muon's updates have unit
  // spectral norm; Keller Jordan uses 0.02 for them beside a much smaller
  // AdamW lr), scaled by the same schedule as lr, and its decoupled decay.
  double muon_momentum = 0.95;
  int muon_ns_steps = 5;
  double muon_lr = 0.02;
  double muon_weight_decay = 0.0;

  // Muon's lr as a multiple of the scheduled lr.
  double muon_lr_ratio() const { return muon_lr / lr; }
  // Ranges of the values, with the values in the message.
  void validate() const;
};

// fp32 bytes of optimizer state per parameter element (seed 002's table,
// REFERENCE.md "Optimizer state per parameter", in 4-byte units): SGD 0,
// momentum 4, Adam/AdamW 8. Muon: 4 per matrix element,
// 8 per other element (see Muon::is_matrix).
double optimizer_state_bytes_per_element(OptimizerKind k, bool muon_matrix);

}  // namespace parallm
