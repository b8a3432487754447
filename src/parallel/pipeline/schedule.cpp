// Schedule kinds, validation, transfer insertion and the textbook bubble.
#include "parallel/pipeline/schedule.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/error.h"
#include "parallel/pipeline/dual_pipe_v.h"
#include "parallel/pipeline/gpipe.h"
#include "parallel/pipeline/interleaved.h"
#include "parallel/pipeline/one_f_one_b.h"
#include "parallel/pipeline/zero_bubble.h"

namespace parallm::pipeline {

ScheduleKind schedule_kind_from_name(const std::string& name) {
  if (name == "gpipe") return ScheduleKind::GPipe;
  if (name == "1f1b") return ScheduleKind::OneFOneB;
  if (name == "interleaved") return ScheduleKind::Interleaved;
  if (name == "zb" || name == "zb-h1") return ScheduleKind::ZeroBubbleH1;
  if (name == "dualpipev") return ScheduleKind::DualPipeV;
  PX_FAIL("unknown pipeline schedule '{}' (expected gpipe, 1f1b, interleaved, zb or dualpipev)",
          name);
}

std::string schedule_kind_name(ScheduleKind k) {
  switch (k) {
    case ScheduleKind::GPipe:
      return "gpipe";
    case ScheduleKind::OneFOneB:
      return "1f1b";
    case ScheduleKind::Interleaved:
      return "interleaved";
    case ScheduleKind::ZeroBubbleH1:
      return "zb";
    case ScheduleKind::DualPipeV:
      return "dualpipev";
  }
  return "?";
}

Placement schedule_placement(ScheduleKind k) {
  return k == ScheduleKind::DualPipeV ? Placement::V : Placement::Loop;
}

int virtual_stage(const ScheduleSpec& spec, int stage, int chunk) {
  return placed_virtual_stage(schedule_placement(spec.kind), spec.pp, stage, chunk);
}

void validate_spec(const ScheduleSpec& spec) {
  PX_CHECK(spec.pp >= 1, "pipeline size pp ({}) must be at least 1", spec.pp);
  PX_CHECK(spec.micro_batches >= 1, "micro-batches ({}) must be at least 1", spec.micro_batches);
  PX_CHECK(spec.virtual_stages >= 1, "virtual stages ({}) must be at least 1", spec.virtual_stages);
  if (spec.kind == ScheduleKind::Interleaved) {
    PX_CHECK(spec.pp >= 2, "interleaved schedule needs pp ({}) of at least 2", spec.pp);
    PX_CHECK(spec.micro_batches % spec.pp == 0,
             "interleaved schedule needs micro-batches ({}) divisible by pp ({})",
             spec.micro_batches, spec.pp);
  } else if (spec.kind == ScheduleKind::DualPipeV) {
    PX_CHECK(spec.virtual_stages == 2, "DualPipeV holds 2 model chunks per stage, not {}",
             spec.virtual_stages);
    PX_CHECK(spec.micro_batches >= 2 * spec.pp,
             "DualPipeV needs micro-batches ({}) of at least 2 x pp ({})", spec.micro_batches,
             spec.pp);
  } else {
    PX_CHECK(spec.virtual_stages == 1, "virtual stages ({}) need the interleaved schedule, not {}",
             spec.virtual_stages, schedule_kind_name(spec.kind));
  }
}

Schedule make_schedule(const ScheduleSpec& spec) {
  validate_spec(spec);
  std::vector<std::vector<Action>> compute;
  switch (spec.kind) {
    case ScheduleKind::GPipe:
      compute = gpipe_compute(spec.pp, spec.micro_batches);
      break;
    case ScheduleKind::OneFOneB:
      compute = one_f_one_b_compute(spec.pp, spec.micro_batches);
      break;
    case ScheduleKind::Interleaved:
      compute = interleaved_compute(spec.pp, spec.micro_batches, spec.virtual_stages);
      break;
    case ScheduleKind::ZeroBubbleH1:
      compute = zero_bubble_h1_compute(spec.pp, spec.micro_batches);
      break;
    case ScheduleKind::DualPipeV:
      compute = dual_pipe_v_compute(spec.pp, spec.micro_batches);
      break;
  }
  return with_transfers(spec, std::move(compute));
}

Schedule with_transfers(const ScheduleSpec& spec, std::vector<std::vector<Action>> compute) {
  const int pp = spec.pp, last = spec.pp * spec.virtual_stages - 1;
  const Placement place = schedule_placement(spec.kind);
  Schedule out;
  out.spec = spec;
  out.stages.resize(pp);
  for (int s = 0; s < pp; ++s) {
    auto& list = out.stages[s];
    for (const Action& a : compute[s]) {
      const int vs = virtual_stage(spec, s, a.chunk);
      // Where virtual stages vs - 1 and vs + 1 live; on this stage, no message.
      const StageChunk prev = place_virtual_stage(place, pp, std::max(vs - 1, 0));
      const StageChunk next = place_virtual_stage(place, pp, std::min(vs + 1, last));
      const bool has_prev = vs > 0 && prev.stage != s, has_next = vs < last && next.stage != s;
      const bool fwd = a.kind == ActionKind::Forward;
      const bool bwd = a.kind == ActionKind::Backward || a.kind == ActionKind::BackwardInput;
      // Both ends of a transfer name the chunk of the receiving side, so a
      // pair matches on (kind, micro-batch, chunk).
      if (fwd && has_prev)
        list.push_back({ActionKind::RecvActivation, a.micro_batch, a.chunk, prev.stage});
      if (bwd && has_next) list.push_back({ActionKind::RecvGrad, a.micro_batch, a.chunk, next.stage});
      list.push_back(a);
      if (fwd && has_next)
        list.push_back({ActionKind::SendActivation, a.micro_batch, next.chunk, next.stage});
      if (bwd && has_prev) list.push_back({ActionKind::SendGrad, a.micro_batch, prev.chunk, prev.stage});
    }
  }
  return out;
}

double ideal_bubble_fraction(const ScheduleSpec& spec) {
  const double p = spec.pp, m = spec.micro_batches, v = spec.virtual_stages;
  switch (spec.kind) {
    case ScheduleKind::GPipe:
    case ScheduleKind::OneFOneB:
      return (p - 1) / (m + p - 1);
    case ScheduleKind::Interleaved:
      return (p - 1) / (v * m + p - 1);
    case ScheduleKind::ZeroBubbleH1:
      return (p - 1) / (3 * m + p - 1);
    case ScheduleKind::DualPipeV: {
      // Chunk costs at F = 1, B = 2 for a whole stage: F = 1/2, B = 1, W = 1/2.
      const double f = 0.5, b = 1.0, w = 0.5, bubble = (p - 1) * ((f + b) + b - 3 * w);
      return bubble / (2 * m * (f + b) + bubble);
    }
  }
  return 0;
}

std::string format_schedule(const Schedule& s, bool with_transfers) {
  const bool chunks = s.spec.virtual_stages > 1;
  std::string out;
  for (size_t st = 0; st < s.stages.size(); ++st) {
    out += fmt::format("stage {}:", st);
    for (const Action& a : s.stages[st])
      if (with_transfers || is_compute(a.kind)) out += fmt::format(" {}", format_action(a, chunks));
    out += "\n";
  }
  return out;
}

}  // namespace parallm::pipeline
