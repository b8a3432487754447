// GgufWriter: a GGUF v3 file out (little-endian), as llama.cpp's gguf-py
// writes one: "GGUF", version 3, tensor and metadata counts, the metadata,
// the tensor infos (ne in ggml's order: ne[0] the contiguous column count),
// padding to general.alignment (32), then each tensor's bytes at an offset
// aligned to 32. Invariant: the file appears whole or not at all (written
// to a temporary name beside it, flushed, renamed; removed on error).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/gguf/gguf_file.h"

namespace parallm {

class GgufWriter {
 public:
  void add_string(const std::string& key, const std::string& v);
  void add_u32(const std::string& key, uint32_t v);
  void add_i32(const std::string& key, int32_t v);
  void add_f32(const std::string& key, float v);
  void add_bool(const std::string& key, bool v);
  void add_strings(const std::string& key, const std::vector<std::string>& v);
  void add_i32s(const std::string& key, const std::vector<int32_t>& v);
  void add_f32s(const std::string& key, const std::vector<float>& v);
  // shape: (rows, cols) or (n,) row-major as parallm holds it; ggml_type
  // names bytes' encoding (kGgmlF32, or a block type's id).
  void add_tensor(const std::string& name, const std::vector<int64_t>& shape, int ggml_type,
                  std::vector<uint8_t> bytes);

  // Throws naming path when it cannot be written.
  void write(const std::string& path) const;

  static constexpr uint64_t kAlignment = 32;

 private:
  struct Tensor {
    std::string name;
    std::vector<int64_t> shape;
    int type;
    std::vector<uint8_t> bytes;
  };
  void key(const std::string& k, GgufValueType t);
  std::vector<uint8_t> kv_;  // the metadata, serialised as it goes in
  uint64_t kv_count_ = 0;
  std::vector<std::string> keys_;
  std::vector<Tensor> tensors_;
};

}  // namespace parallm
