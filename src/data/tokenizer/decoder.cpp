// Decoders, each following the Hugging Face step of the same name token by
// token (Metaspace looks at the token's index; ByteLevel and Fuse return one
// string, so whatever follows them sees a single token).
#include "data/tokenizer/decoder.h"

#include "data/tokenizer/byte_level.h"
#include "data/tokenizer/regex.h"
#include "data/tokenizer/utf8.h"

namespace parallm {

namespace {

class ByteLevelDecoder : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens, bool raw_bytes) const override {
    std::string bytes;
    for (const std::string& t : tokens) {
      // A token outside the table (an added token like "<|im_start|>" is
      // inside it; "é" in a special token is not) stands for its own bytes.
      if (!byte_level_decode(t, bytes)) bytes += t;
    }
    tokens.assign(1, raw_bytes ? std::move(bytes) : utf8_lossy(bytes));
  }
};

class ReplaceDecoder : public Decoder {
 public:
  ReplaceDecoder(const std::string& pattern, std::string content, const std::string& where)
      : regex_(pattern, where), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens, bool) const override {
    for (std::string& t : tokens) {
      std::string out;
      size_t pos = 0;
      for (const Span& m : regex_.find_all(t)) {
        out.append(t, pos, m.begin - pos);
        out += content_;
        pos = m.end;
      }
      out.append(t, pos);
      t = std::move(out);
    }
  }

 private:
  Regex regex_;
  std::string content_;
};

int parse_byte_token(const std::string& t) {
  if (t.size() != 6 || !t.starts_with("<0x") || t[5] != '>') return -1;
  int v = 0;
  for (int i = 3; i < 5; ++i) {
    const char c = t[static_cast<size_t>(i)];
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

class ByteFallbackDecoder : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens, bool raw_bytes) const override {
    std::vector<std::string> out;
    std::string run;  // bytes of consecutive <0xNN> tokens
    size_t run_tokens = 0;
    auto flush = [&] {
      if (run_tokens == 0) return;
      if (raw_bytes || utf8_valid(run)) {
        out.push_back(run);
      } else {
        // An invalid run becomes one U+FFFD per byte token.
        for (size_t i = 0; i < run_tokens; ++i) out.emplace_back(kReplacementChar);
      }
      run.clear();
      run_tokens = 0;
    };
    for (std::string& t : tokens) {
      const int b = parse_byte_token(t);
      if (b >= 0) {
        run.push_back(static_cast<char>(b));
        ++run_tokens;
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens = std::move(out);
  }
};

class FuseDecoder : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens, bool) const override {
    std::string all;
    for (const std::string& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

class StripDecoder : public Decoder {
 public:
  StripDecoder(std::string content, size_t start, size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens, bool) const override {
    for (std::string& t : tokens) {
      size_t b = 0;
      for (size_t i = 0; i < start_ && t.compare(b, content_.size(), content_) == 0; ++i) {
        b += content_.size();
      }
      size_t e = t.size();
      for (size_t i = 0; i < stop_ && e >= b + content_.size() &&
                         t.compare(e - content_.size(), content_.size(), content_) == 0;
           ++i) {
        e -= content_.size();
      }
      t = t.substr(b, e - b);
    }
  }

 private:
  std::string content_;
  size_t start_;
  size_t stop_;
};

class MetaspaceDecoder : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool drop_in_first)
      : replacement_(std::move(replacement)), drop_in_first_(drop_in_first) {}
  void decode_chain(std::vector<std::string>& tokens, bool) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      // Hugging Face drops every replacement character of the first token
      // (not only a leading one) unless the scheme is "never".
      const std::string with = (i == 0 && drop_in_first_) ? "" : " ";
      std::string out;
      size_t pos = 0;
      const std::string& t = tokens[i];
      for (size_t f; (f = t.find(replacement_, pos)) != std::string::npos;) {
        out.append(t, pos, f - pos);
        out += with;
        pos = f + replacement_.size();
      }
      out.append(t, pos);
      tokens[i] = std::move(out);
    }
  }

 private:
  std::string replacement_;
  bool drop_in_first_;
};

class SequenceDecoder : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps)
      : steps_(std::move(steps)) {}
  void decode_chain(std::vector<std::string>& tokens, bool raw_bytes) const override {
    for (const auto& s : steps_) s->decode_chain(tokens, raw_bytes);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

size_t json_count(const Json& j, const char* key, const std::string& where) {
  const int64_t v = json_int(j, key, where);
  PX_CHECK(v >= 0, "{}.{}: must be >= 0, got {}", where, key, v);
  return static_cast<size_t>(v);
}

}  // namespace

std::unique_ptr<Decoder> make_decoder(const Json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  const std::string type = json_type(j, where);
  if (type == "Sequence") {
    const Json& list = json_field(j, "decoders", where);
    PX_CHECK(list.is_array(), "{}.decoders: expected an array", where);
    std::vector<std::unique_ptr<Decoder>> steps;
    for (size_t i = 0; i < list.size(); ++i) {
      auto s = make_decoder(list[i], fmt::format("{}.decoders[{}]", where, i));
      if (s) steps.push_back(std::move(s));
    }
    return std::make_unique<SequenceDecoder>(std::move(steps));
  }
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Replace") {
    return std::make_unique<ReplaceDecoder>(json_pattern(j, where),
                                            json_string(j, "content", where), where);
  }
  if (type == "Strip") {
    return std::make_unique<StripDecoder>(json_string(j, "content", where),
                                          json_count(j, "start", where),
                                          json_count(j, "stop", where));
  }
  if (type == "Metaspace") {
    auto it = j.find("prepend_scheme");
    bool drop = json_bool(j, "add_prefix_space", where, true);
    if (it != j.end() && it->is_string()) drop = *it != "never";
    return std::make_unique<MetaspaceDecoder>(json_string(j, "replacement", where), drop);
  }
  PX_FAIL(
      "{}.type: unsupported decoder type '{}' (supported: ByteLevel, ByteFallback, Fuse, "
      "Replace, Strip, Metaspace, Sequence)",
      where, type);
}

}  // namespace parallm
