// StopStrings::scan (see stop_strings.h).
#include "infer/stop_strings.h"

#include <algorithm>

#include "base/error.h"

namespace parallm {

StopStrings::StopStrings(std::vector<std::string> stops) : stops_(std::move(stops)) {
  for (const std::string& s : stops_) PX_CHECK(!s.empty(), "a stop string may not be empty");
}

StopStrings::Scan StopStrings::scan(const std::string& text) const {
  Scan r;
  size_t first = std::string::npos;
  for (const std::string& s : stops_) first = std::min(first, text.find(s));
  if (first != std::string::npos) return {true, first};
  // Hold back the longest tail of text that is a proper prefix of a stop string.
  size_t hold = 0;
  for (const std::string& s : stops_)
    for (size_t n = std::min(s.size() - 1, text.size()); n > hold; --n)
      if (text.compare(text.size() - n, n, s, 0, n) == 0) {
        hold = n;
        break;
      }
  r.end = text.size() - hold;
  return r;
}

}  // namespace parallm
