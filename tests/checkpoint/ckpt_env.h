// Shared state of the checkpoint MPI test binary (checkpoint_dist_main.cpp):
// the world (4 ranks), a token shard, a scratch directory every rank sees,
// a tiny GPT-2 with an odd vocabulary (so tp 2 and 4 pad it differently),
// and helpers that run whole training jobs (train_job, as the CLI runs them)
// on the first N ranks and read back their losses and checkpoints.
#pragma once
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "train/train_job.h"

namespace parallm::ckpt_test {

struct CkptTestEnv {
  comm::Communicator* world = nullptr;
  std::string shard;
  std::string scratch;  // removed at the end
};
CkptTestEnv& env();

struct Layout {
  int dp = 1, tp = 1, zero = 0;
  bool ps = false, sp = false;
  bool llama = false;               // LLaMA (GQA, untied head) instead of GPT-2
  std::string optimizer = "adamw";  // --optimizer
  int pp = 1;                       // --pp, with --schedule and --virtual-stages
  std::string schedule = "1f1b";
  int virtual_stages = 1;
  int layers = 2;  // the model's (interleaving 2 stages x 2 needs 4)
  // fp16: a loss scale high enough to overflow at first and a short growth
  // window, so steps are skipped and the scaler's state matters at resume.
  bool fp16 = false;
  int ranks() const { return dp * tp * pp; }
  std::string name() const;  // also a file-name stem
};
inline void PrintTo(const Layout& l, std::ostream* os) { *os << l.name(); }

// A 20-step run of the tiny model under `l` (dropout on, accumulation on).
TrainJobOptions job(const Layout& l, const std::string& save, const std::string& metrics);
// Runs the job on world ranks [0, l.ranks()); the others wait. Collective.
void run_job(const TrainJobOptions& o, const Layout& l);
// Per-step losses of a metrics file, in order, as (step, loss).
std::vector<std::pair<int64_t, double>> read_losses(const std::string& metrics);
// Every tensor of one kind ("param", "exp_avg", "exp_avg_sq") of a
// checkpoint, assembled whole by name (one process, any saved layout).
std::map<std::string, std::vector<float>> consolidate(const std::string& ckpt, const char* kind);
// The uninterrupted 20-step run of a layout (computed once per binary run):
// its losses and final checkpoint directory.
struct Reference {
  std::vector<std::pair<int64_t, double>> losses;
  std::string checkpoint;
};
const Reference& reference(const Layout& l);

}  // namespace parallm::ckpt_test
