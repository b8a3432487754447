// Ranks that share cores, as Linux runs them: every runnable rank gets an
// equal share of the cores (round robin), none more than its own threads
// can use. Ranks that meet at every collective (an ep group at each
// dispatch) end a phase together: the light ones finish early at their
// share's speed and the busiest then runs alone, leaving cores idle that
// perfect packing would have filled.
#pragma once
#include <vector>

namespace parallm {

// Seconds until every rank is done: loads[i] is rank i's work in seconds on
// its own `threads` threads, the ranks sharing `cores` cores round robin.
double processor_sharing_s(std::vector<double> loads, int threads, int cores);

}  // namespace parallm
