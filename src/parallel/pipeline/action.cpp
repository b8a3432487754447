// Naming and classification of schedule actions.
#include "parallel/pipeline/action.h"

#include <fmt/format.h>

namespace parallm::pipeline {

bool is_compute(ActionKind k) {
  return k == ActionKind::Forward || k == ActionKind::Backward || k == ActionKind::BackwardInput ||
         k == ActionKind::BackwardWeight;
}

bool is_send(ActionKind k) { return k == ActionKind::SendActivation || k == ActionKind::SendGrad; }

bool is_recv(ActionKind k) { return k == ActionKind::RecvActivation || k == ActionKind::RecvGrad; }

ActionKind matching_transfer(ActionKind k) {
  switch (k) {
    case ActionKind::SendActivation:
      return ActionKind::RecvActivation;
    case ActionKind::RecvActivation:
      return ActionKind::SendActivation;
    case ActionKind::SendGrad:
      return ActionKind::RecvGrad;
    case ActionKind::RecvGrad:
      return ActionKind::SendGrad;
    default:
      return k;
  }
}

std::string format_action(const Action& a, bool show_chunk) {
  const char* name = "?";
  switch (a.kind) {
    case ActionKind::Forward:
      name = "F";
      break;
    case ActionKind::Backward:
      name = "B";
      break;
    case ActionKind::BackwardInput:
      name = "B";
      break;  // zero-bubble paper's notation
    case ActionKind::BackwardWeight:
      name = "W";
      break;
    case ActionKind::SendActivation:
      name = "SA";
      break;
    case ActionKind::RecvActivation:
      name = "RA";
      break;
    case ActionKind::SendGrad:
      name = "SG";
      break;
    case ActionKind::RecvGrad:
      name = "RG";
      break;
  }
  std::string s = fmt::format("{}{}", name, a.micro_batch);
  if (show_chunk) s += fmt::format("c{}", a.chunk);
  if (is_send(a.kind)) s += fmt::format(">{}", a.peer);
  if (is_recv(a.kind)) s += fmt::format("<{}", a.peer);
  return s;
}

}  // namespace parallm::pipeline
