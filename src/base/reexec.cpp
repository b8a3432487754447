// reexec_with_env (see reexec.h).
#include "base/reexec.h"

#include <fmt/core.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

namespace parallm {

std::string reexec_with_env(const char* name, const char* value) {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  const std::string cmdline((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (cmdline.empty()) return "cannot read /proc/self/cmdline";
  // NUL-separated, NUL-terminated; the arguments point into cmdline.
  std::vector<char*> argv;
  for (size_t i = 0; i < cmdline.size(); i += std::strlen(cmdline.data() + i) + 1)
    argv.push_back(const_cast<char*>(cmdline.data() + i));
  argv.push_back(nullptr);
  if (setenv(name, value, 1) != 0) return fmt::format("setenv {}: {}", name, std::strerror(errno));
  execv("/proc/self/exe", argv.data());
  const int err = errno;
  unsetenv(name);  // not restarted: leave the environment as it was
  return fmt::format("exec /proc/self/exe: {}", std::strerror(err));
}

}  // namespace parallm
