// Safetensors reader: mmap, header parsing and validation, dtype conversion.
// Validation follows the reference implementation's rules (header limit,
// '{' start, exact tiling of the data buffer) and adds duplicate-key
// detection, which a JSON parser would otherwise resolve silently.
#include "io/safetensors_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "base/error.h"
#include "tensor/half.h"

namespace parallm {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host needs byte swaps");

namespace {

using nlohmann::json;

// Valid safetensors dtypes that parallm's DType cannot represent.
constexpr std::array<std::string_view, 9> kUnsupportedNames = {
    "U32", "U64", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "C64"};

std::string shape_str(const std::vector<int64_t>& shape) {
  return fmt::format("({})", fmt::join(shape, ", "));
}

std::shared_ptr<const std::byte> map_file(const std::string& path, uint64_t* size_out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  PX_CHECK(fd >= 0, "{}: cannot open: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    PX_FAIL("{}: cannot stat: {}", path, std::strerror(err));
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size < 8) {
    ::close(fd);
    PX_FAIL("{}: file is {} bytes, shorter than the 8-byte header length prefix", path, size);
  }
  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int err = errno;
  ::close(fd);  // the mapping keeps the file alive
  PX_CHECK(addr != MAP_FAILED, "{}: cannot mmap {} bytes: {}", path, size, std::strerror(err));
  *size_out = size;
  return std::shared_ptr<const std::byte>(
      static_cast<const std::byte*>(addr),
      [size](const std::byte* p) { ::munmap(const_cast<std::byte*>(p), size); });
}

// Parses the header, remembering the first duplicate key of any object:
// nlohmann keeps the last value of a repeated key without a word.
json parse_header(const std::string& path, std::string_view text) {
  std::vector<std::set<std::string>> open_objects;
  std::string top_key;  // the tensor (or __metadata__) being parsed
  std::optional<std::string> duplicate;
  auto track = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      open_objects.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      open_objects.pop_back();
    } else if (event == json::parse_event_t::key) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!open_objects.back().insert(key).second && !duplicate) {
        duplicate = depth == 1 ? fmt::format("duplicate tensor name '{}' in header", key)
                               : fmt::format("duplicate key '{}' inside '{}'", key, top_key);
      }
      if (depth == 1) top_key = key;
    }
    return true;
  };
  json header;
  try {
    header = json::parse(text.begin(), text.end(), track);
  } catch (const json::exception& e) {
    PX_FAIL("{}: header is not valid JSON: {}", path, e.what());
  }
  if (duplicate) PX_FAIL("{}: {}", path, *duplicate);
  PX_CHECK(header.is_object(), "{}: header is JSON {} but must be an object", path,
           header.type_name());
  return header;
}

std::map<std::string, std::string> parse_metadata(const std::string& path, const json& j) {
  PX_CHECK(j.is_object(), "{}: '__metadata__' is JSON {} but must be an object of strings", path,
           j.type_name());
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : j.items()) {
    PX_CHECK(value.is_string(),
             "{}: '__metadata__' value for key '{}' is JSON {} ({}), not a string", path, key,
             value.type_name(), value.dump());
    out.emplace(key, value.get<std::string>());
  }
  return out;
}

DType parse_dtype(const std::string& path, const std::string& name, const json& j) {
  PX_CHECK(j.is_string(), "{}: tensor '{}' field 'dtype' is JSON {} ({}), not a string", path, name,
           j.type_name(), j.dump());
  const auto& s = j.get_ref<const std::string&>();
  if (auto t = dtype_from_name(s)) return *t;
  if (std::find(kUnsupportedNames.begin(), kUnsupportedNames.end(), s) != kUnsupportedNames.end())
    PX_FAIL("{}: tensor '{}' has dtype {}, which is valid safetensors but not supported by parallm",
            path, name, s);
  PX_FAIL(
      "{}: tensor '{}' has unknown dtype '{}' (expected one of F64, F32, F16, BF16, I64, I32, "
      "I16, I8, U16, U8, BOOL)",
      path, name, s);
}

std::vector<int64_t> parse_shape(const std::string& path, const std::string& name, const json& j) {
  PX_CHECK(j.is_array(), "{}: tensor '{}' field 'shape' is JSON {} ({}), not an array", path, name,
           j.type_name(), j.dump());
  std::vector<int64_t> shape;
  for (const auto& d : j) {
    PX_CHECK(!(d.is_number_integer() && !d.is_number_unsigned()),
             "{}: tensor '{}' has negative dimension {} in shape {}", path, name, d.get<int64_t>(),
             j.dump());
    PX_CHECK(d.is_number_unsigned(),
             "{}: tensor '{}' shape {} must hold non-negative integers, found JSON {} ({})", path,
             name, j.dump(), d.type_name(), d.dump());
    const auto v = d.get<uint64_t>();
    PX_CHECK(v <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()),
             "{}: tensor '{}' dimension {} in shape {} is too large", path, name, v, j.dump());
    shape.push_back(static_cast<int64_t>(v));
  }
  return shape;
}

void parse_offsets(const std::string& path, const std::string& name, const json& j,
                   TensorEntry* e) {
  const bool ok =
      j.is_array() && j.size() == 2 && j[0].is_number_unsigned() && j[1].is_number_unsigned();
  PX_CHECK(ok,
           "{}: tensor '{}' field 'data_offsets' must be [begin, end] with non-negative "
           "integers, got {}",
           path, name, j.dump());
  e->begin = j[0].get<uint64_t>();
  e->end = j[1].get<uint64_t>();
}

TensorEntry parse_entry(const std::string& path, const std::string& name, const json& j,
                        uint64_t data_bytes) {
  PX_CHECK(j.is_object(), "{}: entry for tensor '{}' is JSON {} ({}) but must be an object", path,
           name, j.type_name(), j.dump());
  for (const char* field : {"dtype", "shape", "data_offsets"})
    PX_CHECK(j.contains(field), "{}: tensor '{}' is missing field '{}' (has {})", path, name, field,
             j.dump());
  TensorEntry e;
  e.name = name;
  e.dtype = parse_dtype(path, name, j["dtype"]);
  e.shape = parse_shape(path, name, j["shape"]);
  parse_offsets(path, name, j["data_offsets"], &e);

  PX_CHECK(e.begin <= e.end, "{}: tensor '{}' data_offsets [{}, {}): begin is after end", path,
           name, e.begin, e.end);
  PX_CHECK(e.end <= data_bytes,
           "{}: tensor '{}' data_offsets [{}, {}): end is beyond the data buffer of {} bytes", path,
           name, e.begin, e.end, data_bytes);
  uint64_t need = dtype_size(e.dtype);
  for (int64_t d : e.shape)
    PX_CHECK(!__builtin_mul_overflow(need, static_cast<uint64_t>(d), &need),
             "{}: tensor '{}' shape {} of {} overflows 64-bit byte counts", path, name,
             shape_str(e.shape), dtype_name(e.dtype));
  PX_CHECK(e.nbytes() == need,
           "{}: tensor '{}' data_offsets [{}, {}) hold {} bytes but shape {} of {} needs {}", path,
           name, e.begin, e.end, e.nbytes(), shape_str(e.shape), dtype_name(e.dtype), need);
  return e;
}

// The reference requires tensors to tile [0, data_bytes) exactly.
void check_tiling(const std::string& path, std::vector<TensorEntry>& entries, uint64_t data_bytes) {
  std::sort(entries.begin(), entries.end(), [](const TensorEntry& a, const TensorEntry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t cursor = 0;
  const TensorEntry* prev = nullptr;
  for (const auto& e : entries) {
    PX_CHECK(e.begin >= cursor,
             "{}: tensors '{}' [{}, {}) and '{}' [{}, {}) overlap in the data buffer", path,
             prev ? prev->name : "", prev ? prev->begin : 0, cursor, e.name, e.begin, e.end);
    PX_CHECK(e.begin == cursor,
             "{}: hole in the data buffer: bytes [{}, {}) before tensor '{}' belong to no tensor",
             path, cursor, e.begin, e.name);
    cursor = e.end;
    prev = &e;
  }
  PX_CHECK(cursor == data_bytes,
           "{}: hole in the data buffer: bytes [{}, {}) after the last tensor belong to no tensor",
           path, cursor, data_bytes);
}

template <class Dst>
void convert(const SafetensorsFile& f, const TensorEntry& e, Dst* dst, const char* what) {
  const std::byte* src = f.bytes(e).data();
  const auto n = static_cast<int64_t>(e.numel());
  const bool big = n > (1 << 20);
  switch (e.dtype) {
    case DType::F32:
      if constexpr (std::is_same_v<Dst, float>) {
        std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      } else {
#pragma omp parallel for if (big)
        for (int64_t i = 0; i < n; ++i) {
          float v;
          std::memcpy(&v, src + 4 * i, 4);
          dst[i] = v;
        }
      }
      return;
    case DType::F64:
#pragma omp parallel for if (big)
      for (int64_t i = 0; i < n; ++i) {
        double v;
        std::memcpy(&v, src + 8 * i, 8);
        dst[i] = static_cast<Dst>(v);
      }
      return;
    case DType::BF16:
    case DType::F16: {
      const bool bf = e.dtype == DType::BF16;
#pragma omp parallel for if (big)
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        dst[i] = bf ? bf16_to_f32(h) : f16_to_f32(h);
      }
      return;
    }
    default:
      PX_FAIL("{}: tensor '{}' has dtype {}; {} converts only F32, F64, BF16 and F16", f.path(),
              e.name, dtype_name(e.dtype), what);
  }
}

}  // namespace

int64_t TensorEntry::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  SafetensorsFile f;
  f.path_ = path;
  uint64_t size = 0;
  f.mapping_ = map_file(path, &size);
  const std::byte* base = f.mapping_.get();

  uint64_t n = 0;
  std::memcpy(&n, base, 8);
  PX_CHECK(n <= kSafetensorsMaxHeaderBytes, "{}: header length {} exceeds the limit of {} bytes",
           path, n, kSafetensorsMaxHeaderBytes);
  PX_CHECK(n <= size - 8,
           "{}: header length {} is larger than the {} bytes that follow the 8-byte prefix", path,
           n, size - 8);
  const std::string_view text(reinterpret_cast<const char*>(base + 8), n);
  // Checked before parsing so that a file of another format gets a plain message.
  const size_t start = text.find_first_not_of(" \t\r\n");
  PX_CHECK(start != std::string_view::npos && text[start] == '{',
           "{}: header must be a JSON object starting with '{{', but {}", path,
           start == std::string_view::npos
               ? std::string("it is empty")
               : fmt::format("byte {} is 0x{:02x}", start, uint8_t(text[start])));
  f.header_bytes_ = n;
  f.data_ = std::span<const std::byte>(base + 8 + n, size - 8 - n);

  const json header = parse_header(path, text);
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      f.metadata_ = parse_metadata(path, value);
    } else {
      f.entries_.push_back(parse_entry(path, name, value, f.data_.size()));
    }
  }
  check_tiling(path, f.entries_, f.data_.size());
  for (size_t i = 0; i < f.entries_.size(); ++i) f.index_.emplace(f.entries_[i].name, i);
  return f;
}

const TensorEntry* SafetensorsFile::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

const TensorEntry& SafetensorsFile::at(std::string_view name) const {
  const TensorEntry* e = find(name);
  PX_CHECK(e != nullptr, "{}: no tensor named '{}' ({} tensors in file)", path_, name,
           entries_.size());
  return *e;
}

std::span<const std::byte> SafetensorsFile::bytes(const TensorEntry& e) const {
  return data_.subspan(e.begin, e.end - e.begin);
}

void SafetensorsFile::read_as_f32(const TensorEntry& e, float* dst) const {
  convert(*this, e, dst, "read_as_f32");
}

std::vector<float> SafetensorsFile::read_as_f32(const TensorEntry& e) const {
  std::vector<float> out(static_cast<size_t>(e.numel()));
  read_as_f32(e, out.data());
  return out;
}

void SafetensorsFile::read_as_f64(const TensorEntry& e, double* dst) const {
  convert(*this, e, dst, "read_as_f64");
}

}  // namespace parallm
