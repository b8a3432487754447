// parallm's run schema, built once from the declarations of run_schema_*.cpp
// and never changed after (a test extends a copy).
#include "train/config/run_schema.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/error.h"

namespace parallm {

void Setting::assign(RunConfig& rc, const SettingValue& v, const std::string& where) const {
  if (check) {
    const std::string bad = check(v);
    PX_CHECK(bad.empty(), "{} {}", where, bad);
  }
  set(rc, v);
}

std::vector<std::string> Setting::flag_names() const {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < flags.size()) {
    const size_t end = std::min(flags.find(',', start), flags.size());
    out.push_back(flags.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool RunSchema::has_table(const std::string& name) const {
  for (const RunTable& t : tables)
    if (t.name == name) return true;
  return false;
}

std::string RunSchema::table_list() const {
  std::string out;
  for (size_t i = 0; i < tables.size(); ++i)
    out += (i == 0 ? "" : i + 1 == tables.size() ? " or " : ", ") + ("[" + tables[i].name + "]");
  return out;
}

const RunSchema& run_schema() {
  static const RunSchema schema = [] {
    RunSchema s;
    declare_model_settings(s);
    declare_training_settings(s);
    declare_system_settings(s);
    declare_resilience_settings(s);
    return s;
  }();
  return schema;
}

std::string positive(const SettingValue& v) {
  const double x = std::holds_alternative<int64_t>(v) ? static_cast<double>(std::get<int64_t>(v))
                                                      : std::get<double>(v);
  return x > 0 ? "" : fmt::format("must be positive, got {}", x);
}

}  // namespace parallm
