// SVG drawing of a timeline, by hand: the format is small and fixed.
#include "trace/svg_timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <limits>

#include "base/error.h"

namespace parallm::trace {
namespace {

constexpr double kLeft = 70, kTop = 44, kGap = 8, kRight = 16;

struct Rgb {
  int r, g, b;
};

Rgb base_colour(EventKind k) {
  switch (k) {
    case EventKind::Forward:
      return {78, 121, 167};  // blue
    case EventKind::Backward:
      return {242, 142, 43};  // orange
    case EventKind::BackwardInput:
      return {225, 87, 89};  // red
    case EventKind::BackwardWeight:
      return {89, 161, 79};  // green
    default:
      return {160, 160, 160};
  }
}

// Later chunks are tinted towards white so chunk order reads at a glance.
std::string colour(EventKind k, int chunk, int max_chunk) {
  Rgb c = base_colour(k);
  const double t = max_chunk > 0 && chunk > 0 ? 0.45 * chunk / max_chunk : 0.0;
  auto mix = [t](int v) { return static_cast<int>(v + (255 - v) * t + 0.5); };
  return fmt::format("#{:02x}{:02x}{:02x}", mix(c.r), mix(c.g), mix(c.b));
}

std::string escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '&')
      out += "&amp;";
    else if (ch == '<')
      out += "&lt;";
    else if (ch == '>')
      out += "&gt;";
    else if (ch == '"')
      out += "&quot;";
    else
      out += ch;
  }
  return out;
}

}  // namespace

std::string timeline_svg(const Timeline& t, const SvgOptions& o) {
  const int rows = static_cast<int>(t.rank_names.size());
  double lo = 0, hi = 1;
  if (!t.events.empty()) {
    lo = std::numeric_limits<double>::max();
    hi = std::numeric_limits<double>::lowest();
    for (const Event& e : t.events) {
      lo = std::min(lo, e.start_us);
      hi = std::max(hi, e.end_us);
    }
    if (hi <= lo) hi = lo + 1;
  }
  const double scale = o.width_px / (hi - lo);
  int max_chunk = 0;
  bool kinds[8] = {};
  for (const Event& e : t.events) {
    max_chunk = std::max(max_chunk, e.chunk);
    kinds[static_cast<int>(e.kind)] = true;
  }
  const double legend_y = kTop + rows * (o.row_px + kGap) + 8;
  const double width = kLeft + o.width_px + kRight, height = legend_y + 30;

  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "viewBox=\"0 0 {:.0f} {:.0f}\" font-family=\"Helvetica, Arial, sans-serif\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      width, height, width, height);
  s += fmt::format(
      "<text x=\"{}\" y=\"24\" font-size=\"15\" font-weight=\"bold\">{} (bubble {:.1f}%)</text>\n",
      kLeft, escape(o.title), 100.0 * bubble_fraction(t));
  for (int r = 0; r < rows; ++r) {
    const double y = kTop + r * (o.row_px + kGap);
    s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" font-size=\"12\" text-anchor=\"end\">{}</text>\n",
                     kLeft - 8, y + o.row_px / 2 + 4, escape(t.rank_names[r]));
    s += fmt::format(
        "<rect x=\"{}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"#f4f4f4\"/>\n",
        kLeft, y, o.width_px, o.row_px);
  }
  for (const Event& e : t.events) {
    if (e.rank < 0 || e.rank >= rows) continue;
    const double y = kTop + e.rank * (o.row_px + kGap);
    const double x = kLeft + (e.start_us - lo) * scale, w = (e.end_us - e.start_us) * scale;
    if (!is_compute(e.kind)) {  // communication: a thin bar under the row
      if (w > 0.5)
        s += fmt::format(
            "<rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"3\" fill=\"#999\"/>\n", x,
            y + o.row_px + 1, w);
      continue;
    }
    s += fmt::format(
        "<rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" fill=\"{}\" "
        "stroke=\"white\" stroke-width=\"1\"><title>{} [{:.1f}, {:.1f}]</title></rect>\n",
        x, y, w, o.row_px, colour(e.kind, e.chunk, max_chunk), escape(e.name), e.start_us,
        e.end_us);
    const double font = std::min(12.0, w * 0.55);
    if (e.micro_batch >= 0 && font >= 6)
      s += fmt::format(
          "<text x=\"{:.2f}\" y=\"{:.1f}\" font-size=\"{:.1f}\" fill=\"white\" "
          "text-anchor=\"middle\">{}</text>\n",
          x + w / 2, y + o.row_px / 2 + font * 0.35, font, e.micro_batch);
  }
  // Legend: one swatch per kind present, and the chunk tint when chunked.
  double lx = kLeft;
  const EventKind order[] = {EventKind::Forward, EventKind::Backward, EventKind::BackwardInput,
                             EventKind::BackwardWeight};
  const char* labels[] = {"forward (F)", "backward (B)", "input grad (B)", "weight grad (W)"};
  for (int i = 0; i < 4; ++i) {
    if (!kinds[static_cast<int>(order[i])]) continue;
    s += fmt::format(
        "<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"14\" height=\"14\" fill=\"{}\"/>"
        "<text x=\"{:.0f}\" y=\"{:.0f}\" font-size=\"12\">{}</text>\n",
        lx, legend_y, colour(order[i], 0, 0), lx + 20, legend_y + 11, labels[i]);
    lx += 140;
  }
  if (max_chunk > 0)
    s += fmt::format(
        "<text x=\"{:.0f}\" y=\"{:.0f}\" font-size=\"12\">lighter: later model chunk "
        "(0..{}); numbers: micro-batch; gaps: bubble; grey: communication</text>\n",
        lx, legend_y + 11, max_chunk);
  else
    s += fmt::format(
        "<text x=\"{:.0f}\" y=\"{:.0f}\" font-size=\"12\">numbers: micro-batch; "
        "gaps: bubble; grey: communication</text>\n",
        lx, legend_y + 11);
  s += "</svg>\n";
  return s;
}

void write_timeline_svg(const Timeline& t, const SvgOptions& o, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  PX_CHECK(out.good(), "cannot open SVG file '{}' for writing", path);
  out << timeline_svg(t, o);
  PX_CHECK(out.good(), "failed writing SVG file '{}'", path);
}

}  // namespace parallm::trace
