// TokenSource: one file's worth of token stream for the data loader, either
// an llm.c token shard (a path to a .bin with the llm.c header) or a Megatron
// indexed dataset (a PREFIX naming PREFIX.bin + PREFIX.idx; its sequences in
// order, each document ending in its EOD when written with --append-eod).
// Invariant: a source is validated on open and read-only afterwards, so reads
// may run concurrently.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

namespace parallm {

class TokenSource {
 public:
  virtual ~TokenSource() = default;
  virtual const std::string& path() const = 0;  // shard path or Megatron prefix
  virtual int64_t size() const = 0;             // tokens
  // out[0..n) = tokens [begin, begin+n), narrowed to int32. Checked range.
  virtual void read(int64_t begin, int64_t n, int32_t* out) const = 0;
  virtual int64_t at(int64_t i) const = 0;  // unchecked
  virtual int64_t max_token() const = 0;    // -1 when empty
  // Index of the first token < 0 or >= vocab, or -1 when there is none.
  virtual int64_t find_token_outside(int64_t vocab) const = 0;
};

// True when PREFIX.bin and PREFIX.idx both exist and `path` itself is not a
// regular file (an existing file is always taken as an llm.c shard).
bool is_megatron_prefix(const std::string& path);

// A Megatron dataset for a Megatron prefix (also accepted: PREFIX.idx), an
// llm.c shard otherwise. Errors name the file and the field at fault.
std::unique_ptr<TokenSource> open_token_source(const std::string& path);

}  // namespace parallm
