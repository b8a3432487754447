#include "plan/memory_report.h"

#include <fmt/format.h>

namespace parallm {
namespace {

std::string gib(double b) {
  if (b >= 1e12) return fmt::format("{:.2f} TB ({:.1f} GiB)", b / 1e12, b / 1073741824.0);
  return fmt::format("{:.2f} GB ({:.2f} GiB)", b / 1e9, b / 1073741824.0);
}

std::string layout_line(const MemoryQuery& q) {
  return fmt::format(
      "tp {} pp {} dp {} cp {}{}{}, zero {}, seq {} x micro-batch {} ({} micro-batches, {}), {}, "
      "{}, recompute {}, {} activations",
      q.tp, q.pp, q.dp, q.cp,
      q.virtual_stages > 1 ? fmt::format(" x {} virtual", q.virtual_stages) : "",
      q.sequence_parallel ? " +sp" : "", q.zero, q.seq_len, q.micro_batch, q.micro_batches,
      pipeline::schedule_kind_name(q.schedule), precision_name(q.precision),
      optimizer_name(q.optimizer), recompute_name(q.recompute),
      q.activation_model == ActivationModel::Parallm ? "parallm" : "megatron");
}

}  // namespace

std::string memory_report_text(const MemoryQuery& q, const std::string& name, double device) {
  MemoryBreakdown r = estimate_memory(q);
  std::string out = fmt::format("{}: {:.2f}B parameters; {}\n", name,
                                q.model.num_parameters() / 1e9, layout_line(q));
  out += fmt::format("per rank (first pipeline stage, {} parameters held):\n", r.params_per_rank);
  auto row = [&](const char* what, double b) { out += fmt::format("  {:<22} {}\n", what, gib(b)); };
  row("parameters", r.parameters);
  row("gradients", r.gradients);
  row("optimizer states", r.optimizer);
  row("activations", r.activations);
  row("communication buffers", r.communication);
  if (r.workspace > 0) row("workspace (LM head)", r.workspace);
  row("total", r.total());
  out +=
      fmt::format("  (activations: {} per layer per micro-batch, {:.2f} micro-batches in flight)\n",
                  gib(r.activation_per_layer), r.micro_batches_in_flight);
  if (device > 0) {
    bool fits = r.total() <= device;
    out += fmt::format("verdict: {} {} ({:.0f}% of it)\n", fits ? "fits in" : "does NOT fit in",
                       gib(device), 100.0 * r.total() / device);
    if (!fits) {
      auto s = suggest_fits(q, device);
      if (s.empty()) out += "no single or cumulative change tried here makes it fit\n";
      for (const auto& x : s) out += fmt::format("  fits with {}: {}\n", x.change, gib(x.total));
    }
  }
  return out;
}

nlohmann::json memory_report_json(const MemoryQuery& q, const std::string& name, double device) {
  MemoryBreakdown r = estimate_memory(q);
  nlohmann::json j = {{"model", name},
                      {"parameters_total", q.model.num_parameters()},
                      {"params_per_rank", r.params_per_rank},
                      {"bytes",
                       {{"parameters", r.parameters},
                        {"gradients", r.gradients},
                        {"optimizer", r.optimizer},
                        {"activations", r.activations},
                        {"communication", r.communication},
                        {"workspace", r.workspace},
                        {"total", r.total()}}},
                      {"activation_per_layer", r.activation_per_layer},
                      {"micro_batches_in_flight", r.micro_batches_in_flight},
                      {"layout", layout_line(q)}};
  if (device > 0) {
    j["device_bytes"] = device;
    j["fits"] = r.total() <= device;
    nlohmann::json sug = nlohmann::json::array();
    if (r.total() > device)
      for (const auto& x : suggest_fits(q, device))
        sug.push_back({{"change", x.change}, {"total", x.total}});
    j["suggestions"] = sug;
  }
  return j;
}

}  // namespace parallm
