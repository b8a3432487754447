// The cost of one message on a link: alpha (latency) + bytes / bandwidth,
// one pair for all sizes (published profiles) or one pair per band of
// message sizes (`parallm calibrate`): MPI and NCCL switch protocol and
// algorithm with the size (eager vs rendezvous, ring vs tree), so a small
// message's latency and a large one's bandwidth come from different fits.
// Invariant: bands are in ascending max_bytes; a message larger than the
// last band's max_bytes is priced by the last band.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace parallm {

struct LinkBand {
  double max_bytes = 0;  // messages up to this size (per message, not per collective)
  double alpha_s = 0;
  double bytes_per_s = 0;
};

struct LinkCost {
  double alpha_s = 0;      // per message latency
  double bytes_per_s = 0;  // per-device, one direction (the bus bandwidth NCCL reports)
  std::vector<LinkBand> bands;  // empty: alpha_s and bytes_per_s for every size

  // Seconds for one message of `bytes` (the band its size falls in).
  double message_s(double bytes) const;
  // A ring all-reduce of `bytes` over n devices: 2(n-1) messages of bytes / n.
  double ring_all_reduce_s(double bytes, int n) const;
  // A pipelined (double binary) tree all-reduce: the data goes up the tree
  // and back down, 2 ceil(log2 n) latencies and twice the bytes over the
  // link: cheaper than the ring where latency dominates (many devices,
  // small messages).
  double tree_all_reduce_s(double bytes, int n) const;
  // The cheaper of the two, as NCCL's tuner (and Open MPI's decision
  // rules) pick per size.
  double all_reduce_s(double bytes, int n) const;
  // The alpha-beta pair for a message of `bytes` (the one pair without bands).
  LinkBand band_for(double bytes) const;
};

// {"alpha_s": .., "bytes_per_s": .., "bands": [{"max_bytes", "alpha_s",
// "bytes_per_s"}, ..]} ("bands" optional); errors name `what` and `src`.
LinkCost link_cost_from_json(const nlohmann::json& j, const std::string& what,
                             const std::string& src);
nlohmann::json link_cost_to_json(const LinkCost& l);

}  // namespace parallm
