#include "plan/ep_load.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"

namespace parallm {

namespace {

void check_entry(int ep, double load, const std::string& where) {
  PX_CHECK(ep >= 2, "{}: ep size {} must be at least 2 (ep 1 has no imbalance)", where, ep);
  PX_CHECK(std::isfinite(load) && load >= 1.0,
           "{}: ep {} load {} must be a finite number >= 1 (the busiest rank over the mean)", where,
           ep, load);
}

}  // namespace

std::map<int, double> parse_ep_load(const std::vector<std::string>& items) {
  std::map<int, double> out;
  for (const std::string& item : items) {
    const auto eq = item.find('=');
    PX_CHECK(eq != std::string::npos, "--moe-ep-load '{}': expected ep=load (e.g. 2=1.3)", item);
    int ep = 0;
    double load = 0.0;
    try {
      size_t a = 0, b = 0;
      ep = std::stoi(item.substr(0, eq), &a);
      load = std::stod(item.substr(eq + 1), &b);
      PX_CHECK(a == eq && b == item.size() - eq - 1, "");
    } catch (const std::exception&) {
      PX_FAIL("--moe-ep-load '{}': expected an integer ep and a number (e.g. 2=1.3)", item);
    }
    check_entry(ep, load, "--moe-ep-load '" + item + "'");
    out[ep] = load;
  }
  return out;
}

std::map<int, double> read_ep_load(const std::string& metrics_path, int warmup) {
  std::ifstream in(metrics_path);
  PX_CHECK(in.good(), "--moe-load-from '{}': cannot open the file", metrics_path);
  std::map<int, std::vector<double>> seen;
  std::string line;
  int record = 0;
  for (int no = 1; std::getline(in, line); ++no) {
    if (line.empty()) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const std::exception& e) {
      PX_FAIL("--moe-load-from '{}' line {}: not JSON ({})", metrics_path, no, e.what());
    }
    if (record++ < warmup || !j.contains("moe") || !j["moe"].contains("ep_max_load")) continue;
    for (const auto& [key, value] : j["moe"]["ep_max_load"].items()) {
      const std::string where = fmt::format("--moe-load-from '{}' line {}", metrics_path, no);
      PX_CHECK(value.is_number(), "{}: ep_max_load[{}] is not a number", where, key);
      int ep = 0;
      try {
        ep = std::stoi(key);
      } catch (const std::exception&) {
        PX_FAIL("{}: ep_max_load key '{}' is not an ep size", where, key);
      }
      check_entry(ep, value.get<double>(), where);
      seen[ep].push_back(value.get<double>());
    }
  }
  PX_CHECK(!seen.empty(),
           "--moe-load-from '{}': no record after the first {} has moe.ep_max_load (a training "
           "run of an MoE model writes it with --metrics)",
           metrics_path, warmup);
  std::map<int, double> out;
  for (auto& [ep, v] : seen) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    out[ep] = n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  }
  return out;
}

}  // namespace parallm
