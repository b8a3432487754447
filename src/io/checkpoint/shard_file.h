// Checkpoint shard files: safetensors files in which every tensor is one
// piece (a TensorSlice) of a named model tensor, of one kind: "param",
// "exp_avg", "exp_avg_sq". The safetensors metadata key "parallm.pieces"
// maps each stored name to {tensor, kind, slice}, so a file explains itself.
// ShardSet indexes the pieces of all files of a checkpoint and fills any
// wanted slice from whichever pieces overlap it, reading (through the
// read-only mapping) only the rows of theirs that overlap.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "io/checkpoint/tensor_slice.h"
#include "io/safetensors_reader.h"

namespace parallm {

struct CheckpointPiece {
  std::string tensor;  // the model's parameter name
  std::string kind;    // "param", "exp_avg", "exp_avg_sq"
  TensorSlice slice;
  const float* data = nullptr;  // slice.numel() values; must outlive the write
};

// Writes the pieces to `path` (atomically) as F32 with their metadata;
// returns the file's size and SHA-256, taken as it was written.
struct WrittenFile {
  int64_t bytes = 0;
  std::string sha256;
};
WrittenFile write_shard_file(const std::string& path, const std::vector<CheckpointPiece>& pieces,
                             int rank);

class ShardSet {
 public:
  // Opens (maps and validates the headers of) every file.
  explicit ShardSet(const std::vector<std::string>& paths);
  // Whether any piece of (kind, tensor) exists.
  bool has(const std::string& kind, const std::string& tensor) const;
  // Fills dst (want.numel() values) from the saved pieces. Every element
  // inside the saved tensor must be covered, else an error names the tensor.
  // The saved global shape must equal want's, except that dim 0 may differ
  // when both are >= rows_padding_from (a vocabulary padded to a multiple of
  // tp): elements beyond the saved rows are left untouched.
  void fill(const std::string& kind, const std::string& tensor, const TensorSlice& want, float* dst,
            int64_t rows_padding_from) const;
  // Global shape recorded for (kind, tensor); empty when absent.
  std::vector<int64_t> global_shape(const std::string& kind, const std::string& tensor) const;
  // Every saved tensor name of a kind (sorted).
  std::vector<std::string> tensors(const std::string& kind) const;

 private:
  struct Ref {
    size_t file;
    const TensorEntry* entry;
    TensorSlice slice;
  };
  std::vector<SafetensorsFile> files_;
  std::map<std::pair<std::string, std::string>, std::vector<Ref>> pieces_;  // (kind, tensor)
};

}  // namespace parallm
