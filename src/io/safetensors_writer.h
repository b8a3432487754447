// Safetensors writer: collects tensors (by reference) and metadata, then
// writes one file atomically (temp file + fsync + rename).
// Layout matches the HF reference writer: tensors sorted by dtype (widest
// first) then name, so every tensor is aligned to its element size; compact
// JSON header with "__metadata__" first, space-padded to a multiple of 8.
// Invariant: a written file passes SafetensorsFile's validation.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace parallm {

class SafetensorsWriter {
 public:
  // `data` holds numel(shape) * dtype_size(dtype) little-endian bytes. It is
  // referenced, not copied: it must stay valid and unchanged until write()
  // returns (so saving a model needs no second copy of its weights).
  void add(std::string name, DType dtype, std::vector<int64_t> shape, const void* data);
  // Like add, but the writer keeps its own copy of the bytes.
  void add_copy(std::string name, DType dtype, std::vector<int64_t> shape, const void* data);
  // Stores float values as `stored` (F32, BF16 or F16), converted while
  // writing with round-to-nearest-even. `data` is referenced as in add().
  void add_f32_as(std::string name, DType stored, std::vector<int64_t> shape, const float* data);

  void set_metadata(std::string key, std::string value);

  // Writes the file atomically; on failure nothing is left at `path` (an
  // existing file stays as it was).
  void write(const std::string& path) const;
  // The whole file to a stream (write() uses this); for tests and pipes.
  void write_to(std::ostream& out) const;
  // The header JSON including its padding, exactly as it will be written.
  std::string header() const;
  size_t size() const { return tensors_.size(); }

 private:
  struct Pending {
    std::string name;
    DType dtype;  // as stored in the file
    std::vector<int64_t> shape;
    const void* data;  // in dtype, or f32 when from_f32
    bool from_f32;     // convert f32 -> dtype while writing
    uint64_t nbytes;   // in the file
  };
  void add_pending(Pending p);
  std::vector<const Pending*> file_order() const;

  std::vector<Pending> tensors_;
  std::set<std::string> names_;
  std::vector<std::vector<std::byte>> copies_;  // storage for add_copy
  std::map<std::string, std::string> metadata_;
};

}  // namespace parallm
