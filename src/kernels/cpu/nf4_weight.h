// A linear layer's frozen weight W (rows, cols) held in NF4 (kernels/cpu/nf4.h):
// packed nibbles and per-block absmax, or with double quantisation 8-bit
// absmax plus one fp32 absmax per 256 blocks and an fp32 offset. Every
// stored byte comes from the allocator tagged Parameter, so the allocator
// measures bytes per base weight; no fp32 copy of W outlives construction
// (only the fp32 absmax while double quantisation runs, tagged Workspace).
// A slice (a tp rank's rows or columns of the full tensor) keeps the full
// tensor's blocks that make it up, bit for bit: its values dequantise to
// exactly the full tensor's (the slice must fall on whole blocks). The
// tensors may be test device memory (tensor/test_device_memory.h): this
// kernel-side object reads and writes its own storage, and the f32 weight it
// quantises, through their host addresses, as a device's kernel would.
#pragma once
#include <cstdint>

#include "tensor/allocator.h"
#include "tensor/tensor.h"

namespace parallm::cpu {

class Nf4Weight {
 public:
  // w: (rows, cols) f32, row-major.
  Nf4Weight(Allocator& a, const float* w, int64_t rows, int64_t cols, bool double_quant,
            int64_t blocksize = 64);

  // Rows [row0, row0 + rows) x columns [col0, col0 + cols) of `full`, as the
  // blocks, codes and scales `full` holds for them (no requantisation; with
  // double quantisation the full tensor's 8-bit absmax of these blocks, its
  // absmax2 values and offset). Throws unless slice_aligned().
  static Nf4Weight slice(Allocator& a, const Nf4Weight& full, int64_t row0, int64_t rows,
                         int64_t col0, int64_t cols);
  // Whether that slice is made of whole blocks of `full`: all rows (cols ==
  // full.cols()) starting and, unless it reaches the end, ending on a block
  // boundary of the flat tensor; or a column range whose start and width
  // are multiples of the blocksize (every block inside one row).
  static bool slice_aligned(const Nf4Weight& full, int64_t row0, int64_t rows, int64_t col0,
                            int64_t cols);

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t numel() const { return rows_ * cols_; }
  int64_t blocksize() const { return blocksize_; }
  bool double_quant() const { return double_quant_; }
  float offset() const { return offset_; }

  // Flat elements [begin, end) dequantised into out[0, end - begin).
  void dequantize(int64_t begin, int64_t end, float* out) const;
  // Rows [r0, r1) into out (r1 - r0, cols).
  void dequantize_rows(int64_t r0, int64_t r1, float* out) const {
    dequantize(r0 * cols_, r1 * cols_, out);
  }

  // The stored parts, as bnb names them: packed (ceil(n/2) U8); absmax (F32,
  // one per block) without double quantisation, else qabsmax (U8, one per
  // block), absmax2 (F32, one per 256 blocks) and offset().
  const Tensor& packed() const { return packed_; }
  const Tensor& absmax() const { return absmax_; }
  const Tensor& qabsmax() const { return qabsmax_; }
  const Tensor& absmax2() const { return absmax2_; }
  int64_t stored_bytes() const;  // the bytes of the tensors above

 private:
  Nf4Weight() = default;
  float block_scale(int64_t block) const;
  // The full tensor's block holding local block `block` (itself unless a slice).
  int64_t full_block(int64_t block) const;
  int64_t rows_ = 0, cols_ = 0, blocksize_ = 0;
  int64_t row0_ = 0, col0_ = 0, full_cols_ = 0;  // where a slice sits in its full tensor
  bool double_quant_ = false;
  float offset_ = 0.0f;
  Tensor packed_, absmax_, qabsmax_, absmax2_;
};

}  // namespace parallm::cpu
