// The manifest of one checkpoint directory (manifest.json, written last):
// every other file with its size and SHA-256. A step directory without a
// manifest is not a checkpoint. Verification names the first bad file:
// missing, truncated or grown (size), or altered (checksum).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace parallm {

constexpr const char* kManifestName = "manifest.json";

struct ManifestEntry {
  std::string file;  // relative to the checkpoint directory
  int64_t bytes = 0;
  std::string sha256;
};

struct Manifest {
  int64_t step = 0;
  std::vector<ManifestEntry> files;
};

// Hashes `file` inside `dir` and returns its entry.
ManifestEntry manifest_entry(const std::string& dir, const std::string& file);
// Writes dir/manifest.json atomically.
void write_manifest(const std::string& dir, const Manifest& m);
// Reads dir/manifest.json; a missing or malformed manifest is an error naming it.
Manifest read_manifest(const std::string& dir);
// "" when the file exists with the recorded size (no hashing), else why not.
std::string check_file_size(const std::string& dir, const ManifestEntry& e);
// "" when size and checksum match, else a message naming the file.
std::string verify_file(const std::string& dir, const ManifestEntry& e);

}  // namespace parallm
