// Pre-tokenizers: every one maps a list of pieces to a new list, so Sequence
// is just running them in turn, as Hugging Face's PreTokenizedString does.
#include "data/tokenizer/pre_tokenizer.h"

#include <optional>

#include "data/tokenizer/byte_level.h"
#include "data/tokenizer/regex.h"

namespace parallm {

namespace {

constexpr std::string_view kMetaspace = "\xE2\x96\x81";  // U+2581 '▁'

void split_pieces(const Regex& regex, SplitBehavior behavior, std::vector<PreToken>& pieces) {
  std::vector<PreToken> out;
  out.reserve(pieces.size());
  for (PreToken& p : pieces) {
    for (const Span& s : split_by_matches(p.text.size(), regex.find_all(p.text), behavior)) {
      out.push_back({p.text.substr(s.begin, s.end - s.begin), p.at_text_start && s.begin == 0});
    }
  }
  pieces = std::move(out);
}

class ByteLevelPreTokenizer : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex, const std::string& where)
      : add_prefix_space_(add_prefix_space) {
    if (use_regex) regex_.emplace(kGpt2Pattern, where);
  }
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    if (add_prefix_space_) {
      for (PreToken& p : pieces) {
        if (!p.text.starts_with(' ')) p.text.insert(0, 1, ' ');
      }
    }
    if (regex_) split_pieces(*regex_, SplitBehavior::Isolated, pieces);
    for (PreToken& p : pieces) p.text = byte_level_encode(p.text);
  }

 private:
  bool add_prefix_space_;
  std::optional<Regex> regex_;
};

class SplitPreTokenizer : public PreTokenizer {
 public:
  SplitPreTokenizer(const std::string& pattern, SplitBehavior behavior, const std::string& where)
      : regex_(pattern, where), behavior_(behavior) {}
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    split_pieces(regex_, behavior_, pieces);
  }

 private:
  Regex regex_;
  SplitBehavior behavior_;
};

enum class PrependScheme { First, Always, Never };

class MetaspacePreTokenizer : public PreTokenizer {
 public:
  MetaspacePreTokenizer(std::string replacement, PrependScheme scheme, bool split,
                        const std::string& where)
      : replacement_(std::move(replacement)),
        scheme_(scheme),
        split_(split),
        regex_(escape_regex(replacement_), where) {}
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    for (PreToken& p : pieces) {
      std::string t;
      t.reserve(p.text.size() + replacement_.size());
      for (char c : p.text) {
        if (c == ' ') {
          t += replacement_;
        } else {
          t.push_back(c);
        }
      }
      const bool prepend =
          scheme_ == PrependScheme::Always || (scheme_ == PrependScheme::First && p.at_text_start);
      if (prepend && !t.starts_with(replacement_)) t.insert(0, replacement_);
      p.text = std::move(t);
    }
    if (split_) split_pieces(regex_, SplitBehavior::MergedWithNext, pieces);
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
  Regex regex_;
};

class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps)
      : steps_(std::move(steps)) {}
  void pre_tokenize(std::vector<PreToken>& pieces) const override {
    for (const auto& s : steps_) s->pre_tokenize(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

SplitBehavior parse_behavior(const Json& j, const std::string& where) {
  const std::string b = json_string(j, "behavior", where);
  if (b == "Isolated") return SplitBehavior::Isolated;
  if (b == "Removed") return SplitBehavior::Removed;
  if (b == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::MergedWithNext;
  PX_FAIL(
      "{}.behavior: unsupported split behavior '{}' (supported: Isolated, Removed, "
      "MergedWithPrevious, MergedWithNext)",
      where, b);
}

PrependScheme parse_scheme(const Json& j, const std::string& where) {
  auto it = j.find("prepend_scheme");
  if (it != j.end() && !it->is_null()) {
    const std::string s = it->is_string() ? it->get<std::string>() : json_brief(*it);
    if (s == "first") return PrependScheme::First;
    if (s == "always") return PrependScheme::Always;
    if (s == "never") return PrependScheme::Never;
    PX_FAIL("{}.prepend_scheme: unknown value '{}' (expected first, always or never)", where, s);
  }
  // Files older than prepend_scheme carry add_prefix_space instead.
  return json_bool(j, "add_prefix_space", where, true) ? PrependScheme::Always
                                                       : PrependScheme::Never;
}

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const Json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  const std::string type = json_type(j, where);
  if (type == "Sequence") {
    const Json& list = json_field(j, "pretokenizers", where);
    PX_CHECK(list.is_array(), "{}.pretokenizers: expected an array", where);
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (size_t i = 0; i < list.size(); ++i) {
      auto s = make_pre_tokenizer(list[i], fmt::format("{}.pretokenizers[{}]", where, i));
      if (s) steps.push_back(std::move(s));
    }
    return std::make_unique<SequencePreTokenizer>(std::move(steps));
  }
  if (type == "ByteLevel") {
    return std::make_unique<ByteLevelPreTokenizer>(json_bool(j, "add_prefix_space", where, true),
                                                   json_bool(j, "use_regex", where, true), where);
  }
  if (type == "Split") {
    PX_CHECK(!json_bool(j, "invert", where, false),
             "{}.invert: Split with invert=true is not supported", where);
    return std::make_unique<SplitPreTokenizer>(json_pattern(j, where), parse_behavior(j, where),
                                               where);
  }
  if (type == "Metaspace") {
    const std::string rep = json_string(j, "replacement", where);
    PX_CHECK(!rep.empty(), "{}.replacement: must not be empty", where);
    return std::make_unique<MetaspacePreTokenizer>(rep, parse_scheme(j, where),
                                                   json_bool(j, "split", where, true), where);
  }
  PX_FAIL(
      "{}.type: unsupported pre-tokenizer type '{}' (supported: ByteLevel, Split, "
      "Metaspace, Sequence)",
      where, type);
}

}  // namespace parallm
