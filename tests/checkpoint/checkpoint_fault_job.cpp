// A training job whose rank 1 dies in the middle of writing its checkpoint
// shard, for checkpoint.faults: it trains the run file's job to --steps with
// its save interval; at step `kill_step` rank 1 cuts its shard file in half
// and kills itself (SIGKILL) before the manifest exists.
// Usage: checkpoint_fault_job RUN.toml KILL_STEP
#include <signal.h>

#include <filesystem>
#include <iostream>
#include <string>

#include "base/error.h"
#include "comm/mpi/mpi_runtime.h"
#include "io/checkpoint/checkpoint_dir.h"
#include "train/train_job.h"

using namespace parallm;

int main(int argc, char** argv) {
  PX_CHECK(argc == 3, "usage: checkpoint_fault_job RUN.toml KILL_STEP");
  TrainJobOptions o;
  o.run = load_run_config(argv[1]);
  o.threads = 1;
  const std::string victim = step_dir_name(std::stoll(argv[2])) + ".tmp";
  o.checkpoint_shard_hook = [&](int rank, const std::string& path) {
    if (rank != 1 || path.find(victim) == std::string::npos) return;
    std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
    raise(SIGKILL);
  };
  const LaunchEnv env = read_launch_env();
  return comm::run_mpi_job([&](comm::MpiRuntime& rt) {
    auto world = rt.world();
    run_train_job(o, env, std::cerr, world.get());
    return 0;
  });
}
