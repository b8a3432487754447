// Normalizers: each is a few lines; Replace goes through Regex so a "String"
// and a "Regex" pattern take the same path.
#include "data/tokenizer/normalizer.h"

#include <vector>

#include "data/tokenizer/regex.h"

namespace parallm {

namespace {

class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps)
      : steps_(std::move(steps)) {}
  std::string normalize(std::string text) const override {
    for (const auto& s : steps_) text = s->normalize(std::move(text));
    return text;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

class PrependNormalizer : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  std::string normalize(std::string text) const override {
    return text.empty() ? text : prefix_ + text;
  }

 private:
  std::string prefix_;
};

class ReplaceNormalizer : public Normalizer {
 public:
  ReplaceNormalizer(const std::string& pattern, std::string content, const std::string& where)
      : regex_(pattern, where), content_(std::move(content)) {}
  std::string normalize(std::string text) const override {
    std::string out;
    size_t pos = 0;
    for (const Span& m : regex_.find_all(text)) {
      out.append(text, pos, m.begin - pos);
      out += content_;
      pos = m.end;
    }
    out.append(text, pos);
    return out;
  }

 private:
  Regex regex_;
  std::string content_;
};

}  // namespace

std::string json_pattern(const Json& obj, std::string_view where) {
  const Json& p = json_field(obj, "pattern", where);
  if (p.is_object() && p.contains("String") && p["String"].is_string()) {
    return escape_regex(p["String"].get<std::string>());
  }
  if (p.is_object() && p.contains("Regex") && p["Regex"].is_string()) {
    return p["Regex"].get<std::string>();
  }
  if (p.is_string()) return escape_regex(p.get<std::string>());
  PX_FAIL("{}.pattern: expected {{\"String\": ...}} or {{\"Regex\": ...}}, got {}", where,
          json_brief(p));
}

std::unique_ptr<Normalizer> make_normalizer(const Json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  const std::string type = json_type(j, where);
  if (type == "Sequence") {
    const Json& list = json_field(j, "normalizers", where);
    PX_CHECK(list.is_array(), "{}.normalizers: expected an array", where);
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (size_t i = 0; i < list.size(); ++i) {
      auto s = make_normalizer(list[i], fmt::format("{}.normalizers[{}]", where, i));
      if (s) steps.push_back(std::move(s));
    }
    return std::make_unique<SequenceNormalizer>(std::move(steps));
  }
  if (type == "Prepend")
    return std::make_unique<PrependNormalizer>(json_string(j, "prepend", where));
  if (type == "Replace") {
    return std::make_unique<ReplaceNormalizer>(json_pattern(j, where),
                                               json_string(j, "content", where), where);
  }
  PX_FAIL("{}.type: unsupported normalizer type '{}' (supported: Sequence, Prepend, Replace)",
          where, type);
}

}  // namespace parallm
