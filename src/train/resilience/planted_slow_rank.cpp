#include "train/resilience/planted_slow_rank.h"

#include <cmath>
#include <cstdlib>

#include "base/error.h"

namespace parallm {

PlantedSlowRank parse_planted_slow_rank(const std::string& spec, int world_size) {
  if (spec.empty()) return {};
  const size_t colon = spec.find(':');
  const auto bad = [&](const char* why) {
    PX_FAIL("plant_slow_rank: '{}' is not RANK:FRACTION ({})", spec, why);
  };
  if (colon == std::string::npos) bad("no ':'");
  const std::string rank_text = spec.substr(0, colon), frac_text = spec.substr(colon + 1);
  // strtol/strtod with an end check: stoi would take "2x" as 2.
  char* end = nullptr;
  const long rank = std::strtol(rank_text.c_str(), &end, 10);
  if (rank_text.empty() || *end != '\0') bad("RANK is not an integer");
  const double fraction = std::strtod(frac_text.c_str(), &end);
  if (frac_text.empty() || *end != '\0') bad("FRACTION is not a number");
  if (!(std::isfinite(fraction) && fraction > 0)) bad("FRACTION must be above 0");
  PX_CHECK(rank >= 0 && rank < world_size,
           "plant_slow_rank: rank {} in '{}' is not a rank of this job (0 to {})", rank, spec,
           world_size - 1);
  return {static_cast<int>(rank), fraction};
}

double planted_slowdown(const std::string& spec, int rank, int world_size) {
  const PlantedSlowRank p = parse_planted_slow_rank(spec, world_size);
  return p.rank == rank ? p.fraction : 0.0;
}

}  // namespace parallm
