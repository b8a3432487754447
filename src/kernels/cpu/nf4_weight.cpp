#include "kernels/cpu/nf4_weight.h"

#include <algorithm>

#include "base/error.h"
#include "kernels/cpu/nf4.h"
#include "tensor/test_device_memory.h"

namespace parallm::cpu {
namespace {

// The address this kernel reads p at: its host address when p is test
// device memory (the weight's own storage, or the model's f32 values).
template <class T>
T* at(T* p) {
  return is_test_device_address(p) ? test_device_host(p) : p;
}
template <class T>
T* at(const Tensor& t) {
  return at(t.data<T>());
}

}  // namespace

Nf4Weight::Nf4Weight(Allocator& a, const float* w, int64_t rows, int64_t cols, bool double_quant,
                     int64_t blocksize)
    : rows_(rows),
      cols_(cols),
      blocksize_(blocksize),
      full_cols_(cols),
      double_quant_(double_quant) {
  PX_CHECK(rows > 0 && cols > 0, "NF4 weight shape ({}, {}) must be positive", rows, cols);
  PX_CHECK(blocksize >= 2 && blocksize % 2 == 0, "NF4 blocksize ({}) must be even and >= 2",
           blocksize);
  const int64_t n = rows * cols, blocks = nf4_ceil_div(n, blocksize);
  packed_ = Tensor::zeros(a, Shape{nf4_ceil_div(n, 2)}, DType::U8, MemTag::Parameter);
  if (!double_quant) {
    absmax_ = Tensor::zeros(a, Shape{blocks}, DType::F32, MemTag::Parameter);
    nf4_quantize(at(w), n, blocksize, at<uint8_t>(packed_), at<float>(absmax_));
    return;
  }
  Tensor full = Tensor::zeros(a, Shape{blocks}, DType::F32, MemTag::Workspace);
  nf4_quantize(at(w), n, blocksize, at<uint8_t>(packed_), at<float>(full));
  qabsmax_ = Tensor::zeros(a, Shape{blocks}, DType::U8, MemTag::Parameter);
  absmax2_ = Tensor::zeros(a, Shape{nf4_ceil_div(blocks, kAbsmaxBlockSize)}, DType::F32,
                           MemTag::Parameter);
  offset_ = double_quantize_absmax(at<float>(full), blocks, at<uint8_t>(qabsmax_),
                                   at<float>(absmax2_));
}

bool Nf4Weight::slice_aligned(const Nf4Weight& full, int64_t row0, int64_t rows, int64_t col0,
                              int64_t cols) {
  const int64_t bs = full.blocksize_;
  if (cols == full.cols_)
    return col0 == 0 && (row0 * cols) % bs == 0 &&
           (row0 + rows == full.rows_ || (rows * cols) % bs == 0);
  return col0 % bs == 0 && cols % bs == 0 && full.cols_ % bs == 0;
}

Nf4Weight Nf4Weight::slice(Allocator& a, const Nf4Weight& full, int64_t row0, int64_t rows,
                           int64_t col0, int64_t cols) {
  PX_CHECK(row0 >= 0 && rows > 0 && row0 + rows <= full.rows_ && col0 >= 0 && cols > 0 &&
               col0 + cols <= full.cols_,
           "NF4 slice rows [{}, {}) x columns [{}, {}) outside the ({}, {}) weight", row0,
           row0 + rows, col0, col0 + cols, full.rows_, full.cols_);
  PX_CHECK(slice_aligned(full, row0, rows, col0, cols),
           "NF4 slice rows [{}, {}) x columns [{}, {}) of a ({}, {}) weight does not fall on "
           "whole blocks of {}",
           row0, row0 + rows, col0, col0 + cols, full.rows_, full.cols_, full.blocksize_);
  Nf4Weight s;
  s.rows_ = rows;
  s.cols_ = cols;
  s.blocksize_ = full.blocksize_;
  s.row0_ = full.row0_ + row0;  // a slice of a slice stays placed in the full tensor
  s.col0_ = full.col0_ + col0;
  s.full_cols_ = full.full_cols_;
  s.double_quant_ = full.double_quant_;
  s.offset_ = full.offset_;
  const int64_t n = rows * cols, bs = s.blocksize_, blocks = nf4_ceil_div(n, bs);
  s.packed_ = Tensor::zeros(a, Shape{nf4_ceil_div(n, 2)}, DType::U8, MemTag::Parameter);
  if (s.double_quant_)
    s.qabsmax_ = Tensor::zeros(a, Shape{blocks}, DType::U8, MemTag::Parameter);
  else
    s.absmax_ = Tensor::zeros(a, Shape{blocks}, DType::F32, MemTag::Parameter);
  Tensor& scales = s.double_quant_ ? s.qabsmax_ : s.absmax_;
  uint8_t* dst = at<uint8_t>(s.packed_);
  const uint8_t* src = at<uint8_t>(full.packed_);
  for (int64_t b = 0; b < blocks; ++b) {
    // Local block b is block fb of `full`: whole, starting at an even element.
    const int64_t i = b * bs, r = i / cols, c = i % cols;
    const int64_t fi = (row0 + r) * full.cols_ + col0 + c, fb = fi / bs;
    const int64_t len = std::min(bs, n - i);
    std::copy_n(src + fi / 2, nf4_ceil_div(len, 2), dst + i / 2);
    if (s.double_quant_)
      at<uint8_t>(scales)[b] = at<uint8_t>(full.qabsmax_)[fb];
    else
      at<float>(scales)[b] = at<float>(full.absmax_)[fb];
  }
  if (s.double_quant_) {  // every second-level scale (tiny: one per 16384 weights)
    s.absmax2_ = Tensor::zeros(a, full.absmax2_.shape(), DType::F32, MemTag::Parameter);
    std::copy_n(at<float>(full.absmax2_), full.absmax2_.numel(), at<float>(s.absmax2_));
  }
  return s;
}

int64_t Nf4Weight::full_block(int64_t block) const {
  if (row0_ == 0 && col0_ == 0 && full_cols_ == cols_) return block;
  const int64_t i = block * blocksize_;
  return ((row0_ + i / cols_) * full_cols_ + col0_ + i % cols_) / blocksize_;
}

float Nf4Weight::block_scale(int64_t block) const {
  if (!double_quant_) return at<float>(absmax_)[block];
  // bnb: dequantize_blockwise(qabsmax) then += offset, two f32 roundings.
  const float centred = dynamic_map_signed()[at<uint8_t>(qabsmax_)[block]] *
                        at<float>(absmax2_)[full_block(block) / kAbsmaxBlockSize];
  return centred + offset_;
}

void Nf4Weight::dequantize(int64_t begin, int64_t end, float* out) const {
  PX_CHECK(0 <= begin && begin <= end && end <= numel(),
           "NF4 dequantize range [{}, {}) outside the {} elements", begin, end, numel());
  const uint8_t* packed = at<uint8_t>(packed_);
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
