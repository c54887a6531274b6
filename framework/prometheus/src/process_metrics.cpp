// ProcessMetrics: process_* from /proc/self, and conveyor_build_info.
#include "conveyor/prometheus/process_metrics.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include <prometheus/client_metric.h>
#include <prometheus/metric_type.h>

#include "conveyor/prometheus/families.hpp"

#ifndef CONVEYOR_VERSION
#define CONVEYOR_VERSION "unknown"
#endif

namespace conveyor::prometheus {

namespace {

using ::prometheus::ClientMetric;
using ::prometheus::MetricFamily;
using ::prometheus::MetricType;

MetricFamily one_value(std::string name, std::string help, MetricType type, double value) {
  MetricFamily result = family(std::move(name), std::move(help), type);
  add_sample(result, {}, value);
  return result;
}

// The fields of /proc/self/stat after the command name, which may itself hold spaces and
// parentheses: field 3 (state) is fields[0].
std::optional<std::vector<std::string>> stat_fields() {
  std::ifstream file("/proc/self/stat");
  std::string line;
  if (!std::getline(file, line)) return std::nullopt;
  const auto end_of_name = line.rfind(')');
  if (end_of_name == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(end_of_name + 1));
  std::vector<std::string> fields;
  for (std::string field; rest >> field;)
    fields.push_back(field);
  if (fields.size() < 22) return std::nullopt;
  return fields;
}

std::optional<double> boot_time_seconds() {
  std::ifstream file("/proc/stat");
  for (std::string key; file >> key;) {
    if (key == "btime") {
      double value = 0;
      if (file >> value) return value;
      return std::nullopt;
    }
    file.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return std::nullopt;
}

std::string compiler() {
#if defined(__clang__)
  return std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  return std::string("gcc ") + __VERSION__;
#else
  return "unknown";
#endif
}

}  // namespace

std::vector<MetricFamily> ProcessMetrics::Collect() const {
  std::vector<MetricFamily> families;

  MetricFamily build;
  build.name = "conveyor_build_info";
  build.help = "The conveyor build: always 1, with its version and compiler as labels.";
  build.type = MetricType::Gauge;
  ClientMetric info;
  info.label = {{"compiler", compiler()}, {"version", CONVEYOR_VERSION}};
  info.gauge.value = 1;
  build.metric.push_back(std::move(info));
  families.push_back(std::move(build));

  const double ticks_per_second = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page_size = static_cast<double>(sysconf(_SC_PAGESIZE));
  // Fields of /proc/self/stat, numbered as in proc(5) minus 3.
  constexpr std::size_t utime = 14 - 3;
  constexpr std::size_t stime = 15 - 3;
  constexpr std::size_t threads = 20 - 3;
  constexpr std::size_t starttime = 22 - 3;
  constexpr std::size_t vsize = 23 - 3;
  constexpr std::size_t rss = 24 - 3;
  if (const auto fields = stat_fields(); fields && ticks_per_second > 0) {
    const auto number = [&](std::size_t index) { return std::stod((*fields)[index]); };
    families.push_back(
        one_value("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
                  MetricType::Counter, (number(utime) + number(stime)) / ticks_per_second));
    families.push_back(one_value("process_virtual_memory_bytes", "Virtual memory size in bytes.",
                                 MetricType::Gauge, number(vsize)));
    families.push_back(one_value("process_resident_memory_bytes", "Resident memory size in bytes.",
                                 MetricType::Gauge, number(rss) * page_size));
    families.push_back(one_value("process_threads", "Number of OS threads in the process.",
                                 MetricType::Gauge, number(threads)));
    if (const auto boot = boot_time_seconds()) {
      families.push_back(one_value(
          "process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
          MetricType::Gauge, *boot + number(starttime) / ticks_per_second));
    }
  }

  std::error_code error;
  std::size_t open_fds = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", error), end; !error && it != end;
       it.increment(error)) {
    ++open_fds;
  }
  if (!error) {
    families.push_back(one_value("process_open_fds", "Number of open file descriptors.",
                                 MetricType::Gauge, static_cast<double>(open_fds)));
  }
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    families.push_back(
        one_value("process_max_fds", "Maximum number of open file descriptors.", MetricType::Gauge,
                  limit.rlim_cur == RLIM_INFINITY ? std::numeric_limits<double>::infinity()
                                                  : static_cast<double>(limit.rlim_cur)));
  }
  return families;
}

}  // namespace conveyor::prometheus
