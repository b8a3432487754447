// Helpers shared by the unit tests: a self-removing temporary directory, the
// message of the parallm::Error a callable throws, and the relative distance
// of two float vectors.
#pragma once
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "base/error.h"

namespace parallm::testing {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "parallm_test_XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(file(name), std::ios::binary) << text;
    return file(name);
  }
};

// The what() of the parallm::Error f throws, or "(no error)".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// ||got - ref|| / ||ref||, accumulated in double.
inline double relative_l2(const std::vector<float>& got, const std::vector<float>& ref) {
  double dd = 0, rr = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    dd += (double(got[i]) - ref[i]) * (double(got[i]) - ref[i]);
    rr += double(ref[i]) * ref[i];
  }
  return std::sqrt(dd / rr);
}

}  // namespace parallm::testing
