// A pipeline schedule as data (DESIGN.md principle 6): for each stage, the
// ordered list of actions it executes in one training step. make_schedule is
// a pure function of (kind, pp, micro-batches, virtual stages); the runtime,
// the tests, the simulator and the pictures all read the same lists.
// Invariant: every transfer in a list has its matching transfer, for the
// same (micro-batch, chunk), in the list of the peer stage.
#pragma once
#include <string>
#include <vector>

#include "parallel/pipeline/action.h"
#include "parallel/pipeline/placement.h"

namespace parallm::pipeline {

enum class ScheduleKind { GPipe, OneFOneB, Interleaved, ZeroBubbleH1, DualPipeV };

// gpipe|1f1b|interleaved|zb|dualpipev
ScheduleKind schedule_kind_from_name(const std::string& name);
std::string schedule_kind_name(ScheduleKind k);

struct ScheduleSpec {
  ScheduleKind kind = ScheduleKind::OneFOneB;
  int pp = 1;              // pipeline stages (ranks)
  int micro_batches = 1;   // m
  int virtual_stages = 1;  // V model chunks per stage (interleaved; DualPipeV: 2)
};

struct Schedule {
  ScheduleSpec spec;
  std::vector<std::vector<Action>> stages;  // stages[s] runs in order on stage s
};

// Throws parallm::Error naming the constraint and values when the spec is
// not one the schedule supports (e.g. interleaved needs m % pp == 0).
void validate_spec(const ScheduleSpec& spec);

// The full schedule with transfers: dispatches to gpipe.cpp, one_f_one_b.cpp,
// interleaved.cpp, zero_bubble.cpp.
Schedule make_schedule(const ScheduleSpec& spec);

// The placement of the schedule's chunks (placement.h): V for DualPipeV,
// the loop otherwise.
Placement schedule_placement(ScheduleKind k);
// Virtual stage (the position along the whole model) of chunk c on stage s.
int virtual_stage(const ScheduleSpec& spec, int stage, int chunk);

// Inserts the transfers a list of compute actions needs: a receive of the
// activation before each forward that is not on virtual stage 0 and a send
// after each forward that is not on the last; a receive of the output
// gradient before each backward (or backward-input) not on the last virtual
// stage and a send of the input gradient after it when not on virtual stage 0.
// Neighbouring virtual stages on one stage (the turn of DualPipeV's V) hand
// over in memory: no transfer.
// Both ends of a transfer name the receiving side's chunk. Sends come
// straight after their compute and must be non-blocking in the runtime
// (isend; receives may block): with sends that wait for their receiver, 1F1B
// deadlocks as neighbours send to each other (simulate.h, SendMode).
Schedule with_transfers(const ScheduleSpec& spec, std::vector<std::vector<Action>> compute);

// The textbook bubble fraction (idle / (stages x step time)):
// GPipe, 1F1B: (p-1)/(m+p-1); interleaved: (p-1)/(V m+p-1); ZB-H1 with
// F = B = W: (p-1)/(3m+p-1) (bubble (p-1)(F+B-W) per stage); DualPipeV:
// DeepSeek's (p-1)(F&B + B - 3W) per stage in chunk costs, with F&B = F + B
// (no overlap of the pair on a CPU), over 2m chunk passes of F + B + W.
double ideal_bubble_fraction(const ScheduleSpec& spec);

// "stage 0: F0 F1 B0 ..." one line per stage; compute only unless with_transfers.
std::string format_schedule(const Schedule& s, bool with_transfers);

}  // namespace parallm::pipeline
