#include "svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace conveyor::locktest {
namespace {

std::string escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", value);
  return buffer;
}

// 1, 2 or 5 times a power of ten, so that about five ticks cover `top`.
double tick_step(double top) {
  const double rough = top / 5.0;
  const double power = std::pow(10.0, std::floor(std::log10(rough)));
  for (const double factor : {1.0, 2.0, 5.0}) {
    if (factor * power >= rough) return factor * power;
  }
  return 10.0 * power;
}

constexpr const char* palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                   "#76b7b2", "#edc948", "#b07aa1", "#9c755f"};

}  // namespace

std::string render_svg(const BarChart& chart) {
  const double left = 80, right = 30, top = 60, bottom = 170;
  const double bar_width = 16, cluster_gap = 18;
  const std::size_t series_count = std::max<std::size_t>(1, chart.series.size());
  const double cluster_width = bar_width * static_cast<double>(series_count) + cluster_gap;
  const double plot_width =
      std::max(300.0, cluster_width * static_cast<double>(chart.categories.size()));
  const double plot_height = 360;
  const double width = left + plot_width + right;
  const double height = top + plot_height + bottom;

  double largest = 0;
  for (const auto& row : chart.values) {
    for (const double value : row)
      largest = std::max(largest, value);
  }
  const double step = tick_step(largest > 0 ? largest : 1.0);
  const double axis_top = step * std::ceil((largest > 0 ? largest : 1.0) / step);
  auto y_of = [&](double value) { return top + plot_height * (1.0 - value / axis_top); };

  std::ostringstream svg;
  svg << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" << number(width)
      << "\" height=\"" << number(height) << "\" viewBox=\"0 0 " << number(width) << ' '
      << number(height) << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << number(width / 2) << "\" y=\"28\" text-anchor=\"middle\" font-size=\"16\">"
      << escape(chart.title) << "</text>\n";

  // Grid and y axis.
  for (double tick = 0; tick <= axis_top + step / 2; tick += step) {
    const double y = y_of(tick);
    svg << "<line x1=\"" << number(left) << "\" y1=\"" << number(y) << "\" x2=\""
        << number(left + plot_width) << "\" y2=\"" << number(y)
        << "\" stroke=\"#dddddd\"/>\n<text x=\"" << number(left - 6) << "\" y=\"" << number(y + 4)
        << "\" text-anchor=\"end\">" << number(tick) << "</text>\n";
  }
  svg << "<text transform=\"translate(20," << number(top + plot_height / 2)
      << ") rotate(-90)\" text-anchor=\"middle\">" << escape(chart.value_label) << "</text>\n";

  // Bars, with their value on top, and the category names below.
  for (std::size_t category = 0; category < chart.categories.size(); ++category) {
    const double cluster_left =
        left + cluster_gap / 2 + cluster_width * static_cast<double>(category);
    for (std::size_t series = 0; series < chart.series.size(); ++series) {
      const double value = category < chart.values.size() && series < chart.values[category].size()
                               ? chart.values[category][series]
                               : 0.0;
      const double x = cluster_left + bar_width * static_cast<double>(series);
      const double y = y_of(value);
      svg << "<rect x=\"" << number(x) << "\" y=\"" << number(y) << "\" width=\""
          << number(bar_width - 2) << "\" height=\"" << number(top + plot_height - y)
          << "\" fill=\"" << palette[series % std::size(palette)] << "\"><title>"
          << escape(chart.categories[category]) << ", " << escape(chart.series[series]) << ": "
          << number(value) << "</title></rect>\n";
    }
    const double label_x = cluster_left + bar_width * static_cast<double>(series_count) / 2;
    const double label_y = top + plot_height + 14;
    svg << "<text transform=\"translate(" << number(label_x) << ',' << number(label_y)
        << ") rotate(-40)\" text-anchor=\"end\">" << escape(chart.categories[category])
        << "</text>\n";
  }
  svg << "<line x1=\"" << number(left) << "\" y1=\"" << number(top + plot_height) << "\" x2=\""
      << number(left + plot_width) << "\" y2=\"" << number(top + plot_height)
      << "\" stroke=\"black\"/>\n<line x1=\"" << number(left) << "\" y1=\"" << number(top)
      << "\" x2=\"" << number(left) << "\" y2=\"" << number(top + plot_height)
      << "\" stroke=\"black\"/>\n";

  // Legend, top right.
  for (std::size_t series = 0; series < chart.series.size(); ++series) {
    const double x = left + plot_width - 140;
    const double y = top + 4 + 18 * static_cast<double>(series);
    svg << "<rect x=\"" << number(x) << "\" y=\"" << number(y)
        << "\" width=\"12\" height=\"12\" fill=\"" << palette[series % std::size(palette)]
        << "\"/>\n<text x=\"" << number(x + 18) << "\" y=\"" << number(y + 10) << "\">"
        << escape(chart.series[series]) << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace conveyor::locktest
