// Megatron indexed datasets: the .idx is read whole and checked field by
// field (magic, version, dtype, counts against the file size, lengths,
// pointers against the .bin size, document indices); the .bin is mapped
// read-only. The writer converts tokens to the dtype in chunks and goes
// through base/atomic_file, .bin before .idx, so an .idx never describes a
// .bin that is not complete.
#include "data/megatron_dataset.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <ostream>
#include <sstream>
#include <utility>

#include "base/atomic_file.h"
#include "base/error.h"

namespace parallm {

static_assert(std::endian::native == std::endian::little,
              "Megatron datasets are read without byte swapping; big-endian hosts need it");

namespace {

bool is_integer_dtype(MegatronDType t) {
  return t != MegatronDType::F32 && t != MegatronDType::F64;
}

bool known_dtype_code(uint8_t c) { return c >= 1 && c <= 8; }

template <typename T>
void write_as(std::ostream& out, std::span<const int32_t> tokens) {
  constexpr size_t kChunk = size_t{1} << 16;
  std::vector<T> buf(std::min(tokens.size(), kChunk));
  for (size_t i = 0; i < tokens.size(); i += kChunk) {
    const size_t n = std::min(kChunk, tokens.size() - i);
    for (size_t j = 0; j < n; ++j) buf[j] = static_cast<T>(tokens[i + j]);
    out.write(reinterpret_cast<const char*>(buf.data()),
              static_cast<std::streamsize>(n * sizeof(T)));
  }
}

std::pair<int64_t, int64_t> dtype_range(MegatronDType t) {
  switch (t) {
    case MegatronDType::U8:
      return {0, 255};
    case MegatronDType::I8:
      return {-128, 127};
    case MegatronDType::I16:
      return {-32768, 32767};
    case MegatronDType::U16:
      return {0, 65535};
    default:
      return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
  }
}

template <typename T>
void put(std::ostream& out, T v) {
  out.write(reinterpret_cast<const char*>(&v), sizeof(T));
}

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  PX_CHECK(in.good(), "Megatron index {}: cannot open: {}", path, std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  PX_CHECK(!in.bad(), "Megatron index {}: read error", path);
  return std::move(ss).str();
}

}  // namespace

int64_t megatron_dtype_bytes(MegatronDType t) {
  switch (t) {
    case MegatronDType::U8:
    case MegatronDType::I8:
      return 1;
    case MegatronDType::I16:
    case MegatronDType::U16:
      return 2;
    case MegatronDType::I32:
    case MegatronDType::F32:
      return 4;
    case MegatronDType::I64:
    case MegatronDType::F64:
      return 8;
  }
  PX_FAIL("unknown Megatron dtype code {}", static_cast<int>(t));
}

const char* megatron_dtype_name(MegatronDType t) {
  switch (t) {
    case MegatronDType::U8:
      return "uint8";
    case MegatronDType::I8:
      return "int8";
    case MegatronDType::I16:
      return "int16";
    case MegatronDType::I32:
      return "int32";
    case MegatronDType::I64:
      return "int64";
    case MegatronDType::F64:
      return "float64";
    case MegatronDType::F32:
      return "float32";
    case MegatronDType::U16:
      return "uint16";
  }
  return "unknown";
}

MegatronDType megatron_dtype_for_vocab(int64_t vocab_size) {
  return vocab_size <= 65536 ? MegatronDType::U16 : MegatronDType::I32;
}

void write_megatron_dataset(const std::string& prefix, std::span<const int32_t> tokens,
                            std::span<const int64_t> offsets, MegatronDType dtype) {
  const std::string bin = prefix + ".bin", idx = prefix + ".idx";
  PX_CHECK(is_integer_dtype(dtype), "cannot write {}: dtype {} is not a token type", bin,
           megatron_dtype_name(dtype));
  PX_CHECK(!offsets.empty() && offsets.front() == 0 &&
               offsets.back() == static_cast<int64_t>(tokens.size()),
           "cannot write {}: sequence offsets must run from 0 to the token count {}", bin,
           tokens.size());
  const auto [lo, hi] = dtype_range(dtype);
  for (size_t i = 0; i < tokens.size(); ++i) {
    PX_CHECK(tokens[i] >= lo && tokens[i] <= hi,
             "cannot write {}: token {} at index {} does not fit dtype {} [{}, {}]", bin, tokens[i],
             i, megatron_dtype_name(dtype), lo, hi);
  }
  const size_t S = offsets.size() - 1;
  for (size_t i = 0; i < S; ++i) {
    const int64_t len = offsets[i + 1] - offsets[i];
    PX_CHECK(len >= 0 && len <= std::numeric_limits<int32_t>::max(),
             "cannot write {}: sequence {} has length {} (offsets must not decrease; a length "
             "must fit int32)",
             bin, i, len);
  }
  write_file_atomically(bin, [&](std::ostream& out) {
    switch (dtype) {
      case MegatronDType::U8:
        write_as<uint8_t>(out, tokens);
        break;
      case MegatronDType::I8:
        write_as<int8_t>(out, tokens);
        break;
      case MegatronDType::I16:
        write_as<int16_t>(out, tokens);
        break;
      case MegatronDType::U16:
        write_as<uint16_t>(out, tokens);
        break;
      case MegatronDType::I32:
        write_as<int32_t>(out, tokens);
        break;
      case MegatronDType::I64:
        write_as<int64_t>(out, tokens);
        break;
      default:
        break;
    }
  });
  const int64_t item = megatron_dtype_bytes(dtype);
  write_file_atomically(idx, [&](std::ostream& out) {
    out.write(kMegatronIndexMagic, sizeof(kMegatronIndexMagic));
    put<uint64_t>(out, kMegatronIndexVersion);
    put<uint8_t>(out, static_cast<uint8_t>(dtype));
    put<uint64_t>(out, S);
    put<uint64_t>(out, S + 1);  // one document per sequence, plus the leading 0
    for (size_t i = 0; i < S; ++i)
      put<int32_t>(out, static_cast<int32_t>(offsets[i + 1] - offsets[i]));
    for (size_t i = 0; i < S; ++i) put<int64_t>(out, offsets[i] * item);
    for (size_t i = 0; i <= S; ++i) put<int64_t>(out, static_cast<int64_t>(i));
  });
}

MegatronDataset::MegatronDataset(const std::string& prefix) : prefix_(prefix) {
  const std::string idx = prefix + ".idx", bin = prefix + ".bin";
  const std::string data = read_whole_file(idx);
  const int64_t size = static_cast<int64_t>(data.size());
  PX_CHECK(size >= kMegatronIndexHeaderBytes,
           "Megatron index {}: file is {} bytes, shorter than the {}-byte header (truncated file)",
           idx, size, kMegatronIndexHeaderBytes);
  PX_CHECK(std::memcmp(data.data(), kMegatronIndexMagic, sizeof(kMegatronIndexMagic)) == 0,
           "Megatron index {}: bad magic (expected \"MMIDIDX\\0\\0\" in the first 9 bytes); is "
           "this a Megatron indexed dataset?",
           idx);
  uint64_t version = 0, seq_count = 0, doc_count = 0;
  uint8_t code = 0;
  std::memcpy(&version, data.data() + 9, 8);
  std::memcpy(&code, data.data() + 17, 1);
  std::memcpy(&seq_count, data.data() + 18, 8);
  std::memcpy(&doc_count, data.data() + 26, 8);
  PX_CHECK(version == kMegatronIndexVersion,
           "Megatron index {}: version {} is not supported (expected {})", idx, version,
           kMegatronIndexVersion);
  PX_CHECK(known_dtype_code(code),
           "Megatron index {}: dtype code {} is unknown (Megatron's codes are 1..8)", idx, code);
  dtype_ = static_cast<MegatronDType>(code);
  PX_CHECK(is_integer_dtype(dtype_),
           "Megatron index {}: dtype {} (code {}) cannot hold token ids; expected an integer dtype",
           idx, megatron_dtype_name(dtype_), code);
  // Bound the counts before multiplying, so a garbage header cannot overflow.
  const uint64_t body = static_cast<uint64_t>(size - kMegatronIndexHeaderBytes);
  PX_CHECK(seq_count <= body / 12 && doc_count <= body / 8,
           "Megatron index {}: header counts (sequences {}, document indices {}) need more than "
           "the file's {} bytes (truncated file)",
           idx, seq_count, doc_count, size);
  const int64_t S = static_cast<int64_t>(seq_count), D = static_cast<int64_t>(doc_count);
  const int64_t want = kMegatronIndexHeaderBytes + S * 4 + S * 8 + D * 8;
  // Multimodal datasets append one int8 mode per sequence; the modes are not used here.
  PX_CHECK(size == want || size == want + S,
           "Megatron index {}: file is {} bytes but the header (sequences {}, document indices "
           "{}) needs {} bytes{}",
           idx, size, S, D, want, size < want ? " (truncated file)" : " (trailing bytes)");
  const char* p = data.data() + kMegatronIndexHeaderBytes;
  lengths_.resize(static_cast<size_t>(S));
  pointers_.resize(static_cast<size_t>(S));
  doc_index_.resize(static_cast<size_t>(D));
  std::memcpy(lengths_.data(), p, static_cast<size_t>(S) * 4);
  std::memcpy(pointers_.data(), p + S * 4, static_cast<size_t>(S) * 8);
  std::memcpy(doc_index_.data(), p + S * 12, static_cast<size_t>(D) * 8);

  PX_CHECK(D >= 1 && doc_index_.front() == 0,
           "Megatron index {}: document indices must start with 0 (got {})", idx,
           D >= 1 ? fmt::format("{}", doc_index_.front()) : std::string("none"));
  for (int64_t d = 1; d < D; ++d) {
    PX_CHECK(doc_index_[d] >= doc_index_[d - 1] && doc_index_[d] <= S,
             "Megatron index {}: document index {} is {}, outside [{}, {}] (the previous end and "
             "the sequence count)",
             idx, d, doc_index_[d], doc_index_[d - 1], S);
  }
  PX_CHECK(doc_index_.back() == S,
           "Megatron index {}: the last document index is {}, but the dataset has {} sequences",
           idx, doc_index_.back(), S);

  int fd = ::open(bin.c_str(), O_RDONLY | O_CLOEXEC);
  PX_CHECK(fd >= 0, "Megatron data {}: cannot open: {}", bin, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    std::string e = std::strerror(errno);
    ::close(fd);
    PX_FAIL("Megatron data {}: cannot stat: {}", bin, e);
  }
  const int64_t bin_bytes = st.st_size;
  const int64_t item = megatron_dtype_bytes(dtype_);
  starts_.assign(1, 0);
  starts_.reserve(static_cast<size_t>(S) + 1);
  for (int64_t i = 0; i < S; ++i) {
    const int64_t len = lengths_[i], ptr = pointers_[i];
    if (len < 0 || ptr < 0 || ptr > bin_bytes || len > (bin_bytes - ptr) / item) {
      ::close(fd);
      PX_FAIL(
          "Megatron index {}: sequence {} (pointer {} bytes, length {} x {} bytes) lies outside "
          "{} ({} bytes): pointer or length out of range (truncated .bin?)",
          idx, i, ptr, len, item, bin, bin_bytes);
    }
    starts_.push_back(starts_.back() + len);
  }
  if (bin_bytes > 0) {
    void* map = ::mmap(nullptr, static_cast<size_t>(bin_bytes), PROT_READ, MAP_SHARED, fd, 0);
    std::string err = map == MAP_FAILED ? std::strerror(errno) : std::string();
    ::close(fd);
    PX_CHECK(map != MAP_FAILED, "Megatron data {}: cannot mmap: {}", bin, err);
    map_ = map;
    map_bytes_ = static_cast<size_t>(bin_bytes);
  } else {
    ::close(fd);
  }
}

MegatronDataset::~MegatronDataset() { release(); }

MegatronDataset::MegatronDataset(MegatronDataset&& other) noexcept { *this = std::move(other); }

MegatronDataset& MegatronDataset::operator=(MegatronDataset&& other) noexcept {
  if (this != &other) {
    release();
    prefix_ = std::move(other.prefix_);
    dtype_ = other.dtype_;
    lengths_ = std::move(other.lengths_);
    pointers_ = std::move(other.pointers_);
    doc_index_ = std::move(other.doc_index_);
    starts_ = std::move(other.starts_);
    map_ = std::exchange(other.map_, nullptr);
    map_bytes_ = std::exchange(other.map_bytes_, 0);
  }
  return *this;
}

void MegatronDataset::release() {
  if (map_ != nullptr) ::munmap(map_, map_bytes_);
  map_ = nullptr;
  map_bytes_ = 0;
}

int64_t MegatronDataset::token_at_byte(int64_t byte) const {
  const unsigned char* p = static_cast<const unsigned char*>(map_) + byte;
  switch (dtype_) {
    case MegatronDType::U8:
      return *p;
    case MegatronDType::I8:
      return static_cast<int8_t>(*p);
    case MegatronDType::I16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case MegatronDType::U16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case MegatronDType::I32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case MegatronDType::I64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
    default:
      return 0;  // float dtypes are refused on open
  }
}

int64_t MegatronDataset::at(int64_t i) const {
  const size_t s =
      static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), i) - starts_.begin()) -
      1;
  return token_at_byte(pointers_[s] + (i - starts_[s]) * megatron_dtype_bytes(dtype_));
}

void MegatronDataset::read(int64_t begin, int64_t n, int32_t* out) const {
  PX_CHECK(begin >= 0 && n >= 0 && begin + n <= num_tokens(),
           "Megatron dataset {}: read of tokens [{}, {}) is outside [0, {})", prefix_, begin,
           begin + n, num_tokens());
  if (n == 0) return;
  const int64_t item = megatron_dtype_bytes(dtype_);
  size_t s = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), begin) -
                                 starts_.begin()) -
             1;
  while (n > 0) {
    const int64_t local = begin - starts_[s];
    const int64_t take = std::min(n, starts_[s + 1] - local - starts_[s]);
    const int64_t base = pointers_[s] + local * item;
    if (dtype_ == MegatronDType::I32) {
      std::memcpy(out, static_cast<const unsigned char*>(map_) + base,
                  static_cast<size_t>(take) * 4);
    } else {
      // int64 ids above INT32_MAX wrap here; find_token_outside catches them first.
      for (int64_t j = 0; j < take; ++j)
        out[j] = static_cast<int32_t>(token_at_byte(base + j * item));
    }
    out += take;
    begin += take;
    n -= take;
    ++s;
  }
}

std::vector<int32_t> MegatronDataset::sequence(int64_t i) const {
  PX_CHECK(i >= 0 && i < num_sequences(), "Megatron dataset {}: sequence {} is outside [0, {})",
           prefix_, i, num_sequences());
  std::vector<int32_t> out(static_cast<size_t>(lengths_[i]));
  read(starts_[i], lengths_[i], out.data());
  return out;
}

int64_t MegatronDataset::max_token() const {
  int64_t m = -1;
  const int64_t item = megatron_dtype_bytes(dtype_);
  for (int64_t s = 0; s < num_sequences(); ++s) {
    for (int64_t j = 0; j < lengths_[s]; ++j)
      m = std::max(m, token_at_byte(pointers_[s] + j * item));
  }
  return m;
}

int64_t MegatronDataset::find_token_outside(int64_t limit) const {
  const int64_t item = megatron_dtype_bytes(dtype_);
  for (int64_t s = 0; s < num_sequences(); ++s) {
    for (int64_t j = 0; j < lengths_[s]; ++j) {
      const int64_t v = token_at_byte(pointers_[s] + j * item);
      if (v < 0 || v >= limit) return starts_[s] + j;
    }
  }
  return -1;
}

}  // namespace parallm
