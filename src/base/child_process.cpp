#include "base/child_process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <sstream>

#include "base/error.h"

namespace parallm {

int run_child(const std::vector<std::string>& argv,
              const std::vector<std::pair<std::string, std::string>>& env,
              const std::string& log_path) {
  PX_CHECK(!argv.empty(), "run_child: no program given");
  const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  PX_CHECK(log >= 0, "cannot write the log '{}'", log_path);
  std::vector<char*> args = exec_array(argv);
  const std::vector<std::string> vars = environment_with(env);
  std::vector<char*> envp = exec_array(vars);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log);
    PX_FAIL("cannot start '{}': fork failed", argv[0]);
  }
  if (pid == 0) {  // the child: only async-signal-safe calls until exec
    ::dup2(log, STDOUT_FILENO);
    ::dup2(log, STDERR_FILENO);
    ::close(log);
    ::execvpe(args[0], args.data(), envp.data());
    _exit(127);
  }
  ::close(log);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

std::vector<std::string> environment_with(
    const std::vector<std::pair<std::string, std::string>>& env) {
  std::vector<std::string> vars;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    bool replaced = false;
    for (const auto& [k, v] : env) replaced = replaced || kv.rfind(k + "=", 0) == 0;
    if (!replaced) vars.push_back(kv);
  }
  for (const auto& [k, v] : env) vars.push_back(k + "=" + v);
  return vars;
}

std::vector<char*> exec_array(const std::vector<std::string>& words) {
  std::vector<char*> out;
  for (const std::string& w : words) out.push_back(const_cast<char*>(w.c_str()));
  out.push_back(nullptr);
  return out;
}

std::string self_executable() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  PX_CHECK(n > 0, "cannot read /proc/self/exe");
  return std::string(buf, static_cast<size_t>(n));
}

std::vector<std::string> split_words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::vector<std::string> split_list(const std::string& s, char sep) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  size_t at = 0;
  for (size_t end; (end = s.find(sep, at)) != std::string::npos; at = end + 1)
    out.push_back(s.substr(at, end - at));
  out.push_back(s.substr(at));
  return out;
}

}  // namespace parallm
