// Learning-rate schedule: warmup, then a decay to min_lr. The default is
// llm.c's: step s < warmup gets lr * (s + 1) / warmup, then cosine. The
// other shapes are those DeepSpeed's schedulers and Megatron's
// --lr-decay-style name: warmup from start_ratio x lr by s / warmup
// ("linear") or log(s + 1) / log(warmup) ("log"), then constant, linear or
// cosine decay ending at decay_steps (0: the run's steps). Its shape is the
// [lr_schedule] table (LrScheduleConfig); the peak is the optimizer's lr.
#pragma once
#include <cstdint>
#include <string>

namespace parallm {

enum class WarmupStyle { LlmC, Linear, Log };
enum class DecayStyle { Cosine, Linear, Constant };
WarmupStyle warmup_style_from_name(const std::string& s);  // llmc | linear | log
DecayStyle decay_style_from_name(const std::string& s);    // cosine | linear | constant

struct LrScheduleConfig {
  int64_t warmup = 10;        // --warmup: warmup steps
  double min_lr_ratio = 0.1;  // --min-lr-ratio: the final lr as a fraction of the peak
  WarmupStyle warmup_style = WarmupStyle::LlmC;
  DecayStyle decay_style = DecayStyle::Cosine;  // --lr-decay-style
  double warmup_start_ratio = 0;  // Linear/Log warmup start, as a fraction of the peak
  int64_t decay_steps = 0;        // where the decay ends; 0: the run's steps

  void validate() const;
};

struct LrSchedule {
  double lr = 6e-4;
  int64_t warmup = 0;
  int64_t total_steps = 1;
  double min_lr_ratio = 0.1;  // min_lr = lr * min_lr_ratio
  WarmupStyle warmup_style = WarmupStyle::LlmC;
  DecayStyle decay_style = DecayStyle::Cosine;
  double warmup_start_ratio = 0;

  double at(int64_t step) const;  // 0-based step
};

}  // namespace parallm
