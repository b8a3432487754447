// RunFlags: each flagged setting becomes a CLI11 option whose parsed value
// is kept until apply() writes it through the setting.
#include "train/config/run_flags.h"

#include <memory>

#include "base/error.h"

namespace parallm {
namespace {

// The help line: the setting's, plus its run-file key where the flag's name
// does not say it.
std::string help_line(const Setting& s) {
  const std::string first = s.flag_names().front();
  std::string as_key = first.substr(first.find_first_not_of('-'));
  for (char& c : as_key)
    if (c == '-') c = '_';
  if (s.key.empty() || as_key == s.key) return s.help;
  return s.help + " [" + s.table + "] " + s.key;
}

// An option holding a T; `to_value` turns it into the setting's value.
template <class T>
std::pair<CLI::Option*, std::function<SettingValue()>> valued(CLI::App* sub, const Setting& s) {
  auto held = std::make_shared<T>();
  CLI::Option* o = sub->add_option(s.flags, *held, help_line(s));
  return {o, [held] { return SettingValue(*held); }};
}

}  // namespace

RunFlags::RunFlags(CLI::App* sub, const RunSchema& schema) : sub_(sub) {
  for (const Setting& s : schema.settings) {
    if (s.flags.empty()) continue;
    CLI::Option* o = nullptr;
    std::function<SettingValue()> value;
    if (s.switch_to) {
      const std::string help = help_line(s);  // a const lvalue: CLI11 reads a mutable one as the result
      o = sub->add_flag(s.flags, help);
      value = [to = *s.switch_to] { return SettingValue(to); };
    } else {
      switch (s.kind) {
        case SettingKind::Bool: std::tie(o, value) = valued<bool>(sub, s); break;
        case SettingKind::Int: std::tie(o, value) = valued<int64_t>(sub, s); break;
        case SettingKind::Float: std::tie(o, value) = valued<double>(sub, s); break;
        case SettingKind::Text: std::tie(o, value) = valued<std::string>(sub, s); break;
        case SettingKind::TextList:
          std::tie(o, value) = valued<std::vector<std::string>>(sub, s);
          break;
      }
    }
    o->group(s.hidden ? "" : "[" + s.table + "]");
    const std::string name = o->get_name();
    bound_.push_back({o, [&s, value, name](RunConfig& rc) { s.assign(rc, value(), name); }});
  }
}

void RunFlags::apply(RunConfig& rc) const {
  for (const Bound& b : bound_)
    if (b.option->count() > 0) b.apply(rc);
}

bool RunFlags::given(const std::string& name) const {
  const CLI::Option* o = sub_->get_option_no_throw(name);
  PX_CHECK(o != nullptr, "no flag {}", name);
  return o->count() > 0;
}

}  // namespace parallm
