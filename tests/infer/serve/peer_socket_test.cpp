// PeerSocket over a real loopback connection: found by its addresses, alive
// while the client is connected (also with unread data pending), gone once
// the client closes or resets it, and never "gone" when nothing matched.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "infer/serve/peer_socket.h"

namespace parallm::serve {
namespace {

struct Connection {
  int listener = -1, client = -1, server = -1;
  int server_port = 0, client_port = 0;

  Connection() {
    listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t n = sizeof a;
    EXPECT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(listen(listener, 1), 0);
    EXPECT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&a), &n), 0);
    server_port = ntohs(a.sin_port);
    client = socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_EQ(connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    server = accept(listener, nullptr, nullptr);
    sockaddr_in c{};
    n = sizeof c;
    EXPECT_EQ(getsockname(client, reinterpret_cast<sockaddr*>(&c), &n), 0);
    client_port = ntohs(c.sin_port);
  }
  ~Connection() {
    for (int fd : {listener, client, server})
      if (fd >= 0) close(fd);
  }
};

// Closing is seen by the other side at once on loopback; allow a moment.
bool becomes_gone(const PeerSocket& p) {
  for (int i = 0; i < 200; ++i) {
    if (p.gone()) return true;
    usleep(1000);
  }
  return false;
}

TEST(PeerSocket, AliveUntilTheClientCloses) {
  Connection c;
  PeerSocket p("127.0.0.1", c.client_port, c.server_port);
  ASSERT_TRUE(p.found());
  EXPECT_FALSE(p.gone());
  ASSERT_EQ(send(c.client, "GET", 3, 0), 3);  // a pipelined request is not a goodbye
  usleep(10000);
  EXPECT_FALSE(p.gone());
  char buf[4] = {};
  EXPECT_EQ(recv(c.server, buf, 3, 0), 3);  // nothing was consumed by gone()
  EXPECT_EQ(std::strncmp(buf, "GET", 3), 0);
  close(c.client);
  c.client = -1;
  EXPECT_TRUE(becomes_gone(p));
}

TEST(PeerSocket, AResetIsGone) {
  Connection c;
  PeerSocket p("127.0.0.1", c.client_port, c.server_port);
  ASSERT_TRUE(p.found());
  linger l{1, 0};  // close with RST
  ASSERT_EQ(setsockopt(c.client, SOL_SOCKET, SO_LINGER, &l, sizeof l), 0);
  close(c.client);
  c.client = -1;
  EXPECT_TRUE(becomes_gone(p));
}

TEST(PeerSocket, NoMatchIsNeverGone) {
  Connection c;
  PeerSocket p("127.0.0.1", c.client_port, c.server_port + 1 == 65536 ? 1 : c.server_port + 1);
  EXPECT_FALSE(p.found());
  close(c.client);
  c.client = -1;
  EXPECT_FALSE(p.gone());
}

}  // namespace
}  // namespace parallm::serve
