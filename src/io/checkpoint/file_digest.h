// SHA-256 of a file (OpenSSL's EVP interface), as lowercase hex, for the
// checkpoint manifest. Streams the file in blocks, so memory stays small.
#pragma once
#include <cstdint>
#include <memory>
#include <ostream>
#include <streambuf>
#include <string>

namespace parallm {

// Throws naming the file when it cannot be read.
std::string sha256_file(const std::string& path);

// A running SHA-256.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  void update(const void* data, size_t n);
  std::string hex();  // once, at the end

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

// A stream that hashes and counts what it passes on to `out`: a file's
// digest taken while it is written, instead of reading it back (a
// checkpoint shard of 1.5 GB costs a second's hashing either way, but not
// a second pass over memory).
class HashingStream : public std::ostream {
 public:
  explicit HashingStream(std::ostream& out);
  int64_t bytes() const { return buf_.bytes; }
  std::string hex() { return buf_.sha.hex(); }

 private:
  struct Buf : std::streambuf {
    explicit Buf(std::ostream& o) : out(o) {}
    std::ostream& out;
    Sha256 sha;
    int64_t bytes = 0;
    std::streamsize xsputn(const char* s, std::streamsize n) override;
    int_type overflow(int_type c) override;
  } buf_;
};

}  // namespace parallm
