// RowLoras (see row_lora.h).
#include "nn/row_lora.h"

#include <algorithm>

#include "base/error.h"
#include "base/rng.h"
#include "nn/matmul_precision.h"
#include "ops/activation.h"
#include "ops/copy.h"
#include "ops/matmul.h"
#include "ops/optimizer.h"

namespace parallm {

uint64_t lora_site(std::string_view stem) { return hash_name(stem); }

namespace {
// Rows per low-rank GEMM call: in decode-sized groups (up to kChunkedRows)
// as many as the skinny kernel takes on this stream (ops/matmul.h), else all.
// These products are tiny (r is 8-64): oneDNN's per-call cost above the
// skinny kernel's rows made one adapter's 16 rows slower than 8 adapters' 2
// each (bench/lora_serving_bench.sh). A prefill's hundreds of rows amortise
// that cost in one call.
constexpr int64_t kChunkedRows = 64;
int64_t rows_per_call(const ops::Stream& s, int64_t n) {
  if (n > kChunkedRows) return n;
  int64_t m = n;
  while (m > 1 && !ops::skinny_fits(s, false, true, m)) m = (m + 1) / 2;
  return ops::skinny_fits(s, false, true, m) ? m : n;
}
}  // namespace

RowLoras group_rows_by_adapter(std::span<const LoraFactorTable* const> per_span,
                               std::span<const int64_t> counts) {
  PX_CHECK(per_span.size() == counts.size(), "{} adapters given for {} spans", per_span.size(),
           counts.size());
  RowLoras out;
  int64_t row = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const LoraFactorTable* t = per_span[i];
    const int64_t n = counts[i];
    if (t != nullptr && n > 0) {
      RowLoraGroup* g = nullptr;
      for (RowLoraGroup& e : out.groups)
        if (e.table == t) g = &e;
      if (g == nullptr) g = &out.groups.emplace_back(RowLoraGroup{t, {}, 0});
      if (!g->ranges.empty() && g->ranges.back().begin + g->ranges.back().count == row)
        g->ranges.back().count += n;
      else
        g->ranges.push_back({row, n});
      g->rows += n;
    }
    row += n;
  }
  return out;
}

void add_row_loras(const LayerContext& c, uint64_t site, float* out, const float* x, int64_t in,
                   int64_t out_w) {
  if (c.row_loras == nullptr) return;
  for (const RowLoraGroup& g : c.row_loras->groups) {
    const LoraFactors* f = g.table->find(site);
    if (f == nullptr) continue;
    PX_CHECK(f->in == in && f->out == out_w,
             "a served adapter's factors are ({} -> {}), the linear is ({} -> {})", f->in, f->out,
             in, out_w);
    const int64_t n = g.rows, r = f->rank;
    const bool whole = g.ranges.size() == 1;
    const int64_t r0 = g.ranges.front().begin;
    Tensor xs;  // the group's rows gathered, when they are not one block
    const float* xg = x + r0 * in;
    if (!whole) {
      xs = c.workspace({n, in});
      int64_t k = 0;
      for (const RowRange& rr : g.ranges) {
        ops::copy(c.stream(), xs.data<float>() + k * in, x + rr.begin * in,
                  static_cast<size_t>(rr.count * in) * sizeof(float));
        k += rr.count;
      }
      xg = xs.data<float>();
    }
    const int64_t step = rows_per_call(c.stream(), n);
    Tensor h = c.workspace({n, r});  // scale * x_g A^T
    for (int64_t k = 0; k < n; k += step)
      matmul_act(c, false, true, std::min(step, n - k), r, in, xg + k * in, in, f->a, in, 0.0f,
                 h.data<float>() + k * r, r);
    ops::scale_inplace(c.stream(), h.data<float>(), n * r, static_cast<float>(g.table->scale));
    Tensor y;  // the group's terms, when its rows are not one block of out
    if (!whole) y = c.workspace({n, out_w});
    float* yg = whole ? out + r0 * out_w : y.data<float>();
    for (int64_t k = 0; k < n; k += step)
      matmul_act(c, false, true, std::min(step, n - k), out_w, r, h.data<float>() + k * r, r, f->b,
                 r, whole ? 1.0f : 0.0f, yg + k * out_w, out_w);
    if (whole) continue;
    int64_t k = 0;
    for (const RowRange& rr : g.ranges) {
      ops::add_inplace(c.stream(), out + rr.begin * out_w, y.data<float>() + k * out_w,
                       rr.count * out_w);
      k += rr.count;
    }
  }
}

}  // namespace parallm
