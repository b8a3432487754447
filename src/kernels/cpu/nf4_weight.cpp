#include "kernels/cpu/nf4_weight.h"

#include <algorithm>

#include "base/error.h"
#include "kernels/cpu/nf4.h"

namespace parallm::cpu {

Nf4Weight::Nf4Weight(Allocator& a, const float* w, int64_t rows, int64_t cols, bool double_quant,
                     int64_t blocksize)
    : rows_(rows), cols_(cols), blocksize_(blocksize), double_quant_(double_quant) {
  PX_CHECK(rows > 0 && cols > 0, "NF4 weight shape ({}, {}) must be positive", rows, cols);
  PX_CHECK(blocksize >= 2 && blocksize % 2 == 0, "NF4 blocksize ({}) must be even and >= 2",
           blocksize);
  const int64_t n = rows * cols, blocks = nf4_ceil_div(n, blocksize);
  packed_ = Tensor::zeros(a, Shape{nf4_ceil_div(n, 2)}, DType::U8, MemTag::Parameter);
  if (!double_quant) {
    absmax_ = Tensor::zeros(a, Shape{blocks}, DType::F32, MemTag::Parameter);
    nf4_quantize(w, n, blocksize, packed_.data<uint8_t>(), absmax_.data<float>());
    return;
  }
  Tensor full = Tensor::zeros(a, Shape{blocks}, DType::F32, MemTag::Workspace);
  nf4_quantize(w, n, blocksize, packed_.data<uint8_t>(), full.data<float>());
  qabsmax_ = Tensor::zeros(a, Shape{blocks}, DType::U8, MemTag::Parameter);
  absmax2_ = Tensor::zeros(a, Shape{nf4_ceil_div(blocks, kAbsmaxBlockSize)}, DType::F32,
                           MemTag::Parameter);
  offset_ = double_quantize_absmax(full.data<float>(), blocks, qabsmax_.data<uint8_t>(),
                                   absmax2_.data<float>());
}

float Nf4Weight::block_scale(int64_t block) const {
  if (!double_quant_) return absmax_.data<float>()[block];
  // bnb: dequantize_blockwise(qabsmax) then += offset, two f32 roundings.
  const float centred = dynamic_map_signed()[qabsmax_.data<uint8_t>()[block]] *
                        absmax2_.data<float>()[block / kAbsmaxBlockSize];
  return centred + offset_;
}

void Nf4Weight::dequantize(int64_t begin, int64_t end, float* out) const {
  PX_CHECK(0 <= begin && begin <= end && end <= numel(),
           "NF4 dequantize range [{}, {}) outside the {} elements", begin, end, numel());
  const uint8_t* packed = packed_.data<uint8_t>();
  for (int64_t lo = begin; lo < end;) {
    const int64_t block = lo / blocksize_;
    const int64_t hi = std::min(end, (block + 1) * blocksize_);
    const float scale = block_scale(block);
    for (int64_t i = lo; i < hi; ++i) {
      const uint8_t byte = packed[i / 2];
      out[i - begin] = kNf4Code[i % 2 == 0 ? byte >> 4 : byte & 0xF] * scale;
    }
    lo = hi;
  }
}

int64_t Nf4Weight::stored_bytes() const {
  int64_t b = static_cast<int64_t>(packed_.nbytes());
  for (const Tensor* t : {&absmax_, &qabsmax_, &absmax2_})
    if (t->defined()) b += static_cast<int64_t>(t->nbytes());
  return b;
}

}  // namespace parallm::cpu
