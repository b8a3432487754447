#include "train/config/deepspeed_config.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "base/error.h"

namespace parallm {

namespace {

using Json = nlohmann::json;

// Keys that only tune DeepSpeed's runtime (communication bucketing,
// prefetching, logging): they change neither the math nor what is stored.
const std::set<std::string> kRuntimeOnly = {
    "wall_clock_breakdown",
    "memory_breakdown",
    "dump_state",
    "flops_profiler",
    "comms_logger",
    "csv_monitor",
    "wandb",
    "zero_allow_untested_optimizer",
    "zero_force_ds_cpu_optimizer",
    "activation_checkpointing",
    "checkpoint",
    "aio",
    "zero_optimization.contiguous_gradients",
    "zero_optimization.allgather_bucket_size",
    "zero_optimization.reduce_scatter",
    "zero_optimization.allgather_partitions",
    "zero_optimization.stage3_prefetch_bucket_size",
    "zero_optimization.stage3_param_persistence_threshold",
    "zero_optimization.stage3_max_live_parameters",
    "zero_optimization.stage3_max_reuse_distance",
    "zero_optimization.stage3_gather_16bit_weights_on_model_save",
    "zero_optimization.stage3_gather_fp16_weights_on_model_save",
    "zero_optimization.sub_group_size",
    "zero_optimization.round_robin_gradients",
    "zero_optimization.elastic_checkpoint",
    "zero_optimization.ignore_unused_parameters",
    "zero_optimization.load_from_fp32_weights",
    "zero_optimization.memory_efficient_linear",
    "fp16.consecutive_hysteresis",
    "optimizer.params.torch_adam",
};

class Reader {
 public:
  Reader(std::string source, RunConfig& rc, DeepSpeedResult& out)
      : source_(std::move(source)), rc_(rc), out_(out) {}

  void top(const Json& j) {
    PX_CHECK(j.is_object(), "{}: a DeepSpeed config must be a JSON object", source_);
    for (const auto& [k, v] : j.items()) key(k, v);
  }

 private:
  [[noreturn]] void unsupported(const std::string& name) {
    PX_FAIL(
        "{}: unsupported DeepSpeed key '{}' (parallm maps batch sizes, gradient_clipping, "
        "zero_optimization, fp16, bf16, optimizer, scheduler, tensorboard and steps_per_print; "
        "docs/ecosystem.md lists every key)",
        source_, name);
  }
  bool runtime_only(const std::string& name) {
    if (!kRuntimeOnly.count(name)) return false;
    out_.runtime_only.push_back(name);
    return true;
  }
  double number(const Json& v, const std::string& name) {
    PX_CHECK(!(v.is_string() && v.get<std::string>() == "auto"),
             "{}: '{}' is \"auto\", which the Hugging Face Trainer fills in; give a number",
             source_, name);
    PX_CHECK(v.is_number(), "{}: '{}' must be a number, got {}", source_, name, v.dump());
    return v.get<double>();
  }
  int64_t integer(const Json& v, const std::string& name) {
    const double d = number(v, name);
    PX_CHECK(v.is_number_integer(), "{}: '{}' must be an integer, got {}", source_, name, d);
    return v.get<int64_t>();
  }
  bool boolean(const Json& v, const std::string& name) {
    PX_CHECK(v.is_boolean(), "{}: '{}' must be true or false, got {}", source_, name, v.dump());
    return v.get<bool>();
  }
  std::string text(const Json& v, const std::string& name) {
    PX_CHECK(v.is_string(), "{}: '{}' must be a string, got {}", source_, name, v.dump());
    return v.get<std::string>();
  }
  const Json& object(const Json& v, const std::string& name) {
    PX_CHECK(v.is_object(), "{}: '{}' must be an object, got {}", source_, name, v.dump());
    return v;
  }
  void each(const Json& v, const std::string& name,
            const std::function<void(const std::string&, const Json&, const std::string&)>& f) {
    for (const auto& [k, x] : object(v, name).items()) {
      const std::string full = name + "." + k;
      if (!runtime_only(full)) f(k, x, full);
    }
  }

  // {"type": .., "params": {..}}, the shape of "optimizer" and "scheduler".
  std::pair<std::string, const Json*> type_and_params(const Json& v, const std::string& name) {
    std::string type;
    const Json* params = nullptr;
    each(v, name, [&](const std::string& f, const Json& x, const std::string& full) {
      if (f == "type")
        type = text(x, full);
      else if (f == "params")
        params = &object(x, full);
      else
        unsupported(full);
    });
    return {type, params};
  }

  void key(const std::string& k, const Json& v) {
    if (runtime_only(k)) return;
    TrainConfig& t = rc_.train;
    if (k == "train_batch_size") {
      out_.batch.train_batch = integer(v, k);
    } else if (k == "train_micro_batch_size_per_gpu") {
      out_.batch.micro = integer(v, k);
    } else if (k == "gradient_accumulation_steps") {
      out_.batch.accum = integer(v, k);
    } else if (k == "gradient_clipping") {
      t.training.clip_grad = number(v, k);
    } else if (k == "steps_per_print") {
      t.logging.log_interval = integer(v, k);
    } else if (k == "gradient_checkpointing") {
      // Not a DeepSpeed key but the Hugging Face one seed 003's example puts
      // beside them: recompute every layer in backward.
      if (boolean(v, k)) t.training.recompute = Recompute::Full;
    } else if (k == "zero_optimization") {
      zero(v, k);
    } else if (k == "fp16") {
      fp16(v, k);
    } else if (k == "bf16") {
      each(v, k, [&](const std::string& f, const Json& x, const std::string& full) {
        if (f != "enabled") unsupported(full);
        if (boolean(x, full)) t.precision.matmul = Precision::BF16;
      });
    } else if (k == "optimizer") {
      optimizer(v, k);
    } else if (k == "scheduler") {
      scheduler(v, k);
    } else if (k == "tensorboard") {
      tensorboard(v, k);
    } else {
      unsupported(k);
    }
  }

  void zero(const Json& v, const std::string& name) {
    DpOptions& dp = rc_.train.parallelism.dp;
    each(v, name, [&](const std::string& f, const Json& x, const std::string& full) {
      if (f == "stage") {
        dp.zero = static_cast<int>(integer(x, full));
        PX_CHECK(dp.zero >= 0 && dp.zero <= 3, "{}: '{}' must be 0-3, got {}", source_, full,
                 dp.zero);
      } else if (f == "overlap_comm") {
        dp.overlap = boolean(x, full);
      } else if (f == "reduce_bucket_size") {
        dp.bucket_mb = number(x, full) * 4.0 / (1024.0 * 1024.0);  // elements -> fp32 MiB
      } else if (f == "offload_optimizer" || f == "offload_param") {
        offload(x, full);
      } else {
        unsupported(full);
      }
    });
  }

  void offload(const Json& v, const std::string& name) {
    each(v, name, [&](const std::string& f, const Json& x, const std::string& full) {
      if (f == "pin_memory" || f == "buffer_count" || f == "buffer_size" || f == "fast_init" ||
          f == "ratio")
        return out_.runtime_only.push_back(full);
      if (f != "device") unsupported(full);
      const std::string dev = text(x, full);
      PX_CHECK(dev == "cpu" || dev == "none",
               "{}: '{}' is '{}': parallm offloads nothing to NVMe (cpu or none)", source_, full,
               dev);
      if (dev == "cpu")
        out_.notes.push_back(name +
                             " to cpu: parallm runs on the CPU, the tensors are in host "
                             "memory already");
    });
  }

  void fp16(const Json& v, const std::string& name) {
    PrecisionConfig& p = rc_.train.precision;
    bool enabled = false, static_scale = false;
    double scale = 0;
    each(v, name, [&](const std::string& f, const Json& x, const std::string& full) {
      if (f == "enabled") {
        enabled = boolean(x, full);
      } else if (f == "loss_scale") {
        scale = number(x, full);  // 0: dynamic
        static_scale = scale > 0;
      } else if (f == "initial_scale_power") {
        p.loss_scale.initial_scale = std::ldexp(1.0, static_cast<int>(integer(x, full)));
      } else if (f == "loss_scale_window") {
        p.loss_scale.window = integer(x, full);
      } else if (f == "hysteresis") {
        p.loss_scale.hysteresis = integer(x, full);
      } else if (f == "min_loss_scale") {
        p.loss_scale.min_scale = number(x, full);
      } else {
        unsupported(full);
      }
    });
    if (!enabled) return;
    p.matmul = Precision::FP16;
    if (static_scale) {  // DeepSpeed's static scale: overflowing steps are skipped, no change
      p.loss_scale.initial_scale = scale;
      p.loss_scale.growth_factor = 1.0;
      p.loss_scale.backoff_factor = 1.0;
    }
  }

  void optimizer(const Json& v, const std::string& name) {
    OptimizerConfig& o = rc_.train.optimizer;
    bool adam_w_mode = true;  // DeepSpeed's Adam is AdamW unless told otherwise
    const auto typed = type_and_params(v, name);
    const std::string& type = typed.first;
    const Json* params = typed.second;
    std::string lower = type;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    PX_CHECK(lower == "adam" || lower == "adamw" || lower == "sgd",
             "{}: optimizer type '{}' is not supported (Adam, AdamW or SGD)", source_, type);
    if (params)
      each(*params, name + ".params",
           [&](const std::string& f, const Json& x, const std::string& full) {
             if (f == "lr") {
               o.lr = number(x, full);
             } else if (f == "betas") {
               PX_CHECK(x.is_array() && x.size() == 2, "{}: '{}' must be [beta1, beta2], got {}",
                        source_, full, x.dump());
               o.beta1 = number(x[0], full);
               o.beta2 = number(x[1], full);
             } else if (f == "eps") {
               o.eps = number(x, full);
             } else if (f == "weight_decay") {
               o.weight_decay = number(x, full);
             } else if (f == "momentum") {
               o.momentum = number(x, full);
             } else if (f == "nesterov") {
               o.nesterov = boolean(x, full);
             } else if (f == "adam_w_mode") {
               adam_w_mode = boolean(x, full);
             } else {
               unsupported(full);
             }
           });
    if (lower == "sgd")
      o.kind = o.momentum > 0 ? OptimizerKind::SGDMomentum : OptimizerKind::SGD;
    else
      o.kind = lower == "adam" && !adam_w_mode ? OptimizerKind::Adam : OptimizerKind::AdamW;
  }

  void scheduler(const Json& v, const std::string& name) {
    LrScheduleConfig& s = rc_.train.lr_schedule;
    const auto typed = type_and_params(v, name);
    const std::string& type = typed.first;
    const Json* params = typed.second;
    PX_CHECK(type == "WarmupLR" || type == "WarmupDecayLR",
             "{}: scheduler type '{}' is not supported (WarmupLR or WarmupDecayLR)", source_, type);
    // DeepSpeed's defaults: min 0, max 0.001, 1000 steps, log warmup.
    double min_lr = 0, max_lr = 0.001;
    int64_t warmup = 1000, total = 0;
    std::string style = "log";
    if (params)
      each(*params, name + ".params",
           [&](const std::string& f, const Json& x, const std::string& full) {
             if (f == "warmup_min_lr")
               min_lr = number(x, full);
             else if (f == "warmup_max_lr")
               max_lr = number(x, full);
             else if (f == "warmup_num_steps")
               warmup = integer(x, full);
             else if (f == "warmup_type")
               style = text(x, full);
             else if (f == "total_num_steps" && type == "WarmupDecayLR")
               total = integer(x, full);
             else if (f != "last_batch_iteration")
               unsupported(full);
           });
    PX_CHECK(style == "log" || style == "linear",
             "{}: '{}.params.warmup_type' is '{}' (log or linear)", source_, name, style);
    PX_CHECK(max_lr > 0 && min_lr >= 0 && min_lr <= max_lr,
             "{}: need 0 <= warmup_min_lr ({}) <= warmup_max_lr ({}) and warmup_max_lr > 0",
             source_, min_lr, max_lr);
    PX_CHECK(type != "WarmupDecayLR" || total > 0,
             "{}: WarmupDecayLR needs params.total_num_steps > 0", source_);
    rc_.train.optimizer.lr = max_lr;          // the scheduler sets every step's lr
    s.warmup = std::max<int64_t>(2, warmup);  // DeepSpeed clamps it the same way
    s.warmup_style = warmup_style_from_name(style);
    s.warmup_start_ratio = min_lr / max_lr;
    s.min_lr_ratio = min_lr / max_lr;  // WarmupDecayLR ends at warmup_min_lr
    s.decay_style = type == "WarmupLR" ? DecayStyle::Constant : DecayStyle::Linear;
    s.decay_steps = total;
  }

  void tensorboard(const Json& v, const std::string& name) {
    bool enabled = false;
    std::string dir = "runs", job;
    each(v, name, [&](const std::string& f, const Json& x, const std::string& full) {
      if (f == "enabled")
        enabled = boolean(x, full);
      else if (f == "output_path")
        dir = text(x, full);
      else if (f == "job_name")
        job = text(x, full);
      else
        unsupported(full);
    });
    if (enabled) rc_.train.logging.tensorboard_dir = job.empty() ? dir : dir + "/" + job;
  }

  std::string source_;
  RunConfig& rc_;
  DeepSpeedResult& out_;
};

}  // namespace

DeepSpeedResult apply_deepspeed_json(const std::string& text, const std::string& source,
                                     RunConfig& rc) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  PX_CHECK(!j.is_discarded(), "{}: not valid JSON", source);
  DeepSpeedResult out;
  Reader(source, rc, out).top(j);
  return out;
}

DeepSpeedResult apply_deepspeed_config(const std::string& path, RunConfig& rc) {
  std::ifstream in(path);
  PX_CHECK(in.is_open(), "--deepspeed: cannot open '{}'", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return apply_deepspeed_json(ss.str(), path, rc);
}

void resolve_deepspeed_batch(const DeepSpeedBatch& b, int dp, bool flag_micro, bool flag_global,
                             TrainingConfig& t) {
  auto [tbs, micro, accum] = b;
  for (auto [v, name] :
       {std::pair{tbs, "train_batch_size"}, std::pair{micro, "train_micro_batch_size_per_gpu"},
        std::pair{accum, "gradient_accumulation_steps"}})
    PX_CHECK(!v || *v > 0, "DeepSpeed '{}' must be positive, got {}", name, *v);
  if (!tbs && !micro && !accum) return;            // nothing said about the batch
  if (!tbs && !micro) micro = t.micro_batch_size;  // accumulation alone: keep the micro-batch
  if (!accum) {
    if (tbs && micro) {
      PX_CHECK(*tbs % (*micro * dp) == 0,
               "DeepSpeed train_batch_size ({}) is not divisible by "
               "train_micro_batch_size_per_gpu ({}) x dp ({})",
               *tbs, *micro, dp);
      accum = *tbs / (*micro * dp);
    } else {
      accum = 1;
    }
  }
  if (!micro) {
    PX_CHECK(*tbs % (*accum * dp) == 0,
             "DeepSpeed train_batch_size ({}) is not divisible by gradient_accumulation_steps "
             "({}) x dp ({})",
             *tbs, *accum, dp);
    micro = *tbs / (*accum * dp);
  }
  if (!tbs) tbs = *micro * *accum * dp;
  PX_CHECK(*tbs == *micro * *accum * dp,
           "DeepSpeed batch sizes disagree: train_batch_size ({}) != "
           "train_micro_batch_size_per_gpu ({}) x gradient_accumulation_steps ({}) x dp ({})",
           *tbs, *micro, *accum, dp);
  if (!flag_micro) t.micro_batch_size = *micro;
  if (!flag_global) t.global_batch_size = *tbs;
}

}  // namespace parallm
