// A linear layer's inference weight W (rows, cols) held in a GGUF block
// format (quant_blocks.h), read from a file or quantised here, never
// requantised. Stored either as the file lays it out (each row its blocks
// back to back) or packed in groups of 8 rows for the decode kernels
// (quant_packed.h: the same bytes regrouped, 2.8% more for Q4_K's widened
// scales). Every stored byte comes from the allocator tagged Parameter. A tp
// rank's slice keeps the full tensor's blocks bit for bit (rows: any;
// columns: whole blocks).
#pragma once
#include <cstdint>

#include "kernels/cpu/quant_blocks.h"
#include "tensor/allocator.h"
#include "tensor/tensor.h"

namespace parallm::cpu {

// kAuto: packed for the best decode kernel this machine runs when the type
// packs, else rows.
enum class QuantLayout { kAuto, kRows, kPackedAvx2, kPackedVnni };

class QuantWeight {
 public:
  // From blocks already in the format: row r at blocks + r * quant_row_bytes(t, cols).
  QuantWeight(Allocator& a, QuantType t, int64_t rows, int64_t cols, const uint8_t* blocks,
              QuantLayout layout = QuantLayout::kAuto);
  // Quantises w (rows, cols) f32 row-major.
  static QuantWeight quantize(Allocator& a, QuantType t, const float* w, int64_t rows,
                              int64_t cols, QuantLayout layout = QuantLayout::kAuto);
  // Rows [row0, row0 + rows) x columns [col0, col0 + cols) of `full`, its
  // blocks copied (col0 and cols multiples of the block size; throws, naming
  // them, when not), in full's layout.
  static QuantWeight slice(Allocator& a, const QuantWeight& full, int64_t row0, int64_t rows,
                           int64_t col0, int64_t cols);

  QuantType type() const { return type_; }
  QuantLayout layout() const { return layout_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t row_bytes() const { return row_bytes_; }
  // The rows layout: row r's blocks. Packed: group g's bytes (8 rows).
  const uint8_t* row(int64_t r) const;
  const uint8_t* group(int64_t g) const;
  // Row r's GGUF blocks (row_bytes() bytes), from either layout.
  void copy_row_blocks(int64_t r, uint8_t* out) const;
  int64_t stored_bytes() const { return storage_.nbytes(); }
  // Rows [r0, r1) to f32 into out (r1 - r0, cols).
  void dequantize_rows(int64_t r0, int64_t r1, float* out) const;

 private:
  QuantWeight(Allocator& a, QuantType t, int64_t rows, int64_t cols, QuantLayout layout);
  QuantType type_;
  QuantLayout layout_;
  int64_t rows_ = 0, cols_ = 0, row_bytes_ = 0, group_bytes_ = 0;
  Tensor storage_;  // U8: rows * row_bytes, or groups * group_bytes
};

// The layout kAuto means for type t on this machine (quant_gemm.cpp decides).
QuantLayout resolve_quant_layout(QuantLayout l, QuantType t);

}  // namespace parallm::cpu
