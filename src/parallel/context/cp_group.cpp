#include "parallel/context/cp_group.h"

#include <fmt/core.h>

#include "base/error.h"

namespace parallm {

std::string_view cp_comm_name(CpComm m) {
  switch (m) {
    case CpComm::Ring:
      return "ring";
    case CpComm::AllToAll:
      return "a2a";
    case CpComm::Hybrid:
      return "a2a+ring";
  }
  return "?";
}

CpComm cp_comm_from_name(std::string_view s) {
  if (s == "ring") return CpComm::Ring;
  if (s == "a2a") return CpComm::AllToAll;
  if (s == "a2a+ring") return CpComm::Hybrid;
  PX_FAIL("unknown --cp-comm '{}' (known: ring, a2a, a2a+ring)", s);
}

int ulysses_degree_for(CpComm mode, int cp, int requested_u) {
  PX_CHECK(cp >= 1, "context parallel size must be positive, got {}", cp);
  if (mode == CpComm::Ring) return 1;
  if (mode == CpComm::AllToAll) return cp;
  PX_CHECK(requested_u > 1 && requested_u < cp && cp % requested_u == 0,
           "--cp-comm a2a+ring needs --ulysses-degree U with 1 < U < cp and U dividing cp; "
           "got U {} with cp {}",
           requested_u, cp);
  return requested_u;
}

CpSubgroups make_cp_subgroups(CpGroup& g) {
  CpSubgroups s;
  if (!g.active()) return s;
  const int u = g.ulysses_degree, r = g.rank();
  PX_CHECK(u >= 1 && g.size() % u == 0, "Ulysses degree {} does not divide cp {}", u, g.size());
  if (u == 1) {  // ring: the cp group is the ring
    g.ring = g.comm;
    return s;
  }
  if (u == g.size()) {  // Ulysses: the cp group is the all-to-all group
    g.ulysses = g.comm;
    return s;
  }
  // Hybrid: every cp rank calls both splits (collective over cp).
  s.ulysses = g.comm->split(r / u, r % u, fmt::format("cp_a2a[{}]", r / u));
  s.ring = g.comm->split(r % u, r / u, fmt::format("cp_ring[{}]", r % u));
  g.ulysses = s.ulysses.get();
  g.ring = s.ring.get();
  return s;
}

void check_ulysses_heads(int64_t heads, int64_t kv_heads, int u) {
  PX_CHECK(heads % u == 0,
           "Ulysses context parallel: attention heads per rank ({}) are not divisible by the "
           "all-to-all degree ({}; cp for --cp-comm a2a, --ulysses-degree for a2a+ring)",
           heads, u);
  PX_CHECK(kv_heads % u == 0,
           "Ulysses context parallel: key/value heads per rank ({}) are not divisible by the "
           "all-to-all degree ({}; cp for --cp-comm a2a, --ulysses-degree for a2a+ring)",
           kv_heads, u);
}

}  // namespace parallm
