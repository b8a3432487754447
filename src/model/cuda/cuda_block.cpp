// One transformer block of CudaTransformer, forward and backward, for both
// families: GPT-2 (LayerNorm, biases, learned positions, GELU MLP) and LLaMA
// (RMSNorm, no biases, RoPE on q and k, SwiGLU MLP), as model/layers/*.cpp
// do it on the CPU. Every backward kernel accumulates, so a buffer that must
// start fresh is zeroed first, and the residual stream's gradient dx rides
// through the norms' backward accumulation.
#include <cuda_bf16.h>

#include <cmath>
#include <utility>

#include "kernels/cuda/activation.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/norm.h"
#include "kernels/cuda/rope.h"
#include "model/cuda/cuda_transformer_impl.h"

namespace parallm {

namespace {

std::string layer_name(int l, const char* rest) { return "layers." + std::to_string(l) + rest; }

template <class T>
void zero(const Tensor& t, int64_t elems, cudaStream_t s) {
  PX_CUDA(cudaMemsetAsync(t.raw(), 0, elems * sizeof(T), s));
}

}  // namespace

// linear_backward with d(input) either written (accumulate false: the GEMM
// with beta 0, so no zeroing pass beforehand) or added to.
template <class T>
void linear_grads(cuda::Blas& blas, T* dinp, bool accumulate, float* dweight, float* dbias,
                  const T* dout, const T* inp, const T* weight, int64_t N, int64_t IC, int64_t OC,
                  cudaStream_t s) {
  cuda::gemm<T>(blas, false, false, N, IC, OC, 1.f, dout, OC, weight, IC, accumulate ? 1.f : 0.f,
                dinp, IC, s);
  cuda::linear_backward<T>(blas, nullptr, dweight, dbias, dout, inp, weight, N, IC, OC, s);
}
template void linear_grads<float>(cuda::Blas&, float*, bool, float*, float*, const float*,
                                  const float*, const float*, int64_t, int64_t, int64_t,
                                  cudaStream_t);
template void linear_grads<__nv_bfloat16>(cuda::Blas&, __nv_bfloat16*, bool, float*, float*,
                                          const __nv_bfloat16*, const __nv_bfloat16*,
                                          const __nv_bfloat16*, int64_t, int64_t, int64_t,
                                          cudaStream_t);

cpu::AttnDims CudaTransformer::Impl::attn_dims(int64_t B) const {
  return {
      .B = B, .Tq = seq, .Tk = seq, .Hq = cfg.n_heads, .Hkv = cfg.n_kv_heads, .D = cfg.head_dim};
}

template <class T>
void CudaTransformer::Impl::norm_forward(const std::string& name, const T* in, T* out, Tensor& mean,
                                         Tensor& rstd, int64_t N) {
  const float eps = static_cast<float>(cfg.norm_eps);
  if (cfg.uses_layernorm())
    cuda::layernorm_forward<T>(out, mean.data<float>(), rstd.data<float>(), in,
                               weight<T>(name + ".weight"), weight<T>(name + ".bias"), N,
                               cfg.hidden, eps, stream);
  else
    cuda::rmsnorm_forward<T>(out, rstd.data<float>(), in, weight<T>(name + ".weight"), N,
                             cfg.hidden, eps, stream);
}

template <class T>
void CudaTransformer::Impl::norm_backward(const std::string& name, T* dinp, const T* dout,
                                          const T* in, const Tensor& mean, const Tensor& rstd,
                                          int64_t N) {
  if (cfg.uses_layernorm())
    cuda::layernorm_backward<T>(dinp, grad(name + ".weight"), grad(name + ".bias"), dout, in,
                                weight<T>(name + ".weight"), mean.data<float>(), rstd.data<float>(),
                                N, cfg.hidden, scratch.raw(), stream);
  else
    cuda::rmsnorm_backward<T>(dinp, grad(name + ".weight"), dout, in, weight<T>(name + ".weight"),
                              rstd.data<float>(), N, cfg.hidden, scratch.raw(), stream);
}

template <class T>
void CudaTransformer::Impl::layer_forward(int l, int64_t B, const T* in, T* out,
                                          const CacheView* cache) {
  // Generation keeps nothing for a backward: every layer works in layer 0's buffers.
  Saved& s = layers[cache ? 0 : static_cast<size_t>(l)];
  const int64_t Tn = cache ? cache->n : seq, pos0 = cache ? cache->pos0 : 0;
  const int64_t N = B * Tn, C = cfg.hidden, qd = cfg.q_dim(), kvd = cfg.kv_dim();
  const bool bias = cfg.uses_bias();
  auto w = [&](const char* rest) { return weight<T>(layer_name(l, rest)); };
  auto b = [&](const char* rest) { return bias ? w(rest) : nullptr; };
  T* tmp = ptr<T>(dln);  // free during forward: a projection's output before its residual add
  norm_forward<T>(layer_name(l, ".norm1"), in, ptr<T>(s.ln1), s.mean1, s.rstd1, N);
  mark("fwd.norm");
  const cuda::Epilogue none = cuda::Epilogue::None;
  cuda::linear_forward<T>(blas, ptr<T>(s.q), nullptr, ptr<T>(s.ln1), w(".attn.q.weight"),
                          b(".attn.q.bias"), N, C, qd, none, stream);
  cuda::linear_forward<T>(blas, ptr<T>(s.k), nullptr, ptr<T>(s.ln1), w(".attn.k.weight"),
                          b(".attn.k.bias"), N, C, kvd, none, stream);
  cuda::linear_forward<T>(blas, ptr<T>(s.v), nullptr, ptr<T>(s.ln1), w(".attn.v.weight"),
                          b(".attn.v.bias"), N, C, kvd, none, stream);
  mark("fwd.qkv");
  if (rope_positions.defined()) {  // positions 0..seq-1, so + pos0 is this call's
    const int64_t* pos = rope_positions.data<int64_t>() + pos0;
    cuda::rope_forward<T>(ptr<T>(s.q), pos, B, Tn, cfg.n_heads, cfg.head_dim, cfg.rope_theta,
                          stream);
    cuda::rope_forward<T>(ptr<T>(s.k), pos, B, Tn, cfg.n_kv_heads, cfg.head_dim, cfg.rope_theta,
                          stream);
    mark("fwd.rope");
  }
  const T* keys = ptr<T>(s.k);
  const T* vals = ptr<T>(s.v);
  cpu::AttnDims dims = attn_dims(B);
  if (cache) {  // rows b's new keys at positions pos0.. of row b of the cache
    const size_t row = static_cast<size_t>(kvd) * sizeof(T);
    for (auto [src, dst] : {std::pair{&s.k, &cache_k[static_cast<size_t>(l)]},
                            std::pair{&s.v, &cache_v[static_cast<size_t>(l)]}})
      PX_CUDA(cudaMemcpy2DAsync(ptr<T>(*dst) + pos0 * kvd, static_cast<size_t>(seq) * row,
                                ptr<T>(*src), static_cast<size_t>(Tn) * row,
                                static_cast<size_t>(Tn) * row, static_cast<size_t>(B),
                                cudaMemcpyDeviceToDevice, stream));
    keys = ptr<T>(cache_k[static_cast<size_t>(l)]);
    vals = ptr<T>(cache_v[static_cast<size_t>(l)]);
    dims.Tq = Tn;
    dims.q_pos0 = pos0;
    mark("fwd.kv_append");
  }
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(cfg.head_dim)));
  cuda::attention_forward<T>(ptr<T>(s.att), s.lse.data<float>(), ptr<T>(s.q), keys, vals, dims,
                             scale, stream);
  mark("fwd.attention");
  cuda::linear_forward<T>(blas, tmp, nullptr, ptr<T>(s.att), w(".attn.o.weight"), b(".attn.o.bias"),
                          N, qd, C, none, stream);
  mark("fwd.attn_out");
  cuda::add<T>(ptr<T>(s.mid), in, tmp, N * C, stream);
  mark("fwd.residual");
  norm_forward<T>(layer_name(l, ".norm2"), ptr<T>(s.mid), ptr<T>(s.ln2), s.mean2, s.rstd2, N);
  mark("fwd.norm");
  mlp_forward<T>(l, N, s, tmp);
  cuda::add<T>(out, ptr<T>(s.mid), tmp, N * C, stream);
  mark("fwd.residual");
}

template <class T>
void CudaTransformer::Impl::mlp_forward(int l, int64_t N, Saved& s, T* out) {
  const int64_t C = cfg.hidden, I = cfg.intermediate;
  auto w = [&](const char* rest) { return weight<T>(layer_name(l, rest)); };
  const cuda::Epilogue none = cuda::Epilogue::None;
  if (cfg.uses_swiglu()) {
    cuda::linear_forward<T>(blas, ptr<T>(s.pre), nullptr, ptr<T>(s.ln2), w(".mlp.gate.weight"),
                            nullptr, N, C, I, none, stream);
    cuda::linear_forward<T>(blas, ptr<T>(s.up), nullptr, ptr<T>(s.ln2), w(".mlp.up.weight"),
                            nullptr, N, C, I, none, stream);
    mark("fwd.mlp_in");
    cuda::swiglu_forward<T>(ptr<T>(s.h), ptr<T>(s.pre), ptr<T>(s.up), N * I, stream);
    mark("fwd.swiglu");
    cuda::linear_forward<T>(blas, out, nullptr, ptr<T>(s.h), w(".mlp.down.weight"), nullptr, N, I,
                            C, none, stream);
    mark("fwd.mlp_out");
  } else {
    cuda::linear_forward<T>(blas, ptr<T>(s.h), ptr<T>(s.pre), ptr<T>(s.ln2), w(".mlp.fc.weight"),
                            w(".mlp.fc.bias"), N, C, I, cuda::Epilogue::Gelu, stream);
    mark("fwd.mlp_in");
    cuda::linear_forward<T>(blas, out, nullptr, ptr<T>(s.h), w(".mlp.proj.weight"),
                            w(".mlp.proj.bias"), N, I, C, none, stream);
    mark("fwd.mlp_out");
  }
}

// dx (d MLP output) -> dln_out = d(norm2 output), written (not added to).
template <class T>
void CudaTransformer::Impl::mlp_backward(int l, int64_t N, Saved& s, T* dln_out) {
  const int64_t C = cfg.hidden, I = cfg.intermediate;
  auto w = [&](const char* rest) { return weight<T>(layer_name(l, rest)); };
  auto g = [&](const char* rest) { return grad(layer_name(l, rest)); };
  T* dX = ptr<T>(dx);
  if (cfg.uses_swiglu()) {
    zero<T>(dpre, N * I, stream);
    mark("bwd.zero");
    linear_grads<T>(blas, ptr<T>(dh), false, g(".mlp.down.weight"), nullptr, dX, ptr<T>(s.h),
                    w(".mlp.down.weight"), N, I, C, stream);
    mark("bwd.mlp_out");
    zero<T>(dup, N * I, stream);
    cuda::swiglu_backward<T>(ptr<T>(dpre), ptr<T>(dup), ptr<T>(dh), ptr<T>(s.pre), ptr<T>(s.up),
                             N * I, stream);
    mark("bwd.swiglu");
    linear_grads<T>(blas, dln_out, false, g(".mlp.gate.weight"), nullptr, ptr<T>(dpre),
                    ptr<T>(s.ln2), w(".mlp.gate.weight"), N, C, I, stream);
    linear_grads<T>(blas, dln_out, true, g(".mlp.up.weight"), nullptr, ptr<T>(dup), ptr<T>(s.ln2),
                    w(".mlp.up.weight"), N, C, I, stream);
    mark("bwd.mlp_in");
  } else {
    // d(pre) straight from the GEMM's epilogue (bf16) or a pass right after it.
    cuda::linear_backward_gelu<T>(blas, ptr<T>(dpre), ptr<T>(s.pre), g(".mlp.proj.weight"),
                                  g(".mlp.proj.bias"), dX, ptr<T>(s.h), w(".mlp.proj.weight"), N, I,
                                  C, stream);
    mark("bwd.mlp_out_gelu");
    linear_grads<T>(blas, dln_out, false, g(".mlp.fc.weight"), g(".mlp.fc.bias"), ptr<T>(dpre),
                    ptr<T>(s.ln2), w(".mlp.fc.weight"), N, C, I, stream);
    mark("bwd.mlp_in");
  }
}

// On entry dx holds d(layer output); on exit d(layer input).
template <class T>
void CudaTransformer::Impl::layer_backward(int l, int64_t B) {
  Saved& s = layers[static_cast<size_t>(l)];
  const int64_t N = B * seq, C = cfg.hidden, qd = cfg.q_dim(), kvd = cfg.kv_dim();
  const bool bias = cfg.uses_bias();
  auto w = [&](const char* rest) { return weight<T>(layer_name(l, rest)); };
  auto g = [&](const char* rest) { return bias ? grad(layer_name(l, rest)) : nullptr; };
  auto gw = [&](const char* rest) { return grad(layer_name(l, rest)); };
  T* dX = ptr<T>(dx);
  mlp_backward<T>(l, N, s, ptr<T>(dln));
  norm_backward<T>(layer_name(l, ".norm2"), dX, ptr<T>(dln), ptr<T>(s.mid), s.mean2, s.rstd2, N);
  mark("bwd.norm");
  linear_grads<T>(blas, ptr<T>(datt), false, gw(".attn.o.weight"), g(".attn.o.bias"), dX,
                  ptr<T>(s.att), w(".attn.o.weight"), N, qd, C, stream);
  mark("bwd.attn_out");
  zero<T>(dq, N * qd, stream);
  zero<T>(dk, N * kvd, stream);
  zero<T>(dv, N * kvd, stream);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(cfg.head_dim)));
  cuda::attention_backward<T>(ptr<T>(dq), ptr<T>(dk), ptr<T>(dv), ptr<T>(datt), ptr<T>(s.q),
                              ptr<T>(s.k), ptr<T>(s.v), ptr<T>(s.att), s.lse.data<float>(),
                              attn_dims(B), scale, scratch.raw(), stream);
  mark("bwd.attention");
  if (rope_positions.defined()) {  // back through the rotation to the projections' outputs
    const int64_t* pos = rope_positions.data<int64_t>();
    cuda::rope_backward<T>(ptr<T>(dq), pos, B, seq, cfg.n_heads, cfg.head_dim, cfg.rope_theta,
                           stream);
    cuda::rope_backward<T>(ptr<T>(dk), pos, B, seq, cfg.n_kv_heads, cfg.head_dim, cfg.rope_theta,
                           stream);
    mark("bwd.rope");
  }
  linear_grads<T>(blas, ptr<T>(dln), false, gw(".attn.q.weight"), g(".attn.q.bias"), ptr<T>(dq),
                  ptr<T>(s.ln1), w(".attn.q.weight"), N, C, qd, stream);
  linear_grads<T>(blas, ptr<T>(dln), true, gw(".attn.k.weight"), g(".attn.k.bias"), ptr<T>(dk),
                  ptr<T>(s.ln1), w(".attn.k.weight"), N, C, kvd, stream);
  linear_grads<T>(blas, ptr<T>(dln), true, gw(".attn.v.weight"), g(".attn.v.bias"), ptr<T>(dv),
                  ptr<T>(s.ln1), w(".attn.v.weight"), N, C, kvd, stream);
  mark("bwd.qkv");
  norm_backward<T>(layer_name(l, ".norm1"), dX, ptr<T>(dln), ptr<T>(s.x), s.mean1, s.rstd1, N);
  mark("bwd.norm");
}

#define PX_INSTANTIATE(T)                                                                         \
  template void CudaTransformer::Impl::norm_forward<T>(const std::string&, const T*, T*, Tensor&, \
                                                       Tensor&, int64_t);                         \
  template void CudaTransformer::Impl::norm_backward<T>(                                          \
      const std::string&, T*, const T*, const T*, const Tensor&, const Tensor&, int64_t);         \
  template void CudaTransformer::Impl::layer_forward<T>(int, int64_t, const T*, T*,               \
                                                        const CacheView*);                        \
  template void CudaTransformer::Impl::layer_backward<T>(int, int64_t);
PX_INSTANTIATE(float)
PX_INSTANTIATE(__nv_bfloat16)
#undef PX_INSTANTIATE

}  // namespace parallm
