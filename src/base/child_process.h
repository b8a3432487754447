// Running another program and waiting for it: `parallm verify` starts
// `parallm train` once alone and once under mpirun. The child gets this
// process's environment plus the pairs given, and its stdout and stderr go
// to one log file (the parent's output stays a verdict, not a training log).
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace parallm {

// Runs argv (argv[0] looked up on PATH) to completion; returns its exit
// status, 128 + the signal when one ended it, or 127 when it could not start.
int run_child(const std::vector<std::string>& argv,
              const std::vector<std::pair<std::string, std::string>>& env,
              const std::string& log_path);

// This process's environment ("K=V" each) with `env`'s pairs set over it:
// what a child gets (built before fork, so the child only calls exec).
std::vector<std::string> environment_with(
    const std::vector<std::pair<std::string, std::string>>& env);

// Pointers to the strings, then a null: argv or envp for exec*.
std::vector<char*> exec_array(const std::vector<std::string>& words);

// The absolute path of the running executable (/proc/self/exe).
std::string self_executable();

// A launcher's words ("mpirun --oversubscribe ..."), split on whitespace.
std::vector<std::string> split_words(const std::string& s);
// "a,b,,c" -> {"a", "b", "", "c"}; "" -> {}.
std::vector<std::string> split_list(const std::string& s, char sep);

// How parallm's own tools start a local multi-rank job (verify, calibrate):
// more ranks than cores allowed, shared-memory transport, and waiting ranks
// yield their core (the ranks share this machine's cores).
inline constexpr const char* kLocalMpirun =
    "mpirun --oversubscribe --bind-to none --mca btl self,vader --mca mpi_yield_when_idle 1";

}  // namespace parallm
