// GPU flash attention (kernels/cuda/attention.h) against the CPU kernel run
// in double on the same inputs (bf16: on the bf16-rounded inputs): forward
// out and lse, backward dq/dk/dv accumulated onto non-zero values. Shapes
// cover odd lengths, GQA, q_pos0/k_pos0 offsets (decode, rows that see no
// key), document masks, D from 40 to 256, and both the tensor-core path (bf16,
// D 64/128) and the SIMT one. The backward must be bitwise deterministic.
#include "kernels/cuda/attention.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "base/error.h"
#include "common/gpu_test.h"
#include "kernels/cpu/attention.h"
#include "tensor/half.h"

namespace parallm {
namespace {

using testing::DeviceBuffer;
using AttentionGpu = testing::GpuTest;

struct Case {
  int64_t B, Tq, Tk, Hq, Hkv, D, q_pos0, k_pos0;
  bool causal;
  bool docs = false;  // random document boundaries (doc_start)
  std::string name() const {
    return "B" + std::to_string(B) + " Tq" + std::to_string(Tq) + " Tk" + std::to_string(Tk) +
           " Hq" + std::to_string(Hq) + " Hkv" + std::to_string(Hkv) + " D" + std::to_string(D) +
           " q_pos0 " + std::to_string(q_pos0) + " k_pos0 " + std::to_string(k_pos0) +
           (causal ? " causal" : " full") + (docs ? " docs" : "");
  }
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {2, 65, 65, 6, 2, 64, 0, 0, true},
      {1, 200, 200, 6, 1, 128, 0, 0, true},
      {2, 7, 7, 6, 2, 40, 0, 0, false},
      {2, 1, 200, 6, 2, 64, 199, 0, true},   // KV-cache decode
      {1, 1, 65, 6, 2, 128, 64, 0, true},    // decode, D 128
      {1, 65, 200, 6, 2, 64, 135, 0, true},  // chunked prefill
      {1, 30, 40, 6, 3, 64, 0, 10, true},    // rows i < 10 see no key
      {1, 65, 65, 6, 2, 128, 64, 32, true},  // ring-attention offsets
      {1, 130, 70, 4, 2, 128, 0, 0, false},
      {1, 33, 33, 2, 1, 256, 0, 0, false},
      {1, 1, 1, 6, 2, 64, 0, 0, true},
      {2, 65, 65, 6, 2, 64, 0, 0, true, true},  // packed documents
      {1, 200, 200, 6, 2, 40, 0, 0, true, true},
      {1, 300, 300, 4, 2, 64, 0, 0, true},
      {1, 700, 700, 2, 1, 64, 0, 0, true},    // many double-buffered tiles, 2 heads per kv
      {1, 400, 400, 2, 1, 128, 0, 0, true},   // the same at D 128
      {1, 257, 300, 2, 1, 64, 43, 0, false},  // full attention, ragged tiles, Tq != Tk
  };
  return c;
}

cpu::AttnDims dims_of(const Case& c) {
  cpu::AttnDims d{};
  d.B = c.B;
  d.Tq = c.Tq;
  d.Tk = c.Tk;
  d.Hq = c.Hq;
  d.Hkv = c.Hkv;
  d.D = c.D;
  d.q_pos0 = c.q_pos0;
  d.k_pos0 = c.k_pos0;
  d.causal = c.causal;
  return d;
}

// Document starts of every position of each batch row (boundaries at random).
std::vector<int64_t> make_docs(const Case& c, int64_t ld, std::mt19937& rng) {
  std::vector<int64_t> s(c.B * ld);
  std::uniform_int_distribution<int> coin(0, 24);
  for (int64_t b = 0; b < c.B; ++b) {
    int64_t start = 0;
    for (int64_t p = 0; p < ld; ++p) {
      if (p > 0 && coin(rng) == 0) start = p;
      s[b * ld + p] = start;
    }
  }
  return s;
}

template <class T>
T to_t(double x) {
  if constexpr (std::is_same_v<T, float>) {
    return static_cast<float>(x);
  } else {
    __nv_bfloat16_raw raw;
    raw.x = f32_to_bf16(static_cast<float>(x));
    return T(raw);
  }
}
template <class T>
double to_d(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else {
    const __nv_bfloat16_raw raw(x);
    return bf16_to_f32(raw.x);
  }
}

// Random values, already representable in T; both copies hold the same numbers.
template <class T>
void random_pair(std::vector<T>& t, std::vector<double>& dbl, size_t n, double sd,
                 std::mt19937& rng) {
  std::normal_distribution<double> nd(0.0, sd);
  t.resize(n);
  dbl.resize(n);
  for (size_t i = 0; i < n; ++i) {
    t[i] = to_t<T>(nd(rng));
    dbl[i] = to_d(t[i]);
  }
}

// max |got - want| <= tol * max |want| (and infinities in the same places).
template <class T>
void expect_close(const std::vector<T>& got, const std::vector<double>& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  double scale = 0.0, err = 0.0;
  size_t worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = to_d(got[i]);
    if (std::isinf(want[i])) {
      ASSERT_EQ(g, want[i]) << what << " element " << i;
      continue;
    }
    ASSERT_TRUE(std::isfinite(g)) << what << " element " << i << " = " << g;
    scale = std::max(scale, std::abs(want[i]));
    if (std::abs(g - want[i]) > err) {
      err = std::abs(g - want[i]);
      worst = i;
    }
  }
  const double bound = tol * std::max(scale, 1e-6);
  EXPECT_LE(err, bound) << what << ": max error " << err << " at " << worst << " (got "
                        << to_d(got[worst]) << ", want " << want[worst] << "), max |want| "
                        << scale;
  std::cout << "  " << what << ": max error / max |want| = " << err / std::max(scale, 1e-30)
            << "\n";
}

template <class T>
void check_case(const Case& c, double tol_out, double tol_grad, uint32_t seed) {
  SCOPED_TRACE(c.name());
  std::cout << c.name() << (std::is_same_v<T, float> ? " fp32" : " bf16") << "\n";
  std::mt19937 rng(seed);
  cpu::AttnDims d = dims_of(c);
  const size_t nq = c.B * c.Tq * c.Hq * c.D, nk = c.B * c.Tk * c.Hkv * c.D;
  const size_t nl = c.B * c.Hq * c.Tq;
  std::vector<T> q, k, v, dout, dq0, dk0, dv0;
  std::vector<double> qd, kd, vd, doutd, dqd, dkd, dvd;
  random_pair(q, qd, nq, 1.0, rng);
  random_pair(k, kd, nk, 1.0, rng);
  random_pair(v, vd, nk, 1.0, rng);
  random_pair(dout, doutd, nq, 1.0, rng);
  random_pair(dq0, dqd, nq, 0.1, rng);
  random_pair(dk0, dkd, nk, 0.1, rng);
  random_pair(dv0, dvd, nk, 0.1, rng);
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.D));

  const int64_t ld = std::max(c.q_pos0 + c.Tq, c.k_pos0 + c.Tk);
  std::vector<int64_t> docs = c.docs ? make_docs(c, ld, rng) : std::vector<int64_t>(1);
  DeviceBuffer<int64_t> docs_dev(docs);

  // CPU reference in double.
  cpu::AttnDims dc = d;
  if (c.docs) {
    dc.doc_start = docs.data();
    dc.doc_ld = ld;
  }
  std::vector<double> out_ref(nq), lse_ref(nl);
  cpu::attention_forward<double>(out_ref.data(), lse_ref.data(), qd.data(), kd.data(), vd.data(),
                                 dc, scale);
  cpu::attention_backward<double>(dqd.data(), dkd.data(), dvd.data(), doutd.data(), qd.data(),
                                  kd.data(), vd.data(), out_ref.data(), lse_ref.data(), dc, scale);

  // GPU.
  if (c.docs) {
    d.doc_start = docs_dev.get();
    d.doc_ld = ld;
  }
  DeviceBuffer<T> q_g(q), k_g(k), v_g(v), dout_g(dout), dq_g(dq0), dk_g(dk0), dv_g(dv0);
  DeviceBuffer<T> out_g(nq);
  DeviceBuffer<float> lse_g(nl);
  DeviceBuffer<unsigned char> scratch(cuda::attention_backward_scratch_bytes(d));
  cuda::attention_forward<T>(out_g.get(), lse_g.get(), q_g.get(), k_g.get(), v_g.get(), d,
                             static_cast<float>(scale), nullptr);
  cuda::attention_backward<T>(dq_g.get(), dk_g.get(), dv_g.get(), dout_g.get(), q_g.get(),
                              k_g.get(), v_g.get(), out_g.get(), lse_g.get(), d,
                              static_cast<float>(scale), scratch.get(), nullptr);
  expect_close(out_g.to_host(), out_ref, tol_out, "out");
  expect_close(lse_g.to_host(), lse_ref, tol_out, "lse");
  expect_close(dq_g.to_host(), dqd, tol_grad, "dq");
  expect_close(dk_g.to_host(), dkd, tol_grad, "dk");
  expect_close(dv_g.to_host(), dvd, tol_grad, "dv");
}

TEST_F(AttentionGpu, Fp32MatchesCpu) {
  uint32_t seed = 1;
  for (const Case& c : cases()) check_case<float>(c, 1e-5, 1e-5, seed++);
}

// bf16: the tolerance of bf16 rounding (P and dS are rounded to bf16 before
// their tensor-core products, the outputs when stored); a CPU emulation of
// the kernels put the error near 4e-3 of the largest value.
TEST_F(AttentionGpu, Bf16MatchesCpu) {
  uint32_t seed = 100;
  for (const Case& c : cases()) check_case<__nv_bfloat16>(c, 1e-2, 1e-2, seed++);
}

template <class T>
void check_deterministic(const Case& c) {
  SCOPED_TRACE(c.name());
  std::mt19937 rng(7);
  const cpu::AttnDims d = dims_of(c);
  const size_t nq = c.B * c.Tq * c.Hq * c.D, nk = c.B * c.Tk * c.Hkv * c.D;
  std::vector<T> q, k, v, dout;
  std::vector<double> ignore;
  random_pair(q, ignore, nq, 1.0, rng);
  random_pair(k, ignore, nk, 1.0, rng);
  random_pair(v, ignore, nk, 1.0, rng);
  random_pair(dout, ignore, nq, 1.0, rng);
  DeviceBuffer<T> q_g(q), k_g(k), v_g(v), dout_g(dout), out_g(nq);
  DeviceBuffer<float> lse_g(c.B * c.Hq * c.Tq);
  DeviceBuffer<unsigned char> scratch(cuda::attention_backward_scratch_bytes(d));
  const float scale = 1.f / std::sqrt(static_cast<float>(c.D));
  cuda::attention_forward<T>(out_g.get(), lse_g.get(), q_g.get(), k_g.get(), v_g.get(), d, scale,
                             nullptr);
  std::vector<std::vector<T>> runs;
  for (int rep = 0; rep < 2; ++rep) {
    DeviceBuffer<T> dq(nq), dk(nk), dv(nk);
    cuda::attention_backward<T>(dq.get(), dk.get(), dv.get(), dout_g.get(), q_g.get(), k_g.get(),
                                v_g.get(), out_g.get(), lse_g.get(), d, scale, scratch.get(),
                                nullptr);
    for (auto* buf : {&dq, &dk, &dv}) runs.push_back(buf->to_host());
  }
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(std::memcmp(runs[i].data(), runs[i + 3].data(), runs[i].size() * sizeof(T)), 0)
        << "gradient " << i << " differs between two identical backward calls";
}

TEST_F(AttentionGpu, BackwardIsDeterministic) {
  const Case c{2, 256, 256, 6, 2, 64, 0, 0, true};
  check_deterministic<float>(c);
  check_deterministic<__nv_bfloat16>(c);
  check_deterministic<__nv_bfloat16>({1, 130, 130, 4, 1, 128, 0, 0, false});
}

// Argument checks run on the host before any launch: no device needed.
TEST(AttentionGpuArgs, DropoutIsRefusedNotIgnored) {
  cpu::AttnDims d = dims_of({1, 4, 4, 2, 1, 64, 0, 0, true});
  d.dropout_p = 0.1;
  d.dropout_key = 42;
  float* null = nullptr;
  try {
    cuda::attention_forward<float>(null, null, null, null, null, d, 0.125f, nullptr);
    FAIL() << "dropout was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dropout"), std::string::npos) << e.what();
  }
}

TEST(AttentionGpuArgs, BadHeadsAreRefused) {
  cpu::AttnDims d = dims_of({1, 4, 4, 6, 4, 64, 0, 0, true});
  float* null = nullptr;
  EXPECT_THROW(cuda::attention_forward<float>(null, null, null, null, null, d, 0.125f, nullptr),
               Error);
  d = dims_of({1, 4, 4, 2, 1, 512, 0, 0, true});
  EXPECT_THROW(cuda::attention_forward<float>(null, null, null, null, null, d, 0.125f, nullptr),
               Error);
}

}  // namespace
}  // namespace parallm
