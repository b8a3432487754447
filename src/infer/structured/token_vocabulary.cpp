// TokenVocabulary (see token_vocabulary.h). A token's bytes are read as
// decode(anchor + token) minus decode(anchor): decoders that drop the
// leading space of a text's first piece (SentencePiece's) would otherwise
// lose it, and byte-level BPE gives the same bytes either way.
#include "infer/structured/token_vocabulary.h"

namespace parallm::structured {

TokenVocabulary::TokenVocabulary(std::vector<std::string> bytes, std::vector<int32_t> eos_ids)
    : bytes_(std::move(bytes)), eos_(std::move(eos_ids)), trie_(bytes_) {}

std::shared_ptr<const TokenVocabulary> TokenVocabulary::from_tokenizer(
    const Tokenizer& tok, int64_t vocab_size, std::vector<int32_t> eos_ids) {
  std::vector<std::string> bytes(static_cast<size_t>(vocab_size));
  const std::vector<int32_t> a = tok.encode("a", false);
  const bool anchored = a.size() == 1;
  const std::string anchor = anchored ? tok.decode_bytes(a, false) : std::string();
  const int64_t n = std::min<int64_t>(vocab_size, tok.vocab_size());
  for (int32_t id = 0; id < n; ++id) {
    if (tok.is_special(id)) continue;
    std::string b;
    if (anchored) {
      const int32_t pair[2] = {a.front(), id};
      b = tok.decode_bytes(pair, false);
      b = b.compare(0, anchor.size(), anchor) == 0 ? b.substr(anchor.size())
                                                   : tok.decode_bytes({&id, 1}, false);
    } else {
      b = tok.decode_bytes({&id, 1}, false);
    }
    bytes[static_cast<size_t>(id)] = std::move(b);
  }
  return std::make_shared<const TokenVocabulary>(std::move(bytes), std::move(eos_ids));
}

}  // namespace parallm::structured
