// Token shards: both formats round trip, the writer is atomic, and every
// validation failure names the file and the numbers involved.
#include "data/token_shard.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "common/test_util.h"

namespace parallm {
namespace {

namespace fs = std::filesystem;

using testing::TempDir;

void write_raw(const std::string& path, int32_t magic, int32_t version, int32_t count,
               size_t payload_bytes) {
  int32_t header[256] = {};
  header[0] = magic;
  header[1] = version;
  header[2] = count;
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(header), sizeof(header));
  std::string payload(payload_bytes, '\0');
  out.write(payload.data(), static_cast<std::streamsize>(payload.size()));
}

// Runs f, expecting an Error whose message contains every piece.
template <typename F>
void expect_error(F&& f, std::initializer_list<std::string> pieces) {
  try {
    f();
    ADD_FAILURE() << "expected parallm::Error";
  } catch (const Error& e) {
    std::string msg = e.what();
    for (const std::string& p : pieces)
      EXPECT_NE(msg.find(p), std::string::npos) << msg << "\n  lacks: " << p;
  }
}

TEST(TokenShard, Uint16RoundTrip) {
  TempDir d;
  std::vector<int32_t> tokens = {0, 1, 256, 50256, 65535, 7};
  write_token_shard(d.file("a.bin"), tokens);
  EXPECT_EQ(fs::file_size(d.file("a.bin")), 1024u + tokens.size() * 2);
  TokenShard s(d.file("a.bin"));
  EXPECT_EQ(s.format(), ShardFormat::U16);
  ASSERT_EQ(s.size(), 6);
  std::vector<int32_t> back(6);
  s.read(0, 6, back.data());
  EXPECT_EQ(back, tokens);
  EXPECT_EQ(s.max_token(), 65535);
  EXPECT_EQ(s.find_token_at_least(257), 3);
  EXPECT_EQ(s.find_token_at_least(65536), -1);
  std::vector<int32_t> mid(2);
  s.read(2, 2, mid.data());
  EXPECT_EQ(mid, (std::vector<int32_t>{256, 50256}));
  expect_error([&] { s.read(5, 2, mid.data()); }, {d.file("a.bin"), "[5, 7)", "[0, 6)"});

  // The header matches llm.c byte for byte.
  std::ifstream in(d.file("a.bin"), std::ios::binary);
  int32_t h[3];
  in.read(reinterpret_cast<char*>(h), sizeof(h));
  EXPECT_EQ(h[0], 20240520);
  EXPECT_EQ(h[1], 1);
  EXPECT_EQ(h[2], 6);
}

TEST(TokenShard, Uint32RoundTripChosenByMaxToken) {
  TempDir d;
  std::vector<int32_t> tokens = {5, 65536, 128000, 0};
  write_token_shard(d.file("b.bin"), tokens);
  TokenShard s(d.file("b.bin"));
  EXPECT_EQ(s.format(), ShardFormat::U32);
  EXPECT_EQ(fs::file_size(d.file("b.bin")), 1024u + 4 * 4);
  std::vector<int32_t> back(4);
  s.read(0, 4, back.data());
  EXPECT_EQ(back, tokens);
  EXPECT_EQ(s.max_token(), 128000);

  // Explicit U32 for small ids; explicit U16 refuses a large id.
  write_token_shard(d.file("c.bin"), std::vector<int32_t>{1, 2}, ShardFormat::U32);
  EXPECT_EQ(TokenShard(d.file("c.bin")).format(), ShardFormat::U32);
  expect_error([&] { write_token_shard(d.file("e.bin"), tokens, ShardFormat::U16); },
               {d.file("e.bin"), "token 65536 at index 1", "uint16"});
  expect_error(
      [&] {
        write_token_shard(d.file("e.bin"), std::vector<int32_t>{3, -2});
      },
      {d.file("e.bin"), "token -2 at index 1 is negative"});
  EXPECT_FALSE(fs::exists(d.file("e.bin")));
}

TEST(TokenShard, EmptyShardAndMove) {
  TempDir d;
  write_token_shard(d.file("z.bin"), std::vector<int32_t>{});
  TokenShard s(d.file("z.bin"));
  EXPECT_EQ(s.size(), 0);
  EXPECT_EQ(s.max_token(), -1);
  TokenShard t = std::move(s);
  EXPECT_EQ(t.path(), d.file("z.bin"));
  EXPECT_EQ(s.size(), 0);
}

TEST(TokenShard, AtomicWriteLeavesNoTempAndReplaces) {
  TempDir d;
  write_token_shard(d.file("r.bin"), std::vector<int32_t>{1, 2, 3});
  write_token_shard(d.file("r.bin"), std::vector<int32_t>{9});
  EXPECT_EQ(TokenShard(d.file("r.bin")).size(), 1);
  int n = 0;
  for (const auto& e : fs::directory_iterator(d.path)) ++n, (void)e;
  EXPECT_EQ(n, 1);  // no r.bin.tmp.<pid> left behind
  // An unwritable destination fails with the path in the message.
  expect_error([&] { write_token_shard(d.file("no/such/dir.bin"), std::vector<int32_t>{1}); },
               {d.file("no/such/dir.bin") + ".tmp."});
}

TEST(TokenShard, ValidationErrorsNameTheFileAndNumbers) {
  TempDir d;
  const std::string p = d.file("bad.bin");
  expect_error([&] { TokenShard s(d.file("missing.bin")); },
               {"token shard", d.file("missing.bin"), "cannot open", "No such file"});

  std::ofstream(p, std::ios::binary) << "short";
  expect_error([&] { TokenShard s(p); }, {p, "file is 5 bytes, shorter than the 1024-byte header"});

  write_raw(p, 12345, 1, 0, 0);
  expect_error([&] { TokenShard s(p); }, {p, "unknown magic 12345", "20240520", "20240801"});

  write_raw(p, 20240520, 7, 0, 0);
  expect_error([&] { TokenShard s(p); },
               {p, "version 7 does not match magic 20240520 (expected version 1)"});
  write_raw(p, 20240801, 1, 0, 0);
  expect_error([&] { TokenShard s(p); },
               {p, "version 1 does not match magic 20240801 (expected version 7)"});

  write_raw(p, 20240520, 1, 10, 19);  // one byte short of 10 uint16 tokens
  expect_error([&] { TokenShard s(p); },
               {p, "file size 1043 bytes", "1024 + 10 tokens x 2 bytes = 1044 bytes"});
  write_raw(p, 20240801, 7, 3, 16);  // one token too many
  expect_error([&] { TokenShard s(p); },
               {p, "file size 1040 bytes", "1024 + 3 tokens x 4 bytes = 1036 bytes"});
  write_raw(p, 20240520, 1, -4, 0);
  expect_error([&] { TokenShard s(p); }, {p, "token count -4 is negative"});
}

}  // namespace
}  // namespace parallm
