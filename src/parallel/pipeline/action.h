// One step of a pipeline schedule on one stage: a compute pass (forward,
// whole backward, or its input-gradient / weight-gradient halves) or a
// point-to-point transfer with a neighbouring stage, for one (micro-batch,
// model chunk). Invariant: compute actions have peer == -1; transfers name
// the stage on the other end, which holds the matching transfer.
#pragma once
#include <string>

namespace parallm::pipeline {

enum class ActionKind {
  Forward,
  Backward,        // input and weight gradients together
  BackwardInput,   // zero-bubble "B": gradient w.r.t. the stage input only
  BackwardWeight,  // zero-bubble "W": parameter gradients, deferrable
  SendActivation,
  RecvActivation,
  SendGrad,
  RecvGrad,
};

struct Action {
  ActionKind kind = ActionKind::Forward;
  int micro_batch = 0;
  int chunk = 0;  // model chunk on this stage (0 unless interleaved)
  int peer = -1;  // the other stage of a transfer; -1 for compute

  bool operator==(const Action&) const = default;
};

bool is_compute(ActionKind k);
bool is_send(ActionKind k);
bool is_recv(ActionKind k);
// The receive kind that matches a send kind (and back).
ActionKind matching_transfer(ActionKind k);

// Compact text: "F3", "B3", "W3"; with chunks "F3c1"; transfers
// "SA3>1" (send activation of micro-batch 3 to stage 1), "RG3<2", ...
std::string format_action(const Action& a, bool show_chunk);

}  // namespace parallm::pipeline
