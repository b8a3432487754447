// manifest.json of a checkpoint (see manifest.h).
#include "io/checkpoint/manifest.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "base/atomic_file.h"
#include "base/error.h"
#include "io/checkpoint/file_digest.h"

namespace fs = std::filesystem;

namespace parallm {

ManifestEntry manifest_entry(const std::string& dir, const std::string& file) {
  const fs::path p = fs::path(dir) / file;
  return {file, static_cast<int64_t>(fs::file_size(p)), sha256_file(p.string())};
}

void write_manifest(const std::string& dir, const Manifest& m) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& e : m.files)
    files.push_back({{"file", e.file}, {"bytes", e.bytes}, {"sha256", e.sha256}});
  nlohmann::json j = {
      {"format", "parallm-checkpoint"}, {"version", 1}, {"step", m.step}, {"files", files}};
  write_file_atomically((fs::path(dir) / kManifestName).string(),
                        [&](std::ostream& out) { out << j.dump(2) << "\n"; });
}

Manifest read_manifest(const std::string& dir) {
  const fs::path p = fs::path(dir) / kManifestName;
  PX_CHECK(fs::exists(p), "checkpoint '{}' is incomplete: {} is missing", dir, p.string());
  Manifest m;
  try {
    nlohmann::json j = nlohmann::json::parse(std::ifstream(p));
    PX_CHECK(j.value("format", "") == "parallm-checkpoint", "{}: not a parallm manifest",
             p.string());
    m.step = j.at("step").get<int64_t>();
    for (const auto& f : j.at("files"))
      m.files.push_back({f.at("file").get<std::string>(), f.at("bytes").get<int64_t>(),
                         f.at("sha256").get<std::string>()});
  } catch (const nlohmann::json::exception& e) {
    PX_FAIL("{}: malformed manifest: {}", p.string(), e.what());
  }
  return m;
}

std::string check_file_size(const std::string& dir, const ManifestEntry& e) {
  const fs::path p = fs::path(dir) / e.file;
  std::error_code ec;
  const auto size = fs::file_size(p, ec);
  if (ec) return fmt::format("checkpoint file {} is missing", p.string());
  if (static_cast<int64_t>(size) != e.bytes)
    return fmt::format("checkpoint file {} has {} bytes, the manifest records {} (truncated?)",
                       p.string(), size, e.bytes);
  return "";
}

std::string verify_file(const std::string& dir, const ManifestEntry& e) {
  std::string why = check_file_size(dir, e);
  if (!why.empty()) return why;
  const fs::path p = fs::path(dir) / e.file;
  const std::string got = sha256_file(p.string());
  if (got != e.sha256)
    return fmt::format("checkpoint file {} fails its checksum (SHA-256 {}, manifest {})",
                       p.string(), got, e.sha256);
  return "";
}

}  // namespace parallm
