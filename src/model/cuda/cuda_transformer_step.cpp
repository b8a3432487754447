// One training micro-batch of CudaTransformer on the GPU: embedding ->
// blocks (cuda_block.cpp) -> final norm -> LM head fused with cross-entropy
// in chunks of rows (never the (N, V) logits), then the backward in reverse.
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "base/error.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/cross_entropy.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/embedding.h"
#include "kernels/cuda/norm.h"
#include "kernels/cuda/optimizer.h"
#include "model/cuda/cuda_transformer_impl.h"

namespace parallm {

size_t CudaTransformer::Impl::scratch_bytes() const {
  const int64_t N = max_B * seq;
  const cpu::AttnDims d = attn_dims(max_B);
  return std::max({cuda::layernorm_backward_scratch_bytes(N, cfg.hidden),
                   cuda::rmsnorm_backward_scratch_bytes(N, cfg.hidden),
                   cuda::attention_backward_scratch_bytes(d),
                   cuda::embedding_backward_scratch_bytes(N),
                   cuda::sum_squares_scratch_bytes(values.numel()), size_t{1}});
}

// The LM head and loss, a chunk of rows at a time: per-token losses in
// `losses`, d(final norm output) in dln.
template <class T>
void CudaTransformer::Impl::head(int64_t N, double grad_scale) {
  const int64_t C = cfg.hidden, V = cfg.vocab_size;
  const std::string table = cfg.tie_embeddings ? "embed.weight" : "lm_head.weight";
  const T* W = weight<T>(table);
  for (int64_t r0 = 0; r0 < N; r0 += head_rows) {
    const int64_t n = std::min(head_rows, N - r0);
    const T* x = ptr<T>(lnf) + r0 * C;
    cuda::linear_forward<T>(blas, ptr<T>(logits), nullptr, x, W, nullptr, n, C, V,
                            cuda::Epilogue::None, stream);
    mark("head.logits");
    cuda::ce_loss_grad_inplace<T>(ptr<T>(logits), losses.data<float>() + r0,
                                  targets.data<int32_t>() + r0, static_cast<float>(grad_scale), n,
                                  V, stream);
    mark("head.cross_entropy");
    linear_grads<T>(blas, ptr<T>(dln) + r0 * C, false, grad(table), nullptr, ptr<T>(logits), x, W,
                    n, C, V, stream);
    mark("head.backward");
  }
}

template <class T>
double CudaTransformer::Impl::step(const int32_t* inputs, const int32_t* tgt, int64_t B,
                                   double grad_scale) {
  const int64_t N = B * seq, C = cfg.hidden, L = cfg.n_layers;
  std::vector<int32_t> pos(static_cast<size_t>(N));
  for (int64_t i = 0; i < N; ++i) pos[static_cast<size_t>(i)] = static_cast<int32_t>(i % seq);
  PX_CUDA(
      cudaMemcpyAsync(tokens.raw(), inputs, N * sizeof(int32_t), cudaMemcpyHostToDevice, stream));
  PX_CUDA(cudaMemcpyAsync(targets.raw(), tgt, N * sizeof(int32_t), cudaMemcpyHostToDevice, stream));
  PX_CUDA(cudaMemcpyAsync(positions.raw(), pos.data(), N * sizeof(int32_t), cudaMemcpyHostToDevice,
                          stream));
  const int32_t* tok = tokens.data<int32_t>();
  const int32_t* ps = positions.data<int32_t>();
  mark("inputs");

  T* x0 = ptr<T>(layers[0].x);
  cuda::embedding_forward<T>(x0, tok, weight<T>("embed.weight"), N, C, 0, cfg.vocab_size, false,
                             stream);
  if (cfg.uses_learned_positions())
    cuda::embedding_forward<T>(x0, ps, weight<T>("pos_embed.weight"), N, C, 0, cfg.max_positions,
                               true, stream);
  mark("fwd.embedding");
  for (int l = 0; l < L; ++l) {
    T* out = l + 1 < L ? ptr<T>(layers[static_cast<size_t>(l) + 1].x) : ptr<T>(xf);
    layer_forward<T>(l, B, ptr<T>(layers[static_cast<size_t>(l)].x), out);
  }
  norm_forward<T>("final_norm", ptr<T>(xf), ptr<T>(lnf), meanf, rstdf, N);
  mark("fwd.norm");
  head<T>(N, grad_scale);

  PX_CUDA(cudaMemsetAsync(dx.raw(), 0, N * C * sizeof(T), stream));
  norm_backward<T>("final_norm", ptr<T>(dx), ptr<T>(dln), ptr<T>(xf), meanf, rstdf, N);
  mark("bwd.norm");
  for (int l = static_cast<int>(L) - 1; l >= 0; --l) layer_backward<T>(l, B);
  cuda::embedding_backward<T>(grad("embed.weight"), tok, ptr<T>(dx), N, C, 0, cfg.vocab_size,
                              scratch.raw(), stream);
  if (cfg.uses_learned_positions())
    cuda::embedding_backward<T>(grad("pos_embed.weight"), ps, ptr<T>(dx), N, C, 0,
                                cfg.max_positions, scratch.raw(), stream);
  mark("bwd.embedding");
  // Read the losses only now, so the host never waits between forward and backward.
  std::vector<float> host(static_cast<size_t>(N));
  PX_CUDA(cudaMemcpyAsync(host.data(), losses.raw(), N * sizeof(float), cudaMemcpyDeviceToHost,
                          stream));
  PX_CUDA(cudaStreamSynchronize(stream));
  return std::accumulate(host.begin(), host.end(), 0.0);
}

template double CudaTransformer::Impl::step<float>(const int32_t*, const int32_t*, int64_t, double);
template double CudaTransformer::Impl::step<__nv_bfloat16>(const int32_t*, const int32_t*, int64_t,
                                                           double);

}  // namespace parallm
