#include "plan/planner.h"

#include <fmt/core.h>

#include <algorithm>

#include "base/error.h"

namespace parallm {

namespace {

std::vector<int> divisors_up_to(int64_t n, int64_t cap) {
  std::vector<int> out;
  for (int64_t k = 1; k <= std::min(n, cap); ++k)
    if (n % k == 0) out.push_back(static_cast<int>(k));
  return out;
}

bool allowed(const std::map<std::string, int>& fixed, const char* key, int v) {
  const auto it = fixed.find(key);
  return it == fixed.end() || it->second == v;
}

const char* recompute_flag(Recompute r) {
  return r == Recompute::Full ? "full" : r == Recompute::Selective ? "selective" : "none";
}

}  // namespace

std::map<std::string, int> parse_fixed(const std::vector<std::string>& items) {
  static const char* kKeys[] = {"tp", "pp",   "dp",        "cp", "ep",      "mb",
                                "v",  "zero", "recompute", "sp", "schedule"};
  std::map<std::string, int> out;
  for (const auto& item : items) {
    const auto eq = item.find('=');
    PX_CHECK(eq != std::string::npos, "--fixed '{}': expected key=value (e.g. tp=8)", item);
    const std::string key = item.substr(0, eq), val = item.substr(eq + 1);
    PX_CHECK(std::find(std::begin(kKeys), std::end(kKeys), key) != std::end(kKeys),
             "--fixed '{}': unknown key '{}' (tp, pp, dp, cp, ep, mb, v, zero, recompute, sp, "
             "schedule)",
             item, key);
    if (key == "recompute") {  // names, stored as the enum's value
      out[key] = static_cast<int>(recompute_from_name(val));
      continue;
    }
    if (key == "schedule") {
      out[key] = static_cast<int>(pipeline::schedule_kind_from_name(val));
      continue;
    }
    int v = 0;
    try {
      size_t used = 0;
      v = std::stoi(val, &used);
      PX_CHECK(used == val.size(), "");
    } catch (const std::exception&) {
      PX_FAIL("--fixed '{}': '{}' is not an integer", item, val);
    }
    const bool flag = key == "zero" || key == "sp";  // sp: 0 or 1
    PX_CHECK(v >= (flag ? 0 : 1) && (key != "sp" || v <= 1), "--fixed '{}': value {} out of range",
             item, v);
    out[key] = v;
  }
  return out;
}

ActivationModel default_activation_model(const DeviceProfile& d) {
  return d.ops.empty() ? ActivationModel::Megatron16 : ActivationModel::Parallm;
}

PlanResult plan_layouts(const PlanRequest& r, size_t keep) {
  const ModelConfig& m = r.model;
  PX_CHECK(r.devices >= 1 && r.global_batch >= 1 && r.seq_len >= 1,
           "devices ({}), global batch ({}) and seq_len ({}) must be positive", r.devices,
           r.global_batch, r.seq_len);
  PX_CHECK(r.tie_tolerance >= 0 && r.tie_tolerance < 1, "tie tolerance {} out of range [0, 1)",
           r.tie_tolerance);
  PlanResult res;
  std::vector<PlanCandidate> all;
  const int node = r.device.devices_per_node;
  for (int tp : divisors_up_to(m.n_heads, node)) {
    for (int pp : divisors_up_to(m.n_layers, r.devices)) {
      for (int cp : divisors_up_to(r.seq_len, 8)) {
        if (r.devices % (tp * pp * cp) != 0 || (cp > 1 && r.seq_len % (2 * cp) != 0)) continue;
        const int dp = r.devices / (tp * pp * cp);
        if (!allowed(r.fixed, "tp", tp) || !allowed(r.fixed, "pp", pp) ||
            !allowed(r.fixed, "cp", cp) || !allowed(r.fixed, "dp", dp))
          continue;
        // Expert parallel folds dp x cp: ep divides both the experts and dp x cp.
        std::vector<int> eps;
        for (int ep : divisors_up_to(m.moe.enabled() ? m.moe.num_experts : 1, dp * cp))
          if ((dp * cp) % ep == 0 && allowed(r.fixed, "ep", ep)) eps.push_back(ep);
        for (int mb : {1, 2, 4, 8, 16}) {
          if (r.global_batch % (static_cast<int64_t>(mb) * dp) != 0 || !allowed(r.fixed, "mb", mb))
            continue;
          const int64_t micro = r.global_batch / (static_cast<int64_t>(mb) * dp);
          std::vector<std::pair<pipeline::ScheduleKind, int>> schedules = {
              {pipeline::ScheduleKind::OneFOneB, 1}};
          if (pp > 1) {
            schedules.push_back({pipeline::ScheduleKind::ZeroBubbleH1, 1});
            for (int v : {2, 3, 4, 6, 8})
              if (m.n_layers % (pp * v) == 0 && micro % pp == 0)
                schedules.push_back({pipeline::ScheduleKind::Interleaved, v});
          }
          for (auto [kind, v] : schedules) {
            if (!allowed(r.fixed, "v", v) || !allowed(r.fixed, "schedule", static_cast<int>(kind)))
              continue;
            for (Recompute rec : {Recompute::None, Recompute::Selective, Recompute::Full}) {
              if (!allowed(r.fixed, "recompute", static_cast<int>(rec))) continue;
              for (int zero = 0; zero <= (dp * cp > 1 ? (pp > 1 ? 1 : 3) : 0); ++zero) {
                if (!allowed(r.fixed, "zero", zero)) continue;
                // Sequence parallelism only means something under tp.
                for (int sp = tp > 1 ? 1 : 0; sp >= 0; --sp) {
                  if (!allowed(r.fixed, "sp", sp)) continue;
                  for (int ep : eps) {
                    MemoryQuery q;
                    q.model = m;
                    q.seq_len = r.seq_len;
                    q.micro_batch = mb;
                    q.micro_batches = micro;
                    q.tp = tp, q.pp = pp, q.dp = dp, q.cp = cp, q.ep = ep, q.virtual_stages = v;
                    q.schedule = kind;
                    q.sequence_parallel = sp == 1;
                    q.zero = zero;
                    q.precision = r.device.precision;
                    q.recompute = rec;
                    q.ep_max_load = r.ep_max_load;
                    q.activation_model = r.activation_model;
                    ++res.enumerated;
                    const double bytes = estimate_memory(q).total();
                    if (bytes > r.device.memory_bytes) continue;
                    ++res.fit;
                    all.push_back({q, predict_step_time(q, r.device), bytes});
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  std::sort(all.begin(), all.end(), [](const PlanCandidate& a, const PlanCandidate& b) {
    return a.time.total_s < b.time.total_s;
  });
  // The leading tie: fewest blocking exchanges first, then the least time on
  // the wire (hidden or not), then predicted time.
  if (!all.empty() && r.tie_tolerance > 0) {
    const double bound = all.front().time.total_s * (1.0 + r.tie_tolerance);
    const auto end = std::find_if(all.begin(), all.end(),
                                  [&](const PlanCandidate& c) { return c.time.total_s > bound; });
    std::stable_sort(all.begin(), end, [](const PlanCandidate& a, const PlanCandidate& b) {
      if (a.time.syncs != b.time.syncs) return a.time.syncs < b.time.syncs;
      return a.time.wire_s() < b.time.wire_s();
    });
    res.tied = static_cast<int>(end - all.begin());
  }
  if (all.size() > keep) all.resize(keep);
  res.best = std::move(all);
  return res;
}

std::string describe_layout(const MemoryQuery& q) {
  std::string s =
      fmt::format("tp {} pp {} dp {} cp {} mb {}", q.tp, q.pp, q.dp, q.cp, q.micro_batch);
  if (q.ep > 1) s += fmt::format(" ep {}", q.ep);
  if (q.pp > 1) s += fmt::format(" {}", pipeline::schedule_kind_name(q.schedule));
  if (q.schedule == pipeline::ScheduleKind::Interleaved)
    s += fmt::format(" v {}", q.virtual_stages);
  if (q.tp > 1 && !q.sequence_parallel) s += " no-sp";
  s += fmt::format(" recompute {} zero {}", recompute_flag(q.recompute), q.zero);
  return s;
}

std::string train_command_line(const PlanCandidate& c, const std::string& model_name,
                               int64_t global_batch) {
  const MemoryQuery& q = c.query;
  const int world = q.tp * q.pp * q.dp * q.cp;
  std::string s = fmt::format(
      "mpirun -np {} parallm train {} {} --tp {} --pp {} --dp {} --cp {} "
      "--micro-batch-size {} --global-batch-size {} --seq-len {} --precision {} "
      "--recompute {}",
      world, model_name.ends_with(".toml") ? "--config" : "--model", model_name, q.tp, q.pp, q.dp,
      q.cp, q.micro_batch, global_batch, q.seq_len, precision_name(q.precision),
      recompute_flag(q.recompute));
  if (q.sequence_parallel) s += " --sequence-parallel";
  if (q.ep > 1) s += fmt::format(" --ep {}", q.ep);
  if (q.zero > 0) s += fmt::format(" --zero {}", q.zero);
  if (q.pp > 1) s += fmt::format(" --schedule {}", pipeline::schedule_kind_name(q.schedule));
  if (q.schedule == pipeline::ScheduleKind::Interleaved)
    s += fmt::format(" --virtual-stages {}", q.virtual_stages);
  return s;
}

nlohmann::json plan_result_json(const PlanResult& res, const std::string& model_name,
                                int64_t global_batch) {
  nlohmann::json list = nlohmann::json::array();
  for (const PlanCandidate& c : res.best) {
    const MemoryQuery& q = c.query;
    const StepTime& t = c.time;
    list.push_back({{"layout", describe_layout(q)},
                    {"tp", q.tp},
                    {"pp", q.pp},
                    {"dp", q.dp},
                    {"cp", q.cp},
                    {"ep", q.ep},
                    {"mb", q.micro_batch},
                    {"v", q.virtual_stages},
                    {"schedule", pipeline::schedule_kind_name(q.schedule)},
                    {"sp", q.sequence_parallel},
                    {"zero", q.zero},
                    {"recompute", recompute_flag(q.recompute)},
                    {"memory_bytes", c.memory_bytes},
                    {"step_s", t.total_s},
                    {"compute_s", t.compute_s},
                    {"elementwise_s", t.elementwise_s},
                    {"tp_comm_s", t.tp_comm_s},
                    {"cp_comm_s", t.cp_comm_s},
                    {"ep_comm_s", t.ep_comm_s},
                    {"ep_imbalance_s", t.ep_imbalance_s},
                    {"pp_bubble_s", t.pp_bubble_s},
                    {"pp_p2p_s", t.pp_p2p_s},
                    {"dp_comm_s", t.dp_comm_s},
                    {"dp_exposed_s", t.dp_exposed_s},
                    {"optimizer_s", t.optimizer_s},
                    {"sync_wait_s", t.sync_wait_s},
                    {"syncs", t.syncs},
                    {"core_sharing_s", t.core_sharing_s},
                    {"mfu", t.mfu},
                    {"command", train_command_line(c, model_name, global_batch)}});
  }
  return {{"enumerated", res.enumerated}, {"fit", res.fit}, {"tied", res.tied}, {"best", list}};
}

}  // namespace parallm
