// Slice geometry for checkpoints (see tensor_slice.h). copy_overlap works
// row by row along the last dimension, so its cost is the number of rows
// touched, not elements, and it copies contiguous runs with memcpy.
#include "io/checkpoint/tensor_slice.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"

namespace parallm {
namespace {

int64_t prod(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (int64_t d : v) n *= d;
  return n;
}

// Scalars are treated as shape [1] so every slice has at least one dimension.
std::vector<int64_t> at_least_1d(const std::vector<int64_t>& v, int64_t fill) {
  return v.empty() ? std::vector<int64_t>{fill} : v;
}

}  // namespace

TensorSlice TensorSlice::of_box(std::vector<int64_t> global_shape, std::vector<int64_t> box,
                                int shard_dim, int64_t shard_begin, int dim2, int64_t begin2) {
  TensorSlice s;
  s.offset.assign(global_shape.size(), 0);
  if (shard_dim >= 0) s.offset[static_cast<size_t>(shard_dim)] = shard_begin;
  if (dim2 >= 0) s.offset[static_cast<size_t>(dim2)] = begin2;
  s.global_shape = std::move(global_shape);
  s.box = std::move(box);
  s.flat_begin = 0;
  s.flat_end = prod(s.box);
  return s;
}

TensorSlice TensorSlice::sub_range(int64_t begin, int64_t end) const {
  TensorSlice s = *this;
  s.flat_begin = begin;
  s.flat_end = end;
  return s;
}

nlohmann::json slice_to_json(const TensorSlice& s) {
  return {{"global_shape", s.global_shape},
          {"offset", s.offset},
          {"box", s.box},
          {"flat", {s.flat_begin, s.flat_end}}};
}

TensorSlice slice_from_json(const nlohmann::json& j, const std::string& source) {
  TensorSlice s;
  try {
    s.global_shape = j.at("global_shape").get<std::vector<int64_t>>();
    s.offset = j.at("offset").get<std::vector<int64_t>>();
    s.box = j.at("box").get<std::vector<int64_t>>();
    auto f = j.at("flat").get<std::vector<int64_t>>();
    PX_CHECK(f.size() == 2, "{}: slice 'flat' must be [begin, end]", source);
    s.flat_begin = f[0];
    s.flat_end = f[1];
  } catch (const nlohmann::json::exception& e) {
    PX_FAIL("{}: malformed slice: {}", source, e.what());
  }
  const size_t d = s.global_shape.size();
  PX_CHECK(s.offset.size() == d && s.box.size() == d,
           "{}: slice dimensions disagree (global [{}], offset [{}], box [{}])", source,
           fmt::join(s.global_shape, ","), fmt::join(s.offset, ","), fmt::join(s.box, ","));
  for (size_t i = 0; i < d; ++i)
    PX_CHECK(s.offset[i] >= 0 && s.box[i] >= 0 && s.offset[i] + s.box[i] <= s.global_shape[i],
             "{}: slice box exceeds the tensor in dim {} (offset {}, box {}, size {})", source, i,
             s.offset[i], s.box[i], s.global_shape[i]);
  PX_CHECK(0 <= s.flat_begin && s.flat_begin <= s.flat_end && s.flat_end <= prod(s.box),
           "{}: slice range [{}, {}) exceeds its box of {} elements", source, s.flat_begin,
           s.flat_end, prod(s.box));
  return s;
}

std::vector<int64_t> slice_coords(const TensorSlice& s, int64_t k) {
  std::vector<int64_t> c(s.box.size());
  for (size_t d = s.box.size(); d-- > 0;) {
    c[d] = k % s.box[d] + s.offset[d];
    k /= s.box[d];
  }
  return c;
}

int64_t copy_overlap(const TensorSlice& src_in, const float* src_data, const TensorSlice& dst_in,
                     float* dst_data, uint8_t* covered) {
  PX_CHECK(src_in.global_shape.size() == dst_in.global_shape.size(),
           "slices of tensors of rank {} and {}", src_in.global_shape.size(),
           dst_in.global_shape.size());
  if (src_in.numel() == 0 || dst_in.numel() == 0) return 0;
  const auto sbox = at_least_1d(src_in.box, 1), soff = at_least_1d(src_in.offset, 0);
  const auto dbox = at_least_1d(dst_in.box, 1), doff = at_least_1d(dst_in.offset, 0);
  const size_t D = dbox.size(), last = D - 1;
  for (size_t d = 0; d < D; ++d)  // disjoint boxes: nothing to do
    if (std::max(soff[d], doff[d]) >= std::min(soff[d] + sbox[d], doff[d] + dbox[d])) return 0;

  const int64_t Ld = dbox[last], Ls = sbox[last];
  int64_t copied = 0;
  std::vector<int64_t> idx(D);
  for (int64_t q = dst_in.flat_begin / Ld; q * Ld < dst_in.flat_end; ++q) {
    // Row q of the destination box: its leading coordinates, global.
    int64_t rem = q, srow = 0;
    bool inside = true;
    for (size_t d = last; d-- > 0;) {
      idx[d] = rem % dbox[d] + doff[d];
      rem /= dbox[d];
    }
    for (size_t d = 0; d < last; ++d) {
      const int64_t local = idx[d] - soff[d];
      if (local < 0 || local >= sbox[d]) {
        inside = false;
        break;
      }
      srow = srow * sbox[d] + local;
    }
    if (!inside) continue;
    // Destination columns in this row, then clipped to the source box and range.
    const int64_t c0 = std::max(dst_in.flat_begin, q * Ld) - q * Ld;
    const int64_t c1 = std::min(dst_in.flat_end, (q + 1) * Ld) - q * Ld;
    int64_t g0 = std::max(doff[last] + c0, soff[last]);
    int64_t g1 = std::min(doff[last] + c1, soff[last] + Ls);
    const int64_t sbase = srow * Ls - soff[last];  // source flat index of global column g
    g0 = std::max(g0, src_in.flat_begin - sbase);
    g1 = std::min(g1, src_in.flat_end - sbase);
    if (g1 <= g0) continue;
    const int64_t dk = q * Ld + (g0 - doff[last]) - dst_in.flat_begin;
    const int64_t sk = sbase + g0 - src_in.flat_begin;
    std::memcpy(dst_data + dk, src_data + sk, static_cast<size_t>(g1 - g0) * sizeof(float));
    if (covered) std::memset(covered + dk, 1, static_cast<size_t>(g1 - g0));
    copied += g1 - g0;
  }
  return copied;
}

}  // namespace parallm
