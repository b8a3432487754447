// The MoE row moves (kernels/cpu/moe_rows.h) against a plain loop over fed
// rows and slots that does what the layer did before they were kernels:
// bit for bit at 1 and 2 threads, with dropped assignments and a fed subset
// of the routing rows, above the size where the kernels go parallel.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "base/rng.h"
#include "finite_diff.h"
#include "kernels/cpu/moe_rows.h"

namespace parallm {
namespace {

struct Routing {
  static constexpr int64_t kN = 300, kK = 2, kC = 96;  // 300 x 2 x 96 > the parallel minimum
  std::vector<int64_t> fed, send_row;
  std::vector<float> x, y, gate, dout;
  int64_t S = 0;
  Routing() {
    const uint64_t key = stream_key(5, "moe_rows");
    for (int64_t n = 0; n < kN; ++n)
      if (n % 7 != 3) fed.push_back(n);  // rows of other ranks are not fed
    send_row.assign(kN * kK, -1);
    // Send rows in a scattered order, every fifth assignment dropped.
    std::vector<int64_t> kept;
    for (int64_t f : fed)
      for (int64_t a = f * kK; a < (f + 1) * kK; ++a)
        if (a % 5 != 1) kept.push_back(a);
    S = static_cast<int64_t>(kept.size());
    for (int64_t i = 0; i < S; ++i) send_row[kept[i]] = (i * 37) % S;  // 37 is prime to S
    auto fill = [&](std::vector<float>& v, int64_t n, int stream) {
      v.resize(n);
      for (int64_t i = 0; i < n; ++i) v[i] = 2.0f * uniform_at(key, i, stream) - 1.0f;
    };
    fill(x, nfed() * kC, 0);
    fill(y, S * kC, 1);
    fill(gate, kN * kK, 2);
    fill(dout, nfed() * kC, 3);
  }
  int64_t nfed() const { return static_cast<int64_t>(fed.size()); }
  cpu::AssignedRows rows() const { return {fed.data(), nfed(), kK, send_row.data()}; }
};

// The loops the layer ran (model/moe/moe.cpp before the kernels).
struct Reference {
  std::vector<float> send, out, dy, dgate, dx;
  explicit Reference(const Routing& r) {
    const int64_t C = Routing::kC, k = Routing::kK;
    send.assign(r.S * C, 0.f), out.assign(r.nfed() * C, 0.f), dy.assign(r.S * C, 0.f);
    dgate.assign(Routing::kN * k, 0.f), dx.assign(r.nfed() * C, 0.5f);
    for (int64_t i = 0; i < r.nfed(); ++i)
      for (int64_t a = r.fed[i] * k; a < (r.fed[i] + 1) * k; ++a) {
        const int64_t s = r.send_row[a];
        if (s < 0) continue;
        std::memcpy(&send[s * C], &r.x[i * C], C * sizeof(float));
        for (int64_t j = 0; j < C; ++j) out[i * C + j] += r.gate[a] * r.y[s * C + j];
        double dot = 0;
        for (int64_t j = 0; j < C; ++j)
          dot += static_cast<double>(r.dout[i * C + j]) * r.y[s * C + j];
        dgate[a] = static_cast<float>(dot);
        for (int64_t j = 0; j < C; ++j) dy[s * C + j] += r.gate[a] * r.dout[i * C + j];
        for (int64_t j = 0; j < C; ++j) dx[i * C + j] += r.y[s * C + j];  // y as the send gradient
      }
  }
};

void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want,
                      const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << what;
}

TEST(MoeRows, MatchTheLayersLoopsBitForBitAtOneAndTwoThreads) {
  const Routing r;
  const Reference want(r);
  const int64_t C = Routing::kC;
  for (int threads : {1, 2}) {
    test::with_threads(threads, [&] {
      std::vector<float> send(r.S * C, 0.f), out(r.nfed() * C, 9.f), dy(r.S * C, 0.f),
          dgate(Routing::kN * Routing::kK, 0.f), dx(r.nfed() * C, 0.5f);
      cpu::moe_gather(send.data(), r.x.data(), r.rows(), C);
      cpu::moe_combine(out.data(), r.y.data(), r.gate.data(), r.rows(), C);
      cpu::moe_combine_backward(dy.data(), dgate.data(), r.dout.data(), r.y.data(), r.gate.data(),
                                r.rows(), C);
      cpu::moe_gather_backward(dx.data(), r.y.data(), r.rows(), C);
      SCOPED_TRACE(threads);
      expect_same_bits(send, want.send, "gather");
      expect_same_bits(out, want.out, "combine (overwrites its output)");
      expect_same_bits(dy, want.dy, "combine backward: dy");
      expect_same_bits(dgate, want.dgate, "combine backward: dgate (dropped ones stay 0)");
      expect_same_bits(dx, want.dx, "gather backward (accumulates)");
    });
  }
}

}  // namespace
}  // namespace parallm
