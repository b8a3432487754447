// An SVG picture of a timeline: one row per rank, compute passes as boxes
// coloured by kind (forward, backward, B, W; later model chunks lighter) with
// the micro-batch number inside, communication as thin grey bars under the
// row, idle time as empty gaps, a legend, and the bubble fraction in the title.
// Invariant: pure function of the timeline (no clock, no randomness), so
// the same schedule always draws the same file.
#pragma once
#include <string>

#include "trace/timeline.h"

namespace parallm::trace {

struct SvgOptions {
  std::string title;      // the bubble fraction is appended
  double width_px = 960;  // of the time axis
  double row_px = 30;
};

std::string timeline_svg(const Timeline& t, const SvgOptions& options);
void write_timeline_svg(const Timeline& t, const SvgOptions& options, const std::string& path);

}  // namespace parallm::trace
