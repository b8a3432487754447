// Validation of grid sizes; messages name the constraint and every value so a
// user can fix the command line without reading code.
#include "grid/grid_sizes.h"

#include <fmt/format.h>

#include "base/error.h"

namespace parallm {

long long GridSizes::world_size() const { return static_cast<long long>(tp) * cp * dp * pp; }

std::vector<std::string> grid_size_violations(const GridSizes& s, int world_size) {
  std::vector<std::string> out;
  const std::pair<const char*, int> dims[] = {
      {"tp", s.tp}, {"cp", s.cp}, {"dp", s.dp}, {"pp", s.pp}, {"ep", s.ep}};
  for (const auto& [name, v] : dims)
    if (v < 1) out.push_back(fmt::format("{} ({}) must be at least 1", name, v));
  if (world_size < 1) out.push_back(fmt::format("world size ({}) must be at least 1", world_size));
  // The products below are meaningless with a non-positive factor.
  if (!out.empty()) return out;
  if (s.world_size() != world_size)
    out.push_back(
        fmt::format("world size ({}) is not equal to tp ({}) x cp ({}) x dp ({}) x pp ({}) = {}",
                    world_size, s.tp, s.cp, s.dp, s.pp, s.world_size()));
  const long long dc = static_cast<long long>(s.dp) * s.cp;
  if (dc % s.ep != 0)
    out.push_back(
        fmt::format("ep ({}) does not divide dp ({}) x cp ({}) = {}", s.ep, s.dp, s.cp, dc));
  return out;
}

void check_grid_sizes(const GridSizes& sizes, int world_size) {
  std::vector<std::string> v = grid_size_violations(sizes, world_size);
  if (!v.empty()) PX_FAIL("{}", fmt::join(v, "; "));
}

int derive_dp(const GridSizes& s, int world_size) {
  PX_CHECK(s.tp >= 1 && s.cp >= 1 && s.pp >= 1,
           "cannot derive dp: tp ({}), cp ({}) and pp ({}) must be at least 1", s.tp, s.cp, s.pp);
  PX_CHECK(world_size >= 1, "world size ({}) must be at least 1", world_size);
  const long long model = static_cast<long long>(s.tp) * s.cp * s.pp;
  PX_CHECK(world_size % model == 0,
           "world size ({}) is not divisible by tp ({}) x cp ({}) x pp ({}) = {}", world_size, s.tp,
           s.cp, s.pp, model);
  return static_cast<int>(world_size / model);
}

}  // namespace parallm
