// A slow rank planted on purpose (plant_slow_rank = "RANK:FRACTION", a test
// hook for the straggler monitor, docs/resilience.md): that world rank's
// compute takes FRACTION longer. The Trainer sleeps FRACTION x the rank's
// previous step's compute once a step, after the last backward and before
// the gradient reduction completes, so the rank is slow at compute and the
// other ranks wait for it inside their collectives, as behind a slow device.
#pragma once
#include <string>

namespace parallm {

struct PlantedSlowRank {
  int rank = -1;  // -1: none planted
  double fraction = 0.0;
};

// Parses the setting ("" : none). An error names the value; the rank must be
// one of the world's world_size ranks.
PlantedSlowRank parse_planted_slow_rank(const std::string& spec, int world_size);

// The slowdown `rank` is to run with: FRACTION on the planted rank, else 0.
double planted_slowdown(const std::string& spec, int rank, int world_size);

}  // namespace parallm
