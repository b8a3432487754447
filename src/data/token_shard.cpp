// Token shards: TokenShard maps a file read-only and checks size, magic,
// version and length before exposing a single token; the writer converts to
// uint16/uint32 in chunks and goes through io/atomic_file (temp + fsync +
// rename), so a crashed writer never leaves a truncated shard behind.
#include "data/token_shard.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <ostream>
#include <utility>
#include <vector>

#include "base/atomic_file.h"
#include "base/error.h"

namespace parallm {

// The on-disk format is little-endian and we copy it without swapping.
static_assert(std::endian::native == std::endian::little,
              "token shards are read without byte swapping; big-endian hosts need it");

namespace {

std::string errno_text() { return std::strerror(errno); }

template <typename T>
void write_tokens_as(std::ostream& out, std::span<const int32_t> tokens) {
  constexpr size_t kChunk = size_t{1} << 16;
  std::vector<T> buf(std::min(tokens.size(), kChunk));
  for (size_t i = 0; i < tokens.size(); i += kChunk) {
    size_t n = std::min(kChunk, tokens.size() - i);
    for (size_t j = 0; j < n; ++j) buf[j] = static_cast<T>(tokens[i + j]);
    out.write(reinterpret_cast<const char*>(buf.data()),
              static_cast<std::streamsize>(n * sizeof(T)));
  }
}

template <typename T>
int64_t max_of(const unsigned char* p, int64_t n) {
  int64_t m = -1;
  for (int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, p + i * sizeof(T), sizeof(T));
    m = std::max<int64_t>(m, v);
  }
  return m;
}

template <typename T>
int64_t first_at_least(const unsigned char* p, int64_t n, int64_t limit) {
  for (int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, p + i * sizeof(T), sizeof(T));
    if (static_cast<int64_t>(v) >= limit) return i;
  }
  return -1;
}

}  // namespace

ShardFormat shard_format_for(std::span<const int32_t> tokens) {
  int32_t m = 0;
  for (int32_t t : tokens) m = std::max(m, t);
  return m <= 0xFFFF ? ShardFormat::U16 : ShardFormat::U32;
}

void write_token_shard(const std::string& path, std::span<const int32_t> tokens,
                       ShardFormat format) {
  PX_CHECK(tokens.size() <= static_cast<size_t>(std::numeric_limits<int32_t>::max()),
           "cannot write {}: {} tokens exceed the llm.c shard limit of {} (int32 count); "
           "split the data into several shards",
           path, tokens.size(), std::numeric_limits<int32_t>::max());
  for (size_t i = 0; i < tokens.size(); ++i) {
    PX_CHECK(tokens[i] >= 0, "cannot write {}: token {} at index {} is negative", path, tokens[i],
             i);
    if (format == ShardFormat::U16) {
      PX_CHECK(tokens[i] <= 0xFFFF,
               "cannot write {}: token {} at index {} does not fit the uint16 shard format "
               "(max 65535); use the uint32 format",
               path, tokens[i], i);
    }
  }
  if (format == ShardFormat::Auto) format = shard_format_for(tokens);

  int32_t header[kShardHeaderInts] = {};
  const bool u16 = format == ShardFormat::U16;
  header[0] = u16 ? kShardMagicU16 : kShardMagicU32;
  header[1] = u16 ? kShardVersionU16 : kShardVersionU32;
  header[2] = static_cast<int32_t>(tokens.size());
  write_file_atomically(path, [&](std::ostream& out) {
    out.write(reinterpret_cast<const char*>(header), sizeof(header));
    if (u16) {
      write_tokens_as<uint16_t>(out, tokens);
    } else {
      write_tokens_as<uint32_t>(out, tokens);
    }
  });
}

TokenShard::TokenShard(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  PX_CHECK(fd >= 0, "token shard {}: cannot open: {}", path, errno_text());
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    std::string e = errno_text();
    ::close(fd);
    PX_FAIL("token shard {}: cannot stat: {}", path, e);
  }
  const int64_t file_bytes = st.st_size;
  if (file_bytes < kShardHeaderBytes) {
    ::close(fd);
    PX_FAIL("token shard {}: file is {} bytes, shorter than the {}-byte header", path, file_bytes,
            kShardHeaderBytes);
  }
  void* map = ::mmap(nullptr, static_cast<size_t>(file_bytes), PROT_READ, MAP_SHARED, fd, 0);
  std::string map_err = map == MAP_FAILED ? errno_text() : std::string();
  ::close(fd);  // the mapping keeps the file alive
  PX_CHECK(map != MAP_FAILED, "token shard {}: cannot mmap: {}", path, map_err);
  map_ = map;
  map_bytes_ = static_cast<size_t>(file_bytes);

  // From here the destructor will not run if we throw, so unmap by hand.
  try {
    int32_t header[3];
    std::memcpy(header, map_, sizeof(header));
    const int32_t magic = header[0], version = header[1], count = header[2];
    int32_t want_version = 0;
    if (magic == kShardMagicU16) {
      format_ = ShardFormat::U16;
      want_version = kShardVersionU16;
    } else if (magic == kShardMagicU32) {
      format_ = ShardFormat::U32;
      want_version = kShardVersionU32;
    } else {
      PX_FAIL(
          "token shard {}: unknown magic {} (expected {} for uint16 tokens or {} for uint32 "
          "tokens); is this an llm.c token file?",
          path, magic, kShardMagicU16, kShardMagicU32);
    }
    PX_CHECK(version == want_version,
             "token shard {}: version {} does not match magic {} (expected version {})", path,
             version, magic, want_version);
    PX_CHECK(count >= 0, "token shard {}: header token count {} is negative", path, count);
    const int64_t expected = kShardHeaderBytes + int64_t{count} * token_bytes();
    PX_CHECK(file_bytes == expected,
             "token shard {}: file size {} bytes does not match the header: {} + {} tokens x {} "
             "bytes = {} bytes (truncated or corrupt file?)",
             path, file_bytes, kShardHeaderBytes, count, token_bytes(), expected);
    size_ = count;
  } catch (...) {
    release();
    throw;
  }
  tokens_ = static_cast<const unsigned char*>(map_) + kShardHeaderBytes;
}

TokenShard::~TokenShard() { release(); }

TokenShard::TokenShard(TokenShard&& other) noexcept { *this = std::move(other); }

TokenShard& TokenShard::operator=(TokenShard&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    format_ = other.format_;
    size_ = std::exchange(other.size_, 0);
    map_ = std::exchange(other.map_, nullptr);
    map_bytes_ = std::exchange(other.map_bytes_, 0);
    tokens_ = std::exchange(other.tokens_, nullptr);
  }
  return *this;
}

void TokenShard::release() {
  if (map_ != nullptr) ::munmap(map_, map_bytes_);
  map_ = nullptr;
  map_bytes_ = 0;
  tokens_ = nullptr;
  size_ = 0;
}

int64_t TokenShard::at(int64_t i) const {
  if (format_ == ShardFormat::U16) {
    uint16_t v;
    std::memcpy(&v, tokens_ + i * 2, 2);
    return v;
  }
  uint32_t v;
  std::memcpy(&v, tokens_ + i * 4, 4);
  return v;
}

void TokenShard::read(int64_t begin, int64_t n, int32_t* out) const {
  PX_CHECK(begin >= 0 && n >= 0 && begin + n <= size_,
           "token shard {}: read of tokens [{}, {}) is outside [0, {})", path_, begin, begin + n,
           size_);
  if (format_ == ShardFormat::U16) {
    const unsigned char* p = tokens_ + begin * 2;
    for (int64_t i = 0; i < n; ++i) {
      uint16_t v;
      std::memcpy(&v, p + i * 2, 2);
      out[i] = v;
    }
  } else {
    // A uint32 id above INT32_MAX wraps negative here; validate_vocab catches it first.
    std::memcpy(out, tokens_ + begin * 4, static_cast<size_t>(n) * 4);
  }
}

int64_t TokenShard::max_token() const {
  return format_ == ShardFormat::U16 ? max_of<uint16_t>(tokens_, size_)
                                     : max_of<uint32_t>(tokens_, size_);
}

int64_t TokenShard::find_token_at_least(int64_t limit) const {
  return format_ == ShardFormat::U16 ? first_at_least<uint16_t>(tokens_, size_, limit)
                                     : first_at_least<uint32_t>(tokens_, size_, limit);
}

}  // namespace parallm
