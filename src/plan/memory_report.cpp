#include "plan/memory_report.h"

#include <fmt/format.h>

#include "plan/moe_memory.h"

namespace parallm {
namespace {

std::string gib(double b) {
  if (b >= 1e12) return fmt::format("{:.2f} TB ({:.1f} GiB)", b / 1e12, b / 1073741824.0);
  return fmt::format("{:.2f} GB ({:.2f} GiB)", b / 1e9, b / 1073741824.0);
}

std::string layout_line(const MemoryQuery& q) {
  return fmt::format(
      "tp {} pp {} dp {} cp {}{}{}{}, zero {}, seq {} x micro-batch {} ({} micro-batches, {}), "
      "{}, {}, recompute {}, {} activations",
      q.tp, q.pp, q.dp, q.cp,
      q.model.moe.enabled()
          ? fmt::format(" ep {} (expert-dp {}{})", q.ep, q.dp * q.cp / q.ep,
                        q.expert_tp > 1 ? fmt::format(", expert tp {}", q.expert_tp) : "")
          : "",
      q.virtual_stages > 1 ? fmt::format(" x {} virtual", q.virtual_stages) : "",
      q.sequence_parallel ? " +sp" : "", q.zero, q.seq_len, q.micro_batch, q.micro_batches,
      pipeline::schedule_kind_name(q.schedule), precision_name(q.precision),
      optimizer_name(q.optimizer), recompute_name(q.recompute),
      activation_model_name(q.activation_model));
}

}  // namespace

std::string memory_report_text(const MemoryQuery& q, const std::string& name, double device) {
  MemoryBreakdown r = estimate_memory(q);
  std::string out = fmt::format("{}: {:.2f}B parameters; {}\n", name,
                                q.model.num_parameters() / 1e9, layout_line(q));
  out += fmt::format("per rank (first pipeline stage, {} parameters held):\n", r.params_per_rank);
  auto row = [&](const char* what, double b) { out += fmt::format("  {:<22} {}\n", what, gib(b)); };
  if (q.lora.enabled()) {
    const LoraMemory lm = lora_memory(q);
    out += fmt::format(
        "  LoRA r {} (alpha {:g}) on {}: {} trainable parameters on this rank; base frozen{}\n",
        q.lora.rank, q.lora.alpha, q.lora.targets.str(), r.trainable_params,
        q.lora.qlora
            ? fmt::format(", {} of its {} weights in NF4{} ({:.3f} bits each)", lm.quantized_params,
                          lm.frozen_params, q.lora.double_quant ? " with double quantisation" : "",
                          8.0 * lm.quantized_bytes / static_cast<double>(lm.quantized_params))
            : "");
    row("frozen base weights", r.frozen);
  }
  row(q.lora.enabled() ? "adapter parameters" : "parameters", r.parameters);
  row("gradients", r.gradients);
  row("optimizer states", r.optimizer);
  row("activations", r.activations);
  row("communication buffers", r.communication);
  if (r.workspace > 0) row("workspace (LM head)", r.workspace);
  row("total", r.total());
  out +=
      fmt::format("  (activations: {} per layer per micro-batch, {:.2f} micro-batches in flight)\n",
                  gib(r.activation_per_layer), r.micro_batches_in_flight);
  if (q.model.moe.enabled()) {
    const MoeConfig& e = q.model.moe;
    out += fmt::format(
        "  (experts: {} of the parameters held, {} of {} experts per MoE layer; activations "
        "assume an even load, {:.3g} kept assignments per token of top-{})\n",
        r.expert_params_per_rank, e.num_experts / q.ep, e.num_experts,
        moe_assignments_per_token(e, q.seq_len), e.topk);
  }
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
                      {"expert_params_per_rank", r.expert_params_per_rank},
                      {"bytes",
                       {{"parameters", r.parameters},
                        {"gradients", r.gradients},
                        {"optimizer", r.optimizer},
                        {"activations", r.activations},
                        {"communication", r.communication},
                        {"workspace", r.workspace},
                        {"frozen", r.frozen},
                        {"total", r.total()}}},
                      {"trainable_params", r.trainable_params},
                      {"activation_per_layer", r.activation_per_layer},
                      {"micro_batches_in_flight", r.micro_batches_in_flight},
                      {"layout", layout_line(q)}};
  if (q.lora.enabled())
    j["lora"] = {{"rank", q.lora.rank},
                 {"alpha", q.lora.alpha},
                 {"targets", q.lora.targets.str()},
                 {"qlora", q.lora.qlora},
                 {"double_quant", q.lora.double_quant}};
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

namespace {

int64_t context_tokens(const InferenceMemoryQuery& q) {
  return q.context > 0 ? q.context : q.model.max_positions;
}

}  // namespace

std::string inference_memory_text(const InferenceMemoryQuery& q, const std::string& name,
                                  double device) {
  const InferenceMemory r = estimate_inference_memory(q);
  const int64_t ctx = context_tokens(q);
  std::string out =
      fmt::format("{}: {:.2f}B parameters; inference, tp {} pp {}, weights {}, KV cache {}\n", name,
                  q.model.num_parameters() / 1e9, q.tp, q.pp, precision_name(q.weights),
                  precision_name(q.kv_cache));
  out += fmt::format("per rank (first pipeline stage, {} parameters, {} layers, {} kv heads):\n",
                     r.params_per_rank, r.layers_per_rank, r.kv_heads_per_rank);
  out += fmt::format("  {:<22} {}\n", "weights", gib(r.weights));
  out += fmt::format("  {:<22} {:.0f} bytes (2 x {} layers x {} kv heads x {} head dim x {} B)\n",
                     "KV cache per token", r.kv_bytes_per_token, r.layers_per_rank,
                     r.kv_heads_per_rank, q.model.head_dim, q.kv_cache == Precision::FP32 ? 4 : 2);
  out += fmt::format("  {:<22} {} (batch {} x context {})\n", "KV cache", gib(r.kv_cache), q.batch,
                     ctx);
  out += fmt::format("  {:<22} {}\n", "total", gib(r.total()));
  if (device > 0) {
    const int64_t tokens = max_cached_tokens(q, device);
    out += fmt::format("verdict: {} {} ({:.0f}% of it)\n",
                       r.total() <= device ? "fits in" : "does NOT fit in", gib(device),
                       100.0 * r.total() / device);
    if (tokens == 0)
      out += "  the weights alone do not fit: raise tp or pp\n";
    else
      out += fmt::format("  largest cache: {} tokens = batch {} at context {}\n", tokens,
                         tokens / ctx, ctx);
  }
  return out;
}

nlohmann::json inference_memory_json(const InferenceMemoryQuery& q, const std::string& name,
                                     double device) {
  const InferenceMemory r = estimate_inference_memory(q);
  const int64_t ctx = context_tokens(q);
  nlohmann::json j = {{"model", name},
                      {"mode", "inference"},
                      {"tp", q.tp},
                      {"pp", q.pp},
                      {"params_per_rank", r.params_per_rank},
                      {"layers_per_rank", r.layers_per_rank},
                      {"kv_heads_per_rank", r.kv_heads_per_rank},
                      {"batch", q.batch},
                      {"context", ctx},
                      {"bytes",
                       {{"weights", r.weights},
                        {"kv_cache_per_token", r.kv_bytes_per_token},
                        {"kv_cache", r.kv_cache},
                        {"total", r.total()}}}};
  if (device > 0) {
    const int64_t tokens = max_cached_tokens(q, device);
    j["device_bytes"] = device;
    j["fits"] = r.total() <= device;
    j["max_cached_tokens"] = tokens;
    j["max_batch_at_context"] = tokens / ctx;
  }
  return j;
}

}  // namespace parallm
