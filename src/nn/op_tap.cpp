#include "nn/op_tap.h"

#include "base/error.h"
#include "nn/layer_context.h"
#include "nn/op_buffers.h"

namespace parallm {

OpTap::OpTap(const std::string& path) : out_(path, std::ios::binary | std::ios::trunc) {
  PX_CHECK(out_.good(), "--dump-ops: cannot write '{}'", path);
}

void OpTap::record(const ops::Stream& s, const std::string& op, int layer, TapPass pass,
                   int64_t sample_offset, const TapBox& box, const float* data_dev) {
  const HostView<const float> data(s, data_dev, box.rows * box.cols);
  const auto n = static_cast<int32_t>(op.size());
  out_.write(reinterpret_cast<const char*>(&n), sizeof n);
  out_.write(op.data(), n);
  const int64_t head[9] = {sample_offset, layer,    static_cast<int64_t>(pass),
                           box.row0,      box.rows, box.full_rows,
                           box.col0,      box.cols, box.full_cols};
  out_.write(reinterpret_cast<const char*>(head), sizeof head);
  out_.write(reinterpret_cast<const char*>(data.get()),
             static_cast<std::streamsize>(box.rows * box.cols * sizeof(float)));
  out_.flush();
  PX_CHECK(out_.good(), "--dump-ops: writing the record of {} failed", op);
}

void tap_stream(const LayerContext& c, const char* op, TapPass pass, const float* x, int64_t row0,
                int64_t rows, int64_t C, int64_t full_rows) {
  if (c.tap != nullptr)
    c.tap->record(c.stream(), op, c.layer, pass, c.sample_offset, {row0, rows, full_rows, 0, C, C},
                  x);
}

}  // namespace parallm
