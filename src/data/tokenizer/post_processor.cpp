// TemplateProcessing: each "SpecialToken" piece names an entry of
// "special_tokens", whose "ids" (usually one) are what is inserted.
#include "data/tokenizer/post_processor.h"

namespace parallm {

namespace {

std::vector<int32_t> special_ids(const Json& j, const std::string& name, const std::string& where) {
  const Json& table = json_field(j, "special_tokens", where);
  const std::string w = fmt::format("{}.special_tokens", where);
  PX_CHECK(table.is_object() && table.contains(name),
           "{}: the template names special token '{}', which is not listed", w, name);
  const Json& ids = json_field(table[name], "ids", fmt::format("{}['{}']", w, name));
  PX_CHECK(ids.is_array(), "{}['{}'].ids: expected an array", w, name);
  std::vector<int32_t> out;
  for (const Json& id : ids) {
    PX_CHECK(id.is_number_integer(), "{}['{}'].ids: expected integers, got {}", w, name,
             json_brief(id));
    out.push_back(id.get<int32_t>());
  }
  return out;
}

SpecialTokenTemplate template_processing(const Json& j, const std::string& where) {
  const Json& single = json_field(j, "single", where);
  PX_CHECK(single.is_array(), "{}.single: expected an array, got {}", where, json_brief(single));
  SpecialTokenTemplate t;
  bool seen_a = false;
  for (size_t i = 0; i < single.size(); ++i) {
    const Json& piece = single[i];
    const std::string w = fmt::format("{}.single[{}]", where, i);
    if (piece.is_object() && piece.contains("Sequence")) {
      const std::string id = json_string(piece["Sequence"], "id", w + ".Sequence");
      PX_CHECK(id == "A", "{}: only $A is supported in a single-sequence template, got ${}", w, id);
      seen_a = true;
    } else if (piece.is_object() && piece.contains("SpecialToken")) {
      const std::string name = json_string(piece["SpecialToken"], "id", w + ".SpecialToken");
      auto ids = special_ids(j, name, where);
      auto& dst = seen_a ? t.suffix : t.prefix;
      dst.insert(dst.end(), ids.begin(), ids.end());
    } else {
      PX_FAIL("{}: expected {{\"Sequence\": ...}} or {{\"SpecialToken\": ...}}, got {}", w,
              json_brief(piece));
    }
  }
  PX_CHECK(seen_a, "{}.single: the template has no $A", where);
  return t;
}

}  // namespace

SpecialTokenTemplate make_post_processor(const Json& j, const std::string& where) {
  if (j.is_null()) return {};
  const std::string type = json_type(j, where);
  if (type == "ByteLevel") return {};
  if (type == "TemplateProcessing") return template_processing(j, where);
  if (type == "Sequence") {
    const Json& list = json_field(j, "processors", where);
    PX_CHECK(list.is_array(), "{}.processors: expected an array", where);
    SpecialTokenTemplate t;
    for (size_t i = 0; i < list.size(); ++i) {
      SpecialTokenTemplate inner =
          make_post_processor(list[i], fmt::format("{}.processors[{}]", where, i));
      inner.prefix.insert(inner.prefix.end(), t.prefix.begin(), t.prefix.end());
      t.suffix.insert(t.suffix.end(), inner.suffix.begin(), inner.suffix.end());
      t.prefix = std::move(inner.prefix);
    }
    return t;
  }
  PX_FAIL(
      "{}.type: unsupported post-processor type '{}' (supported: TemplateProcessing, "
      "ByteLevel, Sequence)",
      where, type);
}

}  // namespace parallm
