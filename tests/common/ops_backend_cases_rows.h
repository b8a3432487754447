// The shared backend cases (Cases, ops_backend_cases.h) of the ops that move
// rows between buffers or work on groups of rows, and of mixed precision:
// paged attention's KV blocks, context parallelism's merge, MoE routing rows,
// the grouped (per expert) linears, and 16-bit rounding and GEMM for bf16 and
// f16. Included at the end of ops_backend_cases.h: include that one. Rounding
// is compared bit for bit on every device; all else within the Cases' bound.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "common/ops_backend_cases.h"
#include "ops/attention.h"
#include "ops/grouped_gemm.h"
#include "ops/lowp.h"
#include "ops/moe_rows.h"

namespace parallm::backend_cases {

inline const char* lowp_name(ops::LowpType t) { return t == ops::LowpType::BF16 ? "bf16" : "f16"; }

inline void Cases::paged_attention(std::vector<ops::PagedAttnPath> paths) {
  if (paths.empty()) paths.push_back(ops::PagedAttnPath::Auto);
  const ops::PagedAttnDims pd{.Hq = 4, .Hkv = 2, .D = 8, .block_size = 4, .num_blocks = 6};
  const int64_t row = pd.Hkv * pd.D, pool_n = pd.num_blocks * pd.block_size * row;
  auto kp = rand(pool_n), vp = rand(pool_n);
  // Two sequences in disjoint blocks of one pool (block 2 unused): a's 10
  // positions written at once, b's 5 as 3 rows then 2 across a block edge.
  auto ta = of<int32_t>({3, 0, 4}), tb = of<int32_t>({5, 1});
  auto ka = rand(10 * row), va = rand(10 * row), kb = rand(5 * row), vb = rand(5 * row);
  auto write = [&](Twin<float>& pool, Twin<int32_t>& table, int64_t n_blocks, Twin<float>& src,
                   int64_t pos0, int64_t n) {
    ops::paged_kv_write(H, pool.h(), pd.num_blocks, pd.block_size, row, table.h(), n_blocks, pos0,
                        n, src.h() + pos0 * row);
    ops::paged_kv_write(D, pool.d(), pd.num_blocks, pd.block_size, row, table.d(), n_blocks, pos0,
                        n, src.d() + pos0 * row);
    pool.expect_same("paged_kv_write");
  };
  write(kp, ta, 3, ka, 0, 10);
  write(vp, ta, 3, va, 0, 10);
  for (auto [pos0, n] : {std::pair<int64_t, int64_t>{0, 3}, {3, 2}}) {
    write(kp, tb, 2, kb, pos0, n);
    write(vp, tb, 2, vb, pos0, n);
  }
  // One batch: a's prefill chunk of 3 rows after 7 past positions, b's
  // decode row at position 4.
  const int64_t rows = 3 + 1;
  auto q = rand(rows * pd.Hq * pd.D), out = rand(rows * pd.Hq * pd.D), lse = rand(rows * pd.Hq);
  const ops::PagedSeq sh[] = {{.Tq = 3, .q_pos0 = 7, .blocks = ta.h(), .n_blocks = 3},
                              {.Tq = 1, .q_pos0 = 4, .blocks = tb.h(), .n_blocks = 2}};
  const ops::PagedSeq sd[] = {{.Tq = 3, .q_pos0 = 7, .blocks = ta.d(), .n_blocks = 3},
                              {.Tq = 1, .q_pos0 = 4, .blocks = tb.d(), .n_blocks = 2}};
  for (ops::PagedAttnPath path : paths) {
    ops::paged_attention_forward(H, out.h(), lse.h(), q.h(), kp.h(), vp.h(), sh, 2, pd, 0.3, path);
    ops::paged_attention_forward(D, out.d(), lse.d(), q.d(), kp.d(), vp.d(), sd, 2, pd, 0.3, path);
    out.expect_same("paged_attention_forward");
    lse.expect_same("paged_attention_forward lse");
  }
}

inline void Cases::attention_merge() {
  const int64_t B = 2, Hq = 3, Dd = 8, nq = 3, len = 4;
  const float ninf = -std::numeric_limits<float>::infinity();
  auto out = rand(B * nq * len * Hq * Dd);
  // The running lse: chunk 0 has no key yet (-inf: its rows are replaced),
  // one row of chunk 1 neither; the rest as after earlier pairs.
  std::vector<float> run = draw(B * Hq * nq * len, -3.0, 3.0);
  for (int64_t bh = 0; bh < B * Hq; ++bh)
    for (int64_t t = 0; t < len; ++t) run[static_cast<size_t>(bh * nq * len + t)] = ninf;
  run[static_cast<size_t>(1 * nq * len + len + 2)] = ninf;
  auto lse = of(std::move(run));
  // Pairs into chunks 0, 1, then 1 again (its rows now merged twice); each
  // pair has two rows it saw no key of (-inf: left alone).
  for (int64_t i : {0, 1, 1}) {
    auto part_out = rand(B * len * Hq * Dd);
    std::vector<float> pl = draw(B * Hq * len, -3.0, 3.0);
    pl[static_cast<size_t>(i + 1)] = pl[static_cast<size_t>(len * Hq + i)] = ninf;
    auto part_lse = of(std::move(pl));
    ops::attention_merge(H, out.h(), lse.h(), part_out.h(), part_lse.h(), B, Hq, Dd, nq, len, i);
    ops::attention_merge(D, out.d(), lse.d(), part_out.d(), part_lse.d(), B, Hq, Dd, nq, len, i);
  }
  out.expect_same("attention_merge out");
  lse.expect_same("attention_merge lse");
}

inline void Cases::moe_rows() {
  // Four routing rows, two assignments each, one dropped, fed in another
  // order (an ep rank's rows); send rows permuted, send row 4 unused.
  const int64_t C = 12, S = 8;
  auto fed = of<int64_t>({2, 0, 3, 1});
  auto send_row = of<int64_t>({5, 0, 7, -1, 2, 6, 1, 3});
  auto xs = rand(4 * C), send = rand(S * C), gate = rand(8), out = rand(4 * C);
  auto dsend = rand(S * C), dgate = rand(8), dxs = rand(4 * C), dout = rand(4 * C);
  const ops::AssignedRows rh{fed.h(), 4, 2, send_row.h()}, rd{fed.d(), 4, 2, send_row.d()};
  ops::moe_gather(H, send.h(), xs.h(), rh, C);
  ops::moe_gather(D, send.d(), xs.d(), rd, C);
  send.expect_same("moe_gather");
  ops::moe_combine(H, out.h(), send.h(), gate.h(), rh, C);
  ops::moe_combine(D, out.d(), send.d(), gate.d(), rd, C);
  out.expect_same("moe_combine");
  ops::moe_combine_backward(H, dsend.h(), dgate.h(), dout.h(), send.h(), gate.h(), rh, C);
  ops::moe_combine_backward(D, dsend.d(), dgate.d(), dout.d(), send.d(), gate.d(), rd, C);
  dsend.expect_same("moe_combine_backward dy");
  dgate.expect_same("moe_combine_backward dgate");
  ops::moe_gather_backward(H, dxs.h(), dsend.h(), rh, C);
  ops::moe_gather_backward(D, dxs.d(), dsend.d(), rd, C);
  dxs.expect_same("moe_gather_backward");
}

inline void Cases::grouped_linears() {
  const int64_t G = 3, IC = 16, OC = 8, M = 7;
  auto off = of<int64_t>({0, 3, 3, 7});  // group 1 empty
  auto x = rand(M * IC), w = rand(G * OC * IC), b = rand(G * OC), y = rand(M * OC);
  auto dy = rand(M * OC), dx = rand(M * IC), dw = rand(G * OC * IC), db = rand(G * OC);
  ops::grouped_linear_forward(H, y.h(), x.h(), w.h(), b.h(), off.h(), G, IC, OC);
  ops::grouped_linear_forward(D, y.d(), x.d(), w.d(), b.d(), off.d(), G, IC, OC);
  ops::grouped_linear_backward(H, dx.h(), dw.h(), db.h(), dy.h(), x.h(), w.h(), off.h(), G, IC, OC);
  ops::grouped_linear_backward(D, dx.d(), dw.d(), db.d(), dy.d(), x.d(), w.d(), off.d(), G, IC, OC);
  for (auto* t : {&y, &dx, &dw, &db}) t->expect_same("grouped linear");
}

inline void Cases::lowp() {
  const float inf = std::numeric_limits<float>::infinity(),
              nan = std::numeric_limits<float>::quiet_NaN();
  // clang-format off
  std::vector<float> v = {
      0.0f, -0.0f, 1.0f, -1.0f,
      1.0f + 0x1p-8f, 1.0f + 0x3p-8f, -(1.0f + 0x3p-8f),   // bf16 ties: to even, down and up
      1.0f + 0x1p-11f, 1.0f + 0x3p-11f,                     // f16 ties
      1.0f + 0x1p-8f + 0x1p-20f, 1.0f + 0x1p-11f + 0x1p-20f,  // just past a tie
      65504.0f, 65519.0f, 65520.0f, -1e6f,                  // f16's largest, its overflow
      0x1p-24f, 0x1p-25f, 0x3p-25f, 1e-6f, -1e-8f,          // f16 subnormals, underflow
      1e-40f, -3e-39f, std::numeric_limits<float>::max(),   // f32 subnormals, bf16 overflow
      inf, -inf, nan, -nan,
      std::bit_cast<float>(0x7fa00000u), std::bit_cast<float>(0xffc01234u)};  // NaN payloads
  // clang-format on
  // Then magnitudes 2^-30 .. 2^18 with full f32 mantissas. 256 values in all:
  // whole blocks of the CPU's vector conversions, whose NaN bits the GPU's match.
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> ex(-30, 17), sign(0, 1);
  while (v.size() < 256)
    v.push_back((sign(rng_) ? -1.0f : 1.0f) * std::ldexp(mant(rng_), ex(rng_)));
  const auto n = static_cast<int64_t>(v.size());
  Allocator host;
  for (ops::LowpType t : {ops::LowpType::BF16, ops::LowpType::F16}) {
    const std::string name = lowp_name(t);
    auto src = exact(v), inplace = exact(v);
    auto bits = exact(std::vector<uint16_t>(v.size()));
    ops::round_to_lowp(H, bits.h(), src.h(), n, t);
    ops::round_to_lowp(D, bits.d(), src.d(), n, t);
    bits.expect_same(("round_to_lowp " + name).c_str());
    ops::round_inplace(H, inplace.h(), n, t);
    ops::round_inplace(D, inplace.d(), n, t);
    inplace.expect_same(("round_inplace " + name).c_str());

    // Every transpose, beta 0 and 1, rows wider than the operands (ld).
    const int64_t M = 5, N = 12, K = 32, R = 32, ld = R + 3, ldc = N + 2;
    auto a32 = rand(R * ld), b32 = rand(R * ld);
    auto a = exact(std::vector<uint16_t>(R * ld)), b = exact(std::vector<uint16_t>(R * ld));
    for (auto [lo, hi] : {std::pair{&a, &a32}, std::pair{&b, &b32}}) {
      ops::round_to_lowp(H, lo->h(), hi->h(), R * ld, t);
      ops::round_to_lowp(D, lo->d(), hi->d(), R * ld, t);
      lo->expect_same(("round_to_lowp " + name).c_str());
    }
    for (bool native : {true, false}) {  // the CPU's oneDNN bf16 and its emulation
      const ops::LowpGemm g(t, native);
      auto c = rand(M * ldc);
      for (auto [ta, tb, beta] : {std::tuple{false, true, 0.0f}, std::tuple{false, false, 1.0f},
                                  std::tuple{true, false, 1.0f}, std::tuple{true, true, 0.0f}}) {
        ops::lowp_gemm(H, g, ta, tb, M, N, K, a.h(), ld, b.h(), ld, beta, c.h(), ldc, host);
        ops::lowp_gemm(D, g, ta, tb, M, N, K, a.d(), ld, b.d(), ld, beta, c.d(), ldc, dev_);
        // Off the test device: the same exact products of 16-bit inputs summed
        // in another f32 order, |error| <~ K 2^-24 sum|ab| <= 32 * 6e-8 * 8 ~ 2e-5.
        c.expect_same(("lowp_gemm " + name).c_str());
      }
    }
  }
}

inline void Cases::grouped_linears_lowp() {
  const int64_t G = 3, IC = 16, OC = 8, M = 7;
  auto off = of<int64_t>({0, 3, 3, 7});  // group 1 empty
  auto x = rand(M * IC), w = rand(G * OC * IC), b = rand(G * OC), dy = rand(M * OC);
  Allocator host;
  for (ops::LowpType t : {ops::LowpType::BF16, ops::LowpType::F16}) {
    const std::string name = std::string("grouped linear (") + lowp_name(t) + ")";
    const ops::LowpGemm g(t);
    auto y = rand(M * OC), dx = rand(M * IC), dw = rand(G * OC * IC), db = rand(G * OC);
    auto x16 = exact(std::vector<uint16_t>(M * IC)), dy16 = exact(std::vector<uint16_t>(M * OC));
    auto w16 = exact(std::vector<uint16_t>(G * OC * IC));
    for (auto [lo, hi, n] : {std::tuple{&x16, &x, M * IC}, std::tuple{&w16, &w, G * OC * IC},
                             std::tuple{&dy16, &dy, M * OC}}) {
      ops::round_to_lowp(H, lo->h(), hi->h(), n, t);
      ops::round_to_lowp(D, lo->d(), hi->d(), n, t);
      lo->expect_same(("round_to_lowp " + name).c_str());
    }
    ops::grouped_linear_forward_lowp(H, g, host, y.h(), x16.h(), w16.h(), b.h(), off.h(), G, IC,
                                     OC);
    ops::grouped_linear_forward_lowp(D, g, dev_, y.d(), x16.d(), w16.d(), b.d(), off.d(), G, IC,
                                     OC);
    ops::grouped_linear_backward_lowp(H, g, host, dx.h(), dw.h(), db.h(), dy16.h(), dy.h(), x16.h(),
                                      w16.h(), off.h(), G, IC, OC);
    ops::grouped_linear_backward_lowp(D, g, dev_, dx.d(), dw.d(), db.d(), dy16.d(), dy.d(), x16.d(),
                                      w16.d(), off.d(), G, IC, OC);
    // Off the test device: lowp_gemm's bound with K <= 16, then the f32 bias.
    for (auto* o : {&y, &dx, &dw, &db}) o->expect_same(name.c_str());
  }
}

}  // namespace parallm::backend_cases
