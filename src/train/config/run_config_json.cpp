// run_config_json / run_config_from_json: one writer and one reader per
// table, in the order and with the key names of load_run_config's TOML
// tables, so the record reads like the run file that made it.
#include "train/config/run_config_json.h"

#include "base/error.h"
#include "io/hf_config.h"
#include "nn/precision.h"

namespace parallm {
namespace {

using Json = nlohmann::json;

std::string warmup_style_name(WarmupStyle s) {
  return s == WarmupStyle::LlmC ? "llmc" : s == WarmupStyle::Linear ? "linear" : "log";
}
std::string decay_style_name(DecayStyle s) {
  return s == DecayStyle::Cosine ? "cosine" : s == DecayStyle::Linear ? "linear" : "constant";
}

// Reads the keys of one table of the record; absent keys keep their value.
class Table {
 public:
  Table(const Json& root, const char* name, const std::string& source)
      : name_(name), source_(source) {
    if (root.contains(name)) {
      PX_CHECK(root[name].is_object(), "{}: run record: '{}' must be an object", source, name);
      t_ = &root[name];
    }
  }
  template <class T>
  void get(const char* key, T& out) const {
    if (t_ == nullptr || !t_->contains(key)) return;
    try {
      out = (*t_)[key].get<T>();
    } catch (const nlohmann::json::exception&) {
      PX_FAIL("{}: run record: {}.{} has the wrong type ({})", source_, name_, key,
              (*t_)[key].dump());
    }
  }
  template <class T, class Parse>
  void get_named(const char* key, T& out, Parse parse) const {
    std::string name;
    get(key, name);
    if (!name.empty()) out = parse(name);
  }

 private:
  const Json* t_ = nullptr;
  const char* name_;
  const std::string& source_;
};

Json model_json(const ModelConfig& m) {
  Json j = hf_config_json(m, "float32");
  j["parallm_dropout"] = {{"attention", m.attn_dropout}, {"hidden", m.hidden_dropout}};
  return j;
}

ModelConfig model_from_json(const Json& root, const std::string& source) {
  PX_CHECK(root.contains("model"), "{}: run record without a model", source);
  ModelConfig m = model_config_from_hf(root["model"], source + " run.model");
  Table d(root["model"], "parallm_dropout", source);
  d.get("attention", m.attn_dropout);
  d.get("hidden", m.hidden_dropout);
  return m;
}

}  // namespace

nlohmann::json run_config_json(const RunConfig& rc) {
  const TrainConfig& t = rc.train;
  const OptimizerConfig& o = t.optimizer;
  const LrScheduleConfig& s = t.lr_schedule;
  const ParallelismConfig& p = t.parallelism;
  const CheckpointConfig& c = t.checkpoint;
  const PrecisionConfig& pr = t.precision;
  const LoggingConfig& l = t.logging;
  return {{"model", model_json(rc.model)},
          {"data",
           {{"train", t.data.train},
            {"val", t.data.val},
            {"shuffle", t.data.shuffle},
            {"reset_attention_mask", t.data.docs.reset_attention_mask},
            {"reset_position_ids", t.data.docs.reset_position_ids},
            {"eod_mask_loss", t.data.docs.eod_mask_loss},
            {"eod_token", t.data.docs.eod}}},
          {"training",
           {{"steps", t.training.steps},
            {"micro_batch_size", t.training.micro_batch_size},
            {"global_batch_size", t.training.global_batch_size},
            {"seq_len", t.training.seq_len},
            {"seed", t.training.seed},
            {"clip_grad", t.training.clip_grad},
            {"recompute", recompute_name(t.training.recompute)}}},
          {"optimizer",
           {{"name", std::string(optimizer_name(o.kind))},
            {"lr", o.lr},
            {"beta1", o.beta1},
            {"beta2", o.beta2},
            {"eps", o.eps},
            {"weight_decay", o.weight_decay},
            {"momentum", o.momentum},
            {"nesterov", o.nesterov},
            {"muon_momentum", o.muon_momentum},
            {"muon_ns_steps", o.muon_ns_steps},
            {"muon_lr", o.muon_lr},
            {"muon_weight_decay", o.muon_weight_decay}}},
          {"lr_schedule",
           {{"warmup", s.warmup},
            {"min_lr_ratio", s.min_lr_ratio},
            {"warmup_style", warmup_style_name(s.warmup_style)},
            {"decay_style", decay_style_name(s.decay_style)},
            {"warmup_start_ratio", s.warmup_start_ratio},
            {"decay_steps", s.decay_steps}}},
          {"parallelism",
           {{"dp", p.dp.dp},
            {"zero", p.dp.zero},
            {"dp_mode", std::string(dp_mode_name(p.dp.mode))},
            {"bucket_mb", p.dp.bucket_mb},
            {"overlap_grad_reduce", p.dp.overlap},
            {"tp", p.tp},
            {"sequence_parallel", p.sequence_parallel},
            {"pp", p.pp},
            {"schedule", p.schedule},
            {"virtual_stages", p.virtual_stages},
            {"ep", p.ep},
            {"pp_layers", p.pp_layers},
            {"cp", p.cp},
            {"cp_comm", p.cp_comm},
            {"ulysses_degree", p.ulysses_degree}}},
          {"checkpoint",
           {{"init_from", c.init_from},
            {"load", c.load_dir},
            {"resume", c.resume},
            {"save", c.save_dir},
            {"save_interval", c.save_interval},
            {"keep", c.keep},
            {"exit_interval", c.exit_interval},
            {"save_hf", c.save_hf_dir}}},
          {"precision",
           {{"matmul", precision_name(pr.matmul)},
            {"emulate_lowp_gemm", pr.emulate_lowp_gemm},
            {"initial_loss_scale", pr.loss_scale.initial_scale},
            {"min_loss_scale", pr.loss_scale.min_scale},
            {"growth_factor", pr.loss_scale.growth_factor},
            {"backoff_factor", pr.loss_scale.backoff_factor},
            {"loss_scale_window", pr.loss_scale.window},
            {"hysteresis", pr.loss_scale.hysteresis},
            {"on_nan", pr.skip_nonfinite ? "skip" : "stop"}}},
          {"logging",
           {{"log_interval", l.log_interval},
            {"eval_interval", l.eval_interval},
            {"eval_batches", l.eval_batches},
            {"metrics", l.metrics_path},
            {"tensorboard", l.tensorboard_dir},
            {"peak_tflops", l.peak_tflops},
            {"trace", l.trace_path},
            {"timeline", l.timeline_path}}}};
}

RunConfig run_config_from_json(const nlohmann::json& j, const std::string& source) {
  PX_CHECK(j.is_object(), "{}: the run record must be a JSON object", source);
  RunConfig rc;
  rc.model = model_from_json(j, source);
  TrainConfig& t = rc.train;
  const Table d(j, "data", source);
  d.get("train", t.data.train);
  d.get("val", t.data.val);
  d.get("shuffle", t.data.shuffle);
  d.get("reset_attention_mask", t.data.docs.reset_attention_mask);
  d.get("reset_position_ids", t.data.docs.reset_position_ids);
  d.get("eod_mask_loss", t.data.docs.eod_mask_loss);
  d.get("eod_token", t.data.docs.eod);
  const Table tr(j, "training", source);
  tr.get("steps", t.training.steps);
  tr.get("micro_batch_size", t.training.micro_batch_size);
  tr.get("global_batch_size", t.training.global_batch_size);
  tr.get("seq_len", t.training.seq_len);
  tr.get("seed", t.training.seed);
  tr.get("clip_grad", t.training.clip_grad);
  tr.get_named("recompute", t.training.recompute, recompute_from_name);
  OptimizerConfig& o = t.optimizer;
  const Table op(j, "optimizer", source);
  op.get_named("name", o.kind, optimizer_from_name);
  op.get("lr", o.lr);
  op.get("beta1", o.beta1);
  op.get("beta2", o.beta2);
  op.get("eps", o.eps);
  op.get("weight_decay", o.weight_decay);
  op.get("momentum", o.momentum);
  op.get("nesterov", o.nesterov);
  op.get("muon_momentum", o.muon_momentum);
  op.get("muon_ns_steps", o.muon_ns_steps);
  op.get("muon_lr", o.muon_lr);
  op.get("muon_weight_decay", o.muon_weight_decay);
  LrScheduleConfig& s = t.lr_schedule;
  const Table ls(j, "lr_schedule", source);
  ls.get("warmup", s.warmup);
  ls.get("min_lr_ratio", s.min_lr_ratio);
  ls.get_named("warmup_style", s.warmup_style, warmup_style_from_name);
  ls.get_named("decay_style", s.decay_style, decay_style_from_name);
  ls.get("warmup_start_ratio", s.warmup_start_ratio);
  ls.get("decay_steps", s.decay_steps);
  ParallelismConfig& p = t.parallelism;
  const Table pa(j, "parallelism", source);
  pa.get("dp", p.dp.dp);
  pa.get("zero", p.dp.zero);
  pa.get_named("dp_mode", p.dp.mode, [](const std::string& n) { return dp_mode_from_name(n); });
  pa.get("bucket_mb", p.dp.bucket_mb);
  pa.get("overlap_grad_reduce", p.dp.overlap);
  pa.get("tp", p.tp);
  pa.get("sequence_parallel", p.sequence_parallel);
  pa.get("pp", p.pp);
  pa.get("schedule", p.schedule);
  pa.get("virtual_stages", p.virtual_stages);
  pa.get("ep", p.ep);
  pa.get("pp_layers", p.pp_layers);
  pa.get("cp", p.cp);
  pa.get("cp_comm", p.cp_comm);
  pa.get("ulysses_degree", p.ulysses_degree);
  CheckpointConfig& c = t.checkpoint;
  const Table ck(j, "checkpoint", source);
  ck.get("init_from", c.init_from);
  ck.get("load", c.load_dir);
  ck.get("resume", c.resume);
  ck.get("save", c.save_dir);
  ck.get("save_interval", c.save_interval);
  ck.get("keep", c.keep);
  ck.get("exit_interval", c.exit_interval);
  ck.get("save_hf", c.save_hf_dir);
  PrecisionConfig& pr = t.precision;
  const Table pc(j, "precision", source);
  pc.get_named("matmul", pr.matmul, precision_from_name);
  pc.get("emulate_lowp_gemm", pr.emulate_lowp_gemm);
  pc.get("initial_loss_scale", pr.loss_scale.initial_scale);
  pc.get("min_loss_scale", pr.loss_scale.min_scale);
  pc.get("growth_factor", pr.loss_scale.growth_factor);
  pc.get("backoff_factor", pr.loss_scale.backoff_factor);
  pc.get("loss_scale_window", pr.loss_scale.window);
  pc.get("hysteresis", pr.loss_scale.hysteresis);
  pc.get_named("on_nan", pr.skip_nonfinite, on_nan_from_name);
  LoggingConfig& l = t.logging;
  const Table lg(j, "logging", source);
  lg.get("log_interval", l.log_interval);
  lg.get("eval_interval", l.eval_interval);
  lg.get("eval_batches", l.eval_batches);
  lg.get("metrics", l.metrics_path);
  lg.get("tensorboard", l.tensorboard_dir);
  lg.get("peak_tflops", l.peak_tflops);
  lg.get("trace", l.trace_path);
  lg.get("timeline", l.timeline_path);
  return rc;
}

}  // namespace parallm
