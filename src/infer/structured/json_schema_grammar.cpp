// json_schema_grammar (see json_schema_grammar.h). Each schema that names a
// place (a property, the items, a $ref target) becomes its own rule, named
// after its path, so the grammar stays linear in the schema's size and an
// error names the path.
#include "infer/structured/json_schema_grammar.h"

#include <fmt/core.h>

#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "base/error.h"
#include "infer/structured/json_schema_scalars.h"

namespace parallm::structured {

namespace {

using Json = nlohmann::ordered_json;

const std::set<std::string>& ignored_keywords() {
  static const std::set<std::string> k = {
      "title",      "description", "default",   "examples", "$schema",     "$id",    "$comment",
      "deprecated", "readOnly",    "writeOnly", "$defs",    "definitions", "strict", "name"};
  return k;
}

std::string rule_name(const std::string& path) {
  std::string out;
  for (char c : path) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    out += ok ? c : '-';
  }
  return out;
}

class SchemaCompiler {
 public:
  explicit SchemaCompiler(const Json& root) : root_(root) {}

  Grammar build() {
    g_.add("root", value(root_, "#"));
    return std::move(g_);
  }

  Grammar build_object() {
    g_.add("root", g_ref(common("json-object")));
    return std::move(g_);
  }

 private:
  [[noreturn]] static void fail(const std::string& path, const std::string& what) {
    PX_FAIL("JSON schema at {}: {}", path, what);
  }

  // A rule of the general JSON grammar, added the first time it is used.
  std::string common(const std::string& name) {
    if (common_.count(name)) return name;
    common_.insert(name);
    const GrammarExpr sp = g_opt(g_lit(" "));
    if (name == "json-char") {
      g_.add(name,
             g_alt({g_class({{'"', '"'}, {'\\', '\\'}, {0, 0x1F}}, true),
                    g_seq({g_lit("\\"),
                           g_alt({g_class({{'"', '"'},
                                           {'\\', '\\'},
                                           {'/', '/'},
                                           {'b', 'b'},
                                           {'f', 'f'},
                                           {'n', 'n'},
                                           {'r', 'r'},
                                           {'t', 't'}}),
                                  g_seq({g_lit("u"),
                                         g_repeat(g_class({{'0', '9'}, {'a', 'f'}, {'A', 'F'}}), 4,
                                                  4)})})})}));
    } else if (name == "json-string") {
      g_.add(name, g_seq({g_lit("\""), g_star(g_ref(common("json-char"))), g_lit("\"")}));
    } else if (name == "json-int") {
      g_.add(name, g_seq({g_opt(g_lit("-")),
                          g_alt({g_lit("0"), g_seq({g_class({{'1', '9'}}),
                                                    g_repeat(g_class({{'0', '9'}}), 0, 15)})})}));
    } else if (name == "json-number") {
      g_.add(name, g_seq({g_ref(common("json-int")),
                          g_opt(g_seq({g_lit("."), g_repeat(g_class({{'0', '9'}}), 1, 16)})),
                          g_opt(g_seq({g_class({{'e', 'e'}, {'E', 'E'}}),
                                       g_opt(g_class({{'-', '-'}, {'+', '+'}})),
                                       g_repeat(g_class({{'0', '9'}}), 1, 3)}))}));
    } else if (name == "json-value") {
      g_.add(name, g_alt({g_ref(common("json-object")), g_ref(common("json-array")),
                          g_ref(common("json-string")), g_ref(common("json-number")), g_lit("true"),
                          g_lit("false"), g_lit("null")}));
    } else if (name == "json-object") {
      const GrammarExpr member =
          g_seq({g_ref(common("json-string")), g_lit(":"), sp, g_ref(common("json-value"))});
      g_.add(name,
             g_seq({g_lit("{"), g_opt(g_seq({member, g_star(g_seq({g_lit(","), sp, member}))})),
                    g_lit("}")}));
    } else if (name == "json-array") {
      const GrammarExpr item = g_ref(common("json-value"));
      g_.add(name, g_seq({g_lit("["), g_opt(g_seq({item, g_star(g_seq({g_lit(","), sp, item}))})),
                          g_lit("]")}));
    } else {
      PX_FAIL("no common JSON rule '{}'", name);
    }
    return name;
  }

  // A subschema in a rule of its own, named after its path.
  GrammarExpr placed(const Json& s, const std::string& path) {
    std::string name = rule_name(path);
    while (g_.has(name) || common_.count(name)) name += "-";
    GrammarExpr body = value(s, path);
    g_.add(name, std::move(body));
    return g_ref(name);
  }

  int64_t bound(const Json& s, const char* key, const std::string& path, int64_t fallback) {
    if (!s.contains(key)) return fallback;
    const Json& v = s[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > kMaxSchemaLength)
      fail(path, fmt::format("'{}' must be an integer in [0, {}], got {}", key, kMaxSchemaLength,
                             v.dump()));
    return v.get<int64_t>();
  }

  GrammarExpr ref(const std::string& target, const std::string& path) {
    if (auto it = refs_.find(target); it != refs_.end()) return g_ref(it->second);
    if (target.empty() || target[0] != '#')
      fail(path, "only local $ref ('#...') is supported, got '" + target + "'");
    const Json* at = &root_;
    if (target.size() > 1) {
      Json::json_pointer ptr;
      try {
        ptr = Json::json_pointer(target.substr(1));
      } catch (const std::exception&) {
        fail(path, "$ref '" + target + "' is not a JSON pointer");
      }
      if (!root_.contains(ptr)) fail(path, "$ref '" + target + "' points at nothing");
      at = &root_.at(ptr);
    }
    std::string name = "ref" + rule_name(target.substr(1));
    while (g_.has(name) || common_.count(name)) name += "-";
    refs_.emplace(target, name);  // before the body: a recursive $ref finds it
    GrammarExpr body = value(*at, target);
    g_.add(name, std::move(body));
    return g_ref(name);
  }

  GrammarExpr value(const Json& s, const std::string& path) {
    if (s.is_boolean()) {
      if (!s.get<bool>()) fail(path, "the schema false matches nothing");
      return g_ref(common("json-value"));
    }
    if (!s.is_object()) fail(path, "a schema must be an object or a boolean, got " + s.dump());
    if (++depth_ > 64) fail(path, "schemas nested more than 64 deep");
    GrammarExpr e = value_of_object(s, path);
    --depth_;
    return e;
  }

  GrammarExpr value_of_object(const Json& s, const std::string& path) {
    static const std::set<std::string> known = {"type",
                                                "enum",
                                                "const",
                                                "anyOf",
                                                "oneOf",
                                                "allOf",
                                                "$ref",
                                                "properties",
                                                "required",
                                                "additionalProperties",
                                                "items",
                                                "minItems",
                                                "maxItems",
                                                "minLength",
                                                "maxLength",
                                                "pattern",
                                                "format",
                                                "minimum",
                                                "maximum",
                                                "exclusiveMinimum",
                                                "exclusiveMaximum"};
    for (const auto& [k, v] : s.items())
      if (!known.count(k) && !ignored_keywords().count(k))
        fail(path, "the keyword '" + k + "' is not supported");
    if (s.contains("$ref")) {
      if (!s["$ref"].is_string()) fail(path, "$ref must be a string");
      return ref(s["$ref"].get<std::string>(), path);
    }
    if (s.contains("const")) return g_lit(s["const"].dump());
    if (s.contains("enum")) {
      const Json& e = s["enum"];
      if (!e.is_array() || e.empty()) fail(path, "'enum' must be a non-empty array");
      std::vector<GrammarExpr> alts;
      for (const Json& v : e) alts.push_back(g_lit(v.dump()));
      return g_alt(std::move(alts));
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!s.contains(key)) continue;
      const Json& list = s[key];
      if (!list.is_array() || list.empty())
        fail(path, fmt::format("'{}' must be a non-empty array", key));
      std::vector<GrammarExpr> alts;
      for (size_t i = 0; i < list.size(); ++i)
        alts.push_back(placed(list[i], fmt::format("{}/{}/{}", path, key, i)));
      return g_alt(std::move(alts));
    }
    if (s.contains("allOf")) {
      const Json& list = s["allOf"];
      if (!list.is_array() || list.size() != 1)
        fail(path, "'allOf' is supported with one schema only");
      return value(list[0], path + "/allOf/0");
    }
    std::vector<std::string> types;
    if (s.contains("type")) {
      const Json& t = s["type"];
      if (t.is_string()) {
        types.push_back(t.get<std::string>());
      } else if (t.is_array() && !t.empty()) {
        for (const Json& x : t) {
          if (!x.is_string()) fail(path, "'type' must be a string or an array of strings");
          types.push_back(x.get<std::string>());
        }
      } else {
        fail(path, "'type' must be a string or an array of strings");
      }
    } else if (s.contains("properties") || s.contains("additionalProperties")) {
      types.push_back("object");
    } else if (s.contains("items") || s.contains("minItems") || s.contains("maxItems")) {
      types.push_back("array");
    } else if (s.contains("minLength") || s.contains("maxLength") || s.contains("pattern") ||
               s.contains("format")) {
      types.push_back("string");
    } else {
      return g_ref(common("json-value"));
    }
    std::vector<GrammarExpr> alts;
    for (const std::string& t : types) alts.push_back(typed(s, t, path));
    return g_alt(std::move(alts));
  }

  GrammarExpr typed(const Json& s, const std::string& type, const std::string& path) {
    if (type == "string" && (s.contains("pattern") || s.contains("format"))) return text(s, path);
    if (type == "string") {
      const int64_t lo = bound(s, "minLength", path, 0);
      const int64_t hi = bound(s, "maxLength", path, kUnbounded);
      if (hi != kUnbounded && hi < lo)
        fail(path, fmt::format("maxLength {} is below minLength {}", hi, lo));
      return g_seq(
          {g_lit("\""),
           g_repeat(g_ref(common("json-char")), static_cast<int>(lo), static_cast<int>(hi)),
           g_lit("\"")});
    }
    const bool bounded = s.contains("minimum") || s.contains("maximum") ||
                         s.contains("exclusiveMinimum") || s.contains("exclusiveMaximum");
    if (type == "integer") return bounded ? integer_range(s, path) : g_ref(common("json-int"));
    if (type == "number") {
      if (bounded) fail(path, "minimum and maximum are supported on integers, not on numbers");
      return g_ref(common("json-number"));
    }
    if (type == "boolean") return g_alt({g_lit("true"), g_lit("false")});
    if (type == "null") return g_lit("null");
    if (type == "array") return array(s, path);
    if (type == "object") return object(s, path);
    fail(path, "unknown type '" + type + "'");
  }

  // A string held to its pattern or format.
  GrammarExpr text(const Json& s, const std::string& path) {
    if (s.contains("minLength") || s.contains("maxLength"))
      fail(path, "'pattern' or 'format' together with minLength/maxLength is not supported");
    if (s.contains("pattern") && s.contains("format"))
      fail(path, "'pattern' together with 'format' is not supported");
    const char* key = s.contains("pattern") ? "pattern" : "format";
    if (!s[key].is_string()) fail(path, fmt::format("'{}' must be a string", key));
    try {
      return s.contains("pattern") ? json_string_pattern(s[key].get<std::string>())
                                   : json_string_format(s[key].get<std::string>());
    } catch (const Error& e) {
      fail(path, e.what());
    }
  }

  // minimum, maximum and their exclusive forms, as one integer range.
  GrammarExpr integer_range(const Json& s, const std::string& path) {
    std::optional<int64_t> lo, hi;
    auto number = [&](const char* key) {
      if (!s[key].is_number()) fail(path, fmt::format("'{}' must be a number", key));
      const double v = s[key].get<double>();
      if (!(std::abs(v) < 1e15)) fail(path, fmt::format("'{}' must be below 1e15 in size", key));
      return v;
    };
    auto tighten_lo = [&](int64_t v) { lo = lo ? std::max(*lo, v) : v; };
    auto tighten_hi = [&](int64_t v) { hi = hi ? std::min(*hi, v) : v; };
    if (s.contains("minimum")) tighten_lo(static_cast<int64_t>(std::ceil(number("minimum"))));
    if (s.contains("exclusiveMinimum"))
      tighten_lo(static_cast<int64_t>(std::floor(number("exclusiveMinimum"))) + 1);
    if (s.contains("maximum")) tighten_hi(static_cast<int64_t>(std::floor(number("maximum"))));
    if (s.contains("exclusiveMaximum"))
      tighten_hi(static_cast<int64_t>(std::ceil(number("exclusiveMaximum"))) - 1);
    try {
      return json_integer_range(lo, hi);
    } catch (const Error& e) {
      fail(path, e.what());
    }
  }

  GrammarExpr array(const Json& s, const std::string& path) {
    const GrammarExpr item =
        s.contains("items") ? placed(s["items"], path + "/items") : g_ref(common("json-value"));
    const int64_t lo = bound(s, "minItems", path, 0);
    const int64_t hi = bound(s, "maxItems", path, kUnbounded);
    if (hi != kUnbounded && hi < lo)
      fail(path, fmt::format("maxItems {} is below minItems {}", hi, lo));
    if (hi == 0) return g_lit("[]");
    const GrammarExpr more = g_seq({g_lit(","), g_opt(g_lit(" ")), item});
    const int rest_lo = static_cast<int>(std::max<int64_t>(lo - 1, 0));
    const int rest_hi = hi == kUnbounded ? kUnbounded : static_cast<int>(hi - 1);
    GrammarExpr items = g_seq({item, g_repeat(more, rest_lo, rest_hi)});
    return g_seq({g_lit("["), lo == 0 ? g_opt(std::move(items)) : std::move(items), g_lit("]")});
  }

  GrammarExpr object(const Json& s, const std::string& path) {
    const Json* props = s.contains("properties") ? &s["properties"] : nullptr;
    if (props && !props->is_object()) fail(path, "'properties' must be an object");
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) fail(path, "'required' must be an array of names");
      for (const Json& r : s["required"]) {
        if (!r.is_string()) fail(path, "'required' must be an array of names");
        if (!props || !props->contains(r.get<std::string>()))
          fail(path, "the required property '" + r.get<std::string>() + "' is not in 'properties'");
        required.insert(r.get<std::string>());
      }
    }
    const Json* extra = s.contains("additionalProperties") ? &s["additionalProperties"] : nullptr;
    const bool extra_allowed = extra && !(extra->is_boolean() && !extra->get<bool>());
    if (!props || props->empty()) {
      // A map: any keys, each value of the additionalProperties schema.
      if (!extra) return g_ref(common("json-object"));
      if (!extra_allowed) return g_lit("{}");
      const GrammarExpr v = placed(*extra, path + "/additionalProperties");
      const GrammarExpr member =
          g_seq({g_ref(common("json-string")), g_lit(":"), g_opt(g_lit(" ")), v});
      return g_seq({g_lit("{"),
                    g_opt(g_seq({member, g_star(g_seq({g_lit(","), g_opt(g_lit(" ")), member}))})),
                    g_lit("}")});
    }
    if (extra_allowed)
      fail(path, "'additionalProperties' other than false is supported only without 'properties'");
    // rest[i][first]: properties i.. in order, each optional one maybe left
    // out; `first`: nothing written yet, so no comma before the next one.
    std::vector<std::string> names;
    std::vector<GrammarExpr> members;
    for (const auto& [k, v] : props->items()) {
      names.push_back(k);
      members.push_back(g_seq({g_lit(Json(k).dump()), g_lit(":"), g_opt(g_lit(" ")),
                               placed(v, path + "/properties/" + k)}));
    }
    const size_t n = names.size();
    GrammarExpr after = g_empty(), first = g_empty();  // rest[i + 1][false], rest[i + 1][true]
    const std::string base = rule_name(path) + "-rest";
    for (size_t i = n; i-- > 0;) {
      const bool req = required.count(names[i]) > 0;
      GrammarExpr with_comma = g_seq({g_lit(","), g_opt(g_lit(" ")), members[i], after});
      GrammarExpr as_first = g_seq({members[i], after});
      GrammarExpr next_after = req ? std::move(with_comma) : g_alt({with_comma, after});
      GrammarExpr next_first = req ? std::move(as_first) : g_alt({as_first, first});
      // Named, so the alternatives of the next property refer, not copy.
      std::string an = fmt::format("{}{}c", base, i), fn = fmt::format("{}{}f", base, i);
      while (g_.has(an) || g_.has(fn)) {
        an += "-";
        fn += "-";
      }
      g_.add(an, std::move(next_after));
      g_.add(fn, std::move(next_first));
      after = g_ref(an);
      first = g_ref(fn);
    }
    return g_seq({g_lit("{"), first, g_lit("}")});
  }

  const Json& root_;
  Grammar g_;
  std::set<std::string> common_;
  std::map<std::string, std::string> refs_;
  int depth_ = 0;
};

}  // namespace

Grammar json_schema_grammar(const nlohmann::ordered_json& schema) {
  return SchemaCompiler(schema).build();
}

Grammar json_object_grammar() {
  const nlohmann::ordered_json none;
  return SchemaCompiler(none).build_object();
}

}  // namespace parallm::structured
