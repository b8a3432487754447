// Atomic file replacement: write everything to a temporary file beside the
// target, flush and fsync it, then rename it over the target.
// Invariant: a reader of `path` sees either the old file or the complete new
// one, never a prefix; on any failure the temporary file is removed and the
// old file (if any) is left untouched.
#pragma once
#include <functional>
#include <ostream>
#include <string>

namespace parallm {

// `fill` writes the whole content to the stream. The stream throws on write
// errors (bad/fail bits), which arrive here as parallm::Error naming `path`;
// an exception from `fill` itself is propagated unchanged after the cleanup.
void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& fill);

// The temporary name used for `path` by this process: "<path>.tmp.<pid>".
std::string atomic_temp_path(const std::string& path);

}  // namespace parallm
