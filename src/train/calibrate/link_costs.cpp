#include "train/calibrate/link_costs.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "base/error.h"

namespace parallm {

namespace {

struct Sample {
  double bytes = 0, seconds = 0;
};

std::vector<Sample> run_bench(const LinkCalibration& c) {
  const std::string rows_path = c.work_dir + "/comm_rows.json";
  const std::string log = c.work_dir + "/comm_bench.log";
  std::vector<std::string> argv = split_words(c.mpirun);
  argv.insert(argv.end(), {"-np", std::to_string(c.ranks), self_executable(), "bench", "comm",
                           "--ops", "all_reduce", "--min-bytes", "4K", "--max-bytes", "16M",
                           "--no-peer", "--rounds", "5", "--json", rows_path});
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
  PX_CHECK(out.size() >= 2, "calibrate: {} all_reduce rows in '{}', need 2 or more", out.size(),
           rows_path);
  return out;
}

}  // namespace

LinkFit measure_link_cost(const LinkCalibration& c) {
  PX_CHECK(c.ranks >= 2, "calibrate: the link needs 2 or more ranks (got {})", c.ranks);
  const std::vector<Sample> s = run_bench(c);
  const double n = c.ranks;
  // t = alpha x1 + beta x2, x1 = 2(n-1), x2 = 2(n-1)/n bytes; weighted 1/t^2.
  double a11 = 0, a12 = 0, a22 = 0, b1 = 0, b2 = 0;
  for (const Sample& p : s) {
    const double w = 1.0 / (p.seconds * p.seconds);
    const double x1 = 2 * (n - 1), x2 = 2 * (n - 1) / n * p.bytes;
    a11 += w * x1 * x1, a12 += w * x1 * x2, a22 += w * x2 * x2;
    b1 += w * x1 * p.seconds, b2 += w * x2 * p.seconds;
  }
  const double det = a11 * a22 - a12 * a12;
  PX_CHECK(det > 0, "calibrate: the all-reduce times do not determine a latency and a bandwidth");
  double alpha = (b1 * a22 - b2 * a12) / det, beta = (a11 * b2 - a12 * b1) / det;
  if (alpha < 0) {  // latency below resolution: bandwidth alone
    alpha = 0;
    beta = b2 / a22;
  }
  PX_CHECK(beta > 0, "calibrate: the all-reduce times give no positive bandwidth");
  LinkFit f;
  f.link = {.alpha_s = alpha, .bytes_per_s = 1.0 / beta};
  f.rows = static_cast<int>(s.size());
  std::vector<double> err;
  for (const Sample& p : s) {
    const double t = 2 * (n - 1) * alpha + 2 * (n - 1) / n * p.bytes * beta;
    err.push_back(std::abs(t - p.seconds) / p.seconds);
  }
  std::nth_element(err.begin(), err.begin() + err.size() / 2, err.end());
  f.median_rel_error = err[err.size() / 2];
  return f;
}

}  // namespace parallm
