// One training micro-batch of CudaTransformer on the GPU: embedding ->
// blocks -> final LayerNorm -> LM head fused with cross-entropy in chunks of
// rows (never the (N, V) logits), then the backward in reverse. Mirrors the
// CPU layers (model/layers/*.cpp): every backward kernel accumulates, so a
// buffer that must start fresh is zeroed first, and the residual stream's
// gradient dx is carried through LayerNorm backward's accumulation.
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "base/error.h"
#include "kernels/cuda/activation.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/cross_entropy.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/embedding.h"
#include "kernels/cuda/norm.h"
#include "kernels/cuda/optimizer.h"
#include "model/cuda/cuda_transformer_impl.h"

namespace parallm {

namespace {

template <class T>
T* ptr(const Tensor& t) {
  return static_cast<T*>(t.raw());
}

std::string layer_name(int l, const char* rest) { return "layers." + std::to_string(l) + rest; }

}  // namespace

int64_t CudaTransformer::Impl::offset_of(const std::string& name) const {
  for (const auto& e : params)
    if (e.name == name) return e.offset;
  PX_FAIL("the GPU model found no parameter named {}", name);
}

template <class T>
const T* CudaTransformer::Impl::weight(const std::string& name) const {
  if constexpr (std::is_same_v<T, float>)
    return values.data<float>() + offset_of(name);
  else
    return ptr<T>(values16) + offset_of(name);
}

float* CudaTransformer::Impl::grad(const std::string& name) const {
  return grads.data<float>() + offset_of(name);
}

size_t CudaTransformer::Impl::scratch_bytes() const {
  const int64_t N = max_B * seq;
  cpu::AttnDims d{.B = max_B,
                  .Tq = seq,
                  .Tk = seq,
                  .Hq = cfg.n_heads,
                  .Hkv = cfg.n_kv_heads,
                  .D = cfg.head_dim};
  return std::max({cuda::layernorm_backward_scratch_bytes(N, cfg.hidden),
                   cuda::attention_backward_scratch_bytes(d),
                   cuda::sum_squares_scratch_bytes(values.numel()), size_t{1}});
}

template <class T>
void CudaTransformer::Impl::layer_forward(int l, int64_t B, const T* in, T* out) {
  Saved& s = layers[static_cast<size_t>(l)];
  const int64_t N = B * seq, C = cfg.hidden, I = cfg.intermediate;
  const int64_t qd = cfg.q_dim(), kvd = cfg.kv_dim();
  const float eps = static_cast<float>(cfg.norm_eps);
  auto w = [&](const char* rest) { return weight<T>(layer_name(l, rest)); };
  T* tmp = ptr<T>(dln);  // free during forward: a projection's output before its residual add
  cuda::layernorm_forward<T>(ptr<T>(s.ln1), s.mean1.data<float>(), s.rstd1.data<float>(), in,
                             w(".norm1.weight"), w(".norm1.bias"), N, C, eps, stream);
  cuda::linear_forward<T>(blas, ptr<T>(s.q), nullptr, ptr<T>(s.ln1), w(".attn.q.weight"),
                          w(".attn.q.bias"), N, C, qd, cuda::Epilogue::None, stream);
  cuda::linear_forward<T>(blas, ptr<T>(s.k), nullptr, ptr<T>(s.ln1), w(".attn.k.weight"),
                          w(".attn.k.bias"), N, C, kvd, cuda::Epilogue::None, stream);
  cuda::linear_forward<T>(blas, ptr<T>(s.v), nullptr, ptr<T>(s.ln1), w(".attn.v.weight"),
                          w(".attn.v.bias"), N, C, kvd, cuda::Epilogue::None, stream);
  cpu::AttnDims d{.B = B, .Tq = seq, .Tk = seq, .Hq = cfg.n_heads, .Hkv = cfg.n_kv_heads,
                  .D = cfg.head_dim};
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(cfg.head_dim)));
  cuda::attention_forward<T>(ptr<T>(s.att), s.lse.data<float>(), ptr<T>(s.q), ptr<T>(s.k),
                             ptr<T>(s.v), d, scale, stream);
  cuda::linear_forward<T>(blas, tmp, nullptr, ptr<T>(s.att), w(".attn.o.weight"),
                          w(".attn.o.bias"), N, qd, C, cuda::Epilogue::None, stream);
  cuda::add<T>(ptr<T>(s.mid), in, tmp, N * C, stream);
  cuda::layernorm_forward<T>(ptr<T>(s.ln2), s.mean2.data<float>(), s.rstd2.data<float>(),
                             ptr<T>(s.mid), w(".norm2.weight"), w(".norm2.bias"), N, C, eps,
                             stream);
  cuda::linear_forward<T>(blas, ptr<T>(s.h), ptr<T>(s.pre), ptr<T>(s.ln2), w(".mlp.fc.weight"),
                          w(".mlp.fc.bias"), N, C, I, cuda::Epilogue::Gelu, stream);
  cuda::linear_forward<T>(blas, tmp, nullptr, ptr<T>(s.h), w(".mlp.proj.weight"),
                          w(".mlp.proj.bias"), N, I, C, cuda::Epilogue::None, stream);
  cuda::add<T>(out, ptr<T>(s.mid), tmp, N * C, stream);
}

// On entry dx holds d(layer output); on exit d(layer input).
template <class T>
void CudaTransformer::Impl::layer_backward(int l, int64_t B) {
  Saved& s = layers[static_cast<size_t>(l)];
  const int64_t N = B * seq, C = cfg.hidden, I = cfg.intermediate;
  const int64_t qd = cfg.q_dim(), kvd = cfg.kv_dim();
  auto w = [&](const char* rest) { return weight<T>(layer_name(l, rest)); };
  auto g = [&](const char* rest) { return grad(layer_name(l, rest)); };
  auto zero = [&](const Tensor& t, int64_t elems) {
    PX_CUDA(cudaMemsetAsync(t.raw(), 0, elems * sizeof(T), stream));
  };
  T* dX = ptr<T>(dx);
  zero(dh, N * I);
  cuda::linear_backward<T>(blas, ptr<T>(dh), g(".mlp.proj.weight"), g(".mlp.proj.bias"), dX,
                           ptr<T>(s.h), w(".mlp.proj.weight"), N, I, C, stream);
  zero(dpre, N * I);
  cuda::gelu_backward<T>(ptr<T>(dpre), ptr<T>(s.pre), ptr<T>(dh), N * I, stream);
  zero(dln, N * C);
  cuda::linear_backward<T>(blas, ptr<T>(dln), g(".mlp.fc.weight"), g(".mlp.fc.bias"),
                           ptr<T>(dpre), ptr<T>(s.ln2), w(".mlp.fc.weight"), N, C, I, stream);
  cuda::layernorm_backward<T>(dX, g(".norm2.weight"), g(".norm2.bias"), ptr<T>(dln),
                              ptr<T>(s.mid), w(".norm2.weight"), s.mean2.data<float>(),
                              s.rstd2.data<float>(), N, C, scratch.raw(), stream);
  zero(datt, N * qd);
  cuda::linear_backward<T>(blas, ptr<T>(datt), g(".attn.o.weight"), g(".attn.o.bias"), dX,
                           ptr<T>(s.att), w(".attn.o.weight"), N, qd, C, stream);
  zero(dq, N * qd);
  zero(dk, N * kvd);
  zero(dv, N * kvd);
  cpu::AttnDims d{.B = B, .Tq = seq, .Tk = seq, .Hq = cfg.n_heads, .Hkv = cfg.n_kv_heads,
                  .D = cfg.head_dim};
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(cfg.head_dim)));
  cuda::attention_backward<T>(ptr<T>(dq), ptr<T>(dk), ptr<T>(dv), ptr<T>(datt), ptr<T>(s.q),
                              ptr<T>(s.k), ptr<T>(s.v), ptr<T>(s.att), s.lse.data<float>(), d,
                              scale, scratch.raw(), stream);
  zero(dln, N * C);
  cuda::linear_backward<T>(blas, ptr<T>(dln), g(".attn.q.weight"), g(".attn.q.bias"), ptr<T>(dq),
                           ptr<T>(s.ln1), w(".attn.q.weight"), N, C, qd, stream);
  cuda::linear_backward<T>(blas, ptr<T>(dln), g(".attn.k.weight"), g(".attn.k.bias"), ptr<T>(dk),
                           ptr<T>(s.ln1), w(".attn.k.weight"), N, C, kvd, stream);
  cuda::linear_backward<T>(blas, ptr<T>(dln), g(".attn.v.weight"), g(".attn.v.bias"), ptr<T>(dv),
                           ptr<T>(s.ln1), w(".attn.v.weight"), N, C, kvd, stream);
  cuda::layernorm_backward<T>(dX, g(".norm1.weight"), g(".norm1.bias"), ptr<T>(dln),
                              ptr<T>(s.x), w(".norm1.weight"), s.mean1.data<float>(),
                              s.rstd1.data<float>(), N, C, scratch.raw(), stream);
}

// The LM head and loss, a chunk of rows at a time: per-token losses in
// `losses`, d(final norm output) in dln.
template <class T>
void CudaTransformer::Impl::head(int64_t N, double grad_scale) {
  const int64_t C = cfg.hidden, V = cfg.vocab_size;
  const std::string table = cfg.tie_embeddings ? "embed.weight" : "lm_head.weight";
  const T* W = weight<T>(table);
  PX_CUDA(cudaMemsetAsync(dln.raw(), 0, N * C * sizeof(T), stream));
  for (int64_t r0 = 0; r0 < N; r0 += head_rows) {
    const int64_t n = std::min(head_rows, N - r0);
    const T* x = ptr<T>(lnf) + r0 * C;
    cuda::linear_forward<T>(blas, ptr<T>(logits), nullptr, x, W, nullptr, n, C, V,
                            cuda::Epilogue::None, stream);
    cuda::ce_loss_grad_inplace<T>(ptr<T>(logits), losses.data<float>() + r0,
                                  targets.data<int32_t>() + r0, static_cast<float>(grad_scale), n,
                                  V, stream);
    cuda::linear_backward<T>(blas, ptr<T>(dln) + r0 * C, grad(table), nullptr, ptr<T>(logits), x,
                             W, n, C, V, stream);
  }
}

template <class T>
double CudaTransformer::Impl::step(const int32_t* inputs, const int32_t* tgt, int64_t B,
                                   double grad_scale) {
  const int64_t N = B * seq, C = cfg.hidden, L = cfg.n_layers;
  std::vector<int32_t> pos(static_cast<size_t>(N));
  for (int64_t i = 0; i < N; ++i) pos[static_cast<size_t>(i)] = static_cast<int32_t>(i % seq);
  PX_CUDA(cudaMemcpyAsync(tokens.raw(), inputs, N * sizeof(int32_t), cudaMemcpyHostToDevice,
                          stream));
  PX_CUDA(cudaMemcpyAsync(targets.raw(), tgt, N * sizeof(int32_t), cudaMemcpyHostToDevice,
                          stream));
  PX_CUDA(cudaMemcpyAsync(positions.raw(), pos.data(), N * sizeof(int32_t),
                          cudaMemcpyHostToDevice, stream));
  const int32_t* tok = tokens.data<int32_t>();
  const int32_t* ps = positions.data<int32_t>();

  T* x0 = ptr<T>(layers[0].x);
  cuda::embedding_forward<T>(x0, tok, weight<T>("embed.weight"), N, C, 0, cfg.vocab_size, false,
                             stream);
  cuda::embedding_forward<T>(x0, ps, weight<T>("pos_embed.weight"), N, C, 0, cfg.max_positions,
                             true, stream);
  for (int l = 0; l < L; ++l) {
    T* out = l + 1 < L ? ptr<T>(layers[static_cast<size_t>(l) + 1].x) : ptr<T>(xf);
    layer_forward<T>(l, B, ptr<T>(layers[static_cast<size_t>(l)].x), out);
  }
  cuda::layernorm_forward<T>(ptr<T>(lnf), meanf.data<float>(), rstdf.data<float>(), ptr<T>(xf),
                             weight<T>("final_norm.weight"), weight<T>("final_norm.bias"), N, C,
                             static_cast<float>(cfg.norm_eps), stream);
  head<T>(N, grad_scale);

  PX_CUDA(cudaMemsetAsync(dx.raw(), 0, N * C * sizeof(T), stream));
  cuda::layernorm_backward<T>(ptr<T>(dx), grad("final_norm.weight"), grad("final_norm.bias"),
                              ptr<T>(dln), ptr<T>(xf), weight<T>("final_norm.weight"),
                              meanf.data<float>(), rstdf.data<float>(), N, C, scratch.raw(),
                              stream);
  for (int l = static_cast<int>(L) - 1; l >= 0; --l) layer_backward<T>(l, B);
  cuda::embedding_backward<T>(grad("embed.weight"), tok, ptr<T>(dx), N, C, 0, cfg.vocab_size,
                              stream);
  cuda::embedding_backward<T>(grad("pos_embed.weight"), ps, ptr<T>(dx), N, C, 0,
                              cfg.max_positions, stream);
  // Read the losses only now, so the host never waits between forward and backward.
  std::vector<float> host(static_cast<size_t>(N));
  PX_CUDA(cudaMemcpyAsync(host.data(), losses.raw(), N * sizeof(float), cudaMemcpyDeviceToHost,
                          stream));
  PX_CUDA(cudaStreamSynchronize(stream));
  return std::accumulate(host.begin(), host.end(), 0.0);
}

template double CudaTransformer::Impl::step<float>(const int32_t*, const int32_t*, int64_t,
                                                   double);
template double CudaTransformer::Impl::step<__nv_bfloat16>(const int32_t*, const int32_t*, int64_t,
                                                           double);

}  // namespace parallm
