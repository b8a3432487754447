// Host side of the GPU attention (attention.h): argument checks with clear
// messages (nvcc-compiled files carry no fmt) and the choice between the
// tensor-core path and the SIMT one. The choice depends only on dtype, D,
// the document mask and pointer alignment, never on timing.
#include "kernels/cuda/attention.h"

#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "base/error.h"
#include "kernels/cuda/attention_launch.h"

namespace parallm::cuda {
namespace {

void check_dims(const cpu::AttnDims& d) {
  PX_CHECK(d.B >= 0 && d.Tq >= 0 && d.Tk >= 0 && d.D > 0,
           "cuda attention: bad dims B={} Tq={} Tk={} D={}", d.B, d.Tq, d.Tk, d.D);
  PX_CHECK(d.Hkv > 0 && d.Hq > 0 && d.Hq % d.Hkv == 0,
           "cuda attention: query heads ({}) must be a positive multiple of kv heads ({})", d.Hq,
           d.Hkv);
  PX_CHECK(d.D <= detail::kAttnSimtMaxD, "cuda attention: head dim {} exceeds the supported {}",
           d.D, detail::kAttnSimtMaxD);
  PX_CHECK(!d.dropout(),
           "cuda attention: dropout (p={}) is not implemented on the GPU; run attention "
           "dropout on the CPU backend or set it to 0",
           d.dropout_p);
  PX_CHECK(d.doc_start == nullptr || d.doc_ld >= d.q_pos0 + d.Tq,
           "cuda attention: document starts of {} positions per row, but queries reach "
           "position {}",
           d.doc_ld, d.q_pos0 + d.Tq);
  PX_CHECK(d.window == 0 || d.window >= d.q_pos0 + d.Tq - d.k_pos0,
           "cuda attention: a sliding window ({}) narrower than the keys a query can see ({}) "
           "is not implemented on the GPU; run it on the CPU backend",
           d.window, d.q_pos0 + d.Tq - d.k_pos0);
  PX_CHECK(d.q_pos0 + d.Tq < (int64_t{1} << 31) && d.k_pos0 + d.Tk < (int64_t{1} << 31),
           "cuda attention: positions must stay below 2^31 (q_pos0 + Tq = {}, k_pos0 + Tk = {})",
           d.q_pos0 + d.Tq, d.k_pos0 + d.Tk);
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <class T>
bool use_mma(const cpu::AttnDims& d, std::initializer_list<const void*> ptrs) {
  if (!std::is_same_v<T, __nv_bfloat16>) return false;
  if ((d.D != 64 && d.D != 128) || d.doc_start != nullptr) return false;
  if (d.B > 65535 || d.Hq > 65535) return false;  // grid y / z limits of the tiled kernels
  for (const void* p : ptrs)
    if (!aligned16(p)) return false;
  return true;
}

}  // namespace

size_t attention_backward_scratch_bytes(const cpu::AttnDims& d) {
  return static_cast<size_t>(d.B * d.Hq * d.Tq) * sizeof(float);
}

template <class T>
void attention_forward(T* out, float* lse, const T* q, const T* k, const T* v,
                       const cpu::AttnDims& d, float scale, cudaStream_t s) {
  check_dims(d);
  if (d.B == 0 || d.Tq == 0 || d.Hq == 0) return;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    if (use_mma<T>(d, {out, q, k, v})) {
      detail::attention_forward_mma(out, lse, q, k, v, d, scale, s);
      return;
    }
  }
  detail::attention_forward_simt(out, lse, q, k, v, d, scale, s);
}

template <class T>
void attention_backward(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v,
                        const T* out, const float* lse, const cpu::AttnDims& d, float scale,
                        void* scratch, cudaStream_t s) {
  check_dims(d);
  if (d.B == 0 || d.Tq == 0 || d.Tk == 0) return;
  PX_CHECK(scratch != nullptr, "cuda attention_backward: scratch of {} bytes is null",
           attention_backward_scratch_bytes(d));
  auto* delta = static_cast<float*>(scratch);
  detail::attention_row_delta(delta, dout, out, d, s);
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    if (use_mma<T>(d, {dq, dk, dv, dout, q, k, v})) {
      detail::attention_backward_mma(dq, dk, dv, dout, q, k, v, lse, delta, d, scale, s);
      return;
    }
  }
  detail::attention_backward_simt(dq, dk, dv, dout, q, k, v, lse, delta, d, scale, s);
}

#define PARALLM_INSTANTIATE_CUDA_ATTENTION(T)                                                     \
  template void attention_forward<T>(T*, float*, const T*, const T*, const T*,                    \
                                     const cpu::AttnDims&, float, cudaStream_t);                  \
  template void attention_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*,         \
                                      const T*, const float*, const cpu::AttnDims&, float, void*, \
                                      cudaStream_t);
PARALLM_INSTANTIATE_CUDA_ATTENTION(float)
PARALLM_INSTANTIATE_CUDA_ATTENTION(__nv_bfloat16)
#undef PARALLM_INSTANTIATE_CUDA_ATTENTION

}  // namespace parallm::cuda
