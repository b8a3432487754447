// tokenize_files: read every input first (so a bad one aborts before any
// write), encode with the tokenizer, split off the val tail, then write
// the two shards (or Megatron datasets); a failed val write removes the
// train output it follows.
#include "data/tokenize_files.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <sstream>

#include "base/error.h"
#include "data/megatron_dataset.h"
#include "data/token_shard.h"
#include "data/tokenizer/tokenizer.h"

namespace parallm {

namespace {

std::string read_text_file(const std::string& path) {
  std::error_code ec;
  PX_CHECK(!std::filesystem::is_directory(path, ec),
           "cannot read input text file {}: it is a directory", path);
  std::ifstream in(path, std::ios::binary);
  PX_CHECK(in.good(), "cannot read input text file {}: {}", path, std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  // rdbuf on an empty file sets failbit on ss; only a read error on in counts.
  PX_CHECK(!in.bad(), "error while reading input text file {}", path);
  return std::move(ss).str();
}

// Offsets of the sequences of tokens [begin, end) of a stream whose documents
// start at doc_starts (ascending, last = stream size): rebased to begin; a
// document cut by begin or end keeps its part inside.
std::vector<int64_t> offsets_within(const std::vector<int64_t>& doc_starts, int64_t begin,
                                    int64_t end) {
  std::vector<int64_t> out{0};
  for (int64_t b : doc_starts) {
    if (b > begin && b < end) out.push_back(b - begin);
  }
  out.push_back(end - begin);
  return out;
}

void remove_megatron(const std::string& prefix) {
  std::remove((prefix + ".bin").c_str());
  std::remove((prefix + ".idx").c_str());
}

}  // namespace

TokenizeSummary tokenize_files(const std::vector<std::string>& inputs,
                               const std::string& out_prefix, double val_fraction) {
  return tokenize_files(inputs, out_prefix, val_fraction, *make_byte_tokenizer());
}

TokenizeSummary tokenize_files(const std::vector<std::string>& inputs,
                               const std::string& out_prefix, double val_fraction,
                               const Tokenizer& tokenizer, TokenizeFormat out_format) {
  PX_CHECK(!inputs.empty(), "tokenize: no input files given");
  PX_CHECK(val_fraction >= 0.0 && val_fraction < 1.0,
           "tokenize: val_fraction must be in [0, 1) (got {})", val_fraction);
  PX_CHECK(!out_prefix.empty(), "tokenize: output prefix is empty");

  std::vector<std::string> docs;
  docs.reserve(inputs.size());
  TokenizeSummary sum;
  for (const std::string& path : inputs) {
    docs.push_back(read_text_file(path));
    sum.input_bytes += static_cast<int64_t>(docs.back().size());
  }
  sum.documents = static_cast<int64_t>(docs.size());
  const std::optional<int32_t> eos = tokenizer.eos_id();
  const bool megatron = out_format == TokenizeFormat::Megatron;
  PX_CHECK(!megatron || eos.has_value(),
           "tokenize --format megatron: the tokenizer has no end-of-text (EOS) token to end each "
           "document with");
  std::vector<int32_t> tokens;
  std::vector<int64_t> doc_starts;  // Megatron: where each document starts
  bool ended_with_eos = false;      // the previous document's own tokens end in EOS
  for (size_t i = 0; i < docs.size(); ++i) {
    const std::vector<int32_t> ids = tokenizer.encode(docs[i], /*add_special_tokens=*/true);
    docs[i] = {};  // free each text once encoded
    if (megatron) {
      // --append-eod: every document ends in the EOD (unless its template
      // already put one there); an empty document is no sequence at all.
      if (ids.empty()) continue;
      doc_starts.push_back(static_cast<int64_t>(tokens.size()));
      tokens.insert(tokens.end(), ids.begin(), ids.end());
      if (tokens.back() != *eos) tokens.push_back(*eos);
      continue;
    }
    // A template that appends the EOS (add_eos_token) already separates.
    if (i > 0 && eos && !ended_with_eos) tokens.push_back(*eos);
    ended_with_eos = eos && !ids.empty() && ids.back() == *eos;
    tokens.insert(tokens.end(), ids.begin(), ids.end());
  }
  const ShardFormat format = tokenizer.vocab_size() <= 65536 ? ShardFormat::U16 : ShardFormat::U32;
  const int64_t n = static_cast<int64_t>(tokens.size());
  PX_CHECK(n > 0, "tokenize: the input files contain no text");

  int64_t n_val = 0;
  if (val_fraction > 0.0) {
    PX_CHECK(n >= 2, "tokenize: {} token is too few to split into train and val", n);
    n_val = std::clamp<int64_t>(std::llround(val_fraction * static_cast<double>(n)), 1, n - 1);
  }
  const int64_t n_train = n - n_val;
  std::span<const int32_t> all(tokens);

  // Like any output path, the prefix's directory is created when missing
  // (only now, after every input has been read successfully).
  const auto dir = std::filesystem::path(out_prefix).parent_path();
  std::error_code ec;
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  PX_CHECK(!ec, "tokenize: cannot create output directory '{}': {}", dir.string(), ec.message());
  sum.train_tokens = n_train;
  sum.val_tokens = n_val;
  if (megatron) {
    const MegatronDType dtype = megatron_dtype_for_vocab(tokenizer.vocab_size());
    sum.train_path = out_prefix + "_train";
    const std::vector<int64_t> train_offsets = offsets_within(doc_starts, 0, n_train);
    write_megatron_dataset(sum.train_path, all.first(static_cast<size_t>(n_train)), train_offsets,
                           dtype);
    if (n_val > 0) {
      sum.val_path = out_prefix + "_val";
      try {
        write_megatron_dataset(sum.val_path, all.last(static_cast<size_t>(n_val)),
                               offsets_within(doc_starts, n_train, n), dtype);
      } catch (...) {
        remove_megatron(sum.train_path);  // keep "all or nothing" for the pair
        throw;
      }
    }
    return sum;
  }
  sum.train_path = out_prefix + "_train.bin";
  write_token_shard(sum.train_path, all.first(static_cast<size_t>(n_train)), format);
  if (n_val > 0) {
    sum.val_path = out_prefix + "_val.bin";
    try {
      write_token_shard(sum.val_path, all.last(static_cast<size_t>(n_val)), format);
    } catch (...) {
      std::remove(sum.train_path.c_str());  // keep "all or nothing" for the pair
      throw;
    }
  }
  return sum;
}

}  // namespace parallm
