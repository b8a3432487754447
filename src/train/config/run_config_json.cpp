// run_config_json / run_config_from_json: generated from the run schema
// (run_schema.h): one object per table, one key per recorded setting, in
// the schema's order, so the record reads like the run file that made it.
// The model is its Hugging Face config.json, plus under "parallm" the model
// settings that file cannot say.
#include "train/config/run_config_json.h"

#include "base/error.h"
#include "io/hf_config.h"

namespace parallm {
namespace {

using Json = nlohmann::json;

Json value_json(const SettingValue& v) {
  return std::visit([](const auto& x) { return Json(x); }, v);
}

SettingValue json_value(const Setting& s, const Json& j) {
  switch (s.kind) {
    case SettingKind::Bool:
      return j.get<bool>();
    case SettingKind::Int:
      PX_CHECK(j.is_number_integer(), "not an integer");
      return j.get<int64_t>();
    case SettingKind::Float:
      PX_CHECK(j.is_number(), "not a number");
      return j.get<double>();
    case SettingKind::Text:
      return j.get<std::string>();
    case SettingKind::TextList:
      return j.get<std::vector<std::string>>();
  }
  return {};
}

// The recorded settings of one table as an object.
Json table_json(const RunSchema& schema, const std::string& table, const RunConfig& rc) {
  Json out = Json::object();
  for (const Setting& s : schema.settings) {
    if (s.table != table || !s.recorded || s.key.empty() || !s.get) continue;
    if (const auto v = s.get(rc)) out[s.key] = value_json(*v);
  }
  return out;
}

// The keys of one object onto the tree; absent keys keep their value.
void read_table(const RunSchema& schema, const std::string& table, const Json& obj,
                const std::string& source, const std::string& where, RunConfig& rc) {
  PX_CHECK(obj.is_object(), "{}: run record: '{}' must be an object", source, where);
  for (const Setting& s : schema.settings) {
    if (s.table != table || !s.recorded || s.key.empty() || !obj.contains(s.key)) continue;
    SettingValue v;
    try {
      v = json_value(s, obj[s.key]);
    } catch (const std::exception&) {
      PX_FAIL("{}: run record: {}.{} has the wrong type ({})", source, where, s.key,
              obj[s.key].dump());
    }
    s.set(rc, v);
  }
}

}  // namespace

nlohmann::json run_config_json(const RunConfig& rc, const RunSchema& schema) {
  Json out = Json::object();
  for (const RunTable& t : schema.tables) {
    if (t.name != "model") {
      out[t.name] = table_json(schema, t.name, rc);
      continue;
    }
    Json m = hf_config_json(rc.model, "float32");
    m["parallm"] = table_json(schema, t.name, rc);
    out["model"] = std::move(m);
  }
  return out;
}

RunConfig run_config_from_json(const nlohmann::json& j, const std::string& source,
                               const RunSchema& schema) {
  PX_CHECK(j.is_object(), "{}: the run record must be a JSON object", source);
  PX_CHECK(j.contains("model"), "{}: run record without a model", source);
  RunConfig rc;
  rc.model = model_config_from_hf(j["model"], source + " run.model");
  const Json& m = j["model"];
  if (m.contains("parallm")) read_table(schema, "model", m["parallm"], source, "model.parallm", rc);
  // Records before the schema kept dropout as {"attention", "hidden"}.
  if (m.contains("parallm_dropout") && m["parallm_dropout"].is_object()) {
    const Json& d = m["parallm_dropout"];
    rc.model.attn_dropout = d.value("attention", rc.model.attn_dropout);
    rc.model.hidden_dropout = d.value("hidden", rc.model.hidden_dropout);
  }
  for (const RunTable& t : schema.tables)
    if (t.name != "model" && j.contains(t.name)) read_table(schema, t.name, j[t.name], source, t.name, rc);
  return rc;
}

nlohmann::json run_config_json(const RunConfig& rc) { return run_config_json(rc, run_schema()); }

RunConfig run_config_from_json(const nlohmann::json& j, const std::string& source) {
  return run_config_from_json(j, source, run_schema());
}

}  // namespace parallm
