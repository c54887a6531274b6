// ServeConfig from YAML, with the file, line and column of every error.
#include "serve_config.hpp"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <charconv>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>

namespace conveyor::log_ingest {

namespace {

using Milliseconds = std::chrono::milliseconds;

// Reads one YAML document, checking each value as it takes it.
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& what) const {
    std::ostringstream message;
    message << file_;
    if (!mark.is_null()) message << ':' << mark.line + 1 << ':' << mark.column + 1;
    message << ": " << what;
    throw ConfigError(message.str());
  }

  // Calls `handle(key, value)` for each entry of the map `node` (at `path`), after checking that
  // every key is one of `keys`.
  void each(const YAML::Node& node, const std::string& path, const std::set<std::string>& keys,
            const std::function<void(const std::string&, const YAML::Node&)>& handle) const {
    if (node.IsNull()) return;
    if (!node.IsMap()) fail(node.Mark(), path + " must be a map");
    for (const auto& entry : node) {
      const std::string key = scalar(entry.first, path + " key");
      if (keys.count(key) == 0) {
        std::string known;
        for (const std::string& name : keys)
          known += (known.empty() ? "" : ", ") + name;
        fail(entry.first.Mark(), "unknown key '" + join(path, key) + "' (known: " + known + ")");
      }
      handle(key, entry.second);
    }
  }

  [[nodiscard]] std::string scalar(const YAML::Node& node, const std::string& what) const {
    if (!node.IsScalar()) fail(node.Mark(), what + " must be a string or a number");
    return node.Scalar();
  }

  [[nodiscard]] std::vector<std::string> strings(const YAML::Node& node,
                                                 const std::string& what) const {
    if (node.IsNull()) return {};
    if (node.IsScalar()) return {node.Scalar()};
    if (!node.IsSequence()) fail(node.Mark(), what + " must be a list of strings");
    std::vector<std::string> values;
    for (const YAML::Node& item : node)
      values.push_back(scalar(item, what + " item"));
    return values;
  }

  [[nodiscard]] std::uint64_t number(const YAML::Node& node, const std::string& what,
                                     std::uint64_t low, std::uint64_t high) const {
    const std::string text = scalar(node, what);
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) {
      fail(node.Mark(), what + " must be a whole number, not '" + text + "'");
    }
    in_range(node, what, value, low, high);
    return value;
  }

  // A size: bytes, or a number with KiB, MiB or GiB (KB, MB, GB: powers of 1000).
  [[nodiscard]] std::uint64_t size(const YAML::Node& node, const std::string& what,
                                   std::uint64_t low, std::uint64_t high) const {
    static const std::map<std::string, std::uint64_t, std::less<>> units = {{"", 1},
                                                                            {"B", 1},
                                                                            {"KB", 1000},
                                                                            {"MB", 1000'000},
                                                                            {"GB", 1000'000'000},
                                                                            {"KiB", 1ULL << 10U},
                                                                            {"MiB", 1ULL << 20U},
                                                                            {"GiB", 1ULL << 30U}};
    return with_unit(node, what, units, "a size such as 65536 or 64KiB", low, high);
  }

  // A duration: 250ms, 30s, 5m, 1h, or a number of seconds.
  [[nodiscard]] Milliseconds duration(const YAML::Node& node, const std::string& what,
                                      Milliseconds low, Milliseconds high) const {
    static const std::map<std::string, std::uint64_t, std::less<>> units = {
        {"", 1000}, {"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}};
    return Milliseconds(with_unit(node, what, units, "a duration such as 30s, 250ms or 5m",
                                  static_cast<std::uint64_t>(low.count()),
                                  static_cast<std::uint64_t>(high.count())));
  }

  [[nodiscard]] bool boolean(const YAML::Node& node, const std::string& what) const {
    const std::string text = scalar(node, what);
    if (text == "true" || text == "yes" || text == "on") return true;
    if (text == "false" || text == "no" || text == "off") return false;
    fail(node.Mark(), what + " must be true or false, not '" + text + "'");
  }

  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

 private:
  void in_range(const YAML::Node& node, const std::string& what, std::uint64_t value,
                std::uint64_t low, std::uint64_t high) const {
    if (value < low || value > high) {
      fail(node.Mark(), what + " must be between " + std::to_string(low) + " and " +
                            std::to_string(high) + ", not " + std::to_string(value));
    }
  }

  std::uint64_t with_unit(const YAML::Node& node, const std::string& what,
                          const std::map<std::string, std::uint64_t, std::less<>>& units,
                          const std::string& shape, std::uint64_t low, std::uint64_t high) const {
    const std::string text = scalar(node, what);
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    const auto unit = units.find(std::string_view(end, text.data() + text.size() - end));
    if (error != std::errc() || end == text.data() || unit == units.end() ||
        value > std::numeric_limits<std::uint64_t>::max() / unit->second) {
      fail(node.Mark(), what + " must be " + shape + ", not '" + text + "'");
    }
    const std::uint64_t scaled = value * unit->second;
    in_range(node, what, scaled, low, high);
    return scaled;
  }

  std::string file_;
};

std::optional<InputType> parse_input_type(std::string_view text) {
  if (text == "syslog_tcp") return InputType::syslog_tcp;
  if (text == "syslog_udp") return InputType::syslog_udp;
  if (text == "tcp") return InputType::tcp;
  if (text == "stdin") return InputType::stdin_lines;
  if (text == "http") return InputType::http;
  if (text == "file") return InputType::file;
  return std::nullopt;
}

// A file input's setting `key` into `file`; false when `key` is not one of them.
bool read_file_key(const Reader& reader, const std::string& key, const YAML::Node& value,
                   const std::string& what, FileConfig& file) {
  if (key == "include" || key == "exclude") {
    std::vector<std::string> globs = reader.strings(value, what);
    for (const std::string& glob : globs) {
      if (glob.empty()) reader.fail(value.Mark(), what + " has an empty glob");
    }
    (key == "include" ? file.include : file.exclude) = std::move(globs);
  } else if (key == "read_from") {
    const std::string text = reader.scalar(value, what);
    if (text != "beginning" && text != "end") {
      reader.fail(value.Mark(), what + " must be beginning or end, not '" + text + "'");
    }
    file.read_from_end = text == "end";
  } else if (key == "glob_interval") {
    file.glob_interval = reader.duration(value, what, Milliseconds(10), std::chrono::hours(1));
  } else if (key == "rotate_wait") {
    file.rotate_wait = reader.duration(value, what, Milliseconds(0), std::chrono::hours(24));
  } else if (key == "partial_line_timeout") {
    file.partial_line_timeout =
        reader.duration(value, what, Milliseconds(1), std::chrono::hours(24));
  } else if (key == "checkpoint_interval") {
    file.checkpoint_interval =
        reader.duration(value, what, Milliseconds(10), std::chrono::hours(1));
  } else if (key == "max_line_bytes") {
    file.max_line_bytes = reader.size(value, what, 64, 64U << 20U);
  } else if (key == "max_open_files") {
    file.max_open_files = reader.number(value, what, 1, 1U << 20U);
  } else if (key == "watch") {
    const std::string text = reader.scalar(value, what);
    if (text != "inotify" && text != "poll") {
      reader.fail(value.Mark(), what + " must be inotify or poll, not '" + text + "'");
    }
    file.inotify = text == "inotify";
  } else if (key == "close_idle") {
    file.close_idle = reader.duration(value, what, Milliseconds(0), std::chrono::hours(24));
  } else if (key == "linger") {
    file.linger = reader.duration(value, what, Milliseconds(0), std::chrono::seconds(1));
  } else {
    return false;
  }
  return true;
}

void read_input(const Reader& reader, const YAML::Node& node, const std::string& path,
                ServeConfig& config) {
  InputConfig input;
  bool typed = false;
  bool formatted = false;
  YAML::Mark tls_mark = YAML::Mark::null_mark();
  YAML::Mark file_mark = YAML::Mark::null_mark();
  reader.each(node, path,
              {"name", "type", "listen", "format", "tls", "include", "exclude", "read_from",
               "glob_interval", "rotate_wait", "partial_line_timeout", "checkpoint_interval",
               "max_line_bytes", "max_open_files", "close_idle", "linger", "watch"},
              [&](const std::string& key, const YAML::Node& value) {
                const std::string what = Reader::join(path, key);
                if (read_file_key(reader, key, value, what, input.file)) {
                  if (file_mark.is_null()) file_mark = value.Mark();
                  return;
                }
                if (key == "name") {
                  input.name = reader.scalar(value, what);
                  if (input.name.empty()) reader.fail(value.Mark(), what + " must not be empty");
                  // It names the input's checkpoint file in state_dir: one file of its own there.
                  if (input.name == "." || input.name == ".." ||
                      input.name.find_first_of(std::string_view("/\0", 2)) != std::string::npos) {
                    reader.fail(value.Mark(), what + " must not hold '/' or be '.' or '..', not '" +
                                                  input.name + "'");
                  }
                } else if (key == "type") {
                  const std::string text = reader.scalar(value, what);
                  const std::optional<InputType> type = parse_input_type(text);
                  if (!type) {
                    reader.fail(value.Mark(), what +
                                                  " must be syslog_tcp, syslog_udp, tcp, http, "
                                                  "stdin or file, not '" +
                                                  text + "'");
                  }
                  input.type = *type;
                  typed = true;
                } else if (key == "listen") {
                  input.listen = reader.scalar(value, what);
                } else if (key == "tls") {
                  tls_mark = value.Mark();
                  reader.each(value, what, {"cert", "key", "client_ca"},
                              [&](const std::string& name, const YAML::Node& file) {
                                const std::string setting = Reader::join(what, name);
                                std::string& target = name == "cert"  ? input.tls.cert
                                                      : name == "key" ? input.tls.key
                                                                      : input.tls.client_ca;
                                target = reader.scalar(file, setting);
                              });
                } else {
                  const std::string text = reader.scalar(value, what);
                  const std::optional<stages::Format> format = stages::parse_format(text);
                  if (!format || *format == stages::Format::auto_detect) {
                    reader.fail(value.Mark(), what +
                                                  " must be common, combined, json or syslog, "
                                                  "not '" +
                                                  text + "'");
                  }
                  input.format = *format;
                  formatted = true;
                }
              });
  if (!node.IsMap()) reader.fail(node.Mark(), path + " must be a map");
  if (!typed) reader.fail(node.Mark(), path + " needs a type");
  if (input.name.empty()) input.name = to_string(input.type);
  if (input.type == InputType::file && input.file.include.empty()) {
    reader.fail(node.Mark(), path + " is a file input: it needs include (a list of globs)");
  }
  if (input.type != InputType::file && !file_mark.is_null()) {
    reader.fail(file_mark, path +
                               ": include, exclude, read_from and the other file settings are "
                               "for file inputs");
  }
  const bool lines = input.type == InputType::tcp || input.type == InputType::stdin_lines ||
                     input.type == InputType::file;
  if (!formatted && lines) input.format = stages::Format::combined;
  if (!formatted && input.type == InputType::http) input.format = stages::Format::json;
  if (!tls_mark.is_null()) {
    const bool streams = input.type == InputType::syslog_tcp || input.type == InputType::tcp ||
                         input.type == InputType::http;
    if (!streams) reader.fail(tls_mark, path + ".tls is for syslog_tcp, tcp and http inputs");
    if (input.tls.cert.empty() || input.tls.key.empty()) {
      reader.fail(tls_mark, path + ".tls needs both cert and key");
    }
  }
  for (const InputConfig& other : config.inputs) {
    if (other.name == input.name) {
      reader.fail(node.Mark(), "two inputs are named '" + input.name + "'; name them apart");
    }
  }
  config.inputs.push_back(std::move(input));
}

// The `service.limits` section at `what`.
void read_limits(const Reader& reader, const YAML::Node& node, const std::string& what,
                 LimitsConfig& limits) {
  reader.each(node, what,
              {"max_connections", "max_connections_per_client", "max_frame_bytes", "idle_timeout",
               "max_body_bytes"},
              [&](const std::string& limit, const YAML::Node& setting) {
                const std::string where = Reader::join(what, limit);
                if (limit == "max_connections")
                  limits.max_connections = reader.number(setting, where, 1, 1U << 20U);
                if (limit == "max_connections_per_client")
                  limits.max_connections_per_client = reader.number(setting, where, 1, 1U << 20U);
                if (limit == "max_frame_bytes")
                  limits.max_frame_bytes =
                      reader.size(setting, where, 64, LimitsConfig::largest_frame);
                if (limit == "max_body_bytes")
                  limits.max_body_bytes = reader.size(setting, where, 64, 1U << 30U);
                if (limit == "idle_timeout") {
                  limits.idle_timeout =
                      reader.duration(setting, where, Milliseconds(1), std::chrono::hours(24 * 7));
                }
              });
}

void read_document(const Reader& reader, const YAML::Node& root, ServeConfig& config) {
  reader.each(
      root, "", {"inputs", "pipeline", "outputs", "service"},
      [&](const std::string& key, const YAML::Node& node) {
        if (key == "inputs") {
          if (!node.IsSequence()) reader.fail(node.Mark(), "inputs must be a list");
          config.inputs.clear();
          for (std::size_t i = 0; i < node.size(); ++i)
            read_input(reader, node[i], "inputs[" + std::to_string(i) + "]", config);
        } else if (key == "pipeline") {
          reader.each(node, key, {"where", "fields", "workers", "queue_chunks", "summary"},
                      [&](const std::string& name, const YAML::Node& value) {
                        const std::string what = Reader::join(key, name);
                        if (name == "where") config.where = reader.strings(value, what);
                        if (name == "fields") config.fields = reader.strings(value, what);
                        if (name == "workers") config.workers = reader.number(value, what, 0, 256);
                        if (name == "queue_chunks")
                          config.queue_chunks = reader.number(value, what, 1, 1U << 16U);
                        if (name != "summary") return;
                        reader.each(value, what, {"window", "windows", "top"},
                                    [&](const std::string& setting, const YAML::Node& item) {
                                      const std::string where = Reader::join(what, setting);
                                      if (setting == "window") {
                                        config.summary_window = reader.duration(
                                            item, where, Milliseconds(100), std::chrono::hours(24));
                                      } else if (setting == "windows") {
                                        config.summary_windows =
                                            reader.number(item, where, 1, 10'000);
                                      } else {
                                        config.summary_top = reader.number(item, where, 1, 1000);
                                      }
                                    });
                      });
        } else if (key == "outputs") {
          reader.each(
              node, key, {"records", "dead_letters", "fsync", "flush", "rotate"},
              [&](const std::string& name, const YAML::Node& value) {
                const std::string what = Reader::join(key, name);
                OutputPolicy& policy = config.output;
                if (name == "records") config.records = reader.scalar(value, what);
                if (name == "dead_letters") config.dead_letters = reader.scalar(value, what);
                if (name == "fsync") policy.fsync = reader.boolean(value, what);
                if (name == "flush") {
                  reader.each(value, what, {"records", "interval"},
                              [&](const std::string& setting, const YAML::Node& item) {
                                const std::string where = Reader::join(what, setting);
                                if (setting == "records") {
                                  policy.flush_records = reader.number(item, where, 0, 1U << 30U);
                                } else {
                                  policy.flush_interval = reader.duration(
                                      item, where, Milliseconds(0), std::chrono::hours(1));
                                }
                              });
                }
                if (name == "rotate") {
                  reader.each(value, what, {"size", "interval", "keep"},
                              [&](const std::string& setting, const YAML::Node& item) {
                                const std::string where = Reader::join(what, setting);
                                if (setting == "size") {
                                  policy.rotate_bytes =
                                      reader.size(item, where, 0, std::uint64_t{1} << 50U);
                                } else if (setting == "interval") {
                                  policy.rotate_interval = reader.duration(
                                      item, where, Milliseconds(0), std::chrono::hours(24 * 366));
                                } else {
                                  policy.keep = reader.number(item, where, 1, 100'000);
                                }
                              });
                }
              });
        } else {
          YAML::Mark stop_mark = YAML::Mark::null_mark();
          reader.each(node, key,
                      {"metrics_listen", "auth_file", "drain_timeout", "stop_timeout", "state_dir",
                       "limits"},
                      [&](const std::string& name, const YAML::Node& value) {
                        const std::string what = Reader::join(key, name);
                        if (name == "metrics_listen")
                          config.metrics_listen = reader.scalar(value, what);
                        if (name == "state_dir") config.state_dir = reader.scalar(value, what);
                        if (name == "auth_file") config.auth_file = reader.scalar(value, what);
                        if (name == "drain_timeout") {
                          config.drain_timeout =
                              reader.duration(value, what, Milliseconds(0), std::chrono::hours(24));
                        }
                        if (name == "stop_timeout") {
                          config.stop_timeout =
                              reader.duration(value, what, Milliseconds(1), std::chrono::hours(48));
                          stop_mark = value.Mark();
                        }
                        if (name == "limits") read_limits(reader, value, what, config.limits);
                      });
          if (stop_mark.is_null()) {
            config.stop_timeout = config.drain_timeout + ServeConfig::stop_after_drain;
          } else if (config.stop_timeout < config.drain_timeout) {
            reader.fail(stop_mark, Reader::join(key, "stop_timeout") +
                                       " must not be shorter than drain_timeout");
          }
        }
      });
}

}  // namespace

const char* to_string(InputType type) noexcept {
  switch (type) {
    case InputType::syslog_tcp:
      return "syslog_tcp";
    case InputType::syslog_udp:
      return "syslog_udp";
    case InputType::tcp:
      return "tcp";
    case InputType::stdin_lines:
      return "stdin";
    case InputType::http:
      return "http";
    case InputType::file:
      return "file";
  }
  return "?";
}

ServeConfig default_serve_config() {
  ServeConfig config;
  config.inputs.push_back(
      {"syslog_tcp", InputType::syslog_tcp, "127.0.0.1:5514", stages::Format::syslog});
  config.inputs.push_back(
      {"syslog_udp", InputType::syslog_udp, "127.0.0.1:5514", stages::Format::syslog});
  return config;
}

ServeConfig parse_serve_config(const std::string& text, const std::string& file) {
  const Reader reader(file);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& error) {
    reader.fail(error.mark, error.msg);
  }
  ServeConfig config = default_serve_config();
  config.file = file;
  if (!root.IsNull() && !root.IsMap()) reader.fail(root.Mark(), "the file must hold a map");
  try {
    read_document(reader, root, config);
  } catch (const YAML::Exception& error) {
    reader.fail(error.mark, error.msg);
  }
  if (config.inputs.empty()) reader.fail(YAML::Mark::null_mark(), "inputs: none given");
  std::size_t stdins = 0;
  for (const InputConfig& input : config.inputs)
    stdins += input.type == InputType::stdin_lines ? 1 : 0;
  if (stdins > 1) reader.fail(YAML::Mark::null_mark(), "inputs: stdin can be read only once");
  return config;
}

ServeConfig load_serve_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path + ": cannot read the configuration file");
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  return parse_serve_config(text, path);
}

}  // namespace conveyor::log_ingest
