// The GPU benchmarks' command lines: "--name value" pairs, each value handed
// to the setter registered under its name. A flag nobody registered, or one
// missing its value, fails naming the file whose header lists the flags.
#pragma once
#include <functional>
#include <map>
#include <string>

#include "base/error.h"

namespace parallm::bench {

using FlagSetters = std::map<std::string, std::function<void(const std::string&)>>;

inline void parse_flags(int argc, char** argv, const FlagSetters& set, const char* listed_in) {
  for (int i = 1; i < argc; i += 2) {
    const std::string name = argv[i];
    const auto it = set.find(name);
    PX_CHECK(it != set.end(), "unknown flag {} (see the header of {})", name, listed_in);
    PX_CHECK(i + 1 < argc, "flag {} needs a value", name);
    it->second(argv[i + 1]);
  }
}

}  // namespace parallm::bench
