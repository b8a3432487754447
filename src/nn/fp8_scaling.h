// Per-tensor FP8 scales (docs/fp8.md): Transformer Engine's delayed scaling
// and current ("tensorwise") scaling. A tensor is cast as cast(x * scale)
// (saturating) and read back as code * scale_inv, scale_inv = 1 / scale.
// Delayed: each scaled tensor keeps an amax history of history_len steps;
// slot 0 collects this step's amax (the largest of every cast in the step,
// e.g. over micro-batches); update() at the step's end rolls the window
// as Transformer Engine does (slot 0's value moves to the last slot, the
// others shift down one, slot 0 restarts at 0) and sets scale =
// fp8_max * 2^-margin / amax, amax being the window's maximum (Max) or the
// step's own (MostRecent); a zero or non-finite amax keeps the old scale.
// Current: scale = fp8_max * 2^-margin / amax of the tensor being cast.
#pragma once
#include <string>
#include <vector>

#include "tensor/fp8.h"

namespace parallm {

enum class AmaxAlgo { Max, MostRecent };
AmaxAlgo amax_algo_from_name(const std::string& s);  // "max" | "most_recent"

struct DelayedScalingConfig {
  Fp8Format format = Fp8Format::E4M3;
  int history_len = 1024;  // Transformer Engine's default
  AmaxAlgo algo = AmaxAlgo::Max;
  int margin = 0;
  void validate() const;  // history_len >= 1, margin >= 0
};

class DelayedScale {
 public:
  explicit DelayedScale(const DelayedScalingConfig& cfg);
  float scale() const { return scale_; }
  float scale_inv() const { return 1.0f / scale_; }
  // A cast this step saw amax (NaN and infinity included: they keep the
  // scale at update, as in Transformer Engine).
  void record(float amax);
  // The step's end: roll the history, recompute the scale.
  void update();
  const std::vector<float>& history() const { return history_; }
  // Checkpoints: the history and the scale, restored exactly.
  void restore(std::vector<float> history, float scale);

 private:
  DelayedScalingConfig cfg_;
  std::vector<float> history_;
  float scale_ = 1.0f;
};

// Current scaling of one tensor whose largest magnitude is amax (1 when
// amax is zero or not finite).
float current_scale(float amax, Fp8Format f, int margin = 0);

}  // namespace parallm
