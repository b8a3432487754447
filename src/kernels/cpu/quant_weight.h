// A linear layer's inference weight W (rows, cols) held in a GGUF block
// format (quant_blocks.h): each row its cols / block_elems blocks, back to
// back, exactly as a .gguf file lays a 2-D tensor out (ne0 = cols), so a
// file's bytes are copied in and never requantised. Every stored byte comes
// from the allocator tagged Parameter. A tp rank's slice keeps the full
// tensor's blocks bit for bit (rows: any; columns: whole blocks).
#pragma once
#include <cstdint>

#include "kernels/cpu/quant_blocks.h"
#include "tensor/allocator.h"
#include "tensor/tensor.h"

namespace parallm::cpu {

class QuantWeight {
 public:
  // From blocks already in the format: row r at blocks + r * quant_row_bytes(t, cols).
  QuantWeight(Allocator& a, QuantType t, int64_t rows, int64_t cols, const uint8_t* blocks);
  // Quantises w (rows, cols) f32 row-major.
  static QuantWeight quantize(Allocator& a, QuantType t, const float* w, int64_t rows,
                              int64_t cols);
  // Rows [row0, row0 + rows) x columns [col0, col0 + cols) of `full`, its
  // blocks copied (col0 and cols multiples of the block size; throws, naming
  // them, when not).
  static QuantWeight slice(Allocator& a, const QuantWeight& full, int64_t row0, int64_t rows,
                           int64_t col0, int64_t cols);

  QuantType type() const { return type_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t row_bytes() const { return row_bytes_; }
  // Row r's blocks (host memory).
  const uint8_t* row(int64_t r) const { return blocks_.data<uint8_t>() + r * row_bytes_; }
  int64_t stored_bytes() const { return rows_ * row_bytes_; }
  // Rows [r0, r1) to f32 into out (r1 - r0, cols).
  void dequantize_rows(int64_t r0, int64_t r1, float* out) const;

 private:
  QuantWeight(Allocator& a, QuantType t, int64_t rows, int64_t cols);
  QuantType type_;
  int64_t rows_ = 0, cols_ = 0, row_bytes_ = 0;
  Tensor blocks_;  // U8, rows * row_bytes
};

}  // namespace parallm::cpu
