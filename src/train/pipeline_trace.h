// The measured pipeline pictures of a job: every rank's recorded events are
// gathered to world rank 0, which writes one Chrome trace (a track per
// rank, every step) and an SVG of one step of the pipeline that world rank
// 0 belongs to (one row per stage): the step with the shortest span after
// the first, i.e. the least disturbed by other processes on a shared host. Times are steady-clock
// microseconds, shared by the processes of one host (a multi-host run would
// need clock offsets; the stages' barrier at each step start bounds them).
#pragma once
#include <string>

#include "comm/communicator.h"
#include "grid/rank_grid.h"
#include "train/pipeline_step.h"

namespace parallm {

// Collective over world. trace_path / svg_path: empty to skip that file.
void write_pipeline_pictures(comm::Communicator& world, const RankGrid& grid,
                             const PipelineStep& step, const std::string& title,
                             const std::string& trace_path, const std::string& svg_path);

// The SVG's timeline from one pipeline's events (rank = stage) of one step.
trace::Timeline stage_timeline(const std::vector<trace::Event>& events, int stages);

}  // namespace parallm
