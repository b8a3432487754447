#include "launch/job_session.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/child_process.h"
#include "base/error.h"

namespace parallm {
namespace {

// The session id of a live process (/proc/PID/stat field 6), or -1 (gone,
// or a zombie: signals cannot reach it and its parent will reap it).
pid_t session_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s;
  if (!std::getline(in, s)) return -1;
  const size_t close = s.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return -1;
  std::istringstream rest(s.substr(close + 1));
  std::string state;
  long ppid = 0, pgrp = 0, sid = -1;
  rest >> state >> ppid >> pgrp >> sid;
  if (state == "Z") return -1;
  return static_cast<pid_t>(sid);
}

std::vector<pid_t> session_members(pid_t sid) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0') continue;
    if (session_of(static_cast<pid_t>(pid)) == sid) out.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(d);
  return out;
}

}  // namespace

JobSession::JobSession(const std::vector<std::string>& argv,
                       const std::vector<std::pair<std::string, std::string>>& env) {
  PX_CHECK(!argv.empty(), "launch: no command given");
  int fds[2];
  PX_CHECK(::pipe2(fds, O_CLOEXEC) == 0, "launch: cannot make a pipe");
  std::vector<char*> args = exec_array(argv);
  const std::vector<std::string> vars = environment_with(env);  // before fork: the child only execs
  std::vector<char*> envp = exec_array(vars);
  pid_ = ::fork();
  PX_CHECK(pid_ >= 0, "launch: cannot start '{}': fork failed", argv[0]);
  if (pid_ == 0) {  // async-signal-safe calls only until exec
    ::setsid();
    ::dup2(fds[1], STDERR_FILENO);
    ::execvpe(args[0], args.data(), envp.data());
    _exit(127);
  }
  ::close(fds[1]);
  err_fd_ = fds[0];
}

JobSession::~JobSession() {
  kill_all();
  if (!status_ && pid_ > 0) {
    int st = 0;
    ::waitpid(pid_, &st, 0);
  }
  if (err_fd_ >= 0) ::close(err_fd_);
}

void JobSession::split(const char* data, size_t n, std::vector<std::string>& out) {
  partial_.append(data, n);
  size_t start = 0;
  for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1)
    out.push_back(partial_.substr(start, nl - start));
  partial_.erase(0, start);
}

std::vector<std::string> JobSession::read_lines(int timeout_ms) {
  std::vector<std::string> out;
  if (err_fd_ < 0) return out;
  pollfd p{err_fd_, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) <= 0) return out;
  char buf[65536];
  const ssize_t n = ::read(err_fd_, buf, sizeof buf);
  if (n > 0) split(buf, static_cast<size_t>(n), out);
  if (n == 0) {  // every writer is gone
    ::close(err_fd_);
    err_fd_ = -1;
  }
  return out;
}

std::optional<int> JobSession::exit_status() {
  if (status_) return status_;
  int st = 0;
  if (::waitpid(pid_, &st, WNOHANG) != pid_) return std::nullopt;
  status_ = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
  return status_;
}

void JobSession::kill_all() {
  if (pid_ <= 0) return;
  // Members may fork while we look: a few rounds until none is left.
  for (int round = 0; round < 20; ++round) {
    std::vector<pid_t> left = session_members(pid_);
    if (left.empty()) return;
    for (pid_t p : left) ::kill(p, SIGKILL);
    exit_status();  // reap the leader, so it does not stay a zombie member
    ::usleep(20000);
  }
}

std::vector<std::string> JobSession::drain() {
  std::vector<std::string> out;
  while (err_fd_ >= 0) {
    std::vector<std::string> more = read_lines(200);
    if (more.empty() && err_fd_ >= 0) break;  // a writer outside the session keeps it open
    out.insert(out.end(), more.begin(), more.end());
  }
  if (!partial_.empty()) out.push_back(std::move(partial_));
  partial_.clear();
  return out;
}

}  // namespace parallm
