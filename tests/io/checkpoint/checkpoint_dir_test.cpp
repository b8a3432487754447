// Checkpoint directory rules: `latest` resolution, pruning that spares the
// newest, and manifest verification naming a flipped or truncated file.
#include "io/checkpoint/checkpoint_dir.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "io/checkpoint/manifest.h"

namespace fs = std::filesystem;

namespace parallm {
namespace {

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("parallm_ckdir_" + std::to_string(getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

void make_step(const fs::path& root, int64_t step) {
  const fs::path d = root / step_dir_name(step);
  fs::create_directories(d);
  std::ofstream(d / "a.bin") << "payload " << step;
  write_manifest(d.string(), {step, {manifest_entry(d.string(), "a.bin")}});
}

TEST(CheckpointDir, LatestPruneAndVerify) {
  TempDir t;
  EXPECT_FALSE(resolve_checkpoint(t.path.string()).has_value());
  for (int64_t s : {5, 10, 15}) {
    make_step(t.path, s);
    write_latest(t.path.string(), step_dir_name(s));
  }
  fs::create_directories(t.path / "step-0000020.tmp");  // an interrupted save
  EXPECT_EQ(*resolve_checkpoint(t.path.string()), (t.path / "step-0000015").string());
  EXPECT_EQ(list_step_dirs(t.path.string()).size(), 3u);
  fs::remove(t.path / kLatestName);  // a save killed between rename and pointer
  EXPECT_EQ(*resolve_checkpoint(t.path.string()), (t.path / "step-0000015").string());
  write_latest(t.path.string(), step_dir_name(15));
  prune_checkpoints(t.path.string(), 2);
  EXPECT_EQ(list_step_dirs(t.path.string()),
            (std::vector<std::string>{"step-0000010", "step-0000015"}));

  const std::string d = (t.path / "step-0000015").string();
  Manifest m = read_manifest(d);
  ASSERT_EQ(m.files.size(), 1u);
  EXPECT_EQ(verify_file(d, m.files[0]), "");
  std::ofstream(fs::path(d) / "a.bin") << "payload 16";  // same size, other bytes
  EXPECT_NE(verify_file(d, m.files[0]).find("a.bin fails its checksum"), std::string::npos);
  std::ofstream(fs::path(d) / "a.bin") << "pay";
  EXPECT_NE(verify_file(d, m.files[0]).find("has 3 bytes, the manifest records 10"),
            std::string::npos);
  fs::remove(fs::path(d) / kManifestName);
  EXPECT_THROW(read_manifest(d), Error);
}

}  // namespace
}  // namespace parallm
