// open_token_source: picks the reader by what is on disk (an existing file is
// an llm.c shard; PREFIX with PREFIX.bin + PREFIX.idx is Megatron) and wraps
// it behind TokenSource. A file that fails the llm.c header check but sits
// beside a Megatron index gets a hint to pass the prefix instead.
#include "data/token_source.h"

#include <filesystem>

#include "base/error.h"
#include "data/megatron_dataset.h"
#include "data/token_shard.h"

namespace parallm {

namespace {

namespace fs = std::filesystem;

bool is_file(const std::string& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string strip(const std::string& s, size_t n) { return s.substr(0, s.size() - n); }

class ShardSource final : public TokenSource {
 public:
  explicit ShardSource(const std::string& path) : shard_(path) {}
  const std::string& path() const override { return shard_.path(); }
  int64_t size() const override { return shard_.size(); }
  void read(int64_t begin, int64_t n, int32_t* out) const override { shard_.read(begin, n, out); }
  int64_t at(int64_t i) const override { return shard_.at(i); }
  int64_t max_token() const override { return shard_.max_token(); }
  int64_t find_token_outside(int64_t vocab) const override {
    // Shard tokens are unsigned; uint16 tokens are < 65536 by construction.
    if (shard_.format() == ShardFormat::U16 && vocab >= 65536) return -1;
    return shard_.find_token_at_least(vocab);
  }

 private:
  TokenShard shard_;
};

class MegatronSource final : public TokenSource {
 public:
  explicit MegatronSource(const std::string& prefix) : ds_(prefix) {}
  const std::string& path() const override { return ds_.prefix(); }
  int64_t size() const override { return ds_.num_tokens(); }
  void read(int64_t begin, int64_t n, int32_t* out) const override { ds_.read(begin, n, out); }
  int64_t at(int64_t i) const override { return ds_.at(i); }
  int64_t max_token() const override { return ds_.max_token(); }
  int64_t find_token_outside(int64_t vocab) const override { return ds_.find_token_outside(vocab); }

 private:
  MegatronDataset ds_;
};

}  // namespace

bool is_megatron_prefix(const std::string& path) {
  return !is_file(path) && is_file(path + ".bin") && is_file(path + ".idx");
}

std::unique_ptr<TokenSource> open_token_source(const std::string& path) {
  if (is_megatron_prefix(path)) return std::make_unique<MegatronSource>(path);
  if (ends_with(path, ".idx") && is_file(path)) {
    return std::make_unique<MegatronSource>(strip(path, 4));
  }
  if (!is_file(path) && (is_file(path + ".bin") || is_file(path + ".idx"))) {
    PX_FAIL("data {}: a Megatron dataset needs both {}.bin and {}.idx; {} is missing", path, path,
            path, is_file(path + ".bin") ? path + ".idx" : path + ".bin");
  }
  try {
    return std::make_unique<ShardSource>(path);
  } catch (const Error& e) {
    if (ends_with(path, ".bin") && is_file(strip(path, 4) + ".idx")) {
      PX_FAIL("{}\n(this looks like a Megatron dataset: pass the prefix {} without .bin)", e.what(),
              strip(path, 4));
    }
    throw;
  }
}

}  // namespace parallm
