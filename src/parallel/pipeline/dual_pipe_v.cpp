// DualPipeV's phases, as DeepSeek's reference schedule orders them (the
// comments name each phase by its passes: F0 a forward of chunk 0, B1 a
// backward of chunk 1, W a deferred weight pass).
#include "parallel/pipeline/dual_pipe_v.h"

#include <deque>

#include "base/error.h"

namespace parallm::pipeline {
namespace {

// One stage's list under construction: per-chunk counters of the next
// micro-batch to run forward and backward, and the W passes still owed.
class StageList {
 public:
  void forward(int chunk) { out_.push_back({ActionKind::Forward, next_f_[chunk]++, chunk, -1}); }
  // A whole backward, or (split) its input half now and its W later.
  void backward(int chunk, bool split) {
    const int mb = next_b_[chunk]++;
    if (!split) {
      out_.push_back({ActionKind::Backward, mb, chunk, -1});
      return;
    }
    out_.push_back({ActionKind::BackwardInput, mb, chunk, -1});
    owed_.push_back({ActionKind::BackwardWeight, mb, chunk, -1});
  }
  // The oldest W owed (they run in the order of their B's).
  void weight() {
    PX_CHECK(!owed_.empty(), "DualPipeV: a W pass with none owed");
    out_.push_back(owed_.front());
    owed_.pop_front();
  }
  std::vector<Action> take() {
    PX_CHECK(owed_.empty(), "DualPipeV: {} W passes never ran", owed_.size());
    return std::move(out_);
  }

 private:
  std::vector<Action> out_;
  std::deque<Action> owed_;
  int next_f_[2] = {0, 0}, next_b_[2] = {0, 0};
};

std::vector<Action> stage_list(int pp, int s, int m) {
  StageList l;
  // 1: F0 x 2(pp - s - 1), filling the way down.
  for (int i = 0; i < 2 * (pp - s - 1); ++i) l.forward(0);
  // 2: (F0 F1) x (s + 1), the turn of the V reaching this stage.
  for (int i = 0; i < s + 1; ++i) {
    l.forward(0);
    l.forward(1);
  }
  // 3: (B1 W F1) x (pp - s - 1): the first backwards come up; each W fills
  // the wait for the next chunk-1 activation.
  for (int i = 0; i < pp - s - 1; ++i) {
    l.backward(1, true);
    l.weight();
    l.forward(1);
  }
  // 4, the steady state: (F0 B1 F1 B0) x (m - 2 pp + s + 1).
  for (int i = 0; i < m - 2 * pp + s + 1; ++i) {
    l.forward(0);
    l.backward(1, false);
    l.forward(1);
    l.backward(0, false);
  }
  // 5: (B1 F1 B0) x (pp - s - 1): chunk-0 forwards are done.
  for (int i = 0; i < pp - s - 1; ++i) {
    l.backward(1, false);
    l.forward(1);
    l.backward(0, false);
  }
  // 6: (B1 B0) x (s + 1), the second half split so that its W's can fill
  // the drain (on odd stages from B1 on, on even ones from B0).
  bool split = false;
  for (int i = 0; i < s + 1; ++i) {
    if (i == (s + 1) / 2 && s % 2 == 1) split = true;
    l.backward(1, split);
    if (i == (s + 1) / 2 && s % 2 == 0) split = true;
    l.backward(0, split);
  }
  // 7: (W B0) x (pp - s - 1); 8: the W's left.
  for (int i = 0; i < pp - s - 1; ++i) {
    l.weight();
    l.backward(0, true);
  }
  for (int i = 0; i < s + 1; ++i) l.weight();
  return l.take();
}

}  // namespace

std::vector<std::vector<Action>> dual_pipe_v_compute(int pp, int m) {
  PX_CHECK(m >= 2 * pp, "DualPipeV needs micro-batches ({}) of at least 2 x pp ({})", m, pp);
  std::vector<std::vector<Action>> out;
  for (int s = 0; s < pp; ++s) out.push_back(stage_list(pp, s, m));
  return out;
}

}  // namespace parallm::pipeline
