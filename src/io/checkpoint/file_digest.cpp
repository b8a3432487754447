// SHA-256 through OpenSSL's EVP digest API (libcrypto), streamed in 1 MiB blocks.
#include "io/checkpoint/file_digest.h"

#include <openssl/evp.h>

#include <fstream>
#include <memory>
#include <vector>

#include "base/error.h"

namespace parallm {

struct Sha256::Ctx {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> md{EVP_MD_CTX_new(), EVP_MD_CTX_free};
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {
  PX_CHECK(ctx_->md && EVP_DigestInit_ex(ctx_->md.get(), EVP_sha256(), nullptr) == 1,
           "OpenSSL SHA-256 is unavailable");
}

Sha256::~Sha256() = default;

void Sha256::update(const void* data, size_t n) {
  if (n > 0) EVP_DigestUpdate(ctx_->md.get(), data, n);
}

std::string Sha256::hex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx_->md.get(), md, &len);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex += kHex[md[i] >> 4];
    hex += kHex[md[i] & 15];
  }
  return hex;
}

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  PX_CHECK(in.is_open(), "cannot open '{}' to compute its checksum", path);
  Sha256 sha;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto n = in.gcount();
    if (n > 0) sha.update(buf.data(), static_cast<size_t>(n));
  }
  PX_CHECK(in.eof(), "reading '{}' failed while computing its checksum", path);
  return sha.hex();
}

HashingStream::HashingStream(std::ostream& out) : std::ostream(nullptr), buf_(out) {
  rdbuf(&buf_);
  exceptions(out.exceptions());  // a failed write below fails here as it would there
}

std::streamsize HashingStream::Buf::xsputn(const char* s, std::streamsize n) {
  out.write(s, n);
  if (!out) return 0;
  sha.update(s, static_cast<size_t>(n));
  bytes += n;
  return n;
}

HashingStream::Buf::int_type HashingStream::Buf::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  const char ch = traits_type::to_char_type(c);
  return xsputn(&ch, 1) == 1 ? c : traits_type::eof();
}

}  // namespace parallm
