// The checkpoint directory: DIR/step-NNNNNNN/ per saved step, a `latest`
// file naming the newest complete one, and temporary step directories
// (step-NNNNNNN.tmp) while a save is in progress. A step directory is
// complete once it exists under its final name: it is renamed there only
// after its manifest is written, and `latest` is replaced atomically after.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parallm {

constexpr const char* kLatestName = "latest";

std::string step_dir_name(int64_t step);  // "step-0000010"
// The step directory a load should read: `path` itself when it holds a
// manifest (or is named step-*), else the one `latest` names, else (no
// pointer yet) the newest step directory. nullopt when `path` holds no
// checkpoint at all.
std::optional<std::string> resolve_checkpoint(const std::string& path);
// Replaces DIR/latest atomically with the name of a step directory.
void write_latest(const std::string& dir, const std::string& step_name);
// Complete step directories (final names) in ascending step order.
std::vector<std::string> list_step_dirs(const std::string& dir);
// Removes all but the newest `keep` complete step directories (keep <= 0:
// none removed). Never removes the one `latest` names.
void prune_checkpoints(const std::string& dir, int keep);
// Bytes of the regular files in a directory (for log lines).
int64_t directory_bytes(const std::string& dir);

}  // namespace parallm
