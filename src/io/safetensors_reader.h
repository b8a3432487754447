// Safetensors reader: maps a file read-only and validates its header fully
// before handing out any tensor (HF format: u64 LE header length N, N bytes
// of JSON, then the data buffer that data_offsets index into).
// Invariant: an opened SafetensorsFile is well formed: every tensor's byte
// range matches its shape and dtype, ranges tile the data buffer exactly (no
// overlap, no hole, no trailing bytes), names are unique. Anything else is
// refused with a parallm::Error naming the file, the problem and the values.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/dtype.h"

namespace parallm {

// The largest header accepted, as in the reference implementation.
constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

struct TensorEntry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;   // empty for a 0-d scalar
  uint64_t begin = 0, end = 0;  // [begin, end) relative to the data buffer
  int64_t numel() const;
  uint64_t nbytes() const { return end - begin; }
};

class SafetensorsFile {
 public:
  // Maps `path` read-only (the mapping lives as long as any copy of this).
  static SafetensorsFile open(const std::string& path);

  const std::string& path() const { return path_; }
  // In file order (ascending data_offsets), which is the fastest to stream.
  const std::vector<TensorEntry>& entries() const { return entries_; }
  const TensorEntry* find(std::string_view name) const;  // nullptr if absent
  const TensorEntry& at(std::string_view name) const;    // throws naming file and tensor
  // The optional "__metadata__" string map (empty when absent).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // Raw little-endian bytes of one tensor. Not necessarily aligned to the
  // element size (the format does not promise it): copy, do not cast.
  std::span<const std::byte> bytes(const TensorEntry& e) const;
  // Converts F32/F64/BF16/F16 to float; dst holds e.numel() values.
  void read_as_f32(const TensorEntry& e, float* dst) const;
  std::vector<float> read_as_f32(const TensorEntry& e) const;
  // Converts F32/F64/BF16/F16 to double; dst holds e.numel() values.
  void read_as_f64(const TensorEntry& e, double* dst) const;

  uint64_t header_bytes() const { return header_bytes_; }  // N, excluding the 8-byte prefix

 private:
  SafetensorsFile() = default;

  std::string path_;
  std::shared_ptr<const std::byte> mapping_;  // whole file; munmap'ed with the last copy
  std::span<const std::byte> data_;           // the data buffer inside mapping_
  uint64_t header_bytes_ = 0;
  std::vector<TensorEntry> entries_;
  std::map<std::string, size_t, std::less<>> index_;  // name -> position in entries_
  std::map<std::string, std::string> metadata_;
};

}  // namespace parallm
