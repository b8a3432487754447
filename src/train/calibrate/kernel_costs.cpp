#include "train/calibrate/kernel_costs.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <thread>
#include <utility>

#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/cross_entropy.h"
#include "ops/embedding.h"
#include "ops/host_runtime.h"
#include "ops/matmul.h"
#include "ops/moe_rows.h"
#include "ops/norm.h"
#include "ops/optimizer.h"
#include "ops/rope.h"
#include "plan/linear_fit.h"

namespace parallm {

namespace {

// Fastest seconds per call over k.rounds rounds of at least k.round_s each
// (one untimed call first: first-touch pages and BLAS set-up).
double seconds_per_call(const KernelCalibration& k, const std::function<void()>& f) {
  using Clock = std::chrono::steady_clock;
  f();
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < k.rounds; ++r) {
    int64_t calls = 0;
    const auto t0 = Clock::now();
    double elapsed = 0;
    do {
      f();
      ++calls;
      elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    } while (elapsed < k.round_s);
    best = std::min(best, elapsed / static_cast<double>(calls));
  }
  return best;
}

std::vector<float> filled(int64_t n, float scale = 0.5f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = scale * static_cast<float>((i * 7919) % 1009) / 1009.f;
  return v;
}

void measure_linears(const KernelCalibration& k, OpCosts& c) {
  c.rows = k.rows, c.ins = k.widths, c.outs = k.widths;
  for (int64_t n : c.rows)
    for (int64_t in : c.ins)
      for (int64_t out : c.outs) {
        auto x = filled(n * in), w = filled(out * in), y = filled(n * out), dy = filled(n * out);
        auto dx = filled(n * in), dw = filled(out * in);
        c.fwd_s.push_back(seconds_per_call(k, [&] {
          ops::linear_forward(ops::Stream::host(), y.data(), x.data(), w.data(), nullptr, n, in,
                              out);
        }));
        c.bwd_s.push_back(seconds_per_call(k, [&] {
          ops::linear_backward(ops::Stream::host(), dx.data(), dw.data(), nullptr, dy.data(),
                               x.data(), w.data(), n, in, out);
        }));
      }
}

// Seconds per unit (plan/op_costs.h) of attention forward and backward
// at length t and head dim D: grouped-query heads as the LLaMA presets have
// them (2 query heads per key/value head), enough rows that a call is not
// all overhead, and at least 4 (batch, kv head) tasks, so that 2 threads
// split the backward by kv head as they do in a model's layers (with fewer,
// the kernel's two-pass split recomputes 2 of its 5 GEMMs: at 8192 tokens
// that made the 2-thread backward 1.3x slower per unit than at 512).
std::pair<double, double> attention_per_unit(const KernelCalibration& k, int64_t t, int64_t D) {
  const int64_t B = std::max<int64_t>(1, 2048 / t), Hkv = std::max<int64_t>(2, 4 / B);
  const ops::AttnDims d{.B = B, .Tq = t, .Tk = t, .Hq = 2 * Hkv, .Hkv = Hkv, .D = D};
  const int64_t q_n = d.B * t * d.Hq * d.D, kv_n = d.B * t * d.Hkv * d.D;
  auto q = filled(q_n), kk = filled(kv_n), v = filled(kv_n), out = filled(q_n),
       lse = filled(d.B * d.Hq * t), dout = filled(q_n), dq = filled(q_n), dk = filled(kv_n),
       dv = filled(kv_n);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  const double units = static_cast<double>(d.B) * d.Hq * t * (t + 1) / 2.0 * d.D;
  const double fwd = seconds_per_call(k, [&] {
    ops::attention_forward(ops::Stream::host(), out.data(), lse.data(), q.data(), kk.data(),
                           v.data(), d, scale);
  });
  const double bwd = seconds_per_call(k, [&] {
    ops::attention_backward(ops::Stream::host(), dq.data(), dk.data(), dv.data(), dout.data(),
                            q.data(), kk.data(), v.data(), out.data(), lse.data(), d, scale);
  });
  return {fwd / units, bwd / units};
}

// Over lengths at head dim 64, then over head dims at one length.
void measure_attention(const KernelCalibration& k, OpCosts& c) {
  c.attn_head_dim = 64;
  for (int64_t t : k.attn_seq) {
    const auto [fwd, bwd] = attention_per_unit(k, t, c.attn_head_dim);
    c.attn_seq.push_back(t);
    c.attn_fwd_s.push_back(fwd);
    c.attn_bwd_s.push_back(bwd);
  }
  c.attn_dim_seq = k.attn_dim_seq;
  for (int64_t D : k.attn_dims) {
    const auto [fwd, bwd] = attention_per_unit(k, k.attn_dim_seq, D);
    c.attn_dims.push_back(D);
    c.attn_dim_fwd_s.push_back(fwd);
    c.attn_dim_bwd_s.push_back(bwd);
  }
}

// Per element, on 2^20-element tensors (rows of 512 where a kernel has rows).
void measure_elementwise(const KernelCalibration& k, OpCosts& c) {
  constexpr int64_t kN = int64_t{1} << 20, kC = 512, kRows = kN / kC;
  auto x = filled(kN), y = filled(kN), z = filled(kN), dy = filled(kN), dx = filled(kN),
       dz = filled(kN), w = filled(kC), dw = filled(kC), b = filled(kC), db = filled(kC),
       mean = filled(kRows), rstd = filled(kRows);
  auto per = [&](const std::function<void()>& f) { return seconds_per_call(k, f) / kN; };
  auto record = [&](const char* kind, double fwd, double bwd) {
    c.elem_fwd_s[kind] = fwd;
    c.elem_bwd_s[kind] = bwd;
  };
  record("rmsnorm", per([&] {
           ops::rmsnorm_forward(ops::Stream::host(), y.data(), rstd.data(), x.data(), w.data(),
                                kRows, kC, 1e-6);
         }),
         per([&] {
           ops::rmsnorm_backward(ops::Stream::host(), dx.data(), dw.data(), dy.data(), x.data(),
                                 w.data(), rstd.data(), kRows, kC);
         }));
  record("layernorm", per([&] {
           ops::layernorm_forward(ops::Stream::host(), y.data(), mean.data(), rstd.data(), x.data(),
                                  w.data(), b.data(), kRows, kC, 1e-5);
         }),
         per([&] {
           ops::layernorm_backward(ops::Stream::host(), dx.data(), dw.data(), db.data(), dy.data(),
                                   x.data(), w.data(), mean.data(), rstd.data(), kRows, kC);
         }));
  record("swiglu",
         per([&] { ops::swiglu_forward(ops::Stream::host(), y.data(), x.data(), z.data(), kN); }),
         per([&] {
           ops::swiglu_backward(ops::Stream::host(), dx.data(), dz.data(), dy.data(), x.data(),
                                z.data(), kN);
         }));
  record("gelu", per([&] { ops::gelu_forward(ops::Stream::host(), y.data(), x.data(), kN); }),
         per([&] { ops::gelu_backward(ops::Stream::host(), dx.data(), x.data(), dy.data(), kN); }));
  record("add", per([&] { ops::add_inplace(ops::Stream::host(), y.data(), x.data(), kN); }),
         per([&] { ops::add_inplace(ops::Stream::host(), dx.data(), dy.data(), kN); }));
  {  // rope on (1, T, 8 heads, 64)
    const int64_t H = 8, D = 64, T = kN / (H * D);
    std::vector<int64_t> pos(static_cast<size_t>(T));
    std::iota(pos.begin(), pos.end(), 0);
    record("rope", per([&] {
             ops::rope_forward(ops::Stream::host(), x.data(), pos.data(), 1, T, H, D, 1e4);
           }),
           per([&] {
             ops::rope_backward(ops::Stream::host(), dx.data(), pos.data(), 1, T, H, D, 1e4);
           }));
  }
  {  // the loss over (rows, 1024) logits: max, sum of exponentials, target; gradient
    constexpr int64_t kV = 1024, kR = kN / kV;
    std::vector<int32_t> tgt(static_cast<size_t>(kR));
    for (size_t i = 0; i < tgt.size(); ++i) tgt[i] = static_cast<int32_t>((i * 31) % kV);
    auto mx = filled(kR), se = filled(kR), tl = filled(kR), scale = filled(kR, 1.f);
    record("cross_entropy", per([&] {
             ops::ce_row_max(ops::Stream::host(), mx.data(), x.data(), kR, kV);
             ops::ce_row_sumexp(ops::Stream::host(), se.data(), x.data(), mx.data(), kR, kV);
             ops::ce_target_logit(ops::Stream::host(), tl.data(), x.data(), tgt.data(), kR, kV, 0);
           }),
           per([&] {
             std::memcpy(y.data(), x.data(), kN * sizeof(float));  // the gradient is in place
             ops::ce_softmax_grad_inplace(ops::Stream::host(), y.data(), mx.data(), tgt.data(),
                                          scale.data(), kR, kV, 0);
           }));
  }
  {  // lookups of 2048 tokens of a (512, kC) table
    constexpr int64_t kTok = kN / kC, kVocab = 512;
    std::vector<int32_t> tok(static_cast<size_t>(kTok));
    for (size_t i = 0; i < tok.size(); ++i) tok[i] = static_cast<int32_t>((i * 37) % kVocab);
    auto table = filled(kVocab * kC), dtable = filled(kVocab * kC);
    record("embedding", per([&] {
             ops::embedding_forward(ops::Stream::host(), y.data(), tok.data(), table.data(), kTok,
                                    kC, 0, kVocab, false);
           }),
           per([&] {
             ops::embedding_backward(ops::Stream::host(), dtable.data(), tok.data(), dy.data(),
                                     kTok, kC, 0, kVocab);
           }));
  }
}

// The MoE layer's row moves per assigned element (send rows x hidden), as
// one process runs them around the experts: forward the gather into send
// order, the dispatch copy, the experts' saved copy of their input, the
// combine copy and the gate-weighted sum; backward the gate gradient with
// the weighted output gradient, the two copies back and the sum into the
// input gradient. 1024 tokens top-2 over 4 experts (send rows expert-major).
void measure_moe_rows(const KernelCalibration& k, OpCosts& c) {
  constexpr int64_t kTokens = 1024, kK = 2, kC = 512, kS = kTokens * kK, kE = 4;
  std::vector<int64_t> fed(kTokens), send_row(kS);
  std::iota(fed.begin(), fed.end(), 0);
  auto expert = [](int64_t a) { return static_cast<int64_t>((a * 2654435761u) >> 7) % kE; };
  int64_t next = 0;
  for (int64_t e = 0; e < kE; ++e)
    for (int64_t a = 0; a < kS; ++a)
      if (expert(a) == e) send_row[a] = next++;
  const ops::AssignedRows rows{fed.data(), kTokens, kK, send_row.data()};
  auto x = filled(kTokens * kC), out = filled(kTokens * kC), send = filled(kS * kC),
       recv = filled(kS * kC), saved = filled(kS * kC), y = filled(kS * kC), gate = filled(kS),
       dgate = filled(kS);
  const size_t bytes = kS * kC * sizeof(float);
  const double n = static_cast<double>(kS * kC);
  c.elem_fwd_s["moe_rows"] =
      seconds_per_call(k,
                       [&] {
                         ops::moe_gather(ops::Stream::host(), send.data(), x.data(), rows, kC);
                         std::memcpy(recv.data(), send.data(), bytes);
                         std::memcpy(saved.data(), recv.data(), bytes);
                         std::memcpy(y.data(), recv.data(), bytes);
                         ops::moe_combine(ops::Stream::host(), out.data(), y.data(), gate.data(),
                                          rows, kC);
                       }) /
      n;
  c.elem_bwd_s["moe_rows"] =
      seconds_per_call(k,
                       [&] {
                         ops::moe_combine_backward(ops::Stream::host(), send.data(), dgate.data(),
                                                   out.data(), y.data(), gate.data(), rows, kC);
                         std::memcpy(recv.data(), send.data(), bytes);
                         std::memcpy(saved.data(), recv.data(), bytes);
                         ops::moe_gather_backward(ops::Stream::host(), x.data(), saved.data(), rows,
                                                  kC);
                       }) /
      n;
}

// What a step does per parameter after the backward: the gradient's sum of
// squares (clipping's norm), the AdamW update and zeroing the gradient.
void measure_optimizer_and_copy(const KernelCalibration& k, OpCosts& c) {
  constexpr int64_t kP = int64_t{1} << 22;
  auto p = filled(kP), g = filled(kP, 1e-3f), m = filled(kP, 0.f), v = filled(kP, 0.f),
       next_g = filled(kP);
  const ops::AdamWParams h{.lr = 1e-4, .weight_decay = 0.1};
  c.optimizer_s_per_param =
      seconds_per_call(k,
                       [&] {
                         volatile double s = ops::sum_squares(ops::Stream::host(), g.data(), kP);
                         (void)s;
                         ops::adamw_step(ops::Stream::host(), p.data(), g.data(), m.data(),
                                         v.data(), kP, h);
                         std::memset(next_g.data(), 0, kP * sizeof(float));
                       }) /
      kP;
  std::vector<char> a(size_t{64} << 20, 1), b(a.size());
  c.copy_bytes_per_s = static_cast<double>(a.size()) /
                       seconds_per_call(k, [&] { std::memcpy(b.data(), a.data(), a.size()); });
}

// Each figure of a and b, the faster (a slower one is the machine's other
// work, not ours).
OpCosts fastest_of(const OpCosts& a, const OpCosts& b) {
  OpCosts c = a;
  auto each_min = [](std::vector<double>& x, const std::vector<double>& y) {
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::min(x[i], y[i]);
  };
  each_min(c.fwd_s, b.fwd_s);
  each_min(c.bwd_s, b.bwd_s);
  each_min(c.attn_fwd_s, b.attn_fwd_s);
  each_min(c.attn_bwd_s, b.attn_bwd_s);
  each_min(c.attn_dim_fwd_s, b.attn_dim_fwd_s);
  each_min(c.attn_dim_bwd_s, b.attn_dim_bwd_s);
  auto kind_min = [](std::map<std::string, double>& x, const std::map<std::string, double>& y) {
    for (auto& [kind, s] : x) s = std::min(s, y.at(kind));
  };
  kind_min(c.elem_fwd_s, b.elem_fwd_s);
  kind_min(c.elem_bwd_s, b.elem_bwd_s);
  c.optimizer_s_per_param = std::min(a.optimizer_s_per_param, b.optimizer_s_per_param);
  c.copy_bytes_per_s = std::max(a.copy_bytes_per_s, b.copy_bytes_per_s);
  return c;
}

// Threads running single-threaded GEMMs until destroyed.
class BusyCores {
 public:
  explicit BusyCores(int n) {
    for (int i = 0; i < n; ++i)
      threads_.emplace_back([this] {
        ops::set_host_threads(1);
        constexpr int64_t kN = 512, kC = 512;
        auto x = filled(kN * kC), w = filled(kC * kC), y = filled(kN * kC);
        while (!stop_.load(std::memory_order_relaxed))
          ops::linear_forward(ops::Stream::host(), y.data(), x.data(), w.data(), nullptr, kN, kC,
                              kC);
      });
  }
  ~BusyCores() {
    stop_ = true;
    for (std::thread& t : threads_) t.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace

OpCosts measure_kernel_costs(int threads, int busy_cores, const KernelCalibration& k) {
  ops::set_host_threads(threads);
  const BusyCores busy(busy_cores);
  // k.rounds passes over every figure, one round each, keeping each
  // figure's fastest: one figure's rounds lie a pass (tens of seconds)
  // apart, so one slow spell of the machine cannot slow all of them. With
  // a figure's rounds back to back, single linear grid cells came out up
  // to 2.4x slower than in the next calibration, which moved the step-time
  // model's choice of micro-batch; between two calibrations in passes
  // 20-37 of the 216 cells per thread count and pass differed by over 15%
  // (beyond a common drift), against 31-78 (2 cores, AMD EPYC under KVM).
  KernelCalibration one = k;
  one.rounds = 1;
  OpCosts c;
  for (int pass = 0; pass < std::max(1, k.rounds); ++pass) {
    OpCosts p;
    p.threads = ops::host_threads();
    measure_linears(one, p);
    measure_attention(one, p);
    measure_elementwise(one, p);
    measure_moe_rows(one, p);
    measure_optimizer_and_copy(one, p);
    c = pass == 0 ? p : fastest_of(c, p);
  }
  smooth_linear_rows(c);
  c.validate("calibration");
  return c;
}

}  // namespace parallm
