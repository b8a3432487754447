// Megatron-LM indexed datasets: PREFIX.bin holds the tokens of every sequence
// back to back (no header); PREFIX.idx holds the 9-byte magic "MMIDIDX\0\0",
// version (uint64 1), dtype code (uint8: 1 uint8, 2 int8, 3 int16, 4 int32,
// 5 int64, 6 float64, 7 float32, 8 uint16), sequence count S (uint64),
// document-index count D (uint64), then S int32 lengths, S int64 byte
// pointers into .bin and D int64 document indices (0, then each document's
// end sequence index; D = documents + 1). Invariant: an opened dataset has
// passed every check, so each sequence lies inside the mapped .bin.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace parallm {

enum class MegatronDType : uint8_t {
  U8 = 1,
  I8 = 2,
  I16 = 3,
  I32 = 4,
  I64 = 5,
  F64 = 6,
  F32 = 7,
  U16 = 8,
};

inline constexpr char kMegatronIndexMagic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', '\0', '\0'};
inline constexpr uint64_t kMegatronIndexVersion = 1;
inline constexpr int64_t kMegatronIndexHeaderBytes = 9 + 8 + 1 + 8 + 8;  // 34

int64_t megatron_dtype_bytes(MegatronDType t);
const char* megatron_dtype_name(MegatronDType t);
// The dtype parallm writes for a vocabulary: uint16 when every id fits, else int32.
MegatronDType megatron_dtype_for_vocab(int64_t vocab_size);

// Writes PREFIX.bin and PREFIX.idx (each atomically; .bin first). Sequence i
// is tokens [offsets[i], offsets[i+1]); every sequence is one document, as
// Megatron's preprocess_data.py writes without --split-sentences. Only the
// integer dtypes are written; a token that does not fit the dtype throws.
void write_megatron_dataset(const std::string& prefix, std::span<const int32_t> tokens,
                            std::span<const int64_t> offsets, MegatronDType dtype);

class MegatronDataset {
 public:
  // Opens PREFIX.idx and PREFIX.bin; every failure is an Error naming the file
  // and the field (magic, version, dtype, size, length, pointer, document index).
  explicit MegatronDataset(const std::string& prefix);
  ~MegatronDataset();
  MegatronDataset(MegatronDataset&& other) noexcept;
  MegatronDataset& operator=(MegatronDataset&& other) noexcept;
  MegatronDataset(const MegatronDataset&) = delete;
  MegatronDataset& operator=(const MegatronDataset&) = delete;

  const std::string& prefix() const { return prefix_; }
  MegatronDType dtype() const { return dtype_; }
  int64_t num_sequences() const { return static_cast<int64_t>(lengths_.size()); }
  int64_t num_documents() const { return static_cast<int64_t>(doc_index_.size()) - 1; }
  std::span<const int32_t> sequence_lengths() const { return lengths_; }
  std::span<const int64_t> sequence_pointers() const { return pointers_; }
  std::span<const int64_t> document_indices() const { return doc_index_; }

  // Tokens of every sequence, concatenated in sequence order.
  int64_t num_tokens() const { return starts_.back(); }
  int64_t at(int64_t i) const;  // stream token i, unchecked
  // out[0..n) = stream tokens [begin, begin+n), narrowed to int32. Checked range.
  void read(int64_t begin, int64_t n, int32_t* out) const;
  std::vector<int32_t> sequence(int64_t i) const;  // checked
  int64_t max_token() const;                       // -1 when empty
  // Index of the first stream token < 0 or >= limit, or -1 when there is none.
  int64_t find_token_outside(int64_t limit) const;

 private:
  void release();
  int64_t token_at_byte(int64_t byte) const;  // .bin offset -> value

  std::string prefix_;
  MegatronDType dtype_ = MegatronDType::U16;
  std::vector<int32_t> lengths_;
  std::vector<int64_t> pointers_;
  std::vector<int64_t> doc_index_;
  std::vector<int64_t> starts_;  // starts_[i] = stream offset of sequence i; back() = total
  void* map_ = nullptr;          // the .bin
  size_t map_bytes_ = 0;
};

}  // namespace parallm
