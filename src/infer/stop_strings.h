// StopStrings: where generated text must end because it contains a stop
// string, and how much of it is safe to show while streaming (text that
// could still grow into a stop string is held back). Works on decoded text,
// so any tokenizer can drive it through the generator's decode callback.
#pragma once
#include <string>
#include <vector>

namespace parallm {

class StopStrings {
 public:
  StopStrings() = default;
  explicit StopStrings(std::vector<std::string> stops);  // empty strings are rejected
  bool empty() const { return stops_.empty(); }
  struct Scan {
    bool stopped = false;  // text contains a stop string
    size_t end = 0;        // stopped: where the first one starts; else the safe prefix length
  };
  Scan scan(const std::string& text) const;

 private:
  std::vector<std::string> stops_;
};

}  // namespace parallm
