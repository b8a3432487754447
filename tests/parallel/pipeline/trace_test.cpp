// Tests of the timeline writers: the Chrome trace parses and has the events
// and metadata Perfetto needs; the SVG has one row per stage, the legend and
// the bubble fraction in its title.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "parallel/pipeline/schedule.h"
#include "parallel/pipeline/sim_timeline.h"
#include "parallel/pipeline/simulate.h"
#include "trace/chrome_trace.h"
#include "trace/svg_timeline.h"

namespace parallm::trace {
namespace {

Timeline one_f_one_b_timeline() {
  using namespace pipeline;
  const Simulation sim = simulate(make_schedule({ScheduleKind::OneFOneB, 4, 8, 1}));
  return simulation_timeline(sim, 1);
}

TEST(Trace, BubbleFractionOfTimelineMatchesSimulator) {
  EXPECT_NEAR(bubble_fraction(one_f_one_b_timeline()), 3.0 / 11.0, 1e-12);
  EXPECT_EQ(bubble_fraction(Timeline{}), 0.0);
}

TEST(Trace, ChromeTraceHasCompleteEventsAndNames) {
  const Timeline t = one_f_one_b_timeline();
  const auto doc = nlohmann::json::parse(chrome_trace_json(t));
  int complete = 0, process_names = 0;
  for (const auto& e : doc.at("traceEvents")) {
    if (e.at("ph") == "X") {
      ++complete;
      EXPECT_GE(e.at("dur").get<double>(), 0);
      EXPECT_TRUE(e.contains("ts") && e.contains("pid") && e.contains("tid"));
    }
    if (e.at("ph") == "M" && e.at("name") == "process_name") ++process_names;
  }
  EXPECT_EQ(complete, static_cast<int>(t.events.size()));
  EXPECT_EQ(process_names, 4);
  // the first forward of stage 1 starts one unit (1000 us) in
  bool found = false;
  for (const auto& e : doc.at("traceEvents"))
    if (e.at("ph") == "X" && e.at("pid") == 1 && e.at("name") == "F0") {
      EXPECT_DOUBLE_EQ(e.at("ts").get<double>(), 1000.0);
      EXPECT_EQ(e.at("cat"), "forward");
      found = true;
    }
  EXPECT_TRUE(found);
}

TEST(Trace, SvgHasRowsLegendAndBubble) {
  const std::string svg = timeline_svg(one_f_one_b_timeline(), {.title = "1f1b pp=4 m=8"});
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("1f1b pp=4 m=8 (bubble 27.3%)"), std::string::npos);
  for (int s = 0; s < 4; ++s) EXPECT_NE(svg.find(fmt::format(">stage {}<", s)), std::string::npos);
  EXPECT_NE(svg.find("forward (F)"), std::string::npos);
  EXPECT_NE(svg.find("backward (B)"), std::string::npos);
  EXPECT_EQ(svg.find("weight grad (W)"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
}

TEST(Trace, SvgEscapesNames) {
  Timeline t;
  t.rank_names = {"a<b&c"};
  t.events.push_back({0, EventKind::Forward, "x\"y", 0, 10, 1, -1});
  const std::string svg = timeline_svg(t, {.title = "<t>"});
  EXPECT_NE(svg.find("a&lt;b&amp;c"), std::string::npos);
  EXPECT_NE(svg.find("&lt;t&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("a<b"), std::string::npos);
}

}  // namespace
}  // namespace parallm::trace
