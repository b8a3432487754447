// Shard files of a checkpoint (see shard_file.h).
#include "io/checkpoint/shard_file.h"

#include <algorithm>
#include <cstdint>

#include "base/atomic_file.h"
#include "base/error.h"
#include "io/checkpoint/file_digest.h"
#include "io/safetensors_writer.h"

namespace parallm {

constexpr const char* kPiecesKey = "parallm.pieces";

WrittenFile write_shard_file(const std::string& path, const std::vector<CheckpointPiece>& pieces,
                             int rank) {
  SafetensorsWriter w;
  nlohmann::json meta = nlohmann::json::object();
  for (const auto& p : pieces) {
    if (p.slice.numel() == 0) continue;
    const std::string stored = p.kind + "/" + p.tensor;
    w.add(stored, DType::F32, {p.slice.numel()}, p.data);
    meta[stored] = {{"tensor", p.tensor}, {"kind", p.kind}, {"slice", slice_to_json(p.slice)}};
  }
  w.set_metadata("format", "parallm-checkpoint-shard");
  w.set_metadata("rank", std::to_string(rank));
  w.set_metadata(kPiecesKey, meta.dump());
  WrittenFile written;
  write_file_atomically(path, [&](std::ostream& out) {
    HashingStream h(out);
    w.write_to(h);
    h.flush();
    written = {h.bytes(), h.hex()};
  });
  return written;
}

ShardSet::ShardSet(const std::vector<std::string>& paths) {
  files_.reserve(paths.size());  // Refs point into the files' entries
  for (const auto& path : paths) {
    files_.push_back(SafetensorsFile::open(path));
    const SafetensorsFile& f = files_.back();
    auto it = f.metadata().find(kPiecesKey);
    PX_CHECK(it != f.metadata().end(), "{}: not a parallm checkpoint shard (no '{}' metadata)",
             path, kPiecesKey);
    nlohmann::json meta;
    try {
      meta = nlohmann::json::parse(it->second);
    } catch (const nlohmann::json::exception& e) {
      PX_FAIL("{}: malformed '{}' metadata: {}", path, kPiecesKey, e.what());
    }
    for (const auto& e : f.entries()) {
      PX_CHECK(meta.contains(e.name), "{}: tensor '{}' has no piece description", path, e.name);
      const auto& m = meta[e.name];
      PX_CHECK(m.contains("tensor") && m.contains("kind") && m.contains("slice"),
               "{}: piece '{}' lacks tensor, kind or slice", path, e.name);
      Ref r{files_.size() - 1, &e, slice_from_json(m["slice"], path + ": " + e.name)};
      PX_CHECK(e.dtype == DType::F32 && e.numel() == r.slice.numel(),
               "{}: piece '{}' holds {} {} values, its slice {}", path, e.name, e.numel(),
               dtype_name(e.dtype), r.slice.numel());
      pieces_[{m["kind"].get<std::string>(), m["tensor"].get<std::string>()}].push_back(r);
    }
  }
}

bool ShardSet::has(const std::string& kind, const std::string& tensor) const {
  return pieces_.count({kind, tensor}) > 0;
}

std::vector<int64_t> ShardSet::global_shape(const std::string& kind,
                                            const std::string& tensor) const {
  auto it = pieces_.find({kind, tensor});
  return it == pieces_.end() ? std::vector<int64_t>{} : it->second.front().slice.global_shape;
}

std::vector<std::string> ShardSet::tensors(const std::string& kind) const {
  std::vector<std::string> out;
  for (const auto& [key, refs] : pieces_)
    if (key.first == kind) out.push_back(key.second);
  return out;
}

void ShardSet::fill(const std::string& kind, const std::string& tensor, const TensorSlice& want,
                    float* dst, int64_t rows_padding_from) const {
  if (want.numel() == 0) return;
  auto it = pieces_.find({kind, tensor});
  PX_CHECK(it != pieces_.end(), "the checkpoint has no {} of tensor '{}'", kind, tensor);
  const auto& saved = it->second.front().slice.global_shape;
  bool same = saved == want.global_shape;
  bool padded = !same && saved.size() == want.global_shape.size() && !saved.empty() &&
                std::equal(saved.begin() + 1, saved.end(), want.global_shape.begin() + 1) &&
                std::min(saved[0], want.global_shape[0]) >= rows_padding_from;
  PX_CHECK(same || padded, "tensor '{}' has shape [{}] in the checkpoint, the model has [{}]",
           tensor, fmt::join(saved, ", "), fmt::join(want.global_shape, ", "));
  std::vector<uint8_t> covered(static_cast<size_t>(want.numel()), 0);
  for (const Ref& r : it->second) {
    PX_CHECK(r.slice.global_shape == saved, "{}: pieces of '{}' disagree on its shape",
             files_[r.file].path(), tensor);
    // Skip pieces that cannot overlap before touching their bytes.
    bool overlap = true;
    for (size_t d = 0; d < want.box.size(); ++d)
      overlap =
          overlap && std::max(r.slice.offset[d], want.offset[d]) <
                         std::min(r.slice.offset[d] + r.slice.box[d], want.offset[d] + want.box[d]);
    if (!overlap) continue;
    // Pieces are F32 and the writer aligns them, so the mapping is read in
    // place: only the pages of the rows that overlap are touched.
    const auto bytes = files_[r.file].bytes(*r.entry);
    if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(float) == 0) {
      copy_overlap(r.slice, reinterpret_cast<const float*>(bytes.data()), want, dst,
                   covered.data());
    } else {
      std::vector<float> buf = files_[r.file].read_as_f32(*r.entry);
      copy_overlap(r.slice, buf.data(), want, dst, covered.data());
    }
  }
  for (int64_t k = 0; k < want.numel(); ++k) {
    if (covered[static_cast<size_t>(k)]) continue;
    auto c = slice_coords(want, want.flat_begin + k);
    PX_CHECK(!c.empty() && c[0] >= saved[0],
             "the checkpoint lacks element [{}] of {} '{}' (no saved piece holds it)",
             fmt::join(c, ", "), kind, tensor);
  }
}

}  // namespace parallm
