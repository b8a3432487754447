// KV-cached inference on CudaTransformer (cuda_transformer.h): the training
// forward's blocks (cuda_block.cpp) with each call's keys and values appended
// to a per-layer cache, then the final norm and the LM head on each row's last
// new token only. Sampling stays with the caller: forward_cached hands the
// logits to the host, greedy_cached takes the argmax on the device.
#include <cuda_bf16.h>

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "base/error.h"
#include "kernels/cuda/argmax.h"
#include "kernels/cuda/convert.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/embedding.h"
#include "model/cuda/cuda_transformer_impl.h"

namespace parallm {

void CudaTransformer::Impl::ensure_cache() {
  if (!cache_k.empty()) return;
  const DType act = precision == CudaPrecision::BF16 ? DType::BF16 : DType::F32;
  const int64_t elems = max_B * seq * cfg.kv_dim();
  for (int64_t l = 0; l < cfg.n_layers; ++l) {
    cache_k.push_back(Tensor::zeros(alloc, Shape{elems}, act, MemTag::Activation, Device::CUDA));
    cache_v.push_back(Tensor::zeros(alloc, Shape{elems}, act, MemTag::Activation, Device::CUDA));
  }
  logits32 = Tensor::zeros(alloc, Shape{max_B * cfg.vocab_size}, DType::F32, MemTag::Workspace,
                           Device::CUDA);
  next_tokens = Tensor::zeros(alloc, Shape{max_B}, DType::I32, MemTag::Workspace, Device::CUDA);
}

void CudaTransformer::Impl::run_cached(const int32_t* host_tokens, int64_t B, int64_t n,
                                       int64_t pos0) {
  PX_CHECK(B >= 1 && B <= max_B && B <= head_rows,
           "generation on the GPU: {} rows outside 1..{} (the buffers' size)", B,
           std::min(max_B, head_rows));
  PX_CHECK(n >= 1 && pos0 >= 0 && pos0 + n <= seq,
           "generation on the GPU: {} tokens at position {} do not fit the cache of {} positions",
           n, pos0, seq);
  for (int64_t i = 0; i < B * n; ++i)
    PX_CHECK(host_tokens[i] >= 0 && host_tokens[i] < cfg.vocab_size,
             "generation on the GPU: token {} (row {}, index {}) outside the vocabulary of {}",
             host_tokens[i], i / n, i % n, cfg.vocab_size);
  if (precision == CudaPrecision::BF16)
    cached_forward<__nv_bfloat16>(host_tokens, B, n, pos0);
  else
    cached_forward<float>(host_tokens, B, n, pos0);
}

template <class T>
void CudaTransformer::Impl::cached_forward(const int32_t* host_tokens, int64_t B, int64_t n,
                                           int64_t pos0) {
  ensure_cache();
  const int64_t N = B * n, C = cfg.hidden, V = cfg.vocab_size, L = cfg.n_layers;
  std::vector<int32_t> pos(static_cast<size_t>(N));
  for (int64_t i = 0; i < N; ++i) pos[static_cast<size_t>(i)] = static_cast<int32_t>(pos0 + i % n);
  PX_CUDA(cudaMemcpyAsync(tokens.raw(), host_tokens, N * sizeof(int32_t), cudaMemcpyHostToDevice,
                          stream));
  PX_CUDA(cudaMemcpyAsync(positions.raw(), pos.data(), N * sizeof(int32_t), cudaMemcpyHostToDevice,
                          stream));
  // The residual stream alternates between two buffers layer_forward never writes otherwise.
  T* x[2] = {ptr<T>(layers[0].x), ptr<T>(xf)};
  cuda::embedding_forward<T>(x[0], tokens.data<int32_t>(), weight<T>("embed.weight"), N, C, 0, V,
                             false, stream);
  if (cfg.uses_learned_positions())
    cuda::embedding_forward<T>(x[0], positions.data<int32_t>(), weight<T>("pos_embed.weight"), N, C,
                               0, cfg.max_positions, true, stream);
  const CacheView view{.n = n, .pos0 = pos0};
  for (int l = 0; l < L; ++l) layer_forward<T>(l, B, x[l % 2], x[(l + 1) % 2], &view);
  const T* last = x[L % 2];
  norm_forward<T>("final_norm", last, ptr<T>(lnf), meanf, rstdf, N);
  // Each row's last token, gathered into rows of their own (dx is free).
  const T* rows = ptr<T>(lnf);
  if (n > 1) {
    const size_t row = static_cast<size_t>(C) * sizeof(T);
    PX_CUDA(cudaMemcpy2DAsync(dx.raw(), row, ptr<T>(lnf) + (n - 1) * C,
                              static_cast<size_t>(n) * row, row, static_cast<size_t>(B),
                              cudaMemcpyDeviceToDevice, stream));
    rows = ptr<T>(dx);
  }
  const std::string table = cfg.tie_embeddings ? "embed.weight" : "lm_head.weight";
  if constexpr (std::is_same_v<T, float>) {
    cuda::linear_forward<T>(blas, logits32.data<float>(), nullptr, rows, weight<T>(table), nullptr,
                            B, C, V, cuda::Epilogue::None, stream);
  } else {
    cuda::linear_forward<T>(blas, ptr<T>(logits), nullptr, rows, weight<T>(table), nullptr, B, C, V,
                            cuda::Epilogue::None, stream);
    cuda::bf16_to_f32(logits32.data<float>(), ptr<T>(logits), B * V, stream);
  }
  mark("head.logits");
}

template void CudaTransformer::Impl::cached_forward<float>(const int32_t*, int64_t, int64_t,
                                                           int64_t);
template void CudaTransformer::Impl::cached_forward<__nv_bfloat16>(const int32_t*, int64_t, int64_t,
                                                                   int64_t);

void CudaTransformer::forward_cached(const int32_t* tokens, int64_t B, int64_t n, int64_t pos0,
                                     float* logits) {
  Impl& s = *impl_;
  s.run_cached(tokens, B, n, pos0);
  PX_CUDA(cudaMemcpyAsync(logits, s.logits32.raw(), B * s.cfg.vocab_size * sizeof(float),
                          cudaMemcpyDeviceToHost, s.stream));
  PX_CUDA(cudaStreamSynchronize(s.stream));
}

void CudaTransformer::greedy_cached(const int32_t* tokens, int64_t B, int64_t n, int64_t pos0,
                                    int32_t* next) {
  Impl& s = *impl_;
  s.run_cached(tokens, B, n, pos0);
  cuda::argmax_rows(s.next_tokens.data<int32_t>(), s.logits32.data<float>(), B, s.cfg.vocab_size,
                    s.stream);
  PX_CUDA(cudaMemcpyAsync(next, s.next_tokens.raw(), B * sizeof(int32_t), cudaMemcpyDeviceToHost,
                          s.stream));
  PX_CUDA(cudaStreamSynchronize(s.stream));
}

}  // namespace parallm
