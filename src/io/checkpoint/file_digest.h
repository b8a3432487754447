// SHA-256 of a file (OpenSSL's EVP interface), as lowercase hex, for the
// checkpoint manifest. Streams the file in blocks, so memory stays small.
#pragma once
#include <string>

namespace parallm {

// Throws naming the file when it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace parallm
