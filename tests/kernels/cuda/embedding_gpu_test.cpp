// Embedding lookup and gradient on the GPU against the CPU kernels, on a
// vocab shard (tokens outside it, and negative ones, give zeros / no
// gradient), fp32 and bf16. The backward sums repeated tokens in token order
// like the CPU, so its result must match the CPU bit for bit and repeat
// bitwise from run to run.
#include <cuda_bf16.h>

#include <random>
#include <string>

#include "common/gpu_compare.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cuda/embedding.h"

namespace parallm {
namespace {

using testing::DeviceBuffer;
using testing::download;
using testing::expect_close;
using testing::expect_same_bits;
using testing::random_normal;
using testing::round_to;
using testing::upload;
using EmbeddingGpu = testing::GpuTest;

// Tokens in [-2, vocab): a few negative, many repeats, some outside the shard.
std::vector<int32_t> random_tokens(int64_t N, int32_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> ud(-2, vocab - 1);
  std::vector<int32_t> t(N);
  for (auto& v : t) v = ud(rng);
  return t;
}

template <class T>
void check_embedding(int64_t N, int64_t C, int64_t row_begin, int64_t rows, int32_t vocab) {
  const std::string tag = " N=" + std::to_string(N) + " C=" + std::to_string(C);
  const auto tokens = random_tokens(N, vocab, static_cast<uint32_t>(N + C));
  const auto table = round_to<T>(random_normal(rows * C, 1));
  const auto base = round_to<T>(random_normal(N * C, 2));
  DeviceBuffer<int32_t> gtok(tokens);
  auto gtable = upload<T>(table);

  std::vector<float> out(N * C);
  cpu::embedding_forward<float>(out.data(), tokens.data(), table.data(), N, C, row_begin, rows,
                                false);
  DeviceBuffer<T> gout(N * C);
  cuda::embedding_forward<T>(gout.get(), gtok.get(), gtable.get(), N, C, row_begin, rows, false,
                             nullptr);
  expect_close(download(gout), out, 0.f, 0.f, "embedding forward" + tag);

  std::vector<float> acc = base;
  cpu::embedding_forward<float>(acc.data(), tokens.data(), table.data(), N, C, row_begin, rows,
                                true);
  auto gacc = upload<T>(base);
  cuda::embedding_forward<T>(gacc.get(), gtok.get(), gtable.get(), N, C, row_begin, rows, true,
                             nullptr);
  expect_close(download(gacc), round_to<T>(acc), 0.f, 0.f, "embedding forward +=" + tag);

  const auto dout = round_to<T>(random_normal(N * C, 3));
  const auto dtable0 = random_normal(rows * C, 4);
  std::vector<float> dtable = dtable0;
  cpu::embedding_backward<float>(dtable.data(), tokens.data(), dout.data(), N, C, row_begin, rows);
  auto gdout = upload<T>(dout);
  DeviceBuffer<float> gdtable(dtable0);
  cuda::embedding_backward<T>(gdtable.get(), gtok.get(), gdout.get(), N, C, row_begin, rows,
                              nullptr);
  expect_same_bits(gdtable.to_host(), dtable, "embedding backward" + tag);

  // Caller-owned scratch, twice: bitwise the same both times.
  DeviceBuffer<char> scratch(cuda::embedding_backward_scratch_bytes(N));
  DeviceBuffer<float> again(dtable0);
  cuda::embedding_backward<T>(again.get(), gtok.get(), gdout.get(), N, C, row_begin, rows,
                              scratch.get(), nullptr);
  expect_same_bits(again.to_host(), dtable, "embedding backward, scratch" + tag);
}

TEST_F(EmbeddingGpu, FloatMatchesCpuBitwise) {
  check_embedding<float>(1, 7, 0, 5, 5);
  check_embedding<float>(37, 768, 10, 20, 40);
  check_embedding<float>(5000, 130, 3, 50, 60);
  check_embedding<float>(300, 33, 0, 1000, 1000);  // most rows untouched
}

TEST_F(EmbeddingGpu, Bf16MatchesCpuBitwise) {
  check_embedding<__nv_bfloat16>(1, 7, 0, 5, 5);
  check_embedding<__nv_bfloat16>(37, 768, 10, 20, 40);
  check_embedding<__nv_bfloat16>(5000, 130, 3, 50, 60);
}

TEST_F(EmbeddingGpu, BackwardRepeatsBitwiseOnALongRun) {
  // One token repeated 20000 times plus noise: a long ordered sum.
  const int64_t N = 20000, C = 65, rows = 8;
  auto tokens = random_tokens(N, rows, 9);
  for (int64_t i = 0; i < N; i += 2) tokens[i] = 3;
  const auto dout = random_normal(N * C, 10);
  DeviceBuffer<int32_t> gtok(tokens);
  DeviceBuffer<float> gdout(dout);
  std::vector<float> ref(rows * C, 0.f);
  cpu::embedding_backward<float>(ref.data(), tokens.data(), dout.data(), N, C, 0, rows);
  for (int run = 0; run < 2; ++run) {
    DeviceBuffer<float> g(rows * C);
    cuda::embedding_backward<float>(g.get(), gtok.get(), gdout.get(), N, C, 0, rows, nullptr);
    expect_same_bits(g.to_host(), ref, "long run, run " + std::to_string(run));
  }
}

}  // namespace
}  // namespace parallm
