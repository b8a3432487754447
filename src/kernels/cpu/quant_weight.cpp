// QuantWeight storage and slicing (see quant_weight.h).
#include "kernels/cpu/quant_weight.h"

#include <cstring>

#include "base/error.h"

namespace parallm::cpu {

QuantWeight::QuantWeight(Allocator& a, QuantType t, int64_t rows, int64_t cols)
    : type_(t), rows_(rows), cols_(cols) {
  PX_CHECK(rows > 0 && cols > 0, "{} weight shape ({}, {}) must be positive",
           quant_traits(t).name, rows, cols);
  PX_CHECK(cols % quant_traits(t).block_elems == 0,
           "{} weight: a row of {} values is not a whole number of blocks of {}",
           quant_traits(t).name, cols, quant_traits(t).block_elems);
  row_bytes_ = quant_row_bytes(t, cols);
  blocks_ = Tensor::zeros(a, Shape{rows * row_bytes_}, DType::U8, MemTag::Parameter);
}

QuantWeight::QuantWeight(Allocator& a, QuantType t, int64_t rows, int64_t cols,
                         const uint8_t* blocks)
    : QuantWeight(a, t, rows, cols) {
  std::memcpy(blocks_.data<uint8_t>(), blocks, static_cast<size_t>(rows * row_bytes_));
}

QuantWeight QuantWeight::quantize(Allocator& a, QuantType t, const float* w, int64_t rows,
                                  int64_t cols) {
  QuantWeight q(a, t, rows, cols);
  quantize_blocks(t, w, rows * cols, q.blocks_.data<uint8_t>());
  return q;
}

QuantWeight QuantWeight::slice(Allocator& a, const QuantWeight& full, int64_t row0, int64_t rows,
                               int64_t col0, int64_t cols) {
  const int64_t k = quant_traits(full.type_).block_elems;
  PX_CHECK(row0 >= 0 && rows > 0 && row0 + rows <= full.rows_ && col0 >= 0 && cols > 0 &&
               col0 + cols <= full.cols_,
           "slice rows [{}, {}) x cols [{}, {}) is outside the {} x {} weight", row0, row0 + rows,
           col0, col0 + cols, full.rows_, full.cols_);
  PX_CHECK(col0 % k == 0 && cols % k == 0,
           "a {} weight splits only on whole blocks of {} columns: columns [{}, {}) do not",
           quant_traits(full.type_).name, k, col0, col0 + cols);
  QuantWeight s(a, full.type_, rows, cols);
  const int64_t skip = col0 / k * quant_traits(full.type_).block_bytes;
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(s.blocks_.data<uint8_t>() + r * s.row_bytes_, full.row(row0 + r) + skip,
                static_cast<size_t>(s.row_bytes_));
  return s;
}

void QuantWeight::dequantize_rows(int64_t r0, int64_t r1, float* out) const {
  for (int64_t r = r0; r < r1; ++r) dequantize_blocks(type_, row(r), cols_, out + (r - r0) * cols_);
}

}  // namespace parallm::cpu
