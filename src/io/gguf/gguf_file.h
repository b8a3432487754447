// GgufFile: a llama.cpp .gguf file (versions 2 and 3, little-endian), mapped
// read-only: the header (magic, version, counts), every metadata key/value
// (all GGUF value types, arrays of any of them included), the tensor infos,
// general.alignment (default 32) and the data section's offset.
// Invariant: an opened GgufFile is well formed: every string, array and
// tensor lies inside the file, tensor names and keys are unique, every
// tensor's type is a ggml type with a known block size and its byte range
// (offset aligned, size from ne and the type) ends inside the file. Anything
// else is refused at open, before any tensor is read, with a parallm::Error
// naming the file, the problem and the values.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace parallm {

// GGUF metadata value types (gguf.GGUFValueType).
enum class GgufValueType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, U64 = 10, I64 = 11, F64 = 12,
};
std::string gguf_value_type_name(GgufValueType t);  // "uint32", "array[string]" needs elem

// ggml tensor type ids (gguf.GGMLQuantizationType) this reader names.
constexpr int kGgmlF32 = 0, kGgmlF16 = 1, kGgmlBF16 = 30;
// "Q5_K" for 13; "type 99" when ggml has no such type.
std::string ggml_type_name(int type);

struct GgufKv {
  std::string key;
  GgufValueType type;
  GgufValueType elem = GgufValueType::U8;  // arrays: the element type
  nlohmann::json value;  // numbers, bool, string, or an array of them (nested arrays nest)
};

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> ne;  // ggml order: ne[0] is the contiguous (column) dimension
  int type = 0;             // ggml type id
  uint64_t offset = 0;      // from the data section's start
  uint64_t nbytes = 0;
  int64_t numel() const;
  // The row-major shape (ne reversed): a 2-D weight is (rows, cols) = (ne[1], ne[0]).
  std::vector<int64_t> shape() const { return {ne.rbegin(), ne.rend()}; }
};

class GgufFile {
 public:
  // Maps and validates `path` (the mapping lives as long as any copy).
  static GgufFile open(const std::string& path);

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  uint64_t file_size() const { return size_; }

  const std::vector<GgufKv>& metadata() const { return kvs_; }
  const GgufKv* find_kv(const std::string& key) const;  // nullptr if absent
  // Typed reads of a key: throw, naming the file, key and types, when the
  // key is absent (need_*) or holds another type. Any integer type is read
  // as an integer (range-checked), any float type as a double.
  int64_t need_int(const std::string& key) const;
  std::optional<int64_t> opt_int(const std::string& key) const;
  double need_float(const std::string& key) const;
  std::optional<double> opt_float(const std::string& key) const;
  std::string need_string(const std::string& key) const;
  std::optional<std::string> opt_string(const std::string& key) const;
  std::optional<bool> opt_bool(const std::string& key) const;
  // An array key whose elements have type elem (nullptr if absent).
  const nlohmann::json* opt_array(const std::string& key, GgufValueType elem) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(const std::string& name) const;  // nullptr if absent
  // The tensor's bytes inside the mapping (not necessarily 4-byte aligned).
  std::span<const std::byte> bytes(const GgufTensorInfo& t) const;

 private:
  GgufFile() = default;
  const GgufKv& need_kv(const std::string& key) const;

  std::string path_;
  std::shared_ptr<const std::byte> mapping_;
  uint64_t size_ = 0;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<GgufKv> kvs_;
  std::map<std::string, size_t, std::less<>> kv_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

// Whether path names a GGUF file by its extension (".gguf", any case).
bool is_gguf_path(const std::string& path);

}  // namespace parallm
