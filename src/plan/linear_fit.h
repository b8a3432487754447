// The calibrated linear grid read through a curve along its rows: for each
// (in, out) pair and pass, the rate over the grid's row counts is fitted to
// FLOP/s = a * M / (M + b), which rises with the rows and levels off, as a
// GEMM's does once its tiles fill. A grid cell is timed for tens of
// milliseconds on a machine it shares, and single cells came out 15-50%
// off their neighbours from one calibration to the next; the planner,
// picking the least predicted time, then picked the layout whose shapes
// had drawn the lucky cells (a micro-batch of 1 or 8 where 4 measured
// faster). Along the rows the fit leaves the trend and drops the draw.
#pragma once
#include <vector>

#include "plan/op_costs.h"

namespace parallm {

// The grid's seconds (secs, indexed as OpCosts::fwd_s) on the fitted
// curves; flops_per_mac is 2 for the forward, 4 for the backward.
std::vector<double> fit_linear_rows(const OpCosts& c, const std::vector<double>& secs,
                                    double flops_per_mac);

// Replaces c's fwd_s and bwd_s by their fits, keeping what was measured in
// fwd_s_measured and bwd_s_measured.
void smooth_linear_rows(OpCosts& c);

}  // namespace parallm
