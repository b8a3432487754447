#include "train/verify/verify_job.h"

#include <fmt/ostream.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "base/child_process.h"
#include "base/error.h"
#include "checkpoint/checkpoint_load.h"
#include "train/verify/op_compare.h"
#include "train/verify/trajectory_compare.h"

namespace parallm {
namespace {
namespace fs = std::filesystem;

// A temporary directory, removed with everything in it unless kept.
struct WorkDir {
  std::string path;
  bool keep = false;
  explicit WorkDir(bool k) : keep(k) {
    std::string tmpl = (fs::temp_directory_path() / "parallm-verify-XXXXXX").string();
    PX_CHECK(::mkdtemp(tmpl.data()) != nullptr, "verify: cannot create a temporary directory");
    path = tmpl;
  }
  ~WorkDir() {
    std::error_code ec;
    if (!keep) fs::remove_all(path, ec);
  }
};

// The `parallm train` command line both sides share.
std::vector<std::string> train_args(const VerifyOptions& o, int64_t steps) {
  std::vector<std::string> a = {self_executable(), "train"};
  if (!o.config.empty()) a.insert(a.end(), {"--config", o.config});
  if (!o.model.empty()) a.insert(a.end(), {"--model", o.model});
  a.insert(a.end(), o.train_args.begin(), o.train_args.end());
  // Set last so they win over the file and the flags given; --peak-tflops
  // skips the GEMM peak measurement.
  a.insert(a.end(), {"--steps", std::to_string(steps), "--threads", std::to_string(o.threads),
                     "--peak-tflops", "1", "--save-interval", "0", "--eval-interval", "0",
                     // nothing outside the temporary directory: no exports, events or pictures
                     "--save-hf", "", "--tensorboard", "", "--trace", "", "--timeline", ""});
  // Adam divides each gradient element by its own magnitude: fp32 noise in a
  // gradient that is zero in exact arithmetic becomes an update of lr with a
  // random sign. SGD keeps a parameter difference proportional to its cause.
  if (!o.same_optimizer) a.insert(a.end(), {"--optimizer", "sgd"});
  return a;
}

struct Side {
  std::string name;  // "one process" / "layout"
  std::vector<std::string> argv;
  std::string log;
};

// Runs one side; false (with the command and its log's tail printed) when it failed.
bool run_side(const Side& s, const VerifyOptions& o, std::ostream& out) {
  const std::vector<std::pair<std::string, std::string>> env = {
      {"OMPI_ALLOW_RUN_AS_ROOT", "1"},
      {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"},
      {"OMP_NUM_THREADS", std::to_string(o.threads)}};
  const int rc = run_child(s.argv, env, s.log);
  if (rc == 0) return true;
  std::ifstream in(s.log);
  std::stringstream text;
  text << in.rdbuf();
  std::string log = text.str();
  if (log.size() > 4000) log = "..." + log.substr(log.size() - 4000);
  std::string cmd;
  for (const auto& w : s.argv) cmd += (cmd.empty() ? "" : " ") + w;
  fmt::print(out, "verify: the {} run failed (exit {}): {}\n{}\n", s.name, rc, cmd, log);
  return false;
}

Side layout_side(const VerifyOptions& o, std::vector<std::string> train, const std::string& log) {
  std::vector<std::string> argv = split_words(o.mpirun);
  argv.insert(argv.end(), {"-np", std::to_string(o.layout.ranks)});
  argv.insert(argv.end(), train.begin(), train.end());
  argv.insert(argv.end(), o.layout.flags.begin(), o.layout.flags.end());
  if (!o.inject_fault.empty()) argv.insert(argv.end(), {"--inject-fault", o.inject_fault});
  return {"layout", argv, log};
}

void print_table(std::ostream& out, const TrajectoryCompare& t) {
  fmt::print(out, "{:>5}  {:>13} {:>13} {:>9} {:>9}  {:>13} {:>13} {:>9} {:>9}\n", "step",
             "loss(1 proc)", "loss(layout)", "rel", "bound", "gnorm(1 proc)", "gnorm(layout)",
             "rel", "bound");
  for (const StepCompare& s : t.steps) {
    if (s.missing) {
      fmt::print(out, "{:>5}  {:>13.7f} {:>13} {:>9}\n", s.step, s.loss_ref, "missing", "");
      continue;
    }
    fmt::print(out,
               "{:>5}  {:>13.7f} {:>13.7f} {:>9.2e} {:>9.2e}  {:>13.7f} {:>13.7f} {:>9.2e} "
               "{:>9.2e}{}\n",
               s.step, s.loss_ref, s.loss_layout, s.loss_rel, s.loss_bound, s.grad_norm_ref,
               s.grad_norm_layout, s.grad_norm_rel, s.grad_norm_bound,
               s.ratio() <= 1 ? "" : "  <- differs");
  }
  fmt::print(out, "parameters: {} compared after the last step, {} over their bound",
             t.params.size(), t.params_over);
  if (!t.params.empty()) {
    const ParamCompare& p = t.params.front();
    fmt::print(out,
               " (worst: {} {:.2e} against a bound of {:.2e}, largest element difference {:.2e})",
               p.name, p.rel, p.bound, p.element);
  }
  fmt::print(out, "\nworst measured / bound: {:.3g}\n", t.worst_ratio);
}

nlohmann::json report_json(const VerifyOptions& o, const TrajectoryCompare& t,
                           const OpDivergence* d, bool located_tried) {
  nlohmann::json steps = nlohmann::json::array();
  for (const StepCompare& s : t.steps)
    steps.push_back({{"step", s.step},
                     {"loss", s.loss_ref},
                     {"loss_layout", s.missing ? nlohmann::json() : nlohmann::json(s.loss_layout)},
                     {"loss_rel", s.loss_rel},
                     {"loss_bound", s.loss_bound},
                     {"grad_norm", s.grad_norm_ref},
                     {"grad_norm_layout", s.grad_norm_layout},
                     {"grad_norm_rel", s.grad_norm_rel},
                     {"grad_norm_bound", s.grad_norm_bound}});
  nlohmann::json params = nlohmann::json::array();
  for (const ParamCompare& p : t.params)
    params.push_back(
        {{"name", p.name},
         {"rel", p.rel},
         {"bound", p.bound},
         {"element", p.element},
         {"element_bound",
          std::isinf(p.element_bound) ? nlohmann::json() : nlohmann::json(p.element_bound)}});
  nlohmann::json j = {
      {"layout", o.layout.text},
      {"ranks", o.layout.ranks},
      {"steps", o.steps},
      {"tolerance", o.tolerance > 0 ? nlohmann::json(o.tolerance) : nlohmann::json("derived")},
      {"worst_ratio", t.worst_ratio},
      {"pass", t.ok},
      {"first_bad_step", t.first_bad_step},
      {"step_compare", steps},
      {"params_over", t.params_over},
      {"params", params}};
  if (d != nullptr && d->found)
    j["first_divergence"] = {{"layer", d->layer},
                             {"op", d->op},
                             {"pass", d->pass == 0 ? "forward" : "backward"},
                             {"rank", d->rank},
                             {"rel", d->rel},
                             {"problem", d->problem},
                             {"sample_offset", d->sample_offset},
                             {"samples", d->samples},
                             {"text", describe(*d)}};
  else if (located_tried)
    j["first_divergence"] = nullptr;
  return j;
}
}  // namespace

int run_verify(const VerifyOptions& o, std::ostream& out) {
  PX_CHECK(o.config.empty() != o.model.empty(), "verify: give --config RUN or --model PRESET");
  PX_CHECK(o.steps >= 1, "verify: --steps must be at least 1, got {}", o.steps);
  PX_CHECK(o.tolerance >= 0, "verify: --tolerance must be positive, got {}", o.tolerance);
  WorkDir work(o.keep_files);
  const std::string w = work.path;
  fmt::print(out, "parallm verify: layout \"{}\" ({} ranks) against one process, {} steps, {}\n",
             o.layout.text, o.layout.ranks, o.steps,
             o.tolerance > 0 ? fmt::format("tolerance {:.1e}", o.tolerance)
                             : std::string("bounds derived from the run (docs/testing.md)"));
  if (o.keep_files) fmt::print(out, "files kept in {}\n", w);

  std::vector<std::string> one = train_args(o, o.steps);
  one.insert(one.end(), {"--metrics", w + "/one.jsonl", "--save", w + "/one-ck"});
  std::vector<std::string> lay = train_args(o, o.steps);
  lay.insert(lay.end(), {"--metrics", w + "/layout.jsonl", "--save", w + "/layout-ck"});
  if (!run_side({"one-process", one, w + "/one.log"}, o, out) ||
      !run_side(layout_side(o, lay, w + "/layout.log"), o, out))
    return 2;
  const TrajectoryCompare t = compare_trajectories(
      w + "/one.jsonl", w + "/layout.jsonl", w + "/one-ck", w + "/layout-ck", o.steps,
      o.tolerance > 0 ? std::optional<double>(o.tolerance) : std::nullopt);
  print_table(out, t);

  OpDivergence d;
  bool tried = false;
  if (!t.ok && o.locate && o.layout.cp > 1)
    fmt::print(out,
               "locating the first op: not under context parallelism (cp {}; docs/verify.md)\n",
               o.layout.cp);
  if (!t.ok && o.locate && o.layout.cp == 1) {
    tried = true;
    const int64_t seq_len = peek_checkpoint(w + "/one-ck")->state.seq_len;
    fs::create_directories(w + "/one-ops");
    fs::create_directories(w + "/layout-ops");
    std::vector<std::string> one1 = train_args(o, 1);
    one1.insert(one1.end(), {"--dump-ops", w + "/one-ops"});
    std::vector<std::string> lay1 = train_args(o, 1);
    lay1.insert(lay1.end(), {"--dump-ops", w + "/layout-ops"});
    if (!run_side({"one-process (first step, dumps)", one1, w + "/one-ops.log"}, o, out) ||
        !run_side(layout_side(o, lay1, w + "/layout-ops.log"), o, out))
      return 2;
    d = first_divergence(read_op_dumps(w + "/one-ops"), read_op_dumps(w + "/layout-ops"), seq_len,
                         t.op_tolerance);
    if (d.found)
      fmt::print(out, "first divergence (first step, after {} matching ops): {}\n", d.compared,
                 describe(d));
    else
      fmt::print(
          out,
          "first divergence: every recorded op of the first step matches ({} ops); the difference "
          "is outside the layers' recorded outputs (optimizer, gradient reduction, or a "
          "later step)\n",
          d.compared);
  }
  fmt::print(out, "verdict: {}\n",
             t.ok ? "PASS: the layout follows the one-process trajectory"
                  : fmt::format("FAIL: the layout leaves the one-process trajectory{}",
                                t.first_bad_step >= 0 ? fmt::format(" at step {}", t.first_bad_step)
                                                      : std::string(" (parameters)")));
  if (!o.report_path.empty()) {
    std::ofstream rep(o.report_path);
    PX_CHECK(rep.good(), "verify: cannot write the report '{}'", o.report_path);
    rep << report_json(o, t, &d, tried).dump(2) << "\n";
  }
  return t.ok ? 0 : 1;
}

}  // namespace parallm
