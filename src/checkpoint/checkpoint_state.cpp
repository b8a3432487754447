// train_state.json of a checkpoint (see checkpoint_state.h).
#include "checkpoint/checkpoint_state.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/error.h"
#include "io/hf_config.h"
#include "train/config/run_config_json.h"

namespace parallm {

TrainingState training_state_of(const ModelConfig& model, const TrainConfig& cfg,
                                const CheckpointLayout& layout, int64_t completed,
                                int64_t optimizer_step, int64_t updates,
                                const LossScalerState& loss_scale) {
  const TrainingConfig& tr = cfg.training;
  TrainingState s;
  s.step = completed;
  s.consumed_samples = completed * tr.global_batch_size;
  s.global_batch_size = tr.global_batch_size;
  s.seq_len = tr.seq_len;
  s.seed = tr.seed;
  s.lr = cfg.optimizer.lr;
  s.min_lr_ratio = cfg.lr_schedule.min_lr_ratio;
  s.warmup = cfg.lr_schedule.warmup;
  s.total_steps = tr.steps;
  s.optimizer = std::string(optimizer_name(cfg.optimizer.kind));
  s.optimizer_step = optimizer_step;
  s.updates = updates < 0 ? completed : updates;
  s.loss_scale = loss_scale;
  s.layout = layout;
  s.model = model;
  s.run = RunConfig{model, cfg};
  if (model.lora.enabled()) s.lora_base = cfg.checkpoint.init_from;
  return s;
}

nlohmann::json training_state_json(const TrainingState& s) {
  const CheckpointLayout& l = s.layout;
  nlohmann::json j = {{"format", "parallm-train-state"},
                      {"version", 1},
                      {"step", s.step},
                      {"consumed_samples", s.consumed_samples},
                      {"global_batch_size", s.global_batch_size},
                      {"seq_len", s.seq_len},
                      {"rng", {{"seed", s.seed}, {"kind", "counter (seed, step)"}}},
                      {"lr_schedule",
                       {{"lr", s.lr},
                        {"warmup", s.warmup},
                        {"total_steps", s.total_steps},
                        {"min_lr_ratio", s.min_lr_ratio},
                        {"next_step", s.step},
                        {"updates", s.updates}}},
                      {"optimizer", {{"type", s.optimizer}, {"step", s.optimizer_step}}},
                      {"loss_scale",
                       {{"scale", s.loss_scale.scale},
                        {"growth_tracker", s.loss_scale.growth_tracker},
                        {"hysteresis_tracker", s.loss_scale.hysteresis_tracker}}},
                      {"layout",
                       {{"world", l.world},
                        {"dp", l.dp},
                        {"tp", l.tp},
                        {"pp", l.pp},
                        {"zero", l.zero},
                        {"dp_mode", l.dp_mode},
                        {"sequence_parallel", l.sequence_parallel},
                        {"cp", l.cp},
                        {"ep", l.ep}}},
                      {"model", hf_config_json(s.model, "float32")}};
  if (s.run) j["run"] = run_config_json(*s.run);
  if (const LoraConfig& lo = s.model.lora; lo.enabled())  // only adapters are in the shards
    j["lora"] = {{"r", lo.rank},
                 {"lora_alpha", lo.alpha},
                 {"lora_dropout", lo.dropout},
                 {"targets", lo.targets},
                 {"use_rslora", lo.rslora},
                 {"base_model", s.lora_base},
                 // QLoRA: the base is requantised from base_model on resume.
                 {"qlora", lo.qlora},
                 {"double_quant", lo.double_quant}};
  // Floats written as doubles read back bit for bit.
  if (!s.moe_expert_bias.empty()) j["moe_expert_bias"] = s.moe_expert_bias;
  return j;
}

TrainingState training_state_from_json(const nlohmann::json& j, const std::string& source) {
  TrainingState s;
  try {
    PX_CHECK(j.value("format", "") == "parallm-train-state", "{}: not a parallm training state",
             source);
    s.step = j.at("step").get<int64_t>();
    s.consumed_samples = j.at("consumed_samples").get<int64_t>();
    s.global_batch_size = j.at("global_batch_size").get<int64_t>();
    s.seq_len = j.at("seq_len").get<int64_t>();
    s.seed = j.at("rng").at("seed").get<uint64_t>();
    const auto& lr = j.at("lr_schedule");
    s.lr = lr.at("lr").get<double>();
    s.warmup = lr.at("warmup").get<int64_t>();
    s.total_steps = lr.at("total_steps").get<int64_t>();
    s.min_lr_ratio = lr.at("min_lr_ratio").get<double>();
    s.optimizer = j.at("optimizer").at("type").get<std::string>();
    s.optimizer_step = j.at("optimizer").at("step").get<int64_t>();
    s.updates = lr.at("updates").get<int64_t>();
    const auto& ls = j.at("loss_scale");
    s.loss_scale = {ls.at("scale").get<double>(), ls.at("growth_tracker").get<int64_t>(),
                    ls.at("hysteresis_tracker").get<int64_t>()};
    const auto& l = j.at("layout");
    s.layout = {l.at("world").get<int>(),
                l.at("dp").get<int>(),
                l.at("tp").get<int>(),
                l.at("pp").get<int>(),
                l.at("zero").get<int>(),
                l.at("dp_mode").get<std::string>(),
                l.at("sequence_parallel").get<bool>(),
                l.value("cp", 1),
                l.value("ep", 1)};
    s.model = model_config_from_hf(j.at("model"), source);
    if (j.contains("run")) s.run = run_config_from_json(j.at("run"), source);
    if (j.contains("lora")) {
      const auto& lo = j.at("lora");
      s.model.lora.rank = lo.at("r").get<int64_t>();
      s.model.lora.alpha = lo.at("lora_alpha").get<double>();
      s.model.lora.dropout = lo.at("lora_dropout").get<double>();
      s.model.lora.targets = lo.at("targets").get<std::vector<std::string>>();
      s.model.lora.rslora = lo.at("use_rslora").get<bool>();
      s.lora_base = lo.at("base_model").get<std::string>();
      s.model.lora.qlora = lo.value("qlora", false);  // absent before QLoRA existed
      s.model.lora.double_quant = lo.value("double_quant", false);
    }
    if (j.contains("moe_expert_bias"))
      s.moe_expert_bias = j.at("moe_expert_bias").get<std::vector<float>>();
    // The run record's model is written without the LoRA settings, which
    // live in their own "lora" object: the resumed run needs them too.
    if (s.run) s.run->model.lora = s.model.lora;
  } catch (const nlohmann::json::exception& e) {
    PX_FAIL("{}: malformed training state: {}", source, e.what());
  }
  return s;
}

void restore_expert_bias(Transformer& model, const TrainingState& s) {
  if (model.expert_bias().enabled() && !s.moe_expert_bias.empty())
    model.expert_bias().restore(s.moe_expert_bias);
}

std::string layout_name(const CheckpointLayout& l) {
  std::string s = fmt::format("dp {} x tp {} x pp {}", l.dp, l.tp, l.pp);
  if (l.cp > 1) s += fmt::format(" x cp {}", l.cp);
  if (l.ep > 1) s += fmt::format(" (ep {})", l.ep);
  if (l.zero > 0) s += fmt::format(" (ZeRO-{})", l.zero);
  if (l.dp_mode != "allreduce") s += fmt::format(" ({})", l.dp_mode);
  return s;
}

RunConfig resumable_run(const TrainingState& s) {
  RunConfig rc;
  if (s.run) {
    rc = *s.run;
  } else {
    rc.model = s.model;
    TrainingConfig& tr = rc.train.training;
    tr.steps = s.total_steps;
    tr.global_batch_size = s.global_batch_size;
    tr.seq_len = s.seq_len;
    tr.seed = s.seed;
    rc.train.optimizer.kind = optimizer_from_name(s.optimizer);
    rc.train.optimizer.lr = s.lr;
    rc.train.lr_schedule.warmup = s.warmup;
    rc.train.lr_schedule.min_lr_ratio = s.min_lr_ratio;
    ParallelismConfig& p = rc.train.parallelism;
    p.dp.dp = s.layout.dp;
    p.dp.zero = s.layout.zero;
    p.dp.mode = dp_mode_from_name(s.layout.dp_mode);
    p.tp = s.layout.tp;
    p.pp = s.layout.pp;
    p.sequence_parallel = s.layout.sequence_parallel;
    p.cp = s.layout.cp;
    p.ep = s.layout.ep;
    // The micro-batch was not recorded: the default when it fits the
    // batch, else one micro-batch per step on each dp rank.
    if (tr.global_batch_size % (tr.micro_batch_size * p.dp.dp) != 0)
      tr.micro_batch_size = std::max<int64_t>(tr.global_batch_size / p.dp.dp, 1);
  }
  rc.train.checkpoint.init_from.clear();
  rc.train.checkpoint.load_dir.clear();
  return rc;
}

std::string check_resume_compatible(const TrainingState& saved, const ModelConfig& model,
                                    const TrainConfig& cfg, const std::string& source) {
  const std::string a = hf_config_json(saved.model, "float32").dump();
  const std::string b = hf_config_json(model, "float32").dump();
  PX_CHECK(a == b, "{}: the checkpoint's model ({}) differs from this run's ({})", source, a, b);
  const LoraConfig &sl = saved.model.lora, &ml = model.lora;
  PX_CHECK(sl.enabled() == ml.enabled() && sl.rank == ml.rank && sl.alpha == ml.alpha &&
               sl.targets == ml.targets && sl.rslora == ml.rslora,
           "{}: the checkpoint's LoRA (r {}, alpha {}, targets {}, rslora {}) differs from this "
           "run's (r {}, alpha {}, targets {}, rslora {})",
           source, sl.rank, sl.alpha, fmt::join(sl.targets, ","), sl.rslora, ml.rank, ml.alpha,
           fmt::join(ml.targets, ","), ml.rslora);
  PX_CHECK(sl.qlora == ml.qlora && sl.double_quant == ml.double_quant,
           "{}: the checkpoint's adapters were trained over a base {} ({}), this run's base "
           "is {} ({}): give the same --qlora / --double-quant",
           source, sl.qlora ? "in NF4" : "in full precision",
           sl.double_quant ? "double quantisation" : "no double quantisation",
           ml.qlora ? "in NF4" : "in full precision",
           ml.double_quant ? "double quantisation" : "no double quantisation");
  PX_CHECK(!sl.enabled() || saved.lora_base == cfg.checkpoint.init_from,
           "{}: the checkpoint's adapters belong to base '{}', this run's base is '{}' "
           "(--init-from)",
           source, saved.lora_base, cfg.checkpoint.init_from);
  const TrainingConfig& tr = cfg.training;
  PX_CHECK(saved.seed == tr.seed,
           "{}: the checkpoint was trained with seed {}, this run has seed {} (data order and "
           "dropout would not continue)",
           source, saved.seed, tr.seed);
  PX_CHECK(saved.global_batch_size == tr.global_batch_size && saved.seq_len == tr.seq_len,
           "{}: the checkpoint was trained with global batch {} x seq_len {}, this run has {} x "
           "{} (the data position would not continue)",
           source, saved.global_batch_size, saved.seq_len, tr.global_batch_size, tr.seq_len);
  PX_CHECK(saved.step <= tr.steps, "{}: the checkpoint is at step {}, beyond --steps {}", source,
           saved.step, tr.steps);
  const LrSchedule now = cfg.schedule();
  if (saved.lr != now.lr || saved.warmup != now.warmup || saved.total_steps != now.total_steps ||
      saved.min_lr_ratio != now.min_lr_ratio)
    return fmt::format(
        "note: the learning-rate schedule changes on resume (saved lr {} warmup {} steps {} "
        "min ratio {}; now lr {} warmup {} steps {} min ratio {})",
        saved.lr, saved.warmup, saved.total_steps, saved.min_lr_ratio, now.lr, now.warmup,
        now.total_steps, now.min_lr_ratio);
  return "";
}

}  // namespace parallm
