// PeerSocket: whether the client of a request that is being answered is
// still connected, for requests that write nothing until they are done
// (not streamed). cpp-httplib 0.11 gives a handler no socket, only the
// connection's addresses, so the socket is found once among this process's
// descriptors by its (peer address, peer port, local port); it stays open
// while the handler runs (httplib closes it only afterwards), so the
// descriptor cannot be reused under us.
#pragma once
#include <string>

namespace parallm::serve {

class PeerSocket {
 public:
  // Finds the connected TCP socket; when none matches, gone() is always false.
  PeerSocket(const std::string& peer_addr, int peer_port, int local_port);

  bool found() const { return fd_ >= 0; }
  // True once the peer has closed or reset the connection (a half-close
  // counts: HTTP clients close only when they give up). Reads nothing: data
  // a client sent ahead (a pipelined request) stays for httplib.
  bool gone() const;

 private:
  int fd_ = -1;
};

}  // namespace parallm::serve
