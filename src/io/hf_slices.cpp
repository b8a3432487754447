#include "io/hf_slices.h"

#include <cstring>

#include "nn/op_buffers.h"
#include "tensor/half.h"

namespace parallm {

// n elements of e from element `begin`, converted to float (the bytes may be
// unaligned, so they are copied, never cast).
void read_elements(const SafetensorsFile& st, const TensorEntry& e, int64_t begin, int64_t n,
                   float* dst) {
  const size_t w = dtype_size(e.dtype);
  const std::byte* p = st.bytes(e).data() + static_cast<size_t>(begin) * w;
  for (int64_t k = 0; k < n; ++k, p += w) {
    if (e.dtype == DType::F32) {
      std::memcpy(dst + k, p, 4);
    } else if (e.dtype == DType::F64) {
      double d;
      std::memcpy(&d, p, 8);
      dst[k] = static_cast<float>(d);
    } else {
      uint16_t h;
      std::memcpy(&h, p, 2);
      dst[k] = e.dtype == DType::BF16 ? bf16_to_f32(h) : f16_to_f32(h);
    }
  }
}

// Scatters HF tensor t (entry e) into the parameters this rank holds: each
// internal part is a shard of its global tensor (shard_dim, shard_begin),
// and only that shard's rows (or, for GPT-2's transposed Conv1D weights, its
// columns) are read. Rows past the HF tensor (tp vocabulary padding) are left.
void scatter_hf_slices(const SafetensorsFile& st, const TensorEntry& e, const ParameterSet& ps,
                       const HfTensor& t) {
  const int64_t hf_rows = t.shape[0], hf_cols = t.shape.size() > 1 ? t.shape[1] : 1;
  if (t.expert >= 0) {  // one Mixtral expert: slice t.expert of a stacked tensor (ep-split)
    const int i = ps.find(t.parts.at(0));
    PX_CHECK(i >= 0, "internal parameter '{}' (for HF tensor '{}') does not exist", t.parts[0],
             t.name);
    const ParamSpec& s = ps.spec(i);
    const int64_t first = s.shard_dim == 0 ? s.shard_begin : 0;
    if (t.expert < first || t.expert >= first + s.shape[0]) return;  // another ep rank's
    // Under expert tp this rank holds rows (tp_dim 1) or columns (tp_dim 2)
    // [tp_begin, + local extent) of the expert's (hf_rows, hf_cols) matrix.
    const int64_t rows = s.shape[1], cols = s.shape.size() > 2 ? s.shape[2] : 1;
    const int64_t r0 = s.tp_dim == 1 ? s.tp_begin : 0, c0 = s.tp_dim == 2 ? s.tp_begin : 0;
    PX_CHECK(r0 + rows <= hf_rows && c0 + cols <= hf_cols,
             "HF tensor '{}' ({} x {}) is smaller than expert slice rows {}+{}, columns {}+{}",
             t.name, hf_rows, hf_cols, r0, rows, c0, cols);
    const HostView<float> dst(ps.stream(), ps.value({i}) + (t.expert - first) * rows * cols,
                              rows * cols);
    for (int64_t r = 0; r < rows; ++r)
      read_elements(st, e, (r0 + r) * hf_cols + c0, cols, dst.get() + r * cols);
    dst.write_back();
    return;
  }
  int64_t row0 = 0;  // global rows of the parts before this one
  for (const auto& name : t.parts) {
    const int i = ps.find(name);
    PX_CHECK(i >= 0, "internal parameter '{}' (for HF tensor '{}') does not exist", name, t.name);
    const ParamSpec& s = ps.spec(i);
    const int64_t rows = s.shape[0], cols = s.shape.size() > 1 ? s.shape[1] : 1;
    const int64_t off0 = s.shard_dim == 0 ? s.shard_begin : 0;
    const int64_t off1 = s.shard_dim == 1 ? s.shard_begin : 0;
    const HostView<float> view(ps.stream(), ps.value({i}), rows * cols);
    float* p = view.get();
    if (!t.transpose) {
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t g = row0 + off0 + r;
        if (g < hf_rows) read_elements(st, e, g * hf_cols + off1, cols, p + r * cols);
      }
    } else {  // HF holds (cols, rows of the concatenation): one run per column
      std::vector<float> run(static_cast<size_t>(rows));
      for (int64_t k = 0; k < cols; ++k) {
        read_elements(st, e, (off1 + k) * hf_cols + row0 + off0, rows, run.data());
        for (int64_t r = 0; r < rows; ++r) p[r * cols + k] = run[static_cast<size_t>(r)];
      }
    }
    view.write_back();
    row0 += s.global_shape[0];
  }
}

}  // namespace parallm
