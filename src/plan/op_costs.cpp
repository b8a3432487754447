#include "plan/op_costs.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace parallm {

namespace {

// Position of x on an ascending grid: the lower index and the fraction to the
// next point, in log2 (clamped to the ends).
std::pair<size_t, double> locate(const std::vector<int64_t>& g, double x) {
  if (g.size() == 1 || x <= static_cast<double>(g.front())) return {0, 0.0};
  if (x >= static_cast<double>(g.back())) return {g.size() - 2, 1.0};
  size_t i = 0;
  while (static_cast<double>(g[i + 1]) < x) ++i;
  const double lo = std::log2(static_cast<double>(g[i]));
  const double hi = std::log2(static_cast<double>(g[i + 1]));
  return {i, (std::log2(x) - lo) / (hi - lo)};
}

// Trilinear interpolation of log(FLOP/s) over the grid; FLOPs of one call
// are flops_per_mac * rows * in * out.
double interpolated_seconds(const OpCosts& c, const std::vector<double>& secs, double flops_per_mac,
                            int64_t rows, int64_t in, int64_t out) {
  const auto [i, fi] = locate(c.rows, static_cast<double>(rows));
  const auto [j, fj] = locate(c.ins, static_cast<double>(in));
  const auto [k, fk] = locate(c.outs, static_cast<double>(out));
  auto log_rate = [&](size_t a, size_t b, size_t d) {
    a = std::min(a, c.rows.size() - 1), b = std::min(b, c.ins.size() - 1);
    d = std::min(d, c.outs.size() - 1);
    const double macs = static_cast<double>(c.rows[a]) * c.ins[b] * c.outs[d];
    return std::log(flops_per_mac * macs / secs[(a * c.ins.size() + b) * c.outs.size() + d]);
  };
  double acc = 0;
  for (int da = 0; da < 2; ++da)
    for (int db = 0; db < 2; ++db)
      for (int dd = 0; dd < 2; ++dd) {
        const double w = (da ? fi : 1 - fi) * (db ? fj : 1 - fj) * (dd ? fk : 1 - fk);
        if (w > 0) acc += w * log_rate(i + da, j + db, k + dd);
      }
  const double flops = flops_per_mac * static_cast<double>(rows) * in * out;
  return flops / std::exp(acc);
}

template <class T>
std::vector<T> vec(const nlohmann::json& j, const char* key, const std::string& where) {
  PX_CHECK(j.contains(key) && j[key].is_array() && !j[key].empty(),
           "{}: op costs need a non-empty array '{}'", where, key);
  return j[key].get<std::vector<T>>();
}

// exp of the log-linear interpolation of ys over grid g (in log2) at x,
// clamped at the edges.
double log_interpolated(const std::vector<int64_t>& g, const std::vector<double>& ys, double x) {
  const auto [i, f] = locate(g, x);
  const size_t n = ys.size();
  const double lo = std::log(ys[std::min(i, n - 1)]);
  const double hi = std::log(ys[std::min(i + 1, n - 1)]);
  return std::exp(lo + f * (hi - lo));
}

}  // namespace

double OpCosts::linear_fwd_s(int64_t r, int64_t in, int64_t out) const {
  if (r <= 0 || in <= 0 || out <= 0) return 0.0;
  return interpolated_seconds(*this, fwd_s, 2.0, r, in, out);
}

double OpCosts::linear_bwd_s(int64_t r, int64_t in, int64_t out) const {
  if (r <= 0 || in <= 0 || out <= 0) return 0.0;
  return interpolated_seconds(*this, bwd_s, 4.0, r, in, out);
}

double OpCosts::attention_s(Pass p, double units, int64_t t, int64_t head_dim) const {
  if (units <= 0) return 0.0;
  const bool fwd = p == Pass::Forward;
  double s =
      units * log_interpolated(attn_seq, fwd ? attn_fwd_s : attn_bwd_s, static_cast<double>(t));
  if (!attn_dims.empty()) {
    const std::vector<double>& d = fwd ? attn_dim_fwd_s : attn_dim_bwd_s;
    s *= log_interpolated(attn_dims, d, static_cast<double>(head_dim)) /
         log_interpolated(attn_dims, d, static_cast<double>(attn_head_dim));
  }
  return s;
}

double OpCosts::elementwise_s(Pass p, const std::string& kind, double n) const {
  const auto& m = p == Pass::Forward ? elem_fwd_s : elem_bwd_s;
  const auto it = m.find(kind);
  if (it == m.end()) {
    std::string known;
    for (const auto& [k, v] : m) known += (known.empty() ? "" : ", ") + k;
    PX_FAIL("op costs have no element-wise kind '{}' (measured: {})", kind, known);
  }
  return n > 0 ? n * it->second : 0.0;
}

void OpCosts::validate(const std::string& where) const {
  const size_t cells = rows.size() * ins.size() * outs.size();
  PX_CHECK(cells > 0 && fwd_s.size() == cells && bwd_s.size() == cells,
           "{}: linear grid of {} x {} x {} needs {} forward and backward times (got {}, {})",
           where, rows.size(), ins.size(), outs.size(), cells, fwd_s.size(), bwd_s.size());
  PX_CHECK((fwd_s_measured.empty() || fwd_s_measured.size() == cells) &&
               (bwd_s_measured.empty() || bwd_s_measured.size() == cells),
           "{}: the linear grid's measured times need {} cells each (got {}, {})", where, cells,
           fwd_s_measured.size(), bwd_s_measured.size());
  for (const auto* g : {&rows, &ins, &outs})
    PX_CHECK(std::is_sorted(g->begin(), g->end()) && g->front() > 0 &&
                 std::adjacent_find(g->begin(), g->end()) == g->end(),
             "{}: grid sides must be positive and strictly ascending", where);
  const bool times_ok =
      std::ranges::all_of(fwd_s, [](double s) { return s > 0; }) &&
      std::ranges::all_of(bwd_s, [](double s) { return s > 0; }) &&
      std::ranges::all_of(attn_fwd_s, [](double s) { return s > 0; }) &&
      std::ranges::all_of(attn_bwd_s, [](double s) { return s > 0; }) &&
      std::ranges::all_of(attn_dim_fwd_s, [](double s) { return s > 0; }) &&
      std::ranges::all_of(attn_dim_bwd_s, [](double s) { return s > 0; }) &&
      std::ranges::all_of(elem_fwd_s, [](const auto& kv) { return kv.second > 0; }) &&
      std::ranges::all_of(elem_bwd_s, [](const auto& kv) { return kv.second > 0; });
  PX_CHECK(times_ok, "{}: every measured time must be positive", where);
  PX_CHECK(!attn_seq.empty() && attn_seq.size() == attn_fwd_s.size() &&
               attn_seq.size() == attn_bwd_s.size(),
           "{}: attention needs a forward and a backward time per sequence length ({} lengths, "
           "{} and {} times)",
           where, attn_seq.size(), attn_fwd_s.size(), attn_bwd_s.size());
  PX_CHECK(attn_dim_fwd_s.size() == attn_dims.size() && attn_dim_bwd_s.size() == attn_dims.size() &&
               std::is_sorted(attn_dims.begin(), attn_dims.end()) &&
               (attn_dims.empty() || attn_dims.front() > 0) &&
               std::adjacent_find(attn_dims.begin(), attn_dims.end()) == attn_dims.end() &&
               attn_head_dim > 0 && attn_dim_seq > 0,
           "{}: attention's head dims must be positive and strictly ascending, with a forward "
           "and a backward time each ({} head dims, {} and {} times; head dim {}, length {})",
           where, attn_dims.size(), attn_dim_fwd_s.size(), attn_dim_bwd_s.size(), attn_head_dim,
           attn_dim_seq);
  PX_CHECK(elem_fwd_s.size() == elem_bwd_s.size(),
           "{}: element-wise kinds need both a forward and a backward time", where);
  PX_CHECK(optimizer_s_per_param > 0 && copy_bytes_per_s > 0 && threads > 0,
           "{}: optimizer time ({}), copy bandwidth ({}) and threads ({}) must be positive", where,
           optimizer_s_per_param, copy_bytes_per_s, threads);
}

nlohmann::json op_costs_to_json(const OpCosts& c) {
  nlohmann::json attention = {{"seq", c.attn_seq},
                              {"fwd_s_per_unit", c.attn_fwd_s},
                              {"bwd_s_per_unit", c.attn_bwd_s},
                              {"head_dim", c.attn_head_dim}};
  if (!c.attn_dims.empty())
    attention["by_head_dim"] = {{"seq", c.attn_dim_seq},
                                {"head_dims", c.attn_dims},
                                {"fwd_s_per_unit", c.attn_dim_fwd_s},
                                {"bwd_s_per_unit", c.attn_dim_bwd_s}};
  nlohmann::json linear = {
      {"rows", c.rows}, {"ins", c.ins}, {"outs", c.outs}, {"fwd_s", c.fwd_s}, {"bwd_s", c.bwd_s}};
  if (!c.fwd_s_measured.empty()) linear["fwd_s_measured"] = c.fwd_s_measured;
  if (!c.bwd_s_measured.empty()) linear["bwd_s_measured"] = c.bwd_s_measured;
  return {{"threads", c.threads},
          {"linear", linear},
          {"attention", attention},
          {"elementwise_s_per_element", {{"fwd", c.elem_fwd_s}, {"bwd", c.elem_bwd_s}}},
          {"optimizer_s_per_param", c.optimizer_s_per_param},
          {"copy_bytes_per_s", c.copy_bytes_per_s}};
}

OpCosts op_costs_from_json(const nlohmann::json& j, const std::string& where) {
  PX_CHECK(j.is_object() && j.contains("linear") && j.contains("attention") &&
               j.contains("elementwise_s_per_element"),
           "{}: op costs need 'linear', 'attention' and 'elementwise_s_per_element'", where);
  OpCosts c;
  c.threads = j.value("threads", 1);
  const auto& lin = j["linear"];
  c.rows = vec<int64_t>(lin, "rows", where);
  c.ins = vec<int64_t>(lin, "ins", where);
  c.outs = vec<int64_t>(lin, "outs", where);
  c.fwd_s = vec<double>(lin, "fwd_s", where);
  c.bwd_s = vec<double>(lin, "bwd_s", where);
  if (lin.contains("fwd_s_measured")) c.fwd_s_measured = vec<double>(lin, "fwd_s_measured", where);
  if (lin.contains("bwd_s_measured")) c.bwd_s_measured = vec<double>(lin, "bwd_s_measured", where);
  c.attn_seq = vec<int64_t>(j["attention"], "seq", where);
  c.attn_fwd_s = vec<double>(j["attention"], "fwd_s_per_unit", where);
  c.attn_bwd_s = vec<double>(j["attention"], "bwd_s_per_unit", where);
  c.attn_head_dim = j["attention"].value("head_dim", int64_t{64});
  if (j["attention"].contains("by_head_dim")) {  // older profiles lack it
    const auto& hd = j["attention"]["by_head_dim"];
    c.attn_dim_seq = hd.value("seq", int64_t{512});
    c.attn_dims = vec<int64_t>(hd, "head_dims", where);
    c.attn_dim_fwd_s = vec<double>(hd, "fwd_s_per_unit", where);
    c.attn_dim_bwd_s = vec<double>(hd, "bwd_s_per_unit", where);
  }
  const auto& el = j["elementwise_s_per_element"];
  PX_CHECK(el.is_object() && el.contains("fwd") && el.contains("bwd"),
           "{}: 'elementwise_s_per_element' needs 'fwd' and 'bwd' maps", where);
  c.elem_fwd_s = el["fwd"].get<std::map<std::string, double>>();
  c.elem_bwd_s = el["bwd"].get<std::map<std::string, double>>();
  c.optimizer_s_per_param = j.value("optimizer_s_per_param", 0.0);
  c.copy_bytes_per_s = j.value("copy_bytes_per_s", 0.0);
  c.validate(where);
  return c;
}

}  // namespace parallm
