// The linear grid's fit along its rows: an exact a * M / (M + b) curve comes
// back unchanged; a cell drawn 50% slow is pulled most of the way back to
// its row's curve, and the others barely move; smooth_linear_rows keeps the
// measured times, and both arrays survive a profile's JSON round trip.
#include "plan/linear_fit.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>

namespace parallm {
namespace {

// Rate a * M / (M + b) with a different a for each (in, out) pair.
OpCosts curve_grid(double b) {
  OpCosts c;
  c.rows = {64, 256, 512, 1024, 2048, 4096};
  c.ins = {128, 512};
  c.outs = {256, 1024};
  for (int64_t m : c.rows)
    for (int64_t in : c.ins)
      for (int64_t out : c.outs) {
        const double a = 5e10 * (1.0 + 0.001 * static_cast<double>(in + out));
        const double rate = a * static_cast<double>(m) / (static_cast<double>(m) + b);
        const double macs = static_cast<double>(m * in * out);
        c.fwd_s.push_back(2 * macs / rate);
        c.bwd_s.push_back(4 * macs / (0.7 * rate));
      }
  return c;
}

double rel(double a, double b) { return std::abs(a - b) / b; }

TEST(LinearFit, AnExactCurveComesBackUnchanged) {
  for (double b : {0.0, 128.0}) {  // both on the fit's grid of half-rate points
    const OpCosts c = curve_grid(b);
    const std::vector<double> f = fit_linear_rows(c, c.fwd_s, 2.0);
    const std::vector<double> g = fit_linear_rows(c, c.bwd_s, 4.0);
    for (size_t i = 0; i < f.size(); ++i) {
      EXPECT_LT(rel(f[i], c.fwd_s[i]), 1e-9) << "b " << b << " cell " << i;
      EXPECT_LT(rel(g[i], c.bwd_s[i]), 1e-9) << "b " << b << " cell " << i;
    }
  }
}

TEST(LinearFit, ASlowDrawIsPulledBackToItsRow) {
  const OpCosts truth = curve_grid(128.0);
  OpCosts c = truth;
  const size_t cell = (2 * c.ins.size() + 1) * c.outs.size() + 0;  // rows 512, in 512, out 256
  c.fwd_s[cell] *= 1.5;
  const std::vector<double> f = fit_linear_rows(c, c.fwd_s, 2.0);
  EXPECT_LT(rel(f[cell], truth.fwd_s[cell]), 0.15) << "raw draw 50% slow";
  for (size_t i = 0; i < f.size(); ++i) {
    const bool same_row_curve = i % (c.ins.size() * c.outs.size()) == cell % 4;
    if (i == cell) continue;
    // The slow cell's neighbours along its rows share its fit and move by
    // a fraction of its error; the other curves do not move at all.
    EXPECT_LT(rel(f[i], truth.fwd_s[i]), same_row_curve ? 0.15 : 1e-9) << "cell " << i;
  }
}

TEST(LinearFit, SmoothingKeepsTheMeasuredTimesThroughJson) {
  OpCosts c = curve_grid(128.0);
  c.fwd_s[3] *= 1.3;
  c.attn_seq = {512};
  c.attn_fwd_s = {1e-10};
  c.attn_bwd_s = {2e-10};
  c.elem_fwd_s = {{"add", 1e-10}};
  c.elem_bwd_s = {{"add", 1e-10}};
  c.optimizer_s_per_param = 1e-9;
  c.copy_bytes_per_s = 1e10;
  const std::vector<double> measured = c.fwd_s;
  smooth_linear_rows(c);
  EXPECT_EQ(c.fwd_s_measured, measured);
  EXPECT_NE(c.fwd_s, measured);
  const OpCosts back = op_costs_from_json(op_costs_to_json(c), "test");
  EXPECT_EQ(back.fwd_s, c.fwd_s);
  EXPECT_EQ(back.fwd_s_measured, measured);
  EXPECT_EQ(back.bwd_s_measured, c.bwd_s_measured);
}

}  // namespace
}  // namespace parallm
