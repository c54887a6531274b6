// A grouped bar chart written as standalone SVG 1.1: one cluster of bars per category, one bar per
// series, like the paper's Figure 1 (wait per loop by variant and group).
#pragma once

#include <string>
#include <vector>

namespace conveyor::locktest {

struct BarChart {
  std::string title;
  std::string value_label;              // the y axis
  std::vector<std::string> series;      // one colour each, in the legend
  std::vector<std::string> categories;  // along the x axis
  // values[category][series]
  std::vector<std::vector<double>> values;
};

// Well-formed XML; every text is escaped.
std::string render_svg(const BarChart& chart);

}  // namespace conveyor::locktest
