#include "optim/optimizer_config.h"

#include "base/error.h"

namespace parallm {

OptimizerKind optimizer_from_name(const std::string& s) {
  if (s == "sgd") return OptimizerKind::SGD;
  if (s == "momentum" || s == "sgd-momentum") return OptimizerKind::SGDMomentum;
  if (s == "adam") return OptimizerKind::Adam;
  if (s == "adamw") return OptimizerKind::AdamW;
  if (s == "muon") return OptimizerKind::Muon;
  PX_FAIL("unknown optimizer '{}' (expected sgd, momentum, adam, adamw or muon)", s);
}

std::string_view optimizer_name(OptimizerKind k) {
  switch (k) {
    case OptimizerKind::SGD:
      return "sgd";
    case OptimizerKind::SGDMomentum:
      return "momentum";
    case OptimizerKind::Adam:
      return "adam";
    case OptimizerKind::AdamW:
      return "adamw";
    case OptimizerKind::Muon:
      return "muon";
  }
  return "?";
}

void OptimizerConfig::validate() const {
  PX_CHECK(lr > 0, "lr must be positive, got {}", lr);
  PX_CHECK(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1,
           "betas must be in [0, 1), got ({}, {})", beta1, beta2);
  PX_CHECK(eps > 0, "eps must be positive, got {}", eps);
  PX_CHECK(weight_decay >= 0, "weight_decay must be >= 0, got {}", weight_decay);
  PX_CHECK(momentum >= 0 && momentum < 1, "momentum must be in [0, 1), got {}", momentum);
  PX_CHECK(kind != OptimizerKind::SGDMomentum || momentum > 0,
           "optimizer momentum needs momentum > 0, got {}", momentum);
  PX_CHECK(!nesterov || kind == OptimizerKind::SGDMomentum,
           "--nesterov applies to optimizer momentum only (optimizer is {}; Muon always uses "
           "Nesterov momentum)",
           optimizer_name(kind));
  PX_CHECK(muon_momentum >= 0 && muon_momentum < 1, "muon momentum must be in [0, 1), got {}",
           muon_momentum);
  PX_CHECK(muon_ns_steps >= 1 && muon_ns_steps <= 100,
           "muon Newton-Schulz steps must be in [1, 100], got {}", muon_ns_steps);
  PX_CHECK(muon_lr > 0, "muon_lr must be positive, got {}", muon_lr);
  PX_CHECK(muon_weight_decay >= 0, "muon weight decay must be >= 0, got {}", muon_weight_decay);
}

double optimizer_state_bytes_per_element(OptimizerKind k, bool muon_matrix) {
  switch (k) {
    case OptimizerKind::SGD:
      return 0;
    case OptimizerKind::SGDMomentum:
      return 4;
    case OptimizerKind::Muon:
      return muon_matrix ? 4 : 8;
    default:
      return 8;
  }
}

}  // namespace parallm
