#include "train/verify/layout_spec.h"

#include <map>
#include <sstream>

#include "base/error.h"

namespace parallm {
namespace {
// Layout words and the train flag each sets (docs/verify.md).
const std::map<std::string, std::string>& valued_words() {
  static const std::map<std::string, std::string> kWords = {{"tp", "--tp"},
                                                            {"pp", "--pp"},
                                                            {"dp", "--dp"},
                                                            {"cp", "--cp"},
                                                            {"ep", "--ep"},
                                                            {"zero", "--zero"},
                                                            {"schedule", "--schedule"},
                                                            {"vp", "--virtual-stages"},
                                                            {"virtual-stages", "--virtual-stages"},
                                                            {"dp-mode", "--dp-mode"},
                                                            {"cp-comm", "--cp-comm"},
                                                            {"ulysses-degree", "--ulysses-degree"},
                                                            {"expert-tp", "--expert-tp"},
                                                            {"recompute", "--recompute"},
                                                            {"bucket-mb", "--bucket-mb"},
                                                            {"pp-layers", "--pp-layers"}};
  return kWords;
}

int positive(const std::string& key, const std::string& value) {
  int v = 0;
  try {
    size_t used = 0;
    v = std::stoi(value, &used);
    PX_CHECK(used == value.size(), "");
  } catch (const std::exception&) {
    PX_FAIL("--layout: {}={} is not an integer", key, value);
  }
  PX_CHECK(v >= 1 || key == "zero", "--layout: {} must be at least 1, got {}", key, v);
  return v;
}
}  // namespace

LayoutSpec parse_layout(const std::string& text) {
  LayoutSpec s;
  s.text = text;
  std::string spaced = text;
  for (char& ch : spaced)
    if (ch == ',') ch = ' ';
  std::istringstream in(spaced);
  std::string word;
  while (in >> word) {
    const size_t eq = word.find('=');
    if (eq == std::string::npos) {
      if (word == "sp" || word == "sequence-parallel") {
        s.flags.push_back("--sequence-parallel");
        s.sp = true;
      } else if (word == "no-overlap") {
        s.flags.push_back("--no-overlap");
      } else {
        PX_FAIL("--layout: unknown word '{}' (switches: sp, no-overlap; or key=value)", word);
      }
      continue;
    }
    const std::string key = word.substr(0, eq), value = word.substr(eq + 1);
    const auto it = valued_words().find(key);
    if (it == valued_words().end()) {
      std::string keys;
      for (const auto& [k, f] : valued_words()) keys += (keys.empty() ? "" : ", ") + k;
      PX_FAIL("--layout: unknown key '{}' (known: {})", key, keys);
    }
    PX_CHECK(!value.empty(), "--layout: {} has no value", key);
    if (key == "tp") s.tp = positive(key, value);
    if (key == "pp") s.pp = positive(key, value);
    if (key == "dp") s.dp = positive(key, value);
    if (key == "cp") s.cp = positive(key, value);
    if (key == "ep") s.ep = positive(key, value);
    if (key == "zero") s.zero = positive(key, value);
    s.flags.push_back(it->second);
    s.flags.push_back(value);
  }
  s.ranks = s.tp * s.pp * s.dp * s.cp;
  PX_CHECK(s.ranks > 1, "--layout '{}' is one process: name at least one size above 1", text);
  return s;
}

}  // namespace parallm
