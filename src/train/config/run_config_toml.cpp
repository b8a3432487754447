// load_run_config: a TOML run file onto the configuration tree, one reader
// function per table, each key named as its flag is (without the dashes)
// and stored in the field of the same concern. Unknown tables and keys are
// errors naming them; every path is relative to the file.
#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "base/error.h"
#include "data/data_blend.h"
#include "model/model_catalog.h"
#include "train/train_config.h"

namespace parallm {
namespace {

// Reads typed keys from one TOML table and remembers which were consumed, so
// leftovers can be reported as unknown.
class TableReader {
 public:
  TableReader(const toml::table* t, std::string file, std::string table)
      : t_(t), file_(std::move(file)), table_(std::move(table)) {}

  template <class T>
  void get(const char* key, T& out) {
    if (t_ == nullptr) return;
    const toml::node* n = t_->get(key);
    if (n == nullptr) return;
    seen_.insert(key);
    if constexpr (std::is_same_v<T, bool>) {
      auto v = n->value<bool>();
      PX_CHECK(v.has_value(), "{}: [{}] {} must be true or false", file_, table_, key);
      out = *v;
    } else if constexpr (std::is_integral_v<T>) {
      auto v = n->value<int64_t>();
      PX_CHECK(v.has_value(), "{}: [{}] {} must be an integer", file_, table_, key);
      out = static_cast<T>(*v);
    } else if constexpr (std::is_floating_point_v<T>) {
      auto v = n->value<double>();
      PX_CHECK(v.has_value(), "{}: [{}] {} must be a number", file_, table_, key);
      out = *v;
    } else if constexpr (std::is_same_v<T, std::string>) {
      auto v = n->value<std::string>();
      PX_CHECK(v.has_value(), "{}: [{}] {} must be a string", file_, table_, key);
      out = *v;
    } else {  // vector<string>; a single string is accepted too
      if (auto s = n->value<std::string>()) {
        out = {*s};
        return;
      }
      const toml::array* a = n->as_array();
      PX_CHECK(a != nullptr, "{}: [{}] {} must be a string or a list of strings", file_, table_,
               key);
      out.clear();
      for (const auto& e : *a) {
        auto s = e.value<std::string>();
        PX_CHECK(s.has_value(), "{}: [{}] {} must hold only strings", file_, table_, key);
        out.push_back(*s);
      }
    }
  }
  // A list of integers: false (nothing read) when the key holds no array.
  bool get_int_list(const char* key, std::vector<int64_t>& out) {
    const toml::node* n = t_ == nullptr ? nullptr : t_->get(key);
    const toml::array* a = n == nullptr ? nullptr : n->as_array();
    if (a == nullptr) return false;
    seen_.insert(key);
    out.clear();
    for (const auto& e : *a) {
      auto v = e.value<int64_t>();
      PX_CHECK(v.has_value(), "{}: [{}] {} must hold only integers", file_, table_, key);
      out.push_back(*v);
    }
    return true;
  }
  // A name parsed into an enum (or a flag value) by `parse`.
  template <class T, class Parse>
  void get_named(const char* key, T& out, Parse parse) {
    std::string name;
    get(key, name);
    if (!name.empty()) out = parse(name);
  }
  // A path, relative to the run file unless absolute.
  // Only a path the file gives is resolved (a base's stays as it was).
  void get_path(const char* key, std::string& out, const std::filesystem::path& base) {
    if (!has(key)) return;
    get(key, out);
    out = resolved(out, base);
  }
  bool has(const char* key) const { return t_ != nullptr && t_->get(key) != nullptr; }
  bool is_string(const char* key) const { return has(key) && t_->get(key)->is_string(); }
  static std::string resolved(const std::string& p, const std::filesystem::path& base) {
    if (p.empty() || !std::filesystem::path(p).is_relative()) return p;
    return (base / p).lexically_normal().string();
  }
  void reject_unknown() const {
    if (t_ == nullptr) return;
    for (const auto& [k, v] : *t_)
      PX_CHECK(seen_.count(std::string(k.str())) > 0, "{}: unknown key '{}' in [{}]", file_,
               k.str(), table_);
  }

 private:
  const toml::table* t_;
  std::string file_, table_;
  std::set<std::string> seen_;
};

using Path = std::filesystem::path;

void read_model(TableReader& r, ModelConfig& mc) {
  std::string preset;
  r.get("preset", preset);
  if (!preset.empty()) mc = catalog_model(preset);
  r.get_named("arch", mc.arch, arch_from_name);
  // Unset derived sizes follow the family's convention: kv heads = heads,
  // head_dim = hidden / heads, GPT-2 intermediate = 4 * hidden.
  int64_t heads = 0, kv = 0, hd = 0, inter = 0;
  r.get("vocab_size", mc.vocab_size);
  r.get("hidden_size", mc.hidden);
  r.get("num_layers", mc.n_layers);
  r.get("num_heads", heads);
  r.get("num_kv_heads", kv);
  r.get("head_dim", hd);
  r.get("intermediate_size", inter);
  if (heads > 0) mc.n_heads = heads;
  if (kv > 0 || heads > 0) mc.n_kv_heads = kv > 0 ? kv : heads;
  if (inter > 0)
    mc.intermediate = inter;
  else if (mc.arch == Arch::GPT2)
    mc.intermediate = 4 * mc.hidden;
  r.get("max_positions", mc.max_positions);
  r.get("norm_eps", mc.norm_eps);
  r.get("rope_theta", mc.rope_theta);
  // The LLaMA family's Hugging Face relatives (docs/model_families.md).
  r.get("family", mc.hf_type);
  r.get("qkv_bias", mc.qkv_bias);
  r.get("sliding_window", mc.sliding_window);
  RopeScaling& rs = mc.rope_scaling;
  r.get_named("rope_scaling", rs.type, rope_scaling_from_name);
  r.get("rope_scaling_factor", rs.factor);
  r.get("rope_scaling_low_freq_factor", rs.low_freq_factor);
  r.get("rope_scaling_high_freq_factor", rs.high_freq_factor);
  r.get("rope_scaling_original_max_positions", rs.original_max_positions);
  r.get("tie_embeddings", mc.tie_embeddings);
  r.get("init_std", mc.init_std);
  r.get("attention_dropout", mc.attn_dropout);
  r.get("hidden_dropout", mc.hidden_dropout);
  // LoRA / QLoRA (docs/lora.md, docs/qlora.md), named as their flags.
  r.get("lora_rank", mc.lora.rank);
  r.get("lora_alpha", mc.lora.alpha);
  r.get("lora_dropout", mc.lora.dropout);
  if (r.has("lora_targets")) {
    std::vector<std::string> targets;
    r.get("lora_targets", targets);
    mc.lora.targets.clear();
    for (const std::string& t : targets)
      for (const std::string& k : parse_lora_targets(t))
        if (std::ranges::count(mc.lora.targets, k) == 0) mc.lora.targets.push_back(k);
  }
  r.get("use_rslora", mc.lora.rslora);
  r.get("qlora", mc.lora.qlora);
  r.get("double_quant", mc.lora.double_quant);
  mc.head_dim = hd > 0 ? hd : mc.hidden / std::max<int64_t>(mc.n_heads, 1);
  // Mixture of experts (docs/moe.md); the preset first, so explicit keys win.
  std::string moe_preset;
  r.get("moe_router_preset", moe_preset);
  if (!moe_preset.empty()) mc.moe.apply_preset(moe_preset);
  r.get("num_experts", mc.moe.num_experts);
  r.get("moe_router_topk", mc.moe.topk);
  // An integer, a list of 0 (dense) / 1 (MoE) per layer, or a string: the
  // integer or Megatron's list expression, as --moe-layer-freq reads it.
  if (r.has("moe_layer_freq")) {
    std::vector<int64_t> pattern;
    if (r.get_int_list("moe_layer_freq", pattern)) {
      mc.moe.layer_pattern.assign(pattern.begin(), pattern.end());
    } else if (r.is_string("moe_layer_freq")) {
      std::string text;
      r.get("moe_layer_freq", text);
      mc.moe.set_layer_freq(text);
    } else {
      r.get("moe_layer_freq", mc.moe.layer_freq);
      mc.moe.layer_pattern.clear();
    }
  }
  r.get("moe_ffn_hidden_size", mc.moe.ffn_hidden_size);
  r.get_named("moe_router_order", mc.moe.order, router_order_from_name);
  r.get("moe_renormalize", mc.moe.renormalize);
  double capacity = std::nan("");  // absent: dropless
  r.get("moe_capacity_factor", capacity);
  if (!std::isnan(capacity)) mc.moe.capacity_factor = capacity;
  r.get_named("moe_token_drop_policy", mc.moe.drop_policy, drop_policy_from_name);
  r.get("moe_aux_loss_coeff", mc.moe.aux_loss_coeff);
  r.get("moe_z_loss_coeff", mc.moe.z_loss_coeff);
  r.get("moe_shared_expert_intermediate_size", mc.moe.shared_intermediate);
  r.get("moe_shared_expert_gate", mc.moe.shared_expert_gate);
  r.get_named("moe_router_score_function", mc.moe.score, score_function_from_name);
  r.get("moe_router_enable_expert_bias", mc.moe.expert_bias);
  r.get("moe_router_bias_update_rate", mc.moe.bias_update_rate);
}

void read_data(TableReader& r, DataConfig& d, const Path& base) {
  for (auto [key, files] : {std::pair{"train", &d.train}, std::pair{"val", &d.val}}) {
    if (!r.has(key)) continue;
    r.get(key, *files);
    // Paths resolve against the config's folder; a blend's weights stay as they are.
    const bool blend = is_data_blend(*files);
    for (size_t i = 0; i < files->size(); ++i)
      if (!blend || i % 2 == 1) (*files)[i] = TableReader::resolved((*files)[i], base);
  }
  r.get("shuffle", d.shuffle);
  r.get("reset_attention_mask", d.docs.reset_attention_mask);
  r.get("reset_position_ids", d.docs.reset_position_ids);
  r.get("eod_mask_loss", d.docs.eod_mask_loss);
  r.get("eod_token", d.docs.eod);
}

void read_training(TableReader& r, TrainingConfig& t) {
  r.get("steps", t.steps);
  r.get("micro_batch_size", t.micro_batch_size);
  r.get("global_batch_size", t.global_batch_size);
  r.get("seq_len", t.seq_len);
  r.get("seed", t.seed);
  r.get("clip_grad", t.clip_grad);
  r.get_named("recompute", t.recompute, recompute_from_name);
  r.get_named("device", t.device, device_from_name);
}

void read_optimizer(TableReader& r, OptimizerConfig& o) {
  r.get_named("name", o.kind, optimizer_from_name);
  r.get("lr", o.lr);
  r.get("beta1", o.beta1);
  r.get("beta2", o.beta2);
  r.get("eps", o.eps);
  r.get("weight_decay", o.weight_decay);
  r.get("momentum", o.momentum);
  r.get("nesterov", o.nesterov);
  r.get("muon_momentum", o.muon_momentum);
  r.get("muon_ns_steps", o.muon_ns_steps);
  r.get("muon_lr", o.muon_lr);
  r.get("muon_weight_decay", o.muon_weight_decay);
}

void read_lr_schedule(TableReader& r, LrScheduleConfig& s) {
  r.get("warmup", s.warmup);
  r.get("min_lr_ratio", s.min_lr_ratio);
  r.get_named("warmup_style", s.warmup_style, warmup_style_from_name);
  r.get_named("decay_style", s.decay_style, decay_style_from_name);
  r.get("warmup_start_ratio", s.warmup_start_ratio);
  r.get("decay_steps", s.decay_steps);
}

void read_parallelism(TableReader& r, ParallelismConfig& p) {
  r.get("dp", p.dp.dp);
  r.get("zero", p.dp.zero);
  r.get_named("dp_mode", p.dp.mode, [](const std::string& s) { return dp_mode_from_name(s); });
  r.get("bucket_mb", p.dp.bucket_mb);
  r.get("overlap_grad_reduce", p.dp.overlap);
  r.get("tp", p.tp);
  r.get("sequence_parallel", p.sequence_parallel);
  r.get("pp", p.pp);
  r.get("schedule", p.schedule);
  r.get("virtual_stages", p.virtual_stages);
  r.get("ep", p.ep);
  r.get("expert_tp", p.expert_tp);
  r.get("pp_layers", p.pp_layers);
  r.get("cp", p.cp);
  r.get("cp_comm", p.cp_comm);
  r.get("ulysses_degree", p.ulysses_degree);
}

void read_checkpoint(TableReader& r, CheckpointConfig& c, const Path& base) {
  r.get_path("init_from", c.init_from, base);
  r.get_path("load", c.load_dir, base);
  r.get("resume", c.resume);
  r.get_path("save", c.save_dir, base);
  r.get("save_interval", c.save_interval);
  r.get("keep", c.keep);
  r.get("exit_interval", c.exit_interval);
  r.get_path("save_hf", c.save_hf_dir, base);
}

void read_precision(TableReader& r, PrecisionConfig& p) {
  r.get_named("matmul", p.matmul, precision_from_name);
  r.get("emulate_lowp_gemm", p.emulate_lowp_gemm);
  r.get("allow_tf32", p.allow_tf32);
  r.get("initial_loss_scale", p.loss_scale.initial_scale);
  r.get("min_loss_scale", p.loss_scale.min_scale);
  r.get("loss_scale_window", p.loss_scale.window);
  r.get("hysteresis", p.loss_scale.hysteresis);
  r.get_named("on_nan", p.skip_nonfinite, on_nan_from_name);
}

void read_logging(TableReader& r, LoggingConfig& l, const Path& base) {
  r.get("log_interval", l.log_interval);
  r.get("eval_interval", l.eval_interval);
  r.get("eval_batches", l.eval_batches);
  r.get_path("metrics", l.metrics_path, base);
  r.get_path("tensorboard", l.tensorboard_dir, base);
  r.get("peak_tflops", l.peak_tflops);
  r.get_path("trace", l.trace_path, base);
  r.get_path("timeline", l.timeline_path, base);
}

constexpr std::string_view kTables[] = {"model",      "data",        "training",
                                        "optimizer",  "lr_schedule", "parallelism",
                                        "checkpoint", "precision",   "logging"};

}  // namespace

RunConfig load_run_config(const std::string& path, const RunConfig& over) {
  PX_CHECK(std::filesystem::exists(path), "config file '{}' does not exist", path);
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    PX_FAIL("{}:{}:{}: malformed TOML: {}", path, e.source().begin.line, e.source().begin.column,
            e.description());
  }
  for (const auto& [k, v] : root)
    PX_CHECK(std::count(std::begin(kTables), std::end(kTables), k.str()) > 0,
             "{}: unknown table '{}' (expected [model], [data], [training], [optimizer], "
             "[lr_schedule], [parallelism], [checkpoint], [precision] or [logging]{})",
             path, k.str(),
             k.str() == "train" ? "; [train] was split into those tables, see README.md" : "");
  const Path base = Path(path).parent_path();
  // Reads one table with `read`, then refuses the keys it did not take.
  auto table = [&](const char* name, auto read) {
    TableReader r(root[name].as_table(), path, name);
    read(r);
    r.reject_unknown();
  };
  RunConfig rc = over;
  TrainConfig& t = rc.train;
  // Without a [model] table the base's model stays whole (its derived sizes
  // are not recomputed).
  if (root["model"].as_table() != nullptr)
    table("model", [&](TableReader& r) { read_model(r, rc.model); });
  table("data", [&](TableReader& r) { read_data(r, t.data, base); });
  table("training", [&](TableReader& r) { read_training(r, t.training); });
  table("optimizer", [&](TableReader& r) { read_optimizer(r, t.optimizer); });
  table("lr_schedule", [&](TableReader& r) { read_lr_schedule(r, t.lr_schedule); });
  table("parallelism", [&](TableReader& r) { read_parallelism(r, t.parallelism); });
  table("checkpoint", [&](TableReader& r) { read_checkpoint(r, t.checkpoint, base); });
  table("precision", [&](TableReader& r) { read_precision(r, t.precision); });
  table("logging", [&](TableReader& r) { read_logging(r, t.logging, base); });
  return rc;
}

}  // namespace parallm
