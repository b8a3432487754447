// One setting of a run, declared once: its run-file table and key, its flags,
// its help line, how it reads and writes the configuration tree, and its
// check. The TOML reader, the JSON run record, the train command's flags and
// their --help are all generated from a list of these (run_schema.h), so a
// new setting is one declaration. Values travel as SettingValue, whose
// alternative is fixed by the setting's kind.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "train/config/train_config.h"

namespace parallm {

enum class SettingKind { Bool, Int, Float, Text, TextList };
// The last alternative only reaches a setting with `int_or_list` from a file.
using SettingValue = std::variant<bool, int64_t, double, std::string, std::vector<std::string>,
                                  std::vector<int64_t>>;

// How a run file's relative paths resolve against the file's folder.
enum class PathRule {
  None,
  One,       // the value is one path
  DataList,  // paths, or a Megatron blend (weights stay as they are)
};

struct Setting {
  std::string table;  // run-file table and run-record object
  std::string key;    // empty: a flag only
  std::string flags;  // CLI11 names, "--seq-len,--seq-length"; empty: the file only
  std::string help;   // one line, for --help
  SettingKind kind = SettingKind::Int;
  std::function<void(RunConfig&, const SettingValue&)> set;
  // Empty, or the current value (nullopt: nothing to record, e.g. an unset optional).
  std::function<std::optional<SettingValue>(const RunConfig&)> get;
  // An error fragment ("must be positive, got 0") for a bad value, or "".
  std::function<std::string(const SettingValue&)> check;
  bool recorded = true;            // kept in a checkpoint's run record
  std::optional<bool> switch_to;   // a flag without a value that sets this
  bool hidden = false;             // kept out of --help
  PathRule paths = PathRule::None;
  bool int_or_list = false;        // a Text the file may also give as an integer or integer list

  // Checks `v` (naming the setting by `where`, e.g. "--lora-rank" or
  // "run.toml: [model] lora_rank") and writes it into `rc`.
  void assign(RunConfig& rc, const SettingValue& v, const std::string& where) const;
  // The flags one by one ("--seq-len", "--seq-length"); none for a file-only setting.
  std::vector<std::string> flag_names() const;

  Setting& as_switch(bool to) { switch_to = to; return *this; }
  Setting& unrecorded() { recorded = false; return *this; }
  Setting& hide() { hidden = true; return *this; }
  Setting& path(PathRule r = PathRule::One) { paths = r; return *this; }
  Setting& checked(std::function<std::string(const SettingValue&)> c) {
    check = std::move(c);
    return *this;
  }
};

namespace setting_detail {
template <class T>
constexpr SettingKind kind_of() {
  if constexpr (std::is_same_v<T, bool>) return SettingKind::Bool;
  else if constexpr (std::is_integral_v<T>) return SettingKind::Int;
  else if constexpr (std::is_floating_point_v<T>) return SettingKind::Float;
  else if constexpr (std::is_same_v<T, std::string>) return SettingKind::Text;
  else return SettingKind::TextList;
}
template <class T>
SettingValue to_value(const T& v) {
  if constexpr (std::is_same_v<T, bool>) return v;
  else if constexpr (std::is_integral_v<T>) return static_cast<int64_t>(v);
  else if constexpr (std::is_floating_point_v<T>) return static_cast<double>(v);
  else return v;
}
template <class T>
T from_value(const SettingValue& v) {
  if constexpr (std::is_same_v<T, bool>) return std::get<bool>(v);
  else if constexpr (std::is_integral_v<T>) return static_cast<T>(std::get<int64_t>(v));
  else if constexpr (std::is_floating_point_v<T>) return static_cast<T>(std::get<double>(v));
  else if constexpr (std::is_same_v<T, std::string>) return std::get<std::string>(v);
  else return std::get<std::vector<std::string>>(v);
}
}  // namespace setting_detail

// A member of the tree, named by an accessor that works on a const tree too:
// [](auto& rc) -> auto& { return rc.train.training.seq_len; } (PX_FIELD).
#define PX_FIELD(path) [](auto& rc) -> auto& { return rc.path; }

// A plain field: the kind follows its type.
template <class Access>
Setting field_setting(std::string table, std::string key, std::string flags, std::string help,
                      Access access) {
  using T = std::remove_cvref_t<decltype(access(std::declval<RunConfig&>()))>;
  Setting s{std::move(table), std::move(key), std::move(flags), std::move(help)};
  s.kind = setting_detail::kind_of<T>();
  s.set = [access](RunConfig& rc, const SettingValue& v) {
    access(rc) = setting_detail::from_value<T>(v);
  };
  s.get = [access](const RunConfig& rc) -> std::optional<SettingValue> {
    return setting_detail::to_value<T>(access(rc));
  };
  return s;
}

// A field set from a name (`parse`) and recorded by it (`name`; null: not recorded).
template <class Access, class Parse, class Name>
Setting named_setting(std::string table, std::string key, std::string flags, std::string help,
                      Access access, Parse parse, Name name) {
  Setting s{std::move(table), std::move(key), std::move(flags), std::move(help)};
  s.kind = SettingKind::Text;
  s.set = [access, parse](RunConfig& rc, const SettingValue& v) {
    access(rc) = parse(std::get<std::string>(v));
  };
  if constexpr (!std::is_null_pointer_v<Name>)
    s.get = [access, name](const RunConfig& rc) -> std::optional<SettingValue> {
      return std::string(name(access(rc)));
    };
  else
    s.recorded = false;
  return s;
}

// A setting whose effect is not one field (a preset, an optional): its own
// kind and setter; not recorded.
inline Setting action_setting(std::string table, std::string key, std::string flags,
                              std::string help, SettingKind kind,
                              std::function<void(RunConfig&, const SettingValue&)> set) {
  Setting s{std::move(table), std::move(key), std::move(flags), std::move(help)};
  s.kind = kind;
  s.set = std::move(set);
  s.recorded = false;
  return s;
}

}  // namespace parallm
