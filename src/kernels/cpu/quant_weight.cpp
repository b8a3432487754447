// QuantWeight storage, packing and slicing (see quant_weight.h).
#include "kernels/cpu/quant_weight.h"

#include <cstring>
#include <vector>

#include "base/error.h"
#include "kernels/cpu/quant_packed.h"

namespace parallm::cpu {

QuantWeight::QuantWeight(Allocator& a, QuantType t, int64_t rows, int64_t cols, QuantLayout layout)
    : type_(t), layout_(resolve_quant_layout(layout, t)), rows_(rows), cols_(cols) {
  PX_CHECK(rows > 0 && cols > 0, "{} weight shape ({}, {}) must be positive",
           quant_traits(t).name, rows, cols);
  PX_CHECK(cols % quant_traits(t).block_elems == 0,
           "{} weight: a row of {} values is not a whole number of blocks of {}",
           quant_traits(t).name, cols, quant_traits(t).block_elems);
  PX_CHECK(layout_ == QuantLayout::kRows || quant_packs(t), "{} blocks are not packed",
           quant_traits(t).name);
  row_bytes_ = quant_row_bytes(t, cols);
  int64_t bytes = rows * row_bytes_;
  if (layout_ != QuantLayout::kRows) {
    group_bytes_ = packed_group_bytes(t, cols);
    bytes = (rows + kPackRows - 1) / kPackRows * group_bytes_;
  }
  storage_ = Tensor::zeros(a, Shape{bytes}, DType::U8, MemTag::Parameter);
}

QuantWeight::QuantWeight(Allocator& a, QuantType t, int64_t rows, int64_t cols,
                         const uint8_t* blocks, QuantLayout layout)
    : QuantWeight(a, t, rows, cols, layout) {
  if (layout_ == QuantLayout::kRows)
    std::memcpy(storage_.data<uint8_t>(), blocks, static_cast<size_t>(rows * row_bytes_));
  else
    pack_rows(t, rows, cols, blocks, layout_ == QuantLayout::kPackedVnni, storage_.data<uint8_t>());
}

QuantWeight QuantWeight::quantize(Allocator& a, QuantType t, const float* w, int64_t rows,
                                  int64_t cols, QuantLayout layout) {
  std::vector<uint8_t> blocks(static_cast<size_t>(rows * quant_row_bytes(t, cols)));
  quantize_blocks(t, w, rows * cols, blocks.data());
  return QuantWeight(a, t, rows, cols, blocks.data(), layout);
}

const uint8_t* QuantWeight::row(int64_t r) const {
  PX_CHECK(layout_ == QuantLayout::kRows, "a packed {} weight has no row layout",
           quant_traits(type_).name);
  return storage_.data<uint8_t>() + r * row_bytes_;
}

const uint8_t* QuantWeight::group(int64_t g) const {
  PX_CHECK(layout_ != QuantLayout::kRows, "a {} weight in rows has no packed groups",
           quant_traits(type_).name);
  return storage_.data<uint8_t>() + g * group_bytes_;
}

void QuantWeight::copy_row_blocks(int64_t r, uint8_t* out) const {
  if (layout_ == QuantLayout::kRows)
    std::memcpy(out, row(r), static_cast<size_t>(row_bytes_));
  else
    unpack_row(type_, cols_, storage_.data<uint8_t>(), layout_ == QuantLayout::kPackedVnni, r, out);
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
  const int64_t len = quant_row_bytes(full.type_, cols);
  const int64_t skip = col0 / k * quant_traits(full.type_).block_bytes;
  std::vector<uint8_t> one(static_cast<size_t>(full.row_bytes_));
  std::vector<uint8_t> blocks(static_cast<size_t>(rows * len));
  for (int64_t r = 0; r < rows; ++r) {
    full.copy_row_blocks(row0 + r, one.data());
    std::memcpy(blocks.data() + r * len, one.data() + skip, static_cast<size_t>(len));
  }
  return QuantWeight(a, full.type_, rows, cols, blocks.data(), full.layout_);
}

void QuantWeight::dequantize_rows(int64_t r0, int64_t r1, float* out) const {
  std::vector<uint8_t> one(static_cast<size_t>(row_bytes_));
  for (int64_t r = r0; r < r1; ++r) {
    copy_row_blocks(r, one.data());
    dequantize_blocks(type_, one.data(), cols_, out + (r - r0) * cols_);
  }
}

}  // namespace parallm::cpu
