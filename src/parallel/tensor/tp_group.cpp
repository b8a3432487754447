#include "parallel/tensor/tp_group.h"

#include "base/error.h"

namespace parallm {

int64_t tp_local_rows(const TpGroup& g, int64_t N) {
  if (!g.sp()) return N;
  PX_CHECK(N % g.size() == 0,
           "sequence parallel: the micro-batch's tokens ({}) are not divisible by tp ({})", N,
           g.size());
  return N / g.size();
}

TpTraffic tp_traffic(const comm::CommCounters& c) {
  comm::OpTally sp = c.of(comm::OpKind::AllGather);
  sp += c.of(comm::OpKind::ReduceScatter);
  return {.tp = c.total() - sp, .sp = sp};
}

}  // namespace parallm
