// fit_linear_rows / smooth_linear_rows (linear_fit.h). The half-rate point b
// is searched over 0 and powers of two up to the grid's largest row count;
// for each b the scale a has a closed form (least squares in log rate), so
// the fit needs no iteration and gives the same answer every time.
#include "plan/linear_fit.h"

#include <cmath>
#include <limits>

namespace parallm {

std::vector<double> fit_linear_rows(const OpCosts& c, const std::vector<double>& secs,
                                    double flops_per_mac) {
  const size_t nr = c.rows.size(), ni = c.ins.size(), no = c.outs.size();
  std::vector<double> out = secs;
  if (nr < 3) return out;  // two points fit any curve: nothing to smooth
  std::vector<double> bs = {0.0};
  for (double b = 1; b <= static_cast<double>(c.rows.back()); b *= 2) bs.push_back(b);
  std::vector<double> log_rate(nr);
  for (size_t j = 0; j < ni; ++j)
    for (size_t k = 0; k < no; ++k) {
      auto at = [&](size_t i) { return (i * ni + j) * no + k; };
      auto macs = [&](size_t i) {
        return static_cast<double>(c.rows[i]) * static_cast<double>(c.ins[j]) *
               static_cast<double>(c.outs[k]);
      };
      for (size_t i = 0; i < nr; ++i) log_rate[i] = std::log(flops_per_mac * macs(i) / secs[at(i)]);
      double best_err = std::numeric_limits<double>::infinity(), best_b = 0, best_log_a = 0;
      for (double b : bs) {
        auto shape = [&](size_t i) {
          const double m = static_cast<double>(c.rows[i]);
          return std::log(m / (m + b));
        };
        double log_a = 0;
        for (size_t i = 0; i < nr; ++i) log_a += log_rate[i] - shape(i);
        log_a /= static_cast<double>(nr);
        double err = 0;
        for (size_t i = 0; i < nr; ++i) err += std::pow(log_rate[i] - shape(i) - log_a, 2);
        if (err < best_err) best_err = err, best_b = b, best_log_a = log_a;
      }
      for (size_t i = 0; i < nr; ++i) {
        const double m = static_cast<double>(c.rows[i]);
        out[at(i)] = flops_per_mac * macs(i) / std::exp(best_log_a + std::log(m / (m + best_b)));
      }
    }
  return out;
}

void smooth_linear_rows(OpCosts& c) {
  c.fwd_s_measured = c.fwd_s;
  c.bwd_s_measured = c.bwd_s;
  c.fwd_s = fit_linear_rows(c, c.fwd_s_measured, 2.0);
  c.bwd_s = fit_linear_rows(c, c.bwd_s_measured, 4.0);
}

}  // namespace parallm
