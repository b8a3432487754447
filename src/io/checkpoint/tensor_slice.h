// TensorSlice: which part of one named tensor a checkpoint piece holds, in
// global coordinates, so that any layout can read any other layout's pieces.
// A piece is the box [offset, offset + box) of the global tensor (a
// tensor-parallel shard, or the whole tensor) and, inside that box, the
// row-major element range [flat_begin, flat_end) (a ZeRO flat range that
// crosses the tensor only partly). A pipeline stage simply holds a subset of
// the tensors. Invariant: copy_overlap moves exactly the elements both
// slices hold, whatever the two layouts were.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace parallm {

struct TensorSlice {
  std::vector<int64_t> global_shape;     // full tensor
  std::vector<int64_t> offset;           // box origin in the global tensor
  std::vector<int64_t> box;              // box extent (the holder's local shape)
  int64_t flat_begin = 0, flat_end = 0;  // row-major element range inside the box

  int64_t numel() const { return flat_end - flat_begin; }
  // The whole box of a shard: offset along shard_dim (and dim2, for a
  // tensor split two ways: experts over ep and tp), elements [0, numel(box)).
  static TensorSlice of_box(std::vector<int64_t> global_shape, std::vector<int64_t> box,
                            int shard_dim, int64_t shard_begin, int dim2 = -1, int64_t begin2 = 0);
  // Elements [begin, end) of this slice's box.
  TensorSlice sub_range(int64_t begin, int64_t end) const;
};

nlohmann::json slice_to_json(const TensorSlice& s);
// `source` names the file in error messages; the slice is checked for consistency.
TensorSlice slice_from_json(const nlohmann::json& j, const std::string& source);

// Copies every element held by both slices from src_data (element
// src.flat_begin + j at src_data[j]) to dst_data (dst.flat_begin + k at
// dst_data[k]) and sets covered[k] = 1 for each (covered may be null).
// Global shapes may differ (padded vocabularies); coordinates are global.
// Returns the number of elements copied.
int64_t copy_overlap(const TensorSlice& src, const float* src_data, const TensorSlice& dst,
                     float* dst_data, uint8_t* covered);

// Global row-major coordinates of element k of `s` (k in [flat_begin, flat_end)).
std::vector<int64_t> slice_coords(const TensorSlice& s, int64_t k);

}  // namespace parallm
