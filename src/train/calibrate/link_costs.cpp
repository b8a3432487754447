#include "train/calibrate/link_costs.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "plan/arrival_wait.h"

namespace parallm {

namespace {

struct Sample {
  double bytes = 0, seconds = 0;
};

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// `parallm bench comm --ops all_reduce` on c.ranks ranks with these
// further flags; its all_reduce rows.
std::vector<Sample> run_bench(const LinkCalibration& c, const std::string& tag,
                              const std::vector<std::string>& flags) {
  const std::string rows_path = c.work_dir + "/" + tag + "_rows.json";
  const std::string log = c.work_dir + "/" + tag + ".log";
  std::vector<std::string> argv = split_words(c.mpirun);
  argv.insert(argv.end(), {"-np", std::to_string(c.ranks), self_executable(), "bench", "comm",
                           "--ops", "all_reduce", "--no-peer", "--json", rows_path});
  argv.insert(argv.end(), flags.begin(), flags.end());
  const int rc = run_child(argv,
                           {{"OMPI_ALLOW_RUN_AS_ROOT", "1"},
                            {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"},
                            {"OMP_NUM_THREADS", "1"}},
                           log);
  PX_CHECK(rc == 0, "calibrate: the all-reduce benchmark on {} ranks failed (exit {}); its log: {}",
           c.ranks, rc, log);
  std::ifstream in(rows_path);
  const auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  PX_CHECK(j.is_object() && j.contains("rows"), "calibrate: no rows in '{}' (log: {})", rows_path,
           log);
  std::vector<Sample> out;
  for (const auto& r : j["rows"])
    if (r.value("op", "") == "all_reduce" && r.value("us", 0.0) > 0)
      out.push_back({r["bytes"].get<double>(), r["us"].get<double>() * 1e-6});
  PX_CHECK(!out.empty(), "calibrate: no all_reduce rows in '{}' (log: {})", rows_path, log);
  return out;
}

// t = alpha x1 + beta x2 with x1 = 2(n-1), x2 = 2(n-1)/n bytes, least
// squares weighted 1/t^2 (relative error). False when the rows do not
// determine a positive bandwidth.
bool fit_alpha_beta(const std::vector<Sample>& s, double n, LinkCost& out) {
  double a11 = 0, a12 = 0, a22 = 0, b1 = 0, b2 = 0;
  for (const Sample& p : s) {
    const double w = 1.0 / (p.seconds * p.seconds);
    const double x1 = 2 * (n - 1), x2 = 2 * (n - 1) / n * p.bytes;
    a11 += w * x1 * x1, a12 += w * x1 * x2, a22 += w * x2 * x2;
    b1 += w * x1 * p.seconds, b2 += w * x2 * p.seconds;
  }
  const double det = a11 * a22 - a12 * a12;
  if (!(det > 0)) return false;
  double alpha = (b1 * a22 - b2 * a12) / det, beta = (a11 * b2 - a12 * b1) / det;
  if (alpha < 0) {  // latency below resolution: bandwidth alone
    alpha = 0;
    beta = b2 / a22;
  }
  if (!(beta > 0)) return false;
  out.alpha_s = alpha;
  out.bytes_per_s = 1.0 / beta;
  return true;
}

}  // namespace

LinkFit measure_link_cost(const LinkCalibration& c) {
  PX_CHECK(c.ranks >= 2, "calibrate: the link needs 2 or more ranks (got {})", c.ranks);
  std::vector<Sample> s = run_bench(c, "comm_bench",
                                    {"--min-bytes", "1K", "--max-bytes", "64M", "--step-factor",
                                     "2", "--rounds", c.quick ? "1" : "5"});
  PX_CHECK(s.size() >= 2, "calibrate: {} all_reduce sizes measured, need 2 or more", s.size());
  std::sort(s.begin(), s.end(), [](const Sample& a, const Sample& b) { return a.bytes < b.bytes; });
  const double n = c.ranks;
  LinkFit f;
  PX_CHECK(fit_alpha_beta(s, n, f.link),
           "calibrate: the all-reduce times do not determine a latency and a positive bandwidth");
  // Bands of kBandSizes consecutive sizes (the last takes what is left),
  // each fitted alone; a band the fit cannot price keeps the overall pair.
  // A band reaches halfway (geometrically) to the next band's first size,
  // in per-message bytes (all-reduce bytes / n).
  constexpr size_t kBandSizes = 3;
  for (size_t i = 0; i < s.size();) {
    const size_t end = s.size() - i < 2 * kBandSizes ? s.size() : i + kBandSizes;
    const std::vector<Sample> band(s.begin() + static_cast<std::ptrdiff_t>(i),
                                   s.begin() + static_cast<std::ptrdiff_t>(end));
    LinkCost fit = f.link;
    if (!fit_alpha_beta(band, n, fit)) fit = f.link;
    const double top = end < s.size() ? std::sqrt(s[end - 1].bytes * s[end].bytes) : s.back().bytes;
    f.link.bands.push_back(
        {.max_bytes = top / n, .alpha_s = fit.alpha_s, .bytes_per_s = fit.bytes_per_s});
    i = end;
  }
  f.rows = static_cast<int>(s.size());
  std::vector<double> err, err_bands;
  LinkCost overall = f.link;
  overall.bands.clear();
  for (const Sample& p : s) {
    err.push_back(std::abs(overall.ring_all_reduce_s(p.bytes, c.ranks) - p.seconds) / p.seconds);
    err_bands.push_back(std::abs(f.link.ring_all_reduce_s(p.bytes, c.ranks) - p.seconds) /
                        p.seconds);
  }
  f.median_rel_error = median(err);
  f.median_rel_error_bands = median(err_bands);
  return f;
}

ArrivalFit measure_arrival_jitter(const LinkCalibration& c) {
  PX_CHECK(c.ranks >= 2, "calibrate: arrival waits need 2 or more ranks (got {})", c.ranks);
  const std::vector<double> works_ms =
      c.quick ? std::vector<double>{1, 2} : std::vector<double>{2, 5, 10, 20, 50};
  ArrivalFit f;
  // Back to back and after each length of work, in turn, so a change in
  // the machine's load falls on both sides of each difference.
  for (double ms : works_ms) {
    const std::vector<std::string> size = {"--min-bytes", "1M",       "--max-bytes",
                                           "1M",          "--rounds", c.quick ? "1" : "5"};
    auto with = size;
    with.insert(with.end(), {"--work-ms", fmt::format("{}", ms), "--round-ms",
                             fmt::format("{}", c.quick ? 4 * ms : 20 * ms)});
    const double alone = run_bench(c, "arrival_alone", size).front().seconds;
    const double after = run_bench(c, "arrival_after", with).front().seconds;
    f.works_s.push_back(ms * 1e-3);
    f.waits_s.push_back(after - alone);
  }
  f.jitter = fit_arrival_jitter(f.works_s, f.waits_s, c.ranks);
  return f;
}

}  // namespace parallm
