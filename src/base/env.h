// The one place that reads the process environment (DESIGN principle 3).
// Everything else receives a LaunchEnv value.
#pragma once
#include <string>

namespace parallm {

struct LaunchEnv {
  int rank = 0;  // global rank from mpirun (OMPI_COMM_WORLD_RANK) or srun (SLURM_PROCID)
  int world_size = 1;
  int local_rank = 0;
  int num_threads = 0;  // OMP_NUM_THREADS, 0 when unset
  // PARALLM_RESTART_COUNT: how many times `parallm launch` restarted this job
  // before this attempt (0: the first attempt, or no supervisor).
  int restart_count = 0;
  bool stdout_is_tty = false;
  bool stderr_is_tty = false;
  // OMP_WAIT_POLICY or GOMP_SPINCOUNT given: the user chose how idle OpenMP
  // threads wait (libgomp reads both once, when it is loaded).
  bool omp_wait_chosen = false;
  // Where parallm keeps per-machine caches (the measured GEMM peak):
  // PARALLM_CACHE_DIR, else $XDG_CACHE_HOME/parallm, else $HOME/.cache/parallm;
  // empty when none is set.
  std::string cache_dir;
};

LaunchEnv read_launch_env();

// PARALLM_MAX_CPU_ISA as set ("" when unset): the newest instruction set the
// CPU kernels may choose at run time (kernels/cpu/cpu_isa.h parses it).
std::string read_max_cpu_isa();

// Whether exec would find `program`: a path that is executable, or a name
// found executable in a PATH directory.
bool program_on_path(const std::string& program);

}  // namespace parallm
