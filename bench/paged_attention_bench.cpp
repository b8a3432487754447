// Times paged attention (kernels/cpu/paged_attention.h) against contiguous
// attention (kernels/cpu/attention.h, one call per sequence as the KV-cached
// generator does) on one layer: a decode step of B sequences of context T
// (Tq = 1), and a prefill chunk of C tokens after a past of T. Prints the
// median ms of each and the K/V bytes read per second.
// Usage: paged_attention_bench [B T Hq Hkv D block_size C reps path(0 auto, 1 direct, 2 gemm)]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "base/rng.h"
#include "bench_timing.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/paged_attention.h"

namespace {
using parallm::bench::median_ms;
using parallm::bench::random_vec;

}  // namespace

int main(int argc, char** argv) {
  using namespace parallm::cpu;
  auto arg = [&](int i, int64_t def) { return argc > i ? std::atoll(argv[i]) : def; };
  const int64_t B = arg(1, 16), T = arg(2, 1024), Hq = arg(3, 12), Hkv = arg(4, 12), D = arg(5, 64),
                bs = arg(6, 16), C = arg(7, 128), reps = arg(8, 20);
  const auto path = static_cast<PagedAttnPath>(arg(9, 0));  // 0 Auto, 1 Direct, 2 Gemm
  const int64_t Tmax = T + C, row = Hkv * D;
  const int64_t per_seq = (Tmax + bs - 1) / bs, nblocks = B * per_seq;
  // Contiguous caches (B, Tmax, Hkv, D), and the same keys in a pool whose
  // blocks interleave the sequences (as a busy server's would).
  const std::vector<float> kc = random_vec(static_cast<size_t>(B * Tmax * row), "k");
  const std::vector<float> vc = random_vec(kc.size(), "v");
  std::vector<float> kp(static_cast<size_t>(nblocks * bs * row)), vp(kp.size());
  std::vector<std::vector<int32_t>> tables(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < per_seq; ++i) tables[b].push_back(static_cast<int32_t>(i * B + b));
    paged_kv_write(kp.data(), nblocks, bs, row, tables[b].data(), per_seq, 0, Tmax,
                   kc.data() + b * Tmax * row);
    paged_kv_write(vp.data(), nblocks, bs, row, tables[b].data(), per_seq, 0, Tmax,
                   vc.data() + b * Tmax * row);
  }
  const std::vector<float> q = random_vec(static_cast<size_t>(B * C * Hq * D), "q");
  std::vector<float> out(q.size()), lse(static_cast<size_t>(B * C * Hq));
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  const PagedAttnDims pd{Hq, Hkv, D, bs, nblocks};

  for (const int64_t Tq : {int64_t{1}, C}) {
    std::vector<PagedSeq> seqs;
    for (int64_t b = 0; b < B; ++b) seqs.push_back({Tq, T, tables[b].data(), per_seq});
    const double paged = median_ms(static_cast<int>(reps), [&] {
      paged_attention_forward(out.data(), lse.data(), q.data(), kp.data(), vp.data(), seqs.data(),
                              B, pd, scale, path);
    });
    const double contiguous = median_ms(static_cast<int>(reps), [&] {
      for (int64_t b = 0; b < B; ++b) {
        const AttnDims d{.B = 1, .Tq = Tq, .Tk = T + Tq, .Hq = Hq, .Hkv = Hkv, .D = D, .q_pos0 = T};
        attention_forward(out.data() + b * Tq * Hq * D, lse.data() + b * Tq * Hq,
                          q.data() + b * Tq * Hq * D, kc.data() + b * Tmax * row,
                          vc.data() + b * Tmax * row, d, scale);
      }
    });
    const double kv_gb = 2.0 * B * (T + Tq) * row * sizeof(float) / 1e9;
    std::printf(
        "%s B=%ld past=%ld Tq=%ld Hq=%ld Hkv=%ld D=%ld block=%ld: paged %.3f ms (%.1f GB/s K/V), "
        "contiguous %.3f ms, ratio %.2f\n",
        Tq == 1 ? "decode " : "prefill", static_cast<long>(B), static_cast<long>(T),
        static_cast<long>(Tq), static_cast<long>(Hq), static_cast<long>(Hkv), static_cast<long>(D),
        static_cast<long>(bs), paged, kv_gb / (paged / 1e3), contiguous, contiguous / paged);
  }
  return 0;
}
