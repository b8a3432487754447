// GELU, SwiGLU and adds on the GPU against the CPU kernels, fp32 and bf16,
// sizes 1, 7 and a large odd one; backward accumulates into non-zero
// gradients; add works with its output aliasing either input. The 16-byte
// packed path gives bitwise what the scalar one (misaligned pointers) gives.
#include <cuda_bf16.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>

#include "common/gpu_compare.h"
#include "kernels/cpu/activation.h"
#include "kernels/cuda/activation.h"

namespace parallm {
namespace {

using testing::DeviceBuffer;
using testing::download;
using testing::expect_close;
using testing::expect_same_bits;
using testing::random_normal;
using testing::rel_tol;
using testing::round_to;
using testing::to_storage;
using testing::upload;
using ActivationGpu = testing::GpuTest;

const int64_t kSizes[] = {1, 7, 100003};

template <class T>
void check_gelu(int64_t n) {
  const float tol = rel_tol<T>();
  const std::string tag = " n=" + std::to_string(n);
  const auto x = round_to<T>(random_normal(n, 1, 0.f, 3.f));
  const auto dout = round_to<T>(random_normal(n, 2));
  const auto dinp0 = round_to<T>(random_normal(n, 3));
  std::vector<float> out(n), dinp = dinp0;
  cpu::gelu_forward<float>(out.data(), x.data(), n);
  cpu::gelu_backward<float>(dinp.data(), x.data(), dout.data(), n);
  auto gx = upload<T>(x), gd = upload<T>(dout), gdinp = upload<T>(dinp0);
  DeviceBuffer<T> gout(n);
  cuda::gelu_forward<T>(gout.get(), gx.get(), n, nullptr);
  cuda::gelu_backward<T>(gdinp.get(), gx.get(), gd.get(), n, nullptr);
  // The CPU's tanh carries ~1e-7 absolute error: the small absolute term.
  expect_close(download(gout), out, tol, std::max(tol, 1e-6f) * 0.1f, "gelu out" + tag);
  expect_close(download(gdinp), dinp, tol, std::max(tol, 1e-6f) * 0.1f, "gelu dinp" + tag);
}

template <class T>
void check_swiglu(int64_t n) {
  const float tol = rel_tol<T>();
  const std::string tag = " n=" + std::to_string(n);
  const auto g = round_to<T>(random_normal(n, 11, 0.f, 3.f));
  const auto u = round_to<T>(random_normal(n, 12));
  const auto dout = round_to<T>(random_normal(n, 13));
  const auto dg0 = round_to<T>(random_normal(n, 14)), du0 = round_to<T>(random_normal(n, 15));
  std::vector<float> out(n), dg = dg0, du = du0;
  cpu::swiglu_forward<float>(out.data(), g.data(), u.data(), n);
  cpu::swiglu_backward<float>(dg.data(), du.data(), dout.data(), g.data(), u.data(), n);
  auto gg = upload<T>(g), gu = upload<T>(u), gd = upload<T>(dout);
  auto gdg = upload<T>(dg0), gdu = upload<T>(du0);
  DeviceBuffer<T> gout(n);
  cuda::swiglu_forward<T>(gout.get(), gg.get(), gu.get(), n, nullptr);
  cuda::swiglu_backward<T>(gdg.get(), gdu.get(), gd.get(), gg.get(), gu.get(), n, nullptr);
  const float atol = std::max(tol, 1e-6f) * 0.1f;
  expect_close(download(gout), out, tol, atol, "swiglu out" + tag);
  expect_close(download(gdg), dg, tol, atol, "swiglu dgate" + tag);
  expect_close(download(gdu), du, tol, atol, "swiglu dup" + tag);
}

template <class T>
void check_add(int64_t n) {
  const std::string tag = " n=" + std::to_string(n);
  const auto a = round_to<T>(random_normal(n, 21)), b = round_to<T>(random_normal(n, 22));
  std::vector<float> sum = a;
  cpu::add_inplace<float>(sum.data(), b.data(), n);
  sum = round_to<T>(sum);  // one rounding of the exact-in-fp32 sum: bitwise expected
  auto ga = upload<T>(a), gb = upload<T>(b);
  DeviceBuffer<T> out(n);
  cuda::add<T>(out.get(), ga.get(), gb.get(), n, nullptr);
  expect_close(download(out), sum, 0.f, 0.f, "add" + tag);
  cuda::add<T>(gb.get(), ga.get(), gb.get(), n, nullptr);  // out aliases b
  expect_close(download(gb), sum, 0.f, 0.f, "add aliasing b" + tag);
  auto ga2 = upload<T>(a), gb2 = upload<T>(b);
  cuda::add<T>(ga2.get(), ga2.get(), gb2.get(), n, nullptr);  // out aliases a
  expect_close(download(ga2), sum, 0.f, 0.f, "add aliasing a" + tag);
  auto gy = upload<T>(a);
  cuda::add_inplace<T>(gy.get(), gb2.get(), n, nullptr);
  expect_close(download(gy), sum, 0.f, 0.f, "add_inplace" + tag);
}

TEST_F(ActivationGpu, GeluMatchesCpu) {
  for (int64_t n : kSizes) {
    check_gelu<float>(n);
    check_gelu<__nv_bfloat16>(n);
  }
}

TEST_F(ActivationGpu, SwigluMatchesCpu) {
  for (int64_t n : kSizes) {
    check_swiglu<float>(n);
    check_swiglu<__nv_bfloat16>(n);
  }
}

TEST_F(ActivationGpu, AddIsExactAndAliasSafe) {
  for (int64_t n : kSizes) {
    check_add<float>(n);
    check_add<__nv_bfloat16>(n);
  }
}

// Runs op on device copies of `arrays`, array k placed offsets[k] elements
// into its buffer (an odd offset misaligns it, forcing the scalar path)
// between sentinels (7) that must stay untouched; returns every array afterwards.
template <class T>
std::vector<std::vector<float>> run_at(const std::vector<std::vector<float>>& arrays,
                                       const std::vector<int64_t>& offsets,
                                       const std::function<void(const std::vector<T*>&)>& op) {
  const size_t kAfter = 16;
  std::vector<std::unique_ptr<DeviceBuffer<T>>> bufs;
  std::vector<T*> ptrs;
  for (size_t k = 0; k < arrays.size(); ++k) {
    std::vector<float> padded(static_cast<size_t>(offsets[k]), 7.f);
    padded.insert(padded.end(), arrays[k].begin(), arrays[k].end());
    padded.insert(padded.end(), kAfter, 7.f);
    bufs.push_back(std::make_unique<DeviceBuffer<T>>(to_storage<T>(padded)));
    ptrs.push_back(bufs.back()->get() + offsets[k]);
  }
  op(ptrs);
  std::vector<std::vector<float>> out;
  for (size_t k = 0; k < arrays.size(); ++k) {
    const auto h = download(*bufs[k]);
    const size_t begin = static_cast<size_t>(offsets[k]), end = begin + arrays[k].size();
    for (size_t i = 0; i < begin; ++i) EXPECT_EQ(h[i], 7.f) << "sentinel " << i << " array " << k;
    for (size_t i = end; i < h.size(); ++i)
      EXPECT_EQ(h[i], 7.f) << "sentinel " << i << " array " << k;
    out.emplace_back(h.begin() + begin, h.begin() + end);
  }
  return out;
}

// op on `inputs` with every pointer aligned (packed body, scalar tail), with
// every pointer misaligned by one element (all scalar), and with only the
// last one misaligned (all scalar): the three agree bit for bit.
template <class T>
void check_packed_vs_scalar(const std::string& what, int64_t n, int arrays,
                            const std::function<void(const std::vector<T*>&)>& op) {
  std::vector<std::vector<float>> inputs;
  for (int k = 0; k < arrays; ++k)
    inputs.push_back(round_to<T>(random_normal(n, 100 + k, 0.f, k == 1 ? 3.f : 1.f)));
  const std::string tag = what + " n=" + std::to_string(n) + (sizeof(T) == 2 ? " bf16" : " f32");
  const auto aligned = run_at<T>(inputs, std::vector<int64_t>(arrays, 0), op);
  const auto scalar = run_at<T>(inputs, std::vector<int64_t>(arrays, 1), op);
  std::vector<int64_t> last(arrays, 0);
  last.back() = 1;
  const auto mixed = run_at<T>(inputs, last, op);
  for (int k = 0; k < arrays; ++k) {
    expect_same_bits(aligned[k], scalar[k], tag + " array " + std::to_string(k) + " scalar");
    expect_same_bits(aligned[k], mixed[k], tag + " array " + std::to_string(k) + " mixed");
  }
}

template <class T>
void check_all_packed_vs_scalar(int64_t n) {
  check_packed_vs_scalar<T>("gelu_forward", n, 2, [n](const std::vector<T*>& p) {
    cuda::gelu_forward<T>(p[0], p[1], n, nullptr);
  });
  check_packed_vs_scalar<T>("gelu_backward", n, 3, [n](const std::vector<T*>& p) {
    cuda::gelu_backward<T>(p[0], p[1], p[2], n, nullptr);
  });
  check_packed_vs_scalar<T>("swiglu_forward", n, 3, [n](const std::vector<T*>& p) {
    cuda::swiglu_forward<T>(p[0], p[1], p[2], n, nullptr);
  });
  check_packed_vs_scalar<T>("swiglu_backward", n, 5, [n](const std::vector<T*>& p) {
    cuda::swiglu_backward<T>(p[0], p[1], p[2], p[3], p[4], n, nullptr);
  });
  check_packed_vs_scalar<T>(
      "add", n, 3, [n](const std::vector<T*>& p) { cuda::add<T>(p[0], p[1], p[2], n, nullptr); });
  check_packed_vs_scalar<T>("add_inplace", n, 2, [n](const std::vector<T*>& p) {
    cuda::add_inplace<T>(p[0], p[1], n, nullptr);
  });
}

TEST_F(ActivationGpu, PackedPathIsBitwiseTheScalarPath) {
  // A pack's worth and less, a whole number of packs, and packs plus a tail.
  for (int64_t n : {int64_t{5}, int64_t{4096}, int64_t{100003}}) {
    check_all_packed_vs_scalar<float>(n);
    check_all_packed_vs_scalar<__nv_bfloat16>(n);
  }
}

TEST_F(ActivationGpu, ZeroLengthIsANoOp) {
  DeviceBuffer<float> x(std::vector<float>{5.f});
  cuda::gelu_forward<float>(x.get(), x.get(), 0, nullptr);
  cuda::add_inplace<float>(x.get(), x.get(), 0, nullptr);
  EXPECT_EQ(x.to_host()[0], 5.f);
}

}  // namespace
}  // namespace parallm
