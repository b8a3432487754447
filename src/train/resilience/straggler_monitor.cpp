#include "train/resilience/straggler_monitor.h"

#include <fmt/ostream.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "base/error.h"

namespace parallm {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  const size_t h = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(h), v.end());
  const double hi = v[h];
  if (v.size() % 2 == 1) return hi;
  return 0.5 * (hi + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(h)));
}

// The median of `of` over `ranks` without `skip`.
double median_of_others(const std::vector<double>& of, const std::vector<int>& ranks, int skip) {
  std::vector<double> v;
  for (int k : ranks)
    if (k != skip) v.push_back(of[static_cast<size_t>(k)]);
  return median(std::move(v));
}

// One stage's ranks (at least two): their verdicts into out.
void judge_stage(const std::vector<std::vector<RankTimes>>& window, const std::vector<int>& ranks,
                 double threshold, std::vector<StragglerVerdict>& out) {
  const size_t n = window.front().size();
  std::vector<std::vector<double>> compute(n), own(n), step(n);
  for (const std::vector<RankTimes>& at : window) {
    double slowest = 0.0, least_reduce = INFINITY, least_inner = INFINITY;
    for (int r : ranks) {
      const RankTimes& t = at[static_cast<size_t>(r)];
      slowest = std::max(slowest, t.compute_ms);
      least_reduce = std::min(least_reduce, t.reduce_ms);
      least_inner = std::min(least_inner, t.comm_ms - t.reduce_ms);
    }
    for (int r : ranks) {
      const RankTimes& t = at[static_cast<size_t>(r)];
      // The gradient reduction ends the step for every rank at about the
      // same time, and the last rank to arrive there waits for nobody: the
      // least time any rank spent in it is the transfer, the rest of each
      // rank's is waiting for that last rank.
      const double reduce_wait = t.reduce_ms - least_reduce;
      // In the groups met inside the step (tp, cp, ep, pp) a rank waits at
      // most what it computed less than the slowest, and only beyond the
      // least any rank spent there (the transfer), or what the
      // communicators measured as peer wait (ring attention).
      const double inner = t.comm_ms - t.reduce_ms;
      const double inner_wait = std::clamp(
          std::max(t.peer_wait_ms, std::min(inner - least_inner, slowest - t.compute_ms)), 0.0,
          inner);
      compute[static_cast<size_t>(r)].push_back(t.compute_ms);
      own[static_cast<size_t>(r)].push_back(t.comm_ms - reduce_wait - inner_wait);
      step[static_cast<size_t>(r)].push_back(t.step_ms);
    }
  }
  // Medians over the window: a step disturbed by the machine (page faults,
  // another process) moves a mean, not a median.
  std::vector<double> c(n), o(n), st;
  for (int r : ranks) {
    c[static_cast<size_t>(r)] = median(compute[static_cast<size_t>(r)]);
    o[static_cast<size_t>(r)] = median(own[static_cast<size_t>(r)]);
    st.push_back(median(step[static_cast<size_t>(r)]));
  }
  const double min_excess = std::max(kStragglerMinExcessMs, kStragglerMinShareOfStep * median(st));
  // Against the median of the others: with two ranks a median over all would
  // be their mean, and a slow rank would sit halfway to it.
  const auto judge = [&](const std::vector<double>& of, int r, StragglerCause cause) {
    const double mine = of[static_cast<size_t>(r)], others = median_of_others(of, ranks, r);
    if (mine > threshold * others && mine - others >= min_excess)
      out.push_back({r, cause, mine, others, others > 0 ? mine / others : INFINITY});
  };
  for (int r : ranks) {
    judge(c, r, StragglerCause::Compute);
    judge(o, r, StragglerCause::Communication);
  }
}

}  // namespace

std::vector<StragglerVerdict> find_stragglers(const std::vector<std::vector<RankTimes>>& window,
                                              const std::vector<int>& stage, double threshold) {
  std::vector<StragglerVerdict> out;
  if (window.empty()) return out;
  for (const std::vector<RankTimes>& at : window)
    PX_CHECK(at.size() == stage.size(), "straggler window: {} ranks' times for {} ranks", at.size(),
             stage.size());
  std::map<int, std::vector<int>> by_stage;
  for (size_t r = 0; r < stage.size(); ++r) by_stage[stage[r]].push_back(static_cast<int>(r));
  for (const auto& [s, ranks] : by_stage)
    if (ranks.size() >= 2) judge_stage(window, ranks, threshold, out);
  std::sort(out.begin(), out.end(), [](const StragglerVerdict& a, const StragglerVerdict& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.cause < b.cause;
  });
  return out;
}

std::string describe(const StragglerVerdict& v, int64_t first_step, int64_t last_step) {
  const bool compute = v.cause == StragglerCause::Compute;
  const std::string ratio =
      std::isfinite(v.ratio) ? fmt::format("{:.2f}x", v.ratio) : std::string("the others: none");
  return fmt::format(
      "straggler: rank {} {} {:.1f} ms/step vs median {:.1f} ms ({}) over steps "
      "{}-{}{}",
      v.rank, compute ? "compute" : "communication", v.ms, v.median_ms, ratio, first_step,
      last_step, compute ? "" : " (blocked in communication, waits for slower ranks excluded)");
}

StragglerMonitor::StragglerMonitor(const ResilienceConfig& cfg, comm::Communicator* world,
                                   std::ostream& log, int stage)
    : world_(world),
      log_(log),
      window_steps_(cfg.straggler_window),
      threshold_(cfg.straggler_threshold),
      enabled_(world != nullptr && world->size() > 1 && cfg.straggler_window > 0),
      stage_(stage) {}

std::vector<RankTimes> StragglerMonitor::on_step(const StepStats& s) {
  if (!enabled_) return {};
  const double step_ms = s.step_seconds * 1e3;
  // The stage rides along every step: one double more is as cheap as none,
  // and the monitor needs no set-up collective.
  constexpr size_t kFields = 6;
  const double mine[kFields] = {step_ms,        std::max(step_ms - s.comm_ms, 0.0),
                                s.comm_ms,      s.exposed_comm_ms,
                                s.peer_wait_ms, static_cast<double>(stage_)};
  const bool root = world_->rank() == 0;
  const auto n = static_cast<size_t>(world_->size());
  std::vector<double> all(root ? kFields * n : 0);
  world_->gather(mine, all.data(), kFields, DType::F64, 0);
  if (!root) return {};

  std::vector<RankTimes> ranks(n);
  stages_.resize(n);
  for (size_t r = 0; r < n; ++r) {
    const double* f = &all[kFields * r];
    ranks[r] = {f[0], f[1], f[2], f[3], f[4]};
    stages_[r] = static_cast<int>(f[5]);
  }
  if (window_.empty()) window_first_step_ = s.step;
  window_.push_back(ranks);
  if (static_cast<int64_t>(window_.size()) == window_steps_) {
    for (const StragglerVerdict& v : find_stragglers(window_, stages_, threshold_))
      fmt::print(log_, "{}\n", describe(v, window_first_step_, s.step));
    log_.flush();
    window_.clear();
  }
  return ranks;
}

}  // namespace parallm
