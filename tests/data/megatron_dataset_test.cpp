// Megatron indexed datasets: write/read round trips for every integer dtype,
// the exact on-disk layout, and a clear error for each kind of bad input
// (magic, version, dtype, truncation, pointers and document indices).
#include "data/megatron_dataset.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "common/test_util.h"
#include "data/token_source.h"

namespace parallm {
namespace {

using testing::error_of;
using testing::TempDir;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

template <typename T>
void poke(std::string& bytes, size_t at, T v) {
  std::memcpy(bytes.data() + at, &v, sizeof(T));
}

// Three documents of 3, 1 and 4 tokens.
const std::vector<int32_t> kTokens = {5, 0, 17, 9, 1, 2, 3, 4};
const std::vector<int64_t> kOffsets = {0, 3, 4, 8};

TEST(MegatronDataset, RoundTripsEveryIntegerDtype) {
  TempDir d;
  for (MegatronDType t : {MegatronDType::U8, MegatronDType::I8, MegatronDType::I16,
                          MegatronDType::U16, MegatronDType::I32, MegatronDType::I64}) {
    const std::string prefix = d.file(std::string("ds_") + megatron_dtype_name(t));
    std::vector<int32_t> toks = kTokens;
    if (t == MegatronDType::I8 || t == MegatronDType::I16 || t == MegatronDType::I32 ||
        t == MegatronDType::I64)
      toks[1] = -3;  // signed dtypes keep negatives
    write_megatron_dataset(prefix, toks, kOffsets, t);
    MegatronDataset ds(prefix);
    EXPECT_EQ(ds.dtype(), t);
    EXPECT_EQ(ds.num_sequences(), 3);
    EXPECT_EQ(ds.num_documents(), 3);
    EXPECT_EQ(ds.num_tokens(), 8);
    EXPECT_EQ(std::vector<int32_t>(ds.sequence_lengths().begin(), ds.sequence_lengths().end()),
              (std::vector<int32_t>{3, 1, 4}));
    const int64_t b = megatron_dtype_bytes(t);
    EXPECT_EQ(std::vector<int64_t>(ds.sequence_pointers().begin(), ds.sequence_pointers().end()),
              (std::vector<int64_t>{0, 3 * b, 4 * b}));
    EXPECT_EQ(std::vector<int64_t>(ds.document_indices().begin(), ds.document_indices().end()),
              (std::vector<int64_t>{0, 1, 2, 3}));
    std::vector<int32_t> all(8);
    ds.read(0, 8, all.data());
    EXPECT_EQ(all, toks) << megatron_dtype_name(t);
    EXPECT_EQ(ds.sequence(2), (std::vector<int32_t>{1, 2, 3, 4}));
    std::vector<int32_t> mid(4);
    ds.read(2, 4, mid.data());  // crosses two sequence boundaries
    EXPECT_EQ(mid, (std::vector<int32_t>(toks.begin() + 2, toks.begin() + 6)));
    EXPECT_EQ(ds.max_token(), 17);
    EXPECT_EQ(ds.find_token_outside(17), toks[1] < 0 ? 1 : 2);  // a negative id is outside too
    EXPECT_EQ(ds.find_token_outside(18), toks[1] < 0 ? 1 : -1);
  }
}

TEST(MegatronDataset, WritesTheDocumentedLayout) {
  TempDir d;
  write_megatron_dataset(d.file("x"), kTokens, kOffsets, MegatronDType::U16);
  const std::string idx = slurp(d.file("x.idx"));
  ASSERT_EQ(idx.size(), 34u + 3 * 4 + 3 * 8 + 4 * 8);
  EXPECT_EQ(idx.substr(0, 9), std::string("MMIDIDX\0\0", 9));
  uint64_t version, seqs, docs;
  std::memcpy(&version, idx.data() + 9, 8);
  std::memcpy(&seqs, idx.data() + 18, 8);
  std::memcpy(&docs, idx.data() + 26, 8);
  EXPECT_EQ(version, 1u);
  EXPECT_EQ(static_cast<uint8_t>(idx[17]), 8);  // uint16
  EXPECT_EQ(seqs, 3u);
  EXPECT_EQ(docs, 4u);
  const std::string bin = slurp(d.file("x.bin"));
  ASSERT_EQ(bin.size(), 16u);
  uint16_t third;
  std::memcpy(&third, bin.data() + 4, 2);
  EXPECT_EQ(third, 17);
}

TEST(MegatronDataset, ReadsSplitSentenceDocumentsAndGaps) {
  // Hand-built: 3 sequences in 2 documents ([0, 2, 3]), the .bin with a gap
  // before the last sequence (pointers need not be contiguous).
  TempDir d;
  std::string bin(2 * 7, '\0');
  const uint16_t vals[7] = {10, 11, 12, 99, 13, 14, 15};
  std::memcpy(bin.data(), vals, sizeof(vals));
  spit(d.file("g.bin"), bin);
  std::string idx(std::string("MMIDIDX\0\0", 9));
  auto add = [&](const void* p, size_t n) { idx.append(static_cast<const char*>(p), n); };
  const uint64_t version = 1, seqs = 3, docs = 3;
  const uint8_t code = 8;
  add(&version, 8);
  add(&code, 1);
  add(&seqs, 8);
  add(&docs, 8);
  const int32_t lens[3] = {2, 1, 3};
  const int64_t ptrs[3] = {0, 4, 8};  // token 3 (99) is skipped
  const int64_t doc_idx[3] = {0, 2, 3};
  add(lens, sizeof(lens));
  add(ptrs, sizeof(ptrs));
  add(doc_idx, sizeof(doc_idx));
  spit(d.file("g.idx"), idx);
  MegatronDataset ds(d.file("g"));
  EXPECT_EQ(ds.num_documents(), 2);
  std::vector<int32_t> all(6);
  ds.read(0, 6, all.data());
  EXPECT_EQ(all, (std::vector<int32_t>{10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(ds.at(3), 13);
}

class MegatronBadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    write_megatron_dataset(d.file("m"), kTokens, kOffsets, MegatronDType::U16);
    idx = slurp(d.file("m.idx"));
  }
  std::string open_error(const std::string& bytes) {
    spit(d.file("m.idx"), bytes);
    return error_of([&] { MegatronDataset ds(d.file("m")); });
  }
  TempDir d;
  std::string idx;
};

TEST_F(MegatronBadInput, Magic) {
  std::string b = idx;
  b[0] = 'X';
  const std::string e = open_error(b);
  EXPECT_NE(e.find("m.idx"), std::string::npos) << e;
  EXPECT_NE(e.find("bad magic"), std::string::npos) << e;
}

TEST_F(MegatronBadInput, Version) {
  std::string b = idx;
  poke<uint64_t>(b, 9, 2);
  const std::string e = open_error(b);
  EXPECT_NE(e.find("version 2"), std::string::npos) << e;
  EXPECT_NE(e.find("m.idx"), std::string::npos) << e;
}

TEST_F(MegatronBadInput, Dtype) {
  std::string b = idx;
  b[17] = 9;
  EXPECT_NE(open_error(b).find("dtype code 9 is unknown"), std::string::npos);
  b[17] = 7;
  const std::string e = open_error(b);
  EXPECT_NE(e.find("dtype float32 (code 7) cannot hold token ids"), std::string::npos) << e;
}

TEST_F(MegatronBadInput, TruncatedIndex) {
  std::string e = open_error(idx.substr(0, 20));
  EXPECT_NE(e.find("shorter than the 34-byte header"), std::string::npos) << e;
  e = open_error(idx.substr(0, idx.size() - 8));
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
  EXPECT_NE(e.find("m.idx"), std::string::npos) << e;
  e = open_error(idx + std::string(5, 'z'));
  EXPECT_NE(e.find("trailing bytes"), std::string::npos) << e;
  std::string huge = idx;
  poke<uint64_t>(huge, 18, uint64_t{1} << 62);  // sequence count beyond the file
  e = open_error(huge);
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
}

TEST_F(MegatronBadInput, TruncatedBin) {
  spit(d.file("m.bin"), slurp(d.file("m.bin")).substr(0, 10));
  const std::string e = open_error(idx);
  EXPECT_NE(e.find("sequence 2"), std::string::npos) << e;
  EXPECT_NE(e.find("out of range"), std::string::npos) << e;
  EXPECT_NE(e.find("m.bin"), std::string::npos) << e;
}

TEST_F(MegatronBadInput, PointerOutOfRange) {
  std::string b = idx;
  poke<int64_t>(b, 34 + 12 + 8, 1000);  // sequence 1's pointer
  std::string e = open_error(b);
  EXPECT_NE(e.find("sequence 1 (pointer 1000 bytes"), std::string::npos) << e;
  poke<int64_t>(b, 34 + 12 + 8, -2);
  e = open_error(b);
  EXPECT_NE(e.find("pointer -2"), std::string::npos) << e;
  b = idx;
  poke<int32_t>(b, 34 + 4, -1);  // sequence 1's length
  e = open_error(b);
  EXPECT_NE(e.find("length -1"), std::string::npos) << e;
}

TEST_F(MegatronBadInput, DocumentIndices) {
  std::string b = idx;
  const size_t docs_at = 34 + 12 + 24;
  poke<int64_t>(b, docs_at, 1);
  EXPECT_NE(open_error(b).find("document indices must start with 0"), std::string::npos);
  b = idx;
  poke<int64_t>(b, docs_at + 16, 0);  // decreasing
  EXPECT_NE(open_error(b).find("document index 2 is 0"), std::string::npos);
  b = idx;
  poke<int64_t>(b, docs_at + 24, 2);  // last != sequence count
  EXPECT_NE(open_error(b).find("the last document index is 2"), std::string::npos);
}

TEST_F(MegatronBadInput, MissingFiles) {
  std::remove(d.file("m.bin").c_str());
  const std::string e = error_of([&] { open_token_source(d.file("m")); });
  EXPECT_NE(e.find("m.bin is missing"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { MegatronDataset ds(d.file("m")); }).find("cannot open"),
            std::string::npos);
}

TEST(MegatronDataset, WriterRefusesTokensOutsideTheDtype) {
  TempDir d;
  const std::vector<int32_t> toks = {1, 300};
  const std::vector<int64_t> offs = {0, 2};
  const std::string e =
      error_of([&] { write_megatron_dataset(d.file("w"), toks, offs, MegatronDType::U8); });
  EXPECT_NE(e.find("token 300 at index 1 does not fit dtype uint8"), std::string::npos) << e;
  EXPECT_NE(error_of([&] {
              write_megatron_dataset(d.file("w"), toks, offs, MegatronDType::F32);
            }).find("not a token type"),
            std::string::npos);
  EXPECT_EQ(megatron_dtype_for_vocab(50257), MegatronDType::U16);
  EXPECT_EQ(megatron_dtype_for_vocab(65536), MegatronDType::U16);
  EXPECT_EQ(megatron_dtype_for_vocab(128256), MegatronDType::I32);
}

TEST(TokenSource, PicksTheReaderByWhatIsOnDisk) {
  TempDir d;
  write_megatron_dataset(d.file("m"), kTokens, kOffsets, MegatronDType::I32);
  EXPECT_TRUE(is_megatron_prefix(d.file("m")));
  auto a = open_token_source(d.file("m"));
  auto b = open_token_source(d.file("m.idx"));
  EXPECT_EQ(a->size(), 8);
  EXPECT_EQ(b->path(), d.file("m"));
  // The .bin itself is not an llm.c shard: the error points at the prefix.
  const std::string e = error_of([&] { open_token_source(d.file("m.bin")); });
  EXPECT_NE(e.find("pass the prefix"), std::string::npos) << e;
}

}  // namespace
}  // namespace parallm
