// The all-to-alls of ulysses.h. Send blocks are packed (peer, B, T, H/U, D)
// so block p is exactly what peer p needs; received blocks arrive as
// (peer, B, T, H/U, D) and are laid out by batch row.
#include "parallel/context/ulysses.h"

#include "base/error.h"
#include "ops/copy.h"
#include "tensor/tensor.h"

namespace parallm {

void ulysses_seq_to_heads(comm::Communicator& a2a, Allocator& alloc, float* heads, const float* seq,
                          int64_t B, int64_t T, int64_t H, int64_t D) {
  const int64_t U = a2a.size(), h = H / U, blk = B * T * h * D;
  PX_CHECK(H % U == 0, "Ulysses: {} heads do not split over {} ranks", H, U);
  const ops::Stream& st = ops::Stream::of(alloc);
  Tensor send = Tensor::zeros(alloc, {U * blk}, DType::F32, MemTag::Communication);
  Tensor recv = Tensor::zeros(alloc, {U * blk}, DType::F32, MemTag::Communication);
  float* s = send.data<float>();
  for (int64_t p = 0; p < U; ++p)
    for (int64_t bt = 0; bt < B * T; ++bt)
      ops::copy(st, s + p * blk + bt * h * D, seq + (bt * H + p * h) * D,
                static_cast<size_t>(h * D) * sizeof(float));
  a2a.all_to_all(s, recv.data<float>(), static_cast<size_t>(blk), DType::F32);
  const float* r = recv.data<float>();
  for (int64_t p = 0; p < U; ++p)
    for (int64_t b = 0; b < B; ++b)
      ops::copy(st, heads + ((b * U + p) * T) * h * D, r + p * blk + b * T * h * D,
                static_cast<size_t>(T * h * D) * sizeof(float));
}

void ulysses_heads_to_seq(comm::Communicator& a2a, Allocator& alloc, float* seq, const float* heads,
                          int64_t B, int64_t T, int64_t H, int64_t D) {
  const int64_t U = a2a.size(), h = H / U, blk = B * T * h * D;
  PX_CHECK(H % U == 0, "Ulysses: {} heads do not split over {} ranks", H, U);
  const ops::Stream& st = ops::Stream::of(alloc);
  Tensor send = Tensor::zeros(alloc, {U * blk}, DType::F32, MemTag::Communication);
  Tensor recv = Tensor::zeros(alloc, {U * blk}, DType::F32, MemTag::Communication);
  float* s = send.data<float>();
  for (int64_t p = 0; p < U; ++p)
    for (int64_t b = 0; b < B; ++b)
      ops::copy(st, s + p * blk + b * T * h * D, heads + ((b * U + p) * T) * h * D,
                static_cast<size_t>(T * h * D) * sizeof(float));
  a2a.all_to_all(s, recv.data<float>(), static_cast<size_t>(blk), DType::F32);
  const float* r = recv.data<float>();
  for (int64_t p = 0; p < U; ++p)
    for (int64_t bt = 0; bt < B * T; ++bt)
      ops::copy(st, seq + (bt * H + p * h) * D, r + p * blk + bt * h * D,
                static_cast<size_t>(h * D) * sizeof(float));
}

}  // namespace parallm
