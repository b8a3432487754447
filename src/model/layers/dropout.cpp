#include "model/layers/dropout.h"

#include "base/rng.h"
#include "nn/op_buffers.h"

namespace parallm {

uint64_t layer_dropout_key(uint64_t seed, int64_t layer) {
  if (seed == 0) return 0;
  const uint64_t k = mix64(seed ^ mix64(static_cast<uint64_t>(layer) + 0x5DEECE66Dull));
  return k == 0 ? 1 : k;  // 0 means "no dropout"
}

// The mask is drawn on the host: a device's rows make a round trip through a
// host copy (as LoRA's adapter dropout does).
void hidden_dropout(const LayerContext& c, DropoutSite site, double p, float* x_dev, int64_t row0,
                    int64_t rows, int64_t C) {
  if (p <= 0.0 || c.dropout_seed == 0) return;
  const HostView<float> view(c.stream(), x_dev, rows * C);
  float* x = view.get();
  const uint64_t site_key = mix64(c.dropout_seed ^ mix64(static_cast<uint64_t>(site)));
  const float keep = static_cast<float>(1.0 / (1.0 - p));
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t g = row0 + r;  // flattened (b, t) row of the micro-batch
    const int64_t b = g / c.T, t = g % c.T;
    const uint64_t key = mix64(site_key ^ mix64(static_cast<uint64_t>(c.sample_offset + b)));
    const uint64_t pos = static_cast<uint64_t>(c.positions[t]) << 32;
    float* row = x + r * C;
    for (int64_t e = 0; e < C; ++e)
      row[e] = uniform_at(key, pos | static_cast<uint64_t>(e)) >= p ? row[e] * keep : 0.0f;
  }
  view.write_back();
}

}  // namespace parallm
