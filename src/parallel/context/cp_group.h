// CpGroup: what the attention layer needs to run context parallel: the cp
// communicator (null or size 1: off), how attention crosses it (--cp-comm:
// ring, a2a = Ulysses, a2a+ring = USP hybrid), and for the hybrid the two
// sub-communicators (make_cp_subgroups): all-to-all inside groups of U
// consecutive cp ranks, ring across the cp / U groups. Passed to the model at
// construction like TpGroup (DESIGN principle 3).
// Invariant: every cp rank builds the same model with the same CpGroup.
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "comm/communicator.h"

namespace parallm {

enum class CpComm { Ring, AllToAll, Hybrid };
// "ring", "a2a", "a2a+ring"; the inverse throws naming the known names.
std::string_view cp_comm_name(CpComm m);
CpComm cp_comm_from_name(std::string_view s);

struct CpGroup {
  comm::Communicator* comm = nullptr;  // all cp ranks
  CpComm mode = CpComm::Ring;
  int ulysses_degree = 1;                 // U: 1 for ring, cp for a2a, 1 < U < cp for hybrid
  comm::Communicator* ulysses = nullptr;  // the U ranks of one all-to-all (U > 1)
  comm::Communicator* ring = nullptr;     // ranks with the same Ulysses rank (cp / U > 1)
  bool load_balance = true;               // Megatron chunk order (cp_chunks.h)

  int size() const { return comm ? comm->size() : 1; }
  int rank() const { return comm ? comm->rank() : 0; }
  bool active() const { return size() > 1; }
  int ring_size() const { return size() / ulysses_degree; }
  int ulysses_rank() const { return rank() % ulysses_degree; }
  int ring_rank() const { return rank() / ulysses_degree; }
};

// The sub-communicators a CpGroup points to; owned by whoever built the group.
struct CpSubgroups {
  std::unique_ptr<comm::Communicator> ulysses, ring;
};

// The Ulysses degree a mode implies: ring 1, a2a cp, hybrid the given U
// (which must divide cp and lie strictly between 1 and cp). Throws naming values.
int ulysses_degree_for(CpComm mode, int cp, int requested_u);

// Collective over cp: fills g.ulysses / g.ring for g.ulysses_degree (ring:
// g.ring = g.comm; a2a: g.ulysses = g.comm; hybrid: two new groups).
CpSubgroups make_cp_subgroups(CpGroup& g);

// Throws naming the values unless this rank's query and key/value heads
// divide by the Ulysses degree (they are split over the all-to-all group).
void check_ulysses_heads(int64_t heads, int64_t kv_heads, int u);

}  // namespace parallm
