// PeerSocket (see peer_socket.h).
#include "infer/serve/peer_socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <filesystem>
#include <system_error>

namespace parallm::serve {
namespace {

// The numeric address and port of a socket address (IPv4 or IPv6).
bool address_of(const sockaddr_storage& sa, std::string& addr, int& port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (sa.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(sa);
    if (!inet_ntop(AF_INET, &in.sin_addr, buf, sizeof buf)) return false;
    port = ntohs(in.sin_port);
  } else if (sa.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(sa);
    if (!inet_ntop(AF_INET6, &in6.sin6_addr, buf, sizeof buf)) return false;
    port = ntohs(in6.sin6_port);
  } else {
    return false;
  }
  addr = buf;
  return true;
}

bool matches(int fd, const std::string& peer_addr, int peer_port, int local_port) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  sockaddr_storage local{}, peer{};
  socklen_t n = sizeof local, m = sizeof peer;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &n) != 0 ||
      getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &m) != 0)
    return false;
  std::string la, pa;
  int lp = -1, pp = -1;
  if (!address_of(local, la, lp) || !address_of(peer, pa, pp)) return false;
  // httplib may print an IPv6 address with its zone ("fe80::1%eth0").
  const std::string want = peer_addr.substr(0, peer_addr.find('%'));
  return lp == local_port && pp == peer_port && pa == want;
}

}  // namespace

PeerSocket::PeerSocket(const std::string& peer_addr, int peer_port, int local_port) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    const std::string name = entry.path().filename().string();
    int fd = -1;
    if (std::from_chars(name.data(), name.data() + name.size(), fd).ec != std::errc{}) continue;
    if (matches(fd, peer_addr, peer_port, local_port)) {
      fd_ = fd;
      return;
    }
  }
}

bool PeerSocket::gone() const {
  if (fd_ < 0) return false;
  pollfd p{fd_, static_cast<short>(POLLIN | POLLRDHUP), 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return true;
  char c;
  const ssize_t r = recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

}  // namespace parallm::serve
