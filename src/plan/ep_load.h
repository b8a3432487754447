// The expert-parallel load imbalance the step-time model takes as input
// (MemoryQuery::ep_max_load, docs/planner.md "Expert load"): for each ep
// size e, the busiest ep rank's expert rows over the mean rank's, averaged
// over dispatches. Routing is the model's and the data's, not the machine's,
// so it is measured by a training run (its JSONL `moe.ep_max_load`, which
// one process records for every e dividing the expert count) or given by
// hand; a value is at least 1 (the busiest rank cannot hold fewer rows than
// the mean).
#pragma once
#include <map>
#include <string>
#include <vector>

namespace parallm {

// "2=1.3" "4=1.5" -> {2: 1.3, 4: 1.5}; a bad item is an error naming it.
std::map<int, double> parse_ep_load(const std::vector<std::string>& items);

// The median over a metrics JSONL file's records of each
// `moe.ep_max_load` entry, skipping the first `warmup` records (the first
// steps' routing is the untrained router's). Errors name the file and line.
std::map<int, double> read_ep_load(const std::string& metrics_path, int warmup);

}  // namespace parallm
