// DeepSpeed-Ulysses' two all-to-alls (parallel/context/ulysses.h) on their
// own, at U = world size: every rank holds its sequence slice of one global
// (B, U*T, H, D) tensor whose elements name their own position; after
// seq_to_heads rank r holds exactly that tensor's heads [r H/U, (r+1) H/U)
// over the whole sequence, heads_to_seq gives back the slice bit for bit,
// each all-to-all stages 2 x H x B x T x D floats of communication memory
// and frees it, and heads that do not split over U are refused on every rank.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "base/error.h"
#include "cp_env.h"
#include "parallel/context/ulysses.h"

namespace parallm::cp_test {
namespace {

constexpr int64_t kB = 2, kT = 3, kD = 2;

// The global tensor's element (b, token, head, d): its own flat index.
float element(int64_t U, int64_t H, int64_t b, int64_t tok, int64_t head, int64_t d) {
  return static_cast<float>(((b * U * kT + tok) * H + head) * kD + d);
}

TEST(Ulysses, AllToAllsMoveHeadsAndSequenceExactly) {
  comm::Communicator& world = *env().world;
  const int64_t U = world.size(), r = world.rank(), H = 2 * U, h = H / U;
  std::vector<float> seq(kB * kT * H * kD);
  for (int64_t b = 0; b < kB; ++b)
    for (int64_t t = 0; t < kT; ++t)
      for (int64_t hd = 0; hd < H; ++hd)
        for (int64_t d = 0; d < kD; ++d)
          seq[((b * kT + t) * H + hd) * kD + d] = element(U, H, b, r * kT + t, hd, d);
  Allocator alloc;
  std::vector<float> heads(seq.size(), -1.0f), back(seq.size(), -1.0f);
  ulysses_seq_to_heads(world, alloc, heads.data(), seq.data(), kB, kT, H, kD);
  for (int64_t b = 0; b < kB; ++b)
    for (int64_t tok = 0; tok < U * kT; ++tok)
      for (int64_t hh = 0; hh < h; ++hh)
        for (int64_t d = 0; d < kD; ++d)
          ASSERT_EQ(heads[((b * U * kT + tok) * h + hh) * kD + d], element(U, H, b, tok, r * h + hh, d))
              << "rank " << r << " b " << b << " token " << tok << " head " << r * h + hh;
  ulysses_heads_to_seq(world, alloc, back.data(), heads.data(), kB, kT, H, kD);
  EXPECT_EQ(back, seq) << "heads_to_seq is not seq_to_heads' inverse";
  // The staging: a send and a receive buffer of the whole local tensor each.
  EXPECT_EQ(alloc.peak(MemTag::Communication),
            2 * kB * kT * H * kD * static_cast<int64_t>(sizeof(float)));
  EXPECT_EQ(alloc.current(MemTag::Communication), 0);
}

TEST(Ulysses, RefusesHeadsThatDoNotSplit) {
  comm::Communicator& world = *env().world;
  // The binary runs on 2 and 4 ranks (tests.cmake): world + 1 heads never split.
  ASSERT_GT(world.size(), 1) << "every head count splits over one rank";
  const int64_t H = world.size() + 1;
  std::vector<float> seq(kB * kT * H * kD), heads(seq.size());
  Allocator alloc;
  try {
    ulysses_seq_to_heads(world, alloc, heads.data(), seq.data(), kB, kT, H, kD);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fmt::format("{} heads do not split over {} ranks", H,
                                                     world.size())),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace parallm::cp_test
