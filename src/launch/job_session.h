// A supervised job's processes: the command runs as the leader of a new
// session, so every process it starts (mpirun, its daemons, the ranks) can
// be found and ended together, a SIGSTOPped one included, without knowing
// how the launcher spawned them. Its stderr comes back through a pipe to be
// read (and echoed) line by line; its stdout stays the supervisor's.
#pragma once
#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace parallm {

class JobSession {
 public:
  // Starts argv (looked up on PATH) with this environment plus `env`.
  JobSession(const std::vector<std::string>& argv,
             const std::vector<std::pair<std::string, std::string>>& env);
  ~JobSession();  // ends whatever is left of the session
  JobSession(const JobSession&) = delete;
  JobSession& operator=(const JobSession&) = delete;

  // Complete stderr lines that arrive within `timeout_ms` (none: empty).
  std::vector<std::string> read_lines(int timeout_ms);
  // The exit status once the leader has ended: its code, 128 + a signal.
  std::optional<int> exit_status();
  // SIGKILLs every process of the session still alive (stopped ones too).
  void kill_all();
  // The lines left in the pipe once the leader has ended (after kill_all:
  // nobody holds the pipe open any more).
  std::vector<std::string> drain();

 private:
  pid_t pid_ = -1;
  int err_fd_ = -1;
  std::string partial_;
  std::optional<int> status_;
  void split(const char* data, size_t n, std::vector<std::string>& out);
};

}  // namespace parallm
