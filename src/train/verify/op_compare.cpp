#include "train/verify/op_compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>

#include "base/error.h"

namespace parallm {
namespace {
using Key = std::tuple<int64_t, int, int, std::string>;  // sample offset, layer, pass, op

Key key_of(const OpRecord& r) { return {r.sample_offset, r.layer, r.pass, r.op}; }

void read_file(const std::string& path, int rank, std::vector<OpRecord>& out) {
  std::ifstream in(path, std::ios::binary);
  PX_CHECK(in.good(), "verify: cannot read '{}'", path);
  while (true) {
    int32_t n = 0;
    if (!in.read(reinterpret_cast<char*>(&n), sizeof n)) break;
    PX_CHECK(n > 0 && n < 256, "verify: '{}' is not an op dump (name length {})", path, n);
    OpRecord r;
    r.op.resize(static_cast<size_t>(n));
    int64_t h[9];
    in.read(r.op.data(), n);
    in.read(reinterpret_cast<char*>(h), sizeof h);
    r.sample_offset = h[0];
    r.layer = static_cast<int>(h[1]);
    r.pass = static_cast<int>(h[2]);
    r.row0 = h[3], r.rows = h[4], r.full_rows = h[5];
    r.col0 = h[6], r.cols = h[7], r.full_cols = h[8];
    r.rank = rank;
    r.values.resize(static_cast<size_t>(r.rows * r.cols));
    in.read(reinterpret_cast<char*>(r.values.data()),
            static_cast<std::streamsize>(r.values.size() * sizeof(float)));
    PX_CHECK(in.good(), "verify: '{}' ends inside the record of {}", path, r.op);
    out.push_back(std::move(r));
  }
}
}  // namespace

std::vector<OpRecord> read_op_dumps(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".ops") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  std::vector<OpRecord> out;
  for (const std::string& f : files) {
    const std::string stem = std::filesystem::path(f).stem().string();  // rank-NNNNN
    read_file(f, std::stoi(stem.substr(stem.find('-') + 1)), out);
  }
  return out;
}

OpDivergence first_divergence(const std::vector<OpRecord>& reference,
                              const std::vector<OpRecord>& layout, int64_t seq_len,
                              double tolerance) {
  std::map<Key, std::vector<const OpRecord*>> pieces;
  for (const OpRecord& r : layout) pieces[key_of(r)].push_back(&r);
  OpDivergence d;
  for (const OpRecord& ref : reference) {
    OpDivergence here;
    here.op = ref.op;
    here.layer = ref.layer;
    here.pass = ref.pass;
    here.sample_offset = ref.sample_offset;
    here.samples = std::max<int64_t>(1, ref.full_rows / std::max<int64_t>(seq_len, 1));
    here.compared = d.compared;
    const auto it = pieces.find(key_of(ref));
    if (it == pieces.end()) {
      here.problem = "missing";
      here.found = true;
      return here;
    }
    // Each piece against its slice of the reference, relative to the whole
    // reference tensor's scale; every element must be covered by some piece.
    double scale = 0;
    for (float v : ref.values) scale = std::max(scale, std::abs(static_cast<double>(v)));
    std::vector<char> covered(static_cast<size_t>(ref.rows * ref.cols), 0);
    for (const OpRecord* p : it->second) {
      PX_CHECK(p->full_rows == ref.full_rows && p->full_cols == ref.full_cols &&
                   p->row0 + p->rows <= ref.rows && p->col0 + p->cols <= ref.cols,
               "verify: rank {}'s {} of layer {} is ({} x {}) at ({}, {}) of ({} x {}), outside "
               "the one-process ({} x {})",
               p->rank, p->op, p->layer, p->rows, p->cols, p->row0, p->col0, p->full_rows,
               p->full_cols, ref.rows, ref.cols);
      double diff = 0;
      for (int64_t i = 0; i < p->rows; ++i)
        for (int64_t j = 0; j < p->cols; ++j) {
          const int64_t k = (p->row0 + i) * ref.cols + p->col0 + j;
          const double e =
              std::abs(static_cast<double>(p->values[i * p->cols + j]) - ref.values[k]);
          diff = std::isnan(e) ? INFINITY : std::max(diff, e);
          covered[k] = 1;
        }
      const double rel = diff == 0 ? 0 : scale == 0 ? INFINITY : diff / scale;
      if (here.rank < 0 || rel > here.rel) {
        here.rel = rel;
        here.rank = p->rank;
      }
    }
    const bool full = std::all_of(covered.begin(), covered.end(), [](char c) { return c != 0; });
    if (!full) {
      here.problem = "incomplete";
      here.found = true;
      return here;
    }
    if (!(here.rel <= tolerance)) {
      here.problem = "differs";
      here.found = true;
      return here;
    }
    ++d.compared;
  }
  return d;
}

std::string describe(const OpDivergence& d) {
  if (!d.found) return "no op differs";
  const std::string where = fmt::format("layer {}", d.layer);
  std::string what = fmt::format("{}, op {} ({}), micro-batch of samples {}-{}", where, d.op,
                                 d.pass == 0 ? "forward" : "backward", d.sample_offset,
                                 d.sample_offset + d.samples - 1);
  if (d.problem == "missing") return what + ": missing in the layout (no rank computed it)";
  if (d.problem == "incomplete") return what + ": the layout's pieces do not cover it";
  return fmt::format("{}, rank {}: max rel diff {:.3e}", what, d.rank, d.rel);
}

}  // namespace parallm
