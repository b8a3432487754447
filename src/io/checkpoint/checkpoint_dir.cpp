// Step directories, the `latest` pointer and pruning (see checkpoint_dir.h).
#include "io/checkpoint/checkpoint_dir.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "base/atomic_file.h"
#include "base/error.h"
#include "io/checkpoint/manifest.h"

namespace fs = std::filesystem;

namespace parallm {
namespace {

std::optional<int64_t> step_of(const std::string& name) {
  if (name.rfind("step-", 0) != 0 || name.size() <= 5) return std::nullopt;
  const std::string digits = name.substr(5);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stoll(digits);
}

}  // namespace

std::string step_dir_name(int64_t step) { return fmt::format("step-{:07d}", step); }

std::optional<std::string> resolve_checkpoint(const std::string& path) {
  const fs::path p(path);
  if (!fs::is_directory(p)) return std::nullopt;
  if (fs::exists(p / kManifestName) || step_of(p.filename().string())) return p.string();
  const fs::path latest = p / kLatestName;
  if (fs::exists(latest)) {
    std::string name;
    std::ifstream(latest) >> name;
    PX_CHECK(step_of(name).has_value(), "{} names '{}', not a step directory", latest.string(),
             name);
    return (p / name).string();
  }
  // No pointer: no save completed here, or one was interrupted between its
  // rename and the pointer update. Step directories only ever appear
  // complete (renamed after their manifest), so the newest one is taken.
  auto steps = list_step_dirs(path);
  if (steps.empty()) return std::nullopt;
  return (p / steps.back()).string();
}

void write_latest(const std::string& dir, const std::string& step_name) {
  write_file_atomically((fs::path(dir) / kLatestName).string(),
                        [&](std::ostream& out) { out << step_name << "\n"; });
}

std::vector<std::string> list_step_dirs(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (auto s = step_of(name); s && e.is_directory()) found.emplace_back(*s, name);
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& [s, n] : found) out.push_back(n);
  return out;
}

int64_t directory_bytes(const std::string& dir) {
  int64_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file()) n += static_cast<int64_t>(e.file_size());
  return n;
}

void prune_checkpoints(const std::string& dir, int keep) {
  if (keep <= 0) return;
  std::string latest;
  std::ifstream(fs::path(dir) / kLatestName) >> latest;
  auto steps = list_step_dirs(dir);
  for (size_t i = 0; i + static_cast<size_t>(keep) < steps.size(); ++i)
    if (steps[i] != latest) fs::remove_all(fs::path(dir) / steps[i]);
}

}  // namespace parallm
