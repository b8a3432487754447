// structured_output_grammar (see structured_fields.h).
#include "infer/serve/structured_fields.h"

#include <fmt/core.h>

#include <array>

#include "base/error.h"
#include "infer/serve/api_error.h"
#include "infer/structured/gbnf_parser.h"
#include "infer/structured/json_schema_grammar.h"
#include "infer/structured/regex_grammar.h"

namespace parallm::serve {

namespace {

using OJson = nlohmann::ordered_json;
namespace st = parallm::structured;

// What one field asks for, before it is compiled.
struct Constraint {
  enum class Kind { JsonSchema, JsonObject, Regex, Grammar, Choice };
  std::string param;  // the field, as the error names it
  Kind kind;
  OJson value;       // the schema, or the list of choices
  std::string text;  // regex or GBNF
};

// The member `key` of an ordered object, or null.
const OJson* child(const OJson* o, const char* key) {
  return o && o->is_object() && o->contains(key) ? &(*o)[key] : nullptr;
}

// The value in key order when the ordered body has it, else as given.
OJson in_order(const nlohmann::json& v, const OJson* ordered) {
  return ordered ? *ordered : OJson(v);
}

std::string text_field(const RequestFields& f, const nlohmann::json& v, const char* name) {
  if (!v.is_string()) f.fail(name, "expected a string, got " + json_type_name(v));
  if (v.get<std::string>().empty()) f.fail(name, "must not be empty");
  return v.get<std::string>();
}

void response_format(const RequestFields& f, const OJson* ordered, std::vector<Constraint>& out) {
  const nlohmann::json* rf = f.find("response_format");
  if (!rf) return;
  if (!rf->is_object()) f.fail("response_format", "expected an object, got " + json_type_name(*rf));
  const RequestFields r(*rf, "response_format.");
  const std::string type = r.string("type").value_or("");
  if (type == "text") return;
  if (type == "json_object") {
    out.push_back({"response_format", Constraint::Kind::JsonObject, {}, {}});
    return;
  }
  if (type != "json_schema")
    r.fail("type", type.empty()
                       ? "is required ('text', 'json_object' or 'json_schema')"
                       : "must be 'text', 'json_object' or 'json_schema', got '" + type + "'");
  const nlohmann::json* js = r.find("json_schema");
  if (!js) r.fail("json_schema", "is required when type is 'json_schema'");
  if (!js->is_object()) r.fail("json_schema", "expected an object, got " + json_type_name(*js));
  const RequestFields j(*js, "response_format.json_schema.");
  if (!j.string("name")) j.fail("name", "is required");
  j.boolean("strict");  // its type is checked; the grammar is strict either way
  const nlohmann::json* schema = j.find("schema");
  OJson s = schema
                ? in_order(*schema, child(child(child(ordered, "response_format"), "json_schema"),
                                          "schema"))
                : OJson::object();  // no schema: any JSON value
  out.push_back(
      {"response_format.json_schema.schema", Constraint::Kind::JsonSchema, std::move(s), {}});
}

// vLLM's fields in `f` under the names keys = {json, regex, grammar, choice};
// ordered: the same object in key order (or null).
void vllm_fields(const RequestFields& f, const OJson* ordered,
                 const std::array<const char*, 4>& keys, std::vector<Constraint>& out) {
  if (const nlohmann::json* v = f.find(keys[0])) {
    OJson s = in_order(*v, child(ordered, keys[0]));
    if (s.is_string()) {  // vLLM takes the schema as an object or as JSON text
      OJson parsed = OJson::parse(s.get<std::string>(), nullptr, false);
      if (parsed.is_discarded()) f.fail(keys[0], "is a string that is not valid JSON");
      s = std::move(parsed);
    }
    out.push_back({f.path(keys[0]), Constraint::Kind::JsonSchema, std::move(s), {}});
  }
  if (const nlohmann::json* v = f.find(keys[1]))
    out.push_back({f.path(keys[1]), Constraint::Kind::Regex, {}, text_field(f, *v, keys[1])});
  if (const nlohmann::json* v = f.find(keys[2]))
    out.push_back({f.path(keys[2]), Constraint::Kind::Grammar, {}, text_field(f, *v, keys[2])});
  if (const nlohmann::json* v = f.find(keys[3])) {
    if (!v->is_array() || v->empty())
      f.fail(keys[3], "expected a non-empty array of strings, got " + json_type_name(*v));
    for (const auto& c : *v)
      if (!c.is_string() || c.get<std::string>().empty())
        f.fail(keys[3], "expected an array of non-empty strings, holding " + c.dump());
    out.push_back({f.path(keys[3]), Constraint::Kind::Choice, OJson(*v), {}});
  }
}

st::Grammar grammar_of(const Constraint& c) {
  switch (c.kind) {
    case Constraint::Kind::JsonSchema:
      return st::json_schema_grammar(c.value);
    case Constraint::Kind::JsonObject:
      return st::json_object_grammar();
    case Constraint::Kind::Regex:
      return st::regex_grammar(c.text);
    case Constraint::Kind::Grammar:
      return st::parse_gbnf(c.text);
    case Constraint::Kind::Choice:
      break;
  }
  std::vector<st::GrammarExpr> alts;
  for (const auto& s : c.value) alts.push_back(st::g_lit(s.get<std::string>()));
  st::Grammar g;
  g.add("root", st::g_alt(std::move(alts)));
  return g;
}

}  // namespace

std::shared_ptr<const structured::ByteGrammar> structured_output_grammar(
    const RequestFields& f, const nlohmann::ordered_json* ordered) {
  std::vector<Constraint> found;
  response_format(f, ordered, found);
  vllm_fields(f, ordered, {"guided_json", "guided_regex", "guided_grammar", "guided_choice"},
              found);
  if (const nlohmann::json* so = f.find("structured_outputs")) {
    if (!so->is_object())
      f.fail("structured_outputs", "expected an object, got " + json_type_name(*so));
    vllm_fields(RequestFields(*so, "structured_outputs."), child(ordered, "structured_outputs"),
                {"json", "regex", "grammar", "choice"}, found);
  }
  if (found.empty()) return nullptr;
  if (found.size() > 1)
    throw ApiError(400,
                   fmt::format("'{}' and '{}' both constrain the output; give one", found[0].param,
                               found[1].param),
                   found[1].param);
  const Constraint& c = found.front();
  try {
    return st::compile_grammar(grammar_of(c));
  } catch (const Error& e) {
    throw ApiError(400, fmt::format("invalid {}: {}", c.param, e.what()), c.param);
  }
}

}  // namespace parallm::serve
