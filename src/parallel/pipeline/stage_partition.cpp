// Splitting layers over stages and chunks.
#include "parallel/pipeline/stage_partition.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "base/error.h"

namespace parallm::pipeline {

StagePartition partition_layers(int num_layers, int pp, int v, const std::vector<int>& counts,
                                Placement placement) {
  PX_CHECK(pp >= 1 && v >= 1, "pp ({}) and virtual stages ({}) must be at least 1", pp, v);
  const int parts = pp * v;
  std::vector<int> sizes = counts;
  if (sizes.empty()) {
    PX_CHECK(num_layers >= parts, "cannot split {} layers into {} stages x {} chunks", num_layers,
             pp, v);
    for (int i = 0; i < parts; ++i) sizes.push_back(num_layers / parts + (i < num_layers % parts));
  } else {
    PX_CHECK(static_cast<int>(sizes.size()) == parts,
             "--pp-layers lists {} layer counts, but pp ({}) x virtual stages ({}) needs {}",
             sizes.size(), pp, v, parts);
    const int sum = std::accumulate(sizes.begin(), sizes.end(), 0);
    PX_CHECK(sum == num_layers, "--pp-layers {} sums to {} layers, but the model has {}",
             fmt::join(sizes, ","), sum, num_layers);
    for (int i = 0; i < parts; ++i)
      PX_CHECK(sizes[i] >= 1, "--pp-layers gives virtual stage {} {} layers; each needs at least 1",
               i, sizes[i]);
  }
  StagePartition p;
  p.pp = pp;
  p.virtual_stages = v;
  p.num_layers = num_layers;
  p.placement = placement;
  int first = 0;
  for (int vs = 0; vs < parts; ++vs) {
    ChunkLayers c;
    const StageChunk where = place_virtual_stage(placement, pp, vs);
    c.stage = where.stage;
    c.chunk = where.chunk;
    c.virtual_stage = vs;
    c.first_layer = first;
    c.num_layers = sizes[vs];
    c.has_embedding = vs == 0;
    c.has_head = vs == parts - 1;
    first += sizes[vs];
    p.chunks.push_back(c);
  }
  return p;
}

std::vector<int> parse_layer_counts(const std::string& text) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    size_t used = 0;
    int n = -1;
    try {
      n = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    PX_CHECK(used == item.size() && used > 0 && n >= 0,
             "bad layer count '{}' in '{}' (expected non-negative integers like 3,5,5,3)", item,
             text);
    out.push_back(n);
    pos = comma + 1;
  }
  return out;
}

}  // namespace parallm::pipeline
