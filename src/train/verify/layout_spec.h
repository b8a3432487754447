// The layout `parallm verify --layout "tp=2 pp=2 dp=2 zero=3 sp"` names, as
// the `parallm train` flags that ask for it and the number of ranks it
// needs (tp x pp x dp x cp). Words are key=value (--key value) or a bare
// switch (sp: --sequence-parallel); an unknown word is refused by name.
#pragma once
#include <string>
#include <vector>

namespace parallm {

struct LayoutSpec {
  std::string text;                // as given
  std::vector<std::string> flags;  // e.g. {"--tp", "2", "--sequence-parallel"}
  int ranks = 1;
  int tp = 1, pp = 1, dp = 1, cp = 1, ep = 1;
  int zero = 0;
  bool sp = false;
};

LayoutSpec parse_layout(const std::string& text);

}  // namespace parallm
