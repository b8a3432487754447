// Formatting of the rank grid. Which lists are shown: a kind whose groups are
// single ranks has nothing to communicate, and a kind whose groups equal an
// earlier one (tp_cp when cp = 1) is named as the same; expert kinds appear
// only when ep > 1, since with ep = 1 expert layers use the dense groups.
#include "grid/grid_report.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/error.h"

namespace parallm {
namespace {

constexpr size_t kLineWidth = 100;
constexpr int kMaxPictureColumns = 16;

int node_of(int rank, int gpus_per_node) { return rank / gpus_per_node; }

std::string node_span(int first_rank, int last_rank, int gpus_per_node) {
  const int a = node_of(first_rank, gpus_per_node), b = node_of(last_rank, gpus_per_node);
  return a == b ? fmt::format("node {}", a) : fmt::format("nodes {}-{}", a, b);
}

// "within a node", "all cross nodes" or "k of n cross nodes".
std::string node_locality(const std::vector<std::vector<int>>& groups, int gpus_per_node) {
  const auto crossing = std::count_if(groups.begin(), groups.end(), [&](const std::vector<int>& g) {
    return !g.empty() && node_of(g.front(), gpus_per_node) != node_of(g.back(), gpus_per_node);
  });
  if (crossing == 0) return "within a node";
  if (crossing == static_cast<long>(groups.size())) return "all cross nodes";
  return fmt::format("{} of {} cross nodes", crossing, groups.size());
}

// "head [a b] [c d] ..." wrapped at kLineWidth, continuation lines indented
// by 4; a group breaks across lines only when it is longer than a line.
void append_wrapped(std::string& out, const std::string& head,
                    const std::vector<std::vector<int>>& groups) {
  const std::string indent = "   ";  // plus the separating space
  std::string line = head;
  auto add = [&](const std::string& token) {
    if (line.size() + 1 + token.size() > kLineWidth && line.size() > indent.size()) {
      out += line + "\n";
      line = indent;
    }
    line += " " + token;
  };
  for (const auto& g : groups) {
    const std::string item = fmt::format("[{}]", fmt::join(g, " "));
    if (indent.size() + 1 + item.size() <= kLineWidth) {
      add(item);
      continue;
    }
    for (size_t k = 0; k < g.size(); ++k)
      add(fmt::format("{}{}{}", k == 0 ? "[" : "", g[k], k + 1 == g.size() ? "]" : ""));
  }
  out += line + "\n";
}

void append_groups(std::string& out, const RankGrid& grid, int gpus_per_node) {
  const GridSizes& s = grid.sizes();
  std::vector<std::pair<GroupKind, std::vector<std::vector<int>>>> shown;
  std::vector<std::string_view> single;
  for (GroupKind kind : kAllGroupKinds) {
    if (is_expert_group(kind) && s.ep == 1) continue;
    if (kind == GroupKind::Embedding && s.pp == 1) continue;
    const std::string_view name = group_kind_name(kind);
    if (grid.group_size(kind) == 1) {
      single.push_back(name);
      continue;
    }
    auto groups = grid.groups(kind);
    auto same =
        std::find_if(shown.begin(), shown.end(), [&](const auto& p) { return p.second == groups; });
    if (same != shown.end()) {
      out += fmt::format("{} groups: same as {}\n", name, group_kind_name(same->first));
      continue;
    }
    const std::string where = node_locality(groups, gpus_per_node);
    const std::string head =
        kind == GroupKind::Embedding
            ? fmt::format("{} groups (first and last stage, {}):", name, where)
            : fmt::format("{} groups ({} ranks, {}):", name, grid.group_size(kind), where);
    append_wrapped(out, head, groups);
    shown.emplace_back(kind, std::move(groups));
  }
  if (!single.empty())
    out +=
        fmt::format("single-rank groups (nothing to communicate): {}\n", fmt::join(single, ", "));
}

// One row per pipeline stage, one column per (dp, cp) position, one [..] per
// tp group: the shape of the PTD figure (tp boxes side by side, pp downward,
// dp replicas left and right).
void append_picture(std::string& out, const RankGrid& grid, int gpus_per_node) {
  const GridSizes& s = grid.sizes();
  const int columns = s.dp * s.cp;
  if (columns > kMaxPictureColumns) {
    out += fmt::format("(picture omitted: {} dp x cp columns; see the table)\n", columns);
    return;
  }
  std::vector<std::string> head(columns), expert_head(columns);
  std::vector<std::vector<std::string>> cells(s.pp, std::vector<std::string>(columns));
  size_t width = 0;
  for (int dp = 0; dp < s.dp; ++dp) {
    for (int cp = 0; cp < s.cp; ++cp) {
      const int col = cp + s.cp * dp;
      head[col] = s.cp == 1 ? fmt::format("dp{}", dp) : fmt::format("dp{} cp{}", dp, cp);
      expert_head[col] = fmt::format("ep{} edp{}", col % s.ep, col / s.ep);
      width = std::max({width, head[col].size(), s.ep > 1 ? expert_head[col].size() : 0});
      for (int pp = 0; pp < s.pp; ++pp) {
        const int r0 = grid.rank_of(0, cp, dp, pp);
        cells[pp][col] = fmt::format("[{}]", fmt::join(grid.group_members(GroupKind::Tp, r0), " "));
        width = std::max(width, cells[pp][col].size());
      }
    }
  }
  std::vector<std::string> labels(s.pp);
  size_t label_width = 0;
  const int stage_ranks = s.tp * columns;
  for (int pp = 0; pp < s.pp; ++pp) {
    labels[pp] = fmt::format(
        "pp{}  {}", pp, node_span(pp * stage_ranks, (pp + 1) * stage_ranks - 1, gpus_per_node));
    label_width = std::max(label_width, labels[pp].size());
  }
  auto row = [&](const std::string& label, const std::vector<std::string>& items) {
    std::string line = fmt::format("  {:<{}}", label, label_width);
    for (const auto& item : items) line += fmt::format("  {:<{}}", item, width);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  };
  out += "layout (rows: pp stages; columns: dp x cp positions; [..]: one tp group):\n";
  row("", head);
  if (s.ep > 1) row("", expert_head);
  for (int pp = 0; pp < s.pp; ++pp) row(labels[pp], cells[pp]);
}

void append_node_table(std::string& out, const RankGrid& grid, int gpus_per_node) {
  const bool expert = grid.sizes().ep > 1;
  const int world = grid.world_size();
  for (int first = 0; first < world; first += gpus_per_node) {
    const int last = std::min(world, first + gpus_per_node) - 1;
    out += fmt::format("node {} (ranks {}-{}):\n", node_of(first, gpus_per_node), first, last);
    out += expert ? "  rank  tp  cp  dp  pp  ep  edp\n" : "  rank  tp  cp  dp  pp\n";
    for (int r = first; r <= last; ++r) {
      const GridCoord c = grid.coord(r);
      out += fmt::format("  {:>4}  {:>2}  {:>2}  {:>2}  {:>2}", r, c.tp_rank, c.cp_rank, c.dp_rank,
                         c.pp_rank);
      if (expert) out += fmt::format("  {:>2}  {:>3}", c.ep_rank, c.edp_rank);
      out += "\n";
    }
  }
}

}  // namespace

std::string format_groups(const std::vector<std::vector<int>>& groups) {
  std::vector<std::string> items;
  for (const auto& g : groups) items.push_back(fmt::format("[{}]", fmt::join(g, " ")));
  return fmt::format("{}", fmt::join(items, " "));
}

std::string format_grid_text(const RankGrid& grid, int gpus_per_node) {
  PX_CHECK(gpus_per_node >= 1, "gpus per node ({}) must be at least 1", gpus_per_node);
  const GridSizes& s = grid.sizes();
  const int world = grid.world_size();
  const int nodes = (world + gpus_per_node - 1) / gpus_per_node;
  std::string out = fmt::format(
      "rank grid: world {} = tp {} x cp {} x dp {} x pp {}; ranks ordered tp fastest, then cp, dp, "
      "pp\n",
      world, s.tp, s.cp, s.dp, s.pp);
  if (s.ep > 1)
    out += fmt::format("expert layers: dp x cp = {} folded into ep {} x edp {} (ep fastest)\n",
                       s.dp * s.cp, s.ep, s.edp());
  out += fmt::format("nodes: {} x {} ranks per node{}\n\n", nodes, gpus_per_node,
                     world % gpus_per_node == 0
                         ? ""
                         : fmt::format(" (last node holds {})", world % gpus_per_node));
  append_groups(out, grid, gpus_per_node);
  out += "\n";
  append_picture(out, grid, gpus_per_node);
  out += "\n";
  append_node_table(out, grid, gpus_per_node);
  return out;
}

nlohmann::ordered_json grid_to_json(const RankGrid& grid, int gpus_per_node) {
  PX_CHECK(gpus_per_node >= 1, "gpus per node ({}) must be at least 1", gpus_per_node);
  const GridSizes& s = grid.sizes();
  nlohmann::ordered_json j;
  j["world_size"] = grid.world_size();
  j["order"] = "tp-cp-dp-pp";
  j["expert_order"] = "tp-ep-edp-pp";
  j["sizes"] = {{"tp", s.tp}, {"cp", s.cp}, {"dp", s.dp},
                {"pp", s.pp}, {"ep", s.ep}, {"edp", s.edp()}};
  j["gpus_per_node"] = gpus_per_node;
  j["nodes"] = (grid.world_size() + gpus_per_node - 1) / gpus_per_node;
  nlohmann::ordered_json groups = nlohmann::ordered_json::object();
  for (GroupKind kind : kAllGroupKinds)
    groups[std::string(group_kind_name(kind))] = grid.groups(kind);
  j["groups"] = std::move(groups);
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (int r = 0; r < grid.world_size(); ++r) {
    const GridCoord c = grid.coord(r);
    ranks.push_back({{"rank", r},
                     {"node", node_of(r, gpus_per_node)},
                     {"local_rank", r % gpus_per_node},
                     {"tp", c.tp_rank},
                     {"cp", c.cp_rank},
                     {"dp", c.dp_rank},
                     {"pp", c.pp_rank},
                     {"ep", c.ep_rank},
                     {"edp", c.edp_rank}});
  }
  j["ranks"] = std::move(ranks);
  return j;
}

std::string format_grid_json(const RankGrid& grid, int gpus_per_node) {
  const nlohmann::ordered_json j = grid_to_json(grid, gpus_per_node);
  std::string out = "{\n";
  size_t k = 0;
  for (const auto& [key, value] : j.items()) {
    out += fmt::format("  \"{}\": ", key);
    if (value.is_object() && key == "groups") {
      out += "{\n";
      size_t g = 0;
      for (const auto& [kind, groups] : value.items())
        out +=
            fmt::format("    \"{}\": {}{}\n", kind, groups.dump(), ++g < value.size() ? "," : "");
      out += "  }";
    } else if (value.is_array() && key == "ranks") {
      out += "[\n";
      for (size_t r = 0; r < value.size(); ++r)
        out += fmt::format("    {}{}\n", value[r].dump(), r + 1 < value.size() ? "," : "");
      out += "  ]";
    } else {
      out += value.dump();
    }
    out += ++k < j.size() ? ",\n" : "\n";
  }
  return out + "}\n";
}

}  // namespace parallm
