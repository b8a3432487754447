// Running this program again in place with one more environment variable,
// for settings a library reads only when it is loaded (libgomp's wait
// policy): the variable is set, then /proc/self/exe is executed with the
// arguments of /proc/self/cmdline, so the process keeps its pid, open
// descriptors, signal mask and the rest of its environment (an MPI rank
// stays the same rank). Call it before any thread or MPI starts.
#pragma once
#include <string>

namespace parallm {

// Does not return when it worked; returns a message saying why not.
std::string reexec_with_env(const char* name, const char* value);

}  // namespace parallm
