// Atomic file replacement via temp file + fsync + rename (see atomic_file.h).
// The rename is atomic on POSIX file systems only within one directory, which
// is why the temporary file sits beside the target rather than in /tmp.
#include "base/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "base/error.h"

namespace parallm {
namespace {

std::string errno_text(int err) { return err ? std::strerror(err) : "unknown I/O error"; }

// Flushes the file's data to stable storage. Any fd of the file will do on
// Linux, so a fresh read-only one works after the ofstream has closed.
void fsync_file(const std::string& tmp, const std::string& path) {
  int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
  PX_CHECK(fd >= 0, "{}: cannot reopen temporary file {} to sync it: {}", path, tmp,
           errno_text(errno));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  PX_CHECK(rc == 0, "{}: fsync of {} failed: {}", path, tmp, errno_text(err));
}

// Makes the rename itself durable. Best effort: some file systems refuse
// fsync on directories, and the data is already safe at this point.
void fsync_parent_dir(const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

std::string atomic_temp_path(const std::string& path) {
  return path + ".tmp." + std::to_string(::getpid());
}

void write_file_atomically(const std::string& path,
                           const std::function<void(std::ostream&)>& fill) {
  const std::string tmp = atomic_temp_path(path);
  std::vector<char> buffer(1 << 20);  // large writes; the default 8 KiB buffer costs syscalls
  std::ofstream out;
  out.rdbuf()->pubsetbuf(buffer.data(), static_cast<std::streamsize>(buffer.size()));
  errno = 0;
  out.open(tmp, std::ios::binary | std::ios::trunc);
  PX_CHECK(out.is_open(), "{}: cannot create temporary file {}: {}", path, tmp, errno_text(errno));
  try {
    try {
      out.exceptions(std::ios::badbit | std::ios::failbit);
      errno = 0;
      fill(out);
      out.flush();
      out.close();
    } catch (const std::ios_base::failure&) {
      PX_FAIL("{}: writing temporary file {} failed: {}", path, tmp, errno_text(errno));
    }
    fsync_file(tmp, path);
    PX_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "{}: cannot rename {} over it: {}", path,
             tmp, errno_text(errno));
  } catch (...) {
    if (out.is_open()) {
      out.exceptions(std::ios::goodbit);  // closing a failed stream must not throw again
      out.close();
    }
    std::remove(tmp.c_str());
    throw;
  }
  fsync_parent_dir(path);
}

}  // namespace parallm
