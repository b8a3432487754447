// Naming and classification of schedule actions.
#include "parallel/pipeline/action.h"

#include <fmt/format.h>

namespace parallm::pipeline {

bool is_compute(ActionKind k) {
  return k == ActionKind::kForward || k == ActionKind::kBackward ||
         k == ActionKind::kBackwardInput || k == ActionKind::kBackwardWeight;
}

bool is_send(ActionKind k) {
  return k == ActionKind::kSendActivation || k == ActionKind::kSendGrad;
}

bool is_recv(ActionKind k) {
  return k == ActionKind::kRecvActivation || k == ActionKind::kRecvGrad;
}

ActionKind matching_transfer(ActionKind k) {
  switch (k) {
    case ActionKind::kSendActivation: return ActionKind::kRecvActivation;
    case ActionKind::kRecvActivation: return ActionKind::kSendActivation;
    case ActionKind::kSendGrad: return ActionKind::kRecvGrad;
    case ActionKind::kRecvGrad: return ActionKind::kSendGrad;
    default: return k;
  }
}

std::string format_action(const Action& a, bool show_chunk) {
  const char* name = "?";
  switch (a.kind) {
    case ActionKind::kForward: name = "F"; break;
    case ActionKind::kBackward: name = "B"; break;
    case ActionKind::kBackwardInput: name = "B"; break;  // zero-bubble paper's notation
    case ActionKind::kBackwardWeight: name = "W"; break;
    case ActionKind::kSendActivation: name = "SA"; break;
    case ActionKind::kRecvActivation: name = "RA"; break;
    case ActionKind::kSendGrad: name = "SG"; break;
    case ActionKind::kRecvGrad: name = "RG"; break;
  }
  std::string s = fmt::format("{}{}", name, a.micro_batch);
  if (show_chunk) s += fmt::format("c{}", a.chunk);
  if (is_send(a.kind)) s += fmt::format(">{}", a.peer);
  if (is_recv(a.kind)) s += fmt::format("<{}", a.peer);
  return s;
}

}  // namespace parallm::pipeline
