// load_run_config: a TOML run file onto the configuration tree, generated
// from the run schema (run_schema.h): each table's keys are the settings
// declared for it, read by kind, checked, and applied in declaration order.
// Unknown tables and keys are errors naming them; every path is relative to
// the file.
#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>

#include "base/error.h"
#include "data/data_blend.h"
#include "train/config/run_schema.h"

namespace parallm {
namespace {

using Path = std::filesystem::path;

std::string resolved(const std::string& p, const Path& base) {
  if (p.empty() || !Path(p).is_relative()) return p;
  return (base / p).lexically_normal().string();
}

// One table of one file: reads a setting's value by its kind.
class TableReader {
 public:
  TableReader(const toml::table& t, std::string file, std::string table)
      : t_(t), file_(std::move(file)), table_(std::move(table)) {}

  SettingValue read(const Setting& s) const {
    const toml::node& n = *t_.get(s.key);
    const char* key = s.key.c_str();
    switch (s.kind) {
      case SettingKind::Bool:
        return need(n.value<bool>(), key, "must be true or false");
      case SettingKind::Int:
        return need(n.value<int64_t>(), key, "must be an integer");
      case SettingKind::Float:
        return need(n.value<double>(), key, "must be a number");
      case SettingKind::Text:
        if (s.int_or_list && !n.is_string()) return int_or_list(n, key);
        return need(n.value<std::string>(), key, "must be a string");
      case SettingKind::TextList:
        return strings(n, key);
    }
    return {};
  }

 private:
  template <class T>
  T need(std::optional<T> v, const char* key, const char* what) const {
    PX_CHECK(v.has_value(), "{}: [{}] {} {}", file_, table_, key, what);
    return *v;
  }
  // A single string is a list of one.
  std::vector<std::string> strings(const toml::node& n, const char* key) const {
    if (auto s = n.value<std::string>()) return {*s};
    const toml::array* a = n.as_array();
    PX_CHECK(a != nullptr, "{}: [{}] {} must be a string or a list of strings", file_, table_, key);
    std::vector<std::string> out;
    for (const auto& e : *a)
      out.push_back(need(e.value<std::string>(), key, "must hold only strings"));
    return out;
  }
  // An integer or a list of integers, as the file gives them.
  SettingValue int_or_list(const toml::node& n, const char* key) const {
    const toml::array* a = n.as_array();
    if (a == nullptr) return need(n.value<int64_t>(), key, "must be an integer, a list or a string");
    std::vector<int64_t> out;
    for (const auto& e : *a) out.push_back(need(e.value<int64_t>(), key, "must hold only integers"));
    return out;
  }

  const toml::table& t_;
  std::string file_, table_;
};

// Paths a file gives are relative to its folder; a blend's weights stay.
void resolve_paths(const Setting& s, SettingValue& v, const Path& base) {
  if (s.paths == PathRule::One) {
    auto& p = std::get<std::string>(v);
    p = resolved(p, base);
  } else if (s.paths == PathRule::DataList) {
    auto& files = std::get<std::vector<std::string>>(v);
    const bool blend = is_data_blend(files);
    for (size_t i = 0; i < files.size(); ++i)
      if (!blend || i % 2 == 1) files[i] = resolved(files[i], base);
  }
}

void read_table(const RunSchema& schema, const RunTable& table, const toml::table& t,
                const std::string& file, const Path& base, RunConfig& rc) {
  const TableReader reader(t, file, table.name);
  GivenKeys given;
  for (const Setting& s : schema.settings) {
    if (s.table != table.name || s.key.empty() || t.get(s.key) == nullptr) continue;
    SettingValue v = reader.read(s);
    resolve_paths(s, v, base);
    s.assign(rc, v, fmt::format("{}: [{}] {}", file, table.name, s.key));
    given.emplace(s.key, std::move(v));
  }
  for (const auto& [k, v] : t)
    PX_CHECK(given.count(std::string(k.str())) > 0, "{}: unknown key '{}' in [{}]", file, k.str(),
             table.name);
  if (table.after_file) table.after_file(rc, given);
}

}  // namespace

RunConfig load_run_config(const std::string& path, const RunConfig& base, const RunSchema& schema) {
  PX_CHECK(std::filesystem::exists(path), "config file '{}' does not exist", path);
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    PX_FAIL("{}:{}:{}: malformed TOML: {}", path, e.source().begin.line, e.source().begin.column,
            e.description());
  }
  for (const auto& [k, v] : root)
    PX_CHECK(schema.has_table(std::string(k.str())), "{}: unknown table '{}' (expected {}{})",
             path, k.str(), schema.table_list(),
             k.str() == "train" ? "; [train] was split into those tables, see README.md" : "");
  RunConfig rc = base;
  for (const RunTable& table : schema.tables) {
    const toml::table* t = root[table.name].as_table();
    // A table the file lacks changes nothing (without [model] the base's
    // model stays whole, its derived sizes not recomputed).
    if (t != nullptr) read_table(schema, table, *t, path, Path(path).parent_path(), rc);
  }
  return rc;
}

RunConfig load_run_config(const std::string& path, const RunConfig& base) {
  return load_run_config(path, base, run_schema());
}

}  // namespace parallm
