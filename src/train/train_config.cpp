#include "train/train_config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "base/error.h"
#include "model/model_catalog.h"
#include "model/layers/attention.h"

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

// Relative paths in a config are relative to the config file.
void resolve_paths(std::vector<std::string>& files, const std::filesystem::path& base) {
  for (auto& f : files)
    if (!f.empty() && std::filesystem::path(f).is_relative()) f = (base / f).lexically_normal();
}

}  // namespace

RunConfig load_run_config(const std::string& path) {
  PX_CHECK(std::filesystem::exists(path), "config file '{}' does not exist", path);
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    PX_FAIL("{}:{}:{}: malformed TOML: {}", path, e.source().begin.line, e.source().begin.column,
            e.description());
  }
  for (const auto& [k, v] : root)
    PX_CHECK(k.str() == "model" || k.str() == "data" || k.str() == "train",
             "{}: unknown table '{}' (expected [model], [data], [train])", path, k.str());

  RunConfig rc;
  TableReader m(root["model"].as_table(), path, "model");
  std::string preset, arch;
  m.get("preset", preset);
  if (!preset.empty()) rc.model = catalog_model(preset);
  m.get("arch", arch);
  if (!arch.empty()) rc.model.arch = arch_from_name(arch);
  ModelConfig& mc = rc.model;
  // Unset derived sizes follow the family's convention: kv heads = heads,
  // head_dim = hidden / heads, GPT-2 intermediate = 4 * hidden.
  int64_t heads = 0, kv = 0, hd = 0, inter = 0;
  m.get("vocab_size", mc.vocab_size);
  m.get("hidden_size", mc.hidden);
  m.get("num_layers", mc.n_layers);
  m.get("num_heads", heads);
  m.get("num_kv_heads", kv);
  m.get("head_dim", hd);
  m.get("intermediate_size", inter);
  if (heads > 0) mc.n_heads = heads;
  if (kv > 0 || heads > 0) mc.n_kv_heads = kv > 0 ? kv : heads;
  if (inter > 0) mc.intermediate = inter;
  else if (mc.arch == Arch::GPT2) mc.intermediate = 4 * mc.hidden;
  m.get("max_positions", mc.max_positions);
  m.get("norm_eps", mc.norm_eps);
  m.get("rope_theta", mc.rope_theta);
  m.get("tie_embeddings", mc.tie_embeddings);
  m.get("init_std", mc.init_std);
  m.reject_unknown();
  mc.head_dim = hd > 0 ? hd : mc.hidden / std::max<int64_t>(mc.n_heads, 1);

  auto base = std::filesystem::path(path).parent_path();
  TableReader d(root["data"].as_table(), path, "data");
  d.get("train", rc.train.train_files);
  d.get("val", rc.train.val_files);
  d.reject_unknown();
  resolve_paths(rc.train.train_files, base);
  resolve_paths(rc.train.val_files, base);

  TrainConfig& t = rc.train;
  TableReader r(root["train"].as_table(), path, "train");
  r.get("init_from", t.init_from);
  r.get("steps", t.steps);
  r.get("micro_batch_size", t.micro_batch_size);
  r.get("global_batch_size", t.global_batch_size);
  r.get("seq_len", t.seq_len);
  r.get("lr", t.lr);
  r.get("warmup", t.warmup);
  r.get("min_lr_ratio", t.min_lr_ratio);
  r.get("weight_decay", t.weight_decay);
  r.get("beta1", t.beta1);
  r.get("beta2", t.beta2);
  r.get("eps", t.eps);
  r.get("clip_grad", t.clip_grad);
  r.get("optimizer", t.optimizer);
  r.get("momentum", t.momentum);
  r.get("nesterov", t.nesterov);
  r.get("muon_momentum", t.muon_momentum);
  r.get("muon_ns_steps", t.muon_ns_steps);
  r.get("muon_lr", t.muon_lr);
  r.get("muon_weight_decay", t.muon_weight_decay);
  r.get("seed", t.seed);
  r.get("attention_dropout", t.attention_dropout);
  r.get("hidden_dropout", t.hidden_dropout);
  r.get("shuffle", t.shuffle);
  r.get("log_interval", t.log_interval);
  r.get("eval_interval", t.eval_interval);
  r.get("eval_batches", t.eval_batches);
  r.get("metrics", t.metrics_path);
  r.get("save", t.save_dir);
  r.get("save_interval", t.save_interval);
  r.get("keep", t.keep);
  r.get("exit_interval", t.exit_interval);
  r.get("load", t.load_dir);
  r.get("resume", t.resume);
  r.get("save_hf", t.save_hf_dir);
  std::string dp_mode;
  r.get("dp", t.dp.dp);
  r.get("zero", t.dp.zero);
  r.get("dp_mode", dp_mode);
  if (!dp_mode.empty()) t.dp.mode = dp_mode_from_name(dp_mode);
  r.get("bucket_mb", t.dp.bucket_mb);
  r.get("overlap_grad_reduce", t.dp.overlap);
  r.get("tp", t.tp);
  r.get("sequence_parallel", t.sequence_parallel);
  r.get("peak_tflops", t.peak_tflops);
  r.get("pp", t.pp);
  r.get("schedule", t.schedule);
  r.get("virtual_stages", t.virtual_stages);
  r.get("pp_layers", t.pp_layers);
  r.get("trace", t.trace_path);
  r.get("timeline", t.timeline_path);
  std::string precision, recompute, on_nan;
  r.get("precision", precision);
  r.get("recompute", recompute);
  r.get("on_nan", on_nan);
  if (!precision.empty()) t.precision = precision_from_name(precision);
  if (!recompute.empty()) t.recompute = recompute_from_name(recompute);
  if (!on_nan.empty()) t.skip_nonfinite = on_nan_from_name(on_nan);
  r.get("emulate_lowp_gemm", t.emulate_lowp_gemm);
  r.get("initial_loss_scale", t.loss_scale.initial_scale);
  r.get("min_loss_scale", t.loss_scale.min_scale);
  r.get("loss_scale_window", t.loss_scale.window);
  r.get("hysteresis", t.loss_scale.hysteresis);
  r.reject_unknown();
  // Every path in a run file, outputs included, is relative to the file.
  std::vector<std::string*> paths = {&t.init_from, &t.metrics_path, &t.save_dir, &t.load_dir,
                                     &t.save_hf_dir, &t.trace_path, &t.timeline_path};
  for (std::string* p : paths) {
    std::vector<std::string> one = {*p};
    resolve_paths(one, base);
    *p = one[0];
  }
  return rc;
}

bool on_nan_from_name(const std::string& s) {
  PX_CHECK(s == "skip" || s == "stop", "--on-nan must be skip or stop, got '{}'", s);
  return s == "skip";
}

void TrainConfig::validate(const ModelConfig& m) const {
  m.validate();
  PX_CHECK(!train_files.empty(), "no training data: set [data] train in the config or --data");
  PX_CHECK(steps > 0, "steps must be positive, got {}", steps);
  PX_CHECK(micro_batch_size > 0, "micro batch size must be positive, got {}", micro_batch_size);
  PX_CHECK(global_batch_size % micro_batch_size == 0,
           "global batch size ({}) is not divisible by micro batch size ({})", global_batch_size,
           micro_batch_size);
  PX_CHECK(dp.dp >= 1, "data parallel size must be positive, got {}", dp.dp);
  PX_CHECK(global_batch_size % (micro_batch_size * dp.dp) == 0,
           "global batch size ({}) is not divisible by micro batch size ({}) times data "
           "parallel size ({})",
           global_batch_size, micro_batch_size, dp.dp);
  PX_CHECK(seq_len > 0, "seq_len must be positive, got {}", seq_len);
  PX_CHECK(!m.uses_learned_positions() || seq_len <= m.max_positions,
           "seq_len ({}) exceeds the model's max_positions ({})", seq_len, m.max_positions);
  PX_CHECK(lr > 0, "lr must be positive, got {}", lr);
  PX_CHECK(warmup >= 0, "warmup must be >= 0, got {}", warmup);
  PX_CHECK(min_lr_ratio >= 0 && min_lr_ratio <= 1, "min_lr_ratio must be in [0, 1], got {}",
           min_lr_ratio);
  PX_CHECK(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1,
           "betas must be in [0, 1), got ({}, {})", beta1, beta2);
  PX_CHECK(weight_decay >= 0, "weight_decay must be >= 0, got {}", weight_decay);
  PX_CHECK(log_interval > 0, "log_interval must be positive, got {}", log_interval);
  PX_CHECK(peak_tflops >= 0, "peak_tflops must be >= 0 (0: measure), got {}", peak_tflops);
  PX_CHECK(muon_lr > 0, "muon_lr must be positive, got {}", muon_lr);
  optimizer_config().validate();
  PX_CHECK(save_interval >= 0 && keep >= 0 && exit_interval >= 0,
           "save_interval ({}), keep ({}) and exit_interval ({}) must be >= 0", save_interval, keep,
           exit_interval);
  PX_CHECK(save_interval == 0 || !save_dir.empty(), "--save-interval {} needs --save DIR",
           save_interval);
  PX_CHECK(!resume || !save_dir.empty() || !load_dir.empty(), "--resume needs --save or --load");
  PX_CHECK(load_dir.empty() || init_from.empty(),
           "give --load (a checkpoint) or --init-from (a Hugging Face model), not both");
  if (precision == Precision::FP16) loss_scale.validate();
  check_tp_divides(m, tp);
  PX_CHECK(!sequence_parallel || (micro_batch_size * seq_len) % tp == 0,
           "sequence parallel: micro batch size ({}) x seq_len ({}) is not divisible by tp ({})",
           micro_batch_size, seq_len, tp);
}

OptimizerConfig TrainConfig::optimizer_config() const {
  OptimizerConfig c;
  c.kind = optimizer_from_name(optimizer);
  c.beta1 = beta1;
  c.beta2 = beta2;
  c.eps = eps;
  c.weight_decay = weight_decay;
  c.momentum = momentum;
  c.nesterov = nesterov;
  c.muon_momentum = muon_momentum;
  c.muon_ns_steps = static_cast<int>(muon_ns_steps);
  c.muon_lr_ratio = muon_lr / lr;
  c.muon_weight_decay = muon_weight_decay;
  return c;
}

}  // namespace parallm
