// GGUF parsing and validation (see gguf_file.h). Layout: "GGUF", u32
// version, u64 tensor count, u64 kv count, the kvs (u64-length strings, u32
// value type, value), the tensor infos (name, u32 n_dims, u64 ne[n_dims],
// u32 type, u64 offset), padding to the alignment, the data section.
#include "io/gguf/gguf_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "base/error.h"

namespace parallm {

namespace {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" little-endian
constexpr int kGgmlMaxDims = 4;

struct GgmlType {
  const char* name;
  int64_t block_elems, block_bytes;
};

// Every ggml type gguf 0.19 knows, with its block size (GGML_QUANT_SIZES),
// so that any tensor's extent can be checked; which ones parallm reads is
// decided by the loader.
const GgmlType* ggml_type(int type) {
  static const std::map<int, GgmlType> kTypes = {
      {0, {"F32", 1, 4}},         {1, {"F16", 1, 2}},        {2, {"Q4_0", 32, 18}},
      {3, {"Q4_1", 32, 20}},      {6, {"Q5_0", 32, 22}},     {7, {"Q5_1", 32, 24}},
      {8, {"Q8_0", 32, 34}},      {9, {"Q8_1", 32, 40}},     {10, {"Q2_K", 256, 84}},
      {11, {"Q3_K", 256, 110}},   {12, {"Q4_K", 256, 144}},  {13, {"Q5_K", 256, 176}},
      {14, {"Q6_K", 256, 210}},   {15, {"Q8_K", 256, 292}},  {16, {"IQ2_XXS", 256, 66}},
      {17, {"IQ2_XS", 256, 74}},  {18, {"IQ3_XXS", 256, 98}}, {19, {"IQ1_S", 256, 50}},
      {20, {"IQ4_NL", 32, 18}},   {21, {"IQ3_S", 256, 110}}, {22, {"IQ2_S", 256, 82}},
      {23, {"IQ4_XS", 256, 136}}, {24, {"I8", 1, 1}},        {25, {"I16", 1, 2}},
      {26, {"I32", 1, 4}},        {27, {"I64", 1, 8}},       {28, {"F64", 1, 8}},
      {29, {"IQ1_M", 256, 56}},   {30, {"BF16", 1, 2}},      {34, {"TQ1_0", 256, 54}},
      {35, {"TQ2_0", 256, 66}},   {39, {"MXFP4", 32, 17}},   {40, {"NVFP4", 64, 36}},
      {41, {"Q1_0", 128, 18}}};
  auto it = kTypes.find(type);
  return it == kTypes.end() ? nullptr : &it->second;
}

// Bounds-checked little-endian reads over the mapping; every failure names
// what was being read, where, and the file size.
class Cursor {
 public:
  Cursor(const std::string& path, const std::byte* p, uint64_t size)
      : path_(path), p_(p), size_(size) {}
  uint64_t pos() const { return pos_; }
  void need(uint64_t n, const std::string& what) const {
    PX_CHECK(n <= size_ - pos_,
             "{}: truncated GGUF file: {} needs {} bytes at offset {} but the file has {} bytes",
             path_, what, n, pos_, size_);
  }
  template <class T>
  T get(const std::string& what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string str(const std::string& what) {
    const uint64_t n = get<uint64_t>(what + " (length)");
    need(n, what + fmt::format(" ({} bytes)", n));
    std::string s(reinterpret_cast<const char*>(p_ + pos_), n);
    pos_ += n;
    return s;
  }

 private:
  const std::string& path_;
  const std::byte* p_;
  uint64_t size_, pos_ = 0;
};

// Smallest encoding of one value of type t (to bound an array's count
// before reserving memory for it).
uint64_t min_value_bytes(GgufValueType t) {
  switch (t) {
    case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::BOOL: return 1;
    case GgufValueType::U16: case GgufValueType::I16: return 2;
    case GgufValueType::U32: case GgufValueType::I32: case GgufValueType::F32: return 4;
    case GgufValueType::STRING: case GgufValueType::U64: case GgufValueType::I64:
    case GgufValueType::F64: return 8;
    case GgufValueType::ARRAY: return 12;
  }
  return 1;
}

bool valid_value_type(uint32_t t) { return t <= 12; }

nlohmann::json read_value(Cursor& c, GgufValueType t, const std::string& what,
                          const std::string& path, GgufValueType* elem_out) {
  switch (t) {
    case GgufValueType::U8: return c.get<uint8_t>(what);
    case GgufValueType::I8: return c.get<int8_t>(what);
    case GgufValueType::U16: return c.get<uint16_t>(what);
    case GgufValueType::I16: return c.get<int16_t>(what);
    case GgufValueType::U32: return c.get<uint32_t>(what);
    case GgufValueType::I32: return c.get<int32_t>(what);
    case GgufValueType::F32: return c.get<float>(what);
    case GgufValueType::U64: return c.get<uint64_t>(what);
    case GgufValueType::I64: return c.get<int64_t>(what);
    case GgufValueType::F64: return c.get<double>(what);
    case GgufValueType::BOOL: {
      const uint8_t b = c.get<uint8_t>(what);
      PX_CHECK(b <= 1, "{}: {} is a bool of value {} (not 0 or 1)", path, what, b);
      return b == 1;
    }
    case GgufValueType::STRING: return c.str(what);
    case GgufValueType::ARRAY: {
      const uint32_t et = c.get<uint32_t>(what + " (element type)");
      PX_CHECK(valid_value_type(et), "{}: {} is an array of unknown value type {}", path, what,
               et);
      const auto elem = static_cast<GgufValueType>(et);
      const uint64_t n = c.get<uint64_t>(what + " (element count)");
      c.need(n > 0 ? min_value_bytes(elem) : 0, what);
      PX_CHECK(n <= std::numeric_limits<uint64_t>::max() / min_value_bytes(elem),
               "{}: {} claims {} elements", path, what, n);
      c.need(n * min_value_bytes(elem), fmt::format("{} ({} elements)", what, n));
      if (elem_out != nullptr) *elem_out = elem;
      nlohmann::json a = nlohmann::json::array();
      a.get_ref<nlohmann::json::array_t&>().reserve(n);
      for (uint64_t i = 0; i < n; ++i)
        a.push_back(read_value(c, elem, fmt::format("{}[{}]", what, i), path, nullptr));
      return a;
    }
  }
  PX_FAIL("{}: {} has unknown value type {}", path, what, static_cast<uint32_t>(t));
}

}  // namespace

std::string gguf_value_type_name(GgufValueType t) {
  static const char* kNames[] = {"uint8", "int8",   "uint16", "int16", "uint32",
                                 "int32", "float32", "bool",  "string", "array",
                                 "uint64", "int64", "float64"};
  const auto i = static_cast<uint32_t>(t);
  return i <= 12 ? kNames[i] : fmt::format("type {}", i);
}

std::string ggml_type_name(int type) {
  const GgmlType* g = ggml_type(type);
  return g != nullptr ? g->name : fmt::format("type {}", type);
}

int64_t GgufTensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  return n;
}

bool is_gguf_path(const std::string& path) {
  if (path.size() < 5) return false;
  std::string ext = path.substr(path.size() - 5);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return ext == ".gguf";
}

GgufFile GgufFile::open(const std::string& path) {
  GgufFile f;
  f.path_ = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  PX_CHECK(fd >= 0, "cannot open GGUF file '{}': {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    PX_FAIL("cannot stat '{}': {}", path, std::strerror(err));
  }
  f.size_ = static_cast<uint64_t>(st.st_size);
  if (f.size_ < 24) {
    ::close(fd);
    PX_FAIL("{}: not a GGUF file: {} bytes, shorter than the 24-byte GGUF header", path, f.size_);
  }
  void* addr = ::mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);
  PX_CHECK(addr != MAP_FAILED, "{}: cannot mmap {} bytes: {}", path, f.size_, std::strerror(err));
  const uint64_t size = f.size_;
  f.mapping_ = std::shared_ptr<const std::byte>(
      static_cast<const std::byte*>(addr),
      [size](const std::byte* p) { ::munmap(const_cast<std::byte*>(p), size); });

  Cursor c(f.path_, f.mapping_.get(), f.size_);
  const uint32_t magic = c.get<uint32_t>("magic");
  PX_CHECK(magic == kGgufMagic,
           "{}: not a GGUF file: bad magic 0x{:08x} (bytes '{}'), expected 0x{:08x} ('GGUF')",
           path, magic,
           std::string(reinterpret_cast<const char*>(f.mapping_.get()), 4) , kGgufMagic);
  f.version_ = c.get<uint32_t>("version");
  const uint32_t swapped = __builtin_bswap32(f.version_);
  PX_CHECK(!(swapped == 2 || swapped == 3),
           "{}: big-endian GGUF (version {} byte-swapped): parallm reads little-endian files only",
           path, swapped);
  PX_CHECK(f.version_ == 2 || f.version_ == 3,
           "{}: unsupported GGUF version {} (parallm reads versions 2 and 3)", path, f.version_);
  const uint64_t n_tensors = c.get<uint64_t>("tensor count");
  const uint64_t n_kv = c.get<uint64_t>("metadata count");
  // Each kv takes at least 8 + 4 + 1 bytes, each tensor info 8 + 4 + 4 + 8.
  PX_CHECK(n_kv <= size / 13 && n_tensors <= size / 24,
           "{}: truncated GGUF file: the header claims {} metadata entries and {} tensors, more "
           "than {} bytes can hold",
           path, n_kv, n_tensors, size);

  for (uint64_t i = 0; i < n_kv; ++i) {
    GgufKv kv;
    kv.key = c.str(fmt::format("metadata key {}", i));
    const uint32_t t = c.get<uint32_t>(fmt::format("the type of metadata '{}'", kv.key));
    PX_CHECK(valid_value_type(t), "{}: metadata '{}' has unknown value type {}", path, kv.key, t);
    kv.type = static_cast<GgufValueType>(t);
    kv.value = read_value(c, kv.type, fmt::format("metadata '{}'", kv.key), path, &kv.elem);
    PX_CHECK(f.kv_index_.emplace(kv.key, f.kvs_.size()).second,
             "{}: metadata key '{}' appears twice", path, kv.key);
    f.kvs_.push_back(std::move(kv));
  }
  if (const GgufKv* a = f.find_kv("general.alignment")) {
    PX_CHECK(a->value.is_number_unsigned() || a->value.is_number_integer(),
             "{}: general.alignment has type {}, expected an integer", path,
             gguf_value_type_name(a->type));
    const int64_t v = a->value.get<int64_t>();
    PX_CHECK(v > 0 && (v & (v - 1)) == 0,
             "{}: general.alignment is {}, expected a power of two", path, v);
    f.alignment_ = static_cast<uint64_t>(v);
  }

  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo t;
    t.name = c.str(fmt::format("tensor info {}", i));
    const std::string w = fmt::format("tensor '{}'", t.name);
    const uint32_t nd = c.get<uint32_t>(w + " (n_dims)");
    PX_CHECK(nd >= 1 && nd <= kGgmlMaxDims, "{}: {} has {} dimensions (ggml allows 1 to {})",
             path, w, nd, kGgmlMaxDims);
    uint64_t numel = 1;
    for (uint32_t d = 0; d < nd; ++d) {
      const uint64_t ne = c.get<uint64_t>(w + " (ne)");
      PX_CHECK(ne >= 1 && ne <= (uint64_t{1} << 40) && numel <= (uint64_t{1} << 48) / ne,
               "{}: {} has an impossible dimension ne[{}] = {}", path, w, d, ne);
      numel *= ne;
      t.ne.push_back(static_cast<int64_t>(ne));
    }
    t.type = static_cast<int>(c.get<uint32_t>(w + " (type)"));
    t.offset = c.get<uint64_t>(w + " (offset)");
    const GgmlType* g = ggml_type(t.type);
    PX_CHECK(g != nullptr, "{}: {} has ggml type {}, which ggml does not define", path, w, t.type);
    PX_CHECK(t.ne[0] % g->block_elems == 0,
             "{}: {} ({}) has rows of {} values, not a multiple of its block size {}", path, w,
             g->name, t.ne[0], g->block_elems);
    t.nbytes = numel / static_cast<uint64_t>(g->block_elems) * static_cast<uint64_t>(g->block_bytes);
    PX_CHECK(t.offset % f.alignment_ == 0, "{}: {} starts at data offset {}, not a multiple of the "
             "alignment {}", path, w, t.offset, f.alignment_);
    PX_CHECK(f.tensor_index_.emplace(t.name, f.tensors_.size()).second,
             "{}: tensor '{}' appears twice", path, t.name);
    f.tensors_.push_back(std::move(t));
  }
  f.data_offset_ = (c.pos() + f.alignment_ - 1) / f.alignment_ * f.alignment_;
  for (const GgufTensorInfo& t : f.tensors_) {
    PX_CHECK(t.offset <= f.size_ && t.nbytes <= f.size_ - t.offset &&
                 f.data_offset_ + t.offset + t.nbytes <= f.size_,
             "{}: truncated GGUF file: tensor '{}' ({}, {} bytes) needs bytes [{}, {}) but the "
             "file has {} bytes",
             path, t.name, ggml_type_name(t.type), t.nbytes, f.data_offset_ + t.offset,
             f.data_offset_ + t.offset + t.nbytes, f.size_);
  }
  return f;
}

const GgufKv* GgufFile::find_kv(const std::string& key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kvs_[it->second];
}

const GgufKv& GgufFile::need_kv(const std::string& key) const {
  const GgufKv* kv = find_kv(key);
  PX_CHECK(kv != nullptr, "{}: missing metadata key '{}'", path_, key);
  return *kv;
}

namespace {
bool is_int_type(GgufValueType t) {
  return t == GgufValueType::U8 || t == GgufValueType::I8 || t == GgufValueType::U16 ||
         t == GgufValueType::I16 || t == GgufValueType::U32 || t == GgufValueType::I32 ||
         t == GgufValueType::U64 || t == GgufValueType::I64;
}
}  // namespace

std::optional<int64_t> GgufFile::opt_int(const std::string& key) const {
  const GgufKv* kv = find_kv(key);
  if (kv == nullptr) return std::nullopt;
  PX_CHECK(is_int_type(kv->type), "{}: metadata '{}' has type {}, expected an integer", path_, key,
           gguf_value_type_name(kv->type));
  PX_CHECK(!kv->value.is_number_unsigned() ||
               kv->value.get<uint64_t>() <= uint64_t{std::numeric_limits<int64_t>::max()},
           "{}: metadata '{}' is {}, out of range", path_, key, kv->value.dump());
  return kv->value.get<int64_t>();
}

int64_t GgufFile::need_int(const std::string& key) const {
  need_kv(key);
  return *opt_int(key);
}

std::optional<double> GgufFile::opt_float(const std::string& key) const {
  const GgufKv* kv = find_kv(key);
  if (kv == nullptr) return std::nullopt;
  PX_CHECK(kv->type == GgufValueType::F32 || kv->type == GgufValueType::F64,
           "{}: metadata '{}' has type {}, expected a float", path_, key,
           gguf_value_type_name(kv->type));
  return kv->value.get<double>();
}

double GgufFile::need_float(const std::string& key) const {
  need_kv(key);
  return *opt_float(key);
}

std::optional<std::string> GgufFile::opt_string(const std::string& key) const {
  const GgufKv* kv = find_kv(key);
  if (kv == nullptr) return std::nullopt;
  PX_CHECK(kv->type == GgufValueType::STRING, "{}: metadata '{}' has type {}, expected a string",
           path_, key, gguf_value_type_name(kv->type));
  return kv->value.get<std::string>();
}

std::string GgufFile::need_string(const std::string& key) const {
  need_kv(key);
  return *opt_string(key);
}

std::optional<bool> GgufFile::opt_bool(const std::string& key) const {
  const GgufKv* kv = find_kv(key);
  if (kv == nullptr) return std::nullopt;
  PX_CHECK(kv->type == GgufValueType::BOOL, "{}: metadata '{}' has type {}, expected a bool",
           path_, key, gguf_value_type_name(kv->type));
  return kv->value.get<bool>();
}

const nlohmann::json* GgufFile::opt_array(const std::string& key, GgufValueType elem) const {
  const GgufKv* kv = find_kv(key);
  if (kv == nullptr) return nullptr;
  const bool ok = kv->type == GgufValueType::ARRAY &&
                  (kv->elem == elem || kv->value.empty() ||
                   (is_int_type(elem) && is_int_type(kv->elem)) ||
                   (elem == GgufValueType::F32 && kv->elem == GgufValueType::F64));
  PX_CHECK(ok, "{}: metadata '{}' has type {}{}, expected array[{}]", path_, key,
           gguf_value_type_name(kv->type),
           kv->type == GgufValueType::ARRAY ? "[" + gguf_value_type_name(kv->elem) + "]" : "",
           gguf_value_type_name(elem));
  return &kv->value;
}

const GgufTensorInfo* GgufFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::span<const std::byte> GgufFile::bytes(const GgufTensorInfo& t) const {
  return {mapping_.get() + data_offset_ + t.offset, static_cast<size_t>(t.nbytes)};
}

}  // namespace parallm
