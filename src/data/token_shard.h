// llm.c token shards: a 1024-byte header of 256 little-endian int32 ([0] magic,
// [1] version, [2] token count), then the tokens. Magic 20240520 / version 1
// holds uint16 tokens (vocab <= 65536); magic 20240801 / version 7 holds uint32.
// TokenShard maps a file read-only and validates it fully on open, so a shard
// object always has size == (file bytes - 1024) / token_bytes. Writers are
// atomic: readers see the old file or the complete new one, never a prefix.
#pragma once
#include <cstdint>
#include <span>
#include <string>

namespace parallm {

enum class ShardFormat : uint8_t { Auto, U16, U32 };  // Auto: chosen by max token

inline constexpr int64_t kShardHeaderInts = 256;
inline constexpr int64_t kShardHeaderBytes = kShardHeaderInts * 4;
inline constexpr int32_t kShardMagicU16 = 20240520;
inline constexpr int32_t kShardVersionU16 = 1;
inline constexpr int32_t kShardMagicU32 = 20240801;
inline constexpr int32_t kShardVersionU32 = 7;

// U16 when every token is < 65536, else U32.
ShardFormat shard_format_for(std::span<const int32_t> tokens);

// Writes tokens to path via path.tmp.<pid> + fsync + rename. Throws Error for a
// negative token, a token that does not fit an explicit U16, more than 2^31-1
// tokens (the header count is int32), or any I/O failure (temp file removed).
void write_token_shard(const std::string& path, std::span<const int32_t> tokens,
                       ShardFormat format = ShardFormat::Auto);

class TokenShard {
 public:
  // Maps and validates path; every failure is an Error naming the file.
  explicit TokenShard(const std::string& path);
  ~TokenShard();
  TokenShard(TokenShard&& other) noexcept;
  TokenShard& operator=(TokenShard&& other) noexcept;
  TokenShard(const TokenShard&) = delete;
  TokenShard& operator=(const TokenShard&) = delete;

  const std::string& path() const { return path_; }
  ShardFormat format() const { return format_; }  // U16 or U32, never Auto
  int64_t token_bytes() const { return format_ == ShardFormat::U16 ? 2 : 4; }
  int64_t size() const { return size_; }  // number of tokens

  int64_t at(int64_t i) const;  // unchecked; int64 because uint32 ids may exceed int32
  // out[0..n) = tokens [begin, begin+n), narrowed to int32. Checked range.
  void read(int64_t begin, int64_t n, int32_t* out) const;
  int64_t max_token() const;  // -1 for an empty shard; scans the file
  // Index of the first token >= limit, or -1 when there is none.
  int64_t find_token_at_least(int64_t limit) const;

 private:
  void release();

  std::string path_;
  ShardFormat format_ = ShardFormat::U16;
  int64_t size_ = 0;
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  const unsigned char* tokens_ = nullptr;  // map_ + header
};

}  // namespace parallm
