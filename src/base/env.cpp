#include "base/env.h"

#include <unistd.h>

#include <cstdlib>

namespace parallm {
namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  return (end != nullptr && *end == '\0') ? static_cast<int>(x) : fallback;
}

// First variable that is set wins: Open MPI, then Slurm, then torchrun.
int first_int(std::initializer_list<const char*> names, int fallback) {
  for (const char* n : names) {
    int v = env_int(n, -1);
    if (v >= 0) return v;
  }
  return fallback;
}

}  // namespace

LaunchEnv read_launch_env() {
  LaunchEnv e;
  e.rank = first_int({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "RANK"}, 0);
  e.world_size = first_int({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", "WORLD_SIZE"}, 1);
  e.local_rank = first_int({"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "LOCAL_RANK"}, 0);
  e.num_threads = env_int("OMP_NUM_THREADS", 0);
  e.restart_count = env_int("PARALLM_RESTART_COUNT", 0);
  e.stdout_is_tty = isatty(STDOUT_FILENO) != 0;
  e.stderr_is_tty = isatty(STDERR_FILENO) != 0;
  e.omp_wait_chosen =
      std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr;
  if (const char* d = std::getenv("PARALLM_CACHE_DIR"); d && *d)
    e.cache_dir = d;
  else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    e.cache_dir = std::string(x) + "/parallm";
  else if (const char* h = std::getenv("HOME"); h && *h)
    e.cache_dir = std::string(h) + "/.cache/parallm";
  return e;
}

std::string read_max_cpu_isa() {
  const char* v = std::getenv("PARALLM_MAX_CPU_ISA");
  return v != nullptr ? v : "";
}

bool program_on_path(const std::string& program) {
  if (program.find('/') != std::string::npos) return ::access(program.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  const std::string dirs = path != nullptr ? path : "";
  for (size_t at = 0; at <= dirs.size();) {
    size_t end = dirs.find(':', at);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = end > at ? dirs.substr(at, end - at) : ".";  // empty: the cwd
    if (::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
    at = end + 1;
  }
  return false;
}

}  // namespace parallm
