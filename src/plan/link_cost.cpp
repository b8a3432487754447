#include "plan/link_cost.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace parallm {

LinkBand LinkCost::band_for(double bytes) const {
  if (bands.empty()) return {.max_bytes = bytes, .alpha_s = alpha_s, .bytes_per_s = bytes_per_s};
  for (const LinkBand& b : bands)
    if (bytes <= b.max_bytes) return b;
  return bands.back();
}

double LinkCost::message_s(double bytes) const {
  const LinkBand b = band_for(bytes);
  return b.alpha_s + bytes / b.bytes_per_s;
}

double LinkCost::ring_all_reduce_s(double bytes, int n) const {
  if (n <= 1) return 0.0;
  return 2.0 * (n - 1) * message_s(bytes / n);
}

double LinkCost::tree_all_reduce_s(double bytes, int n) const {
  if (n <= 1) return 0.0;
  const LinkBand b = band_for(bytes);
  const double depth = std::ceil(std::log2(static_cast<double>(n)));
  return 2.0 * (depth * b.alpha_s + bytes / b.bytes_per_s);
}

double LinkCost::all_reduce_s(double bytes, int n) const {
  return std::min(ring_all_reduce_s(bytes, n), tree_all_reduce_s(bytes, n));
}

LinkCost link_cost_from_json(const nlohmann::json& j, const std::string& what,
                             const std::string& src) {
  auto pair = [&](const nlohmann::json& o, const std::string& name, double& alpha, double& bw) {
    PX_CHECK(o.is_object() && o.contains("alpha_s") && o["alpha_s"].is_number() &&
                 o.contains("bytes_per_s") && o["bytes_per_s"].is_number(),
             "{}: '{}' must be {{\"alpha_s\": .., \"bytes_per_s\": ..}}", src, name);
    alpha = o["alpha_s"].get<double>();
    bw = o["bytes_per_s"].get<double>();
    PX_CHECK(alpha >= 0 && bw > 0, "{}: '{}' needs alpha_s >= 0 and bytes_per_s > 0 (got {}, {})",
             src, name, alpha, bw);
  };
  LinkCost l;
  pair(j, what, l.alpha_s, l.bytes_per_s);
  if (!j.contains("bands")) return l;
  PX_CHECK(j["bands"].is_array(), "{}: '{}.bands' must be an array", src, what);
  for (const auto& b : j["bands"]) {
    const std::string name = what + ".bands[" + std::to_string(l.bands.size()) + "]";
    LinkBand band;
    pair(b, name, band.alpha_s, band.bytes_per_s);
    PX_CHECK(b.contains("max_bytes") && b["max_bytes"].is_number(), "{}: '{}' needs 'max_bytes'",
             src, name);
    band.max_bytes = b["max_bytes"].get<double>();
    PX_CHECK(l.bands.empty() ? band.max_bytes > 0 : band.max_bytes > l.bands.back().max_bytes,
             "{}: '{}.max_bytes' ({}) must be positive and above the band before it", src, name,
             band.max_bytes);
    l.bands.push_back(band);
  }
  return l;
}

nlohmann::json link_cost_to_json(const LinkCost& l) {
  nlohmann::json j = {{"alpha_s", l.alpha_s}, {"bytes_per_s", l.bytes_per_s}};
  if (!l.bands.empty()) {
    j["bands"] = nlohmann::json::array();
    for (const LinkBand& b : l.bands)
      j["bands"].push_back(
          {{"max_bytes", b.max_bytes}, {"alpha_s", b.alpha_s}, {"bytes_per_s", b.bytes_per_s}});
  }
  return j;
}

}  // namespace parallm
