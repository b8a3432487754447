// RowLoras: many LoRA adapters in one inference batch (docs/serving.md,
// "Many LoRA adapters"). The rows of a ragged batch are grouped by the
// adapter their sequence asked for; each adapted linear adds
// scale_a * (X_g A_a^T) B_a^T to the output rows of group g: one low-rank
// GEMM pair per adapter present (the grouped low-rank GEMM). Rows of the
// base model belong to no group and cost nothing. Invariant: groups' row
// ranges are disjoint and inside the batch, one group per adapter, and the
// factors live in the memory of the model's device.
#pragma once
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "nn/layer_context.h"

namespace parallm {

// One adapter's factors on one linear: A (rank, in), B (out, rank), this
// rank's widths.
struct LoraFactors {
  const float* a = nullptr;
  const float* b = nullptr;
  int64_t rank = 0, in = 0, out = 0;
};

// One adapter: its factors per linear, keyed by the linear's site (the hash
// of its parameter stem, e.g. "layers.3.attn.q"; lora_site()), and its scale.
struct LoraFactorTable {
  double scale = 0.0;
  std::unordered_map<uint64_t, LoraFactors> sites;
  const LoraFactors* find(uint64_t site) const {
    const auto it = sites.find(site);
    return it == sites.end() ? nullptr : &it->second;
  }
};

// The site key of the linear whose parameters are "<stem>.weight".
uint64_t lora_site(std::string_view stem);

struct RowRange {
  int64_t begin = 0, count = 0;
};

struct RowLoraGroup {
  const LoraFactorTable* table = nullptr;
  std::vector<RowRange> ranges;  // in row order, adjacent ranges merged
  int64_t rows = 0;              // sum of the ranges' counts
};

struct RowLoras {
  std::vector<RowLoraGroup> groups;
  bool empty() const { return groups.empty(); }
};

// The groups of a batch whose spans have `counts` rows each, span i using
// per_span[i] (null: the base model). Groups appear in order of first use.
RowLoras group_rows_by_adapter(std::span<const LoraFactorTable* const> per_span,
                               std::span<const int64_t> counts);

// out (N, out_w) += each group's low-rank term for the linear at `site`
// (nothing when c.row_loras is null or no group's adapter has the site);
// x (N, in). A group's rows are gathered into one block when they are not
// contiguous, so each adapter costs one GEMM pair per linear whatever its
// number of sequences.
void add_row_loras(const LayerContext& c, uint64_t site, float* out, const float* x, int64_t in,
                   int64_t out_w);

}  // namespace parallm
