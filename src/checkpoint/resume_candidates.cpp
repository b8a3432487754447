#include "checkpoint/resume_candidates.h"

#include <algorithm>
#include <utility>

#include "checkpoint/checkpoint_load.h"

namespace parallm {

std::vector<std::string> resume_candidates(const CheckpointConfig& c) {
  if (!c.load_dir.empty()) return {c.load_dir};
  if (!c.resume) return {};
  std::vector<std::pair<int64_t, std::string>> found;
  for (const std::string* dir : {&c.save_dir, &c.snapshot_dir}) {
    if (dir->empty() || !has_checkpoint(*dir)) continue;
    if (const auto p = peek_checkpoint(*dir)) found.emplace_back(p->state.step, p->dir);
  }
  // Newest first; a tie (the same step in both) prefers --save, listed first.
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

}  // namespace parallm
