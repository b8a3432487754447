// Run configuration files for tests: a TOML body written to a per-process
// temporary file, and the error message load_run_config gives for it
// ("(no error)" when it loads).
#pragma once
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "base/error.h"
#include "train/config/train_config.h"

namespace parallm::testing {

inline std::string write_toml(const std::string& body) {
  const auto p = std::filesystem::temp_directory_path() /
                 ("parallm_cfg_" + std::to_string(getpid()) + ".toml");
  std::ofstream(p) << body;
  return p.string();
}

inline std::string run_config_error(const std::string& body) {
  try {
    load_run_config(write_toml(body));
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace parallm::testing
