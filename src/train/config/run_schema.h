// The run's settings, each declared once (run_setting.h), and its tables in
// run-file order. load_run_config (TOML), run_config_json (the run record)
// and add_run_flags (the train command's flags and --help) all read a
// RunSchema; run_schema() is parallm's, and a test may extend a copy.
// Settings apply in declaration order, so a preset comes before the keys
// that refine it.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "train/config/run_setting.h"

namespace parallm {

// The keys a run file gave in one table, with their values.
using GivenKeys = std::map<std::string, SettingValue>;

struct RunTable {
  std::string name;
  // After a run file's keys of this table (only when the file has the
  // table): fills what the keys left to convention, given the keys present.
  std::function<void(RunConfig&, const GivenKeys& given)> after_file;
};

struct RunSchema {
  std::vector<RunTable> tables;
  std::vector<Setting> settings;

  bool has_table(const std::string& name) const;
  std::string table_list() const;  // "[model], [data], ... or [logging]"
};

const RunSchema& run_schema();

// The declarations, one function per group of tables (run_schema_*.cpp).
void declare_model_settings(RunSchema& s);      // [model]: shape, LoRA, MoE
void declare_training_settings(RunSchema& s);   // [data] [training] [optimizer] [lr_schedule]
void declare_system_settings(RunSchema& s);     // [parallelism] ... [logging]
void declare_resilience_settings(RunSchema& s); // [resilience]

// A TOML run file over `base`, read by `schema` (train_config.h's overload
// reads by run_schema()).
RunConfig load_run_config(const std::string& path, const RunConfig& base, const RunSchema& schema);

// The check that a number is > 0 (for Setting::checked).
std::string positive(const SettingValue& v);

}  // namespace parallm
