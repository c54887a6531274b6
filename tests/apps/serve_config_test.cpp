// log-ingest serve's configuration: defaults, every section, and errors that say where.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "serve_config.hpp"

namespace {

using conveyor::log_ingest::ConfigError;
using conveyor::log_ingest::InputType;
using conveyor::log_ingest::parse_serve_config;
using conveyor::log_ingest::ServeConfig;

// The message of the ConfigError that `text` raises, or "" if it loads.
std::string error_of(const std::string& text) {
  try {
    (void)parse_serve_config(text, "test.yaml");
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

TEST(ServeConfig, AnEmptyFileIsTheDefaults) {
  const ServeConfig config = parse_serve_config("", "empty.yaml");
  ASSERT_EQ(config.inputs.size(), 2U);
  EXPECT_EQ(config.inputs[0].type, InputType::syslog_tcp);
  EXPECT_EQ(config.inputs[0].listen, "127.0.0.1:5514");
  EXPECT_EQ(config.inputs[1].type, InputType::syslog_udp);
  EXPECT_EQ(config.metrics_listen, "127.0.0.1:9464");
  EXPECT_EQ(config.limits.max_connections, 1024U);
  EXPECT_EQ(config.limits.max_connections_per_client, 256U);
  EXPECT_EQ(config.limits.max_frame_bytes, 65536U);
  EXPECT_EQ(config.limits.idle_timeout, std::chrono::minutes(5));
  EXPECT_EQ(config.drain_timeout, std::chrono::seconds(30));
  EXPECT_EQ(config.stop_timeout, std::chrono::seconds(60));
}

TEST(ServeConfig, ReadsEverySection) {
  const ServeConfig config = parse_serve_config(R"(
inputs:
  - {name: edge, type: syslog_tcp, listen: "0.0.0.0:6514"}
  - name: web
    type: tcp
    listen: "[::1]:5515"
    format: json
  - {type: stdin}
pipeline:
  where: ["status>=500", "path~^/api"]
  fields: [time, path]
  workers: 3
  queue_chunks: 8
outputs: {records: "-", dead_letters: none, fsync: yes}
service:
  metrics_listen: none
  auth_file: /etc/auth
  drain_timeout: 250ms
  limits: {max_connections: 10, max_connections_per_client: 3, max_frame_bytes: 1MiB,
           idle_timeout: 2m}
)",
                                                "full.yaml");
  ASSERT_EQ(config.inputs.size(), 3U);
  EXPECT_EQ(config.inputs[0].name, "edge");
  EXPECT_EQ(config.inputs[1].format, conveyor::stages::Format::json);
  EXPECT_EQ(config.inputs[2].name, "stdin");
  EXPECT_EQ(config.inputs[2].type, InputType::stdin_lines);
  EXPECT_EQ(config.where.size(), 2U);
  EXPECT_EQ(config.fields.size(), 2U);
  EXPECT_EQ(config.workers, 3U);
  EXPECT_EQ(config.queue_chunks, 8U);
  EXPECT_EQ(config.records, "-");
  EXPECT_EQ(config.dead_letters, "none");
  EXPECT_TRUE(config.output.fsync);
  EXPECT_EQ(config.metrics_listen, "none");
  EXPECT_EQ(config.auth_file, "/etc/auth");
  EXPECT_EQ(config.drain_timeout, std::chrono::milliseconds(250));
  EXPECT_EQ(config.limits.max_connections, 10U);
  EXPECT_EQ(config.limits.max_connections_per_client, 3U);
  EXPECT_EQ(config.limits.max_frame_bytes, 1U << 20U);
  EXPECT_EQ(config.limits.idle_timeout, std::chrono::minutes(2));
}

TEST(ServeConfig, TheDrainsLimitFollowsDrainTimeoutUnlessSetAndIsNeverShorter) {
  EXPECT_EQ(parse_serve_config("service: {drain_timeout: 90s}\n", "t.yaml").stop_timeout,
            std::chrono::seconds(120));
  const ServeConfig set =
      parse_serve_config("service: {drain_timeout: 5s, stop_timeout: 5s}\n", "t.yaml");
  EXPECT_EQ(set.drain_timeout, std::chrono::seconds(5));
  EXPECT_EQ(set.stop_timeout, std::chrono::seconds(5));
  const std::string error = error_of("service:\n  stop_timeout: 10s\n  drain_timeout: 20s\n");
  EXPECT_NE(error.find("test.yaml:2:17:"), std::string::npos) << error;
  EXPECT_NE(error.find("service.stop_timeout must not be shorter than drain_timeout"),
            std::string::npos)
      << error;
}

TEST(ServeConfig, AnUnknownKeyNamesItsLineAndColumn) {
  const std::string error = error_of("service:\n  drain_timeout: 1s\n  max_conections: 5\n");
  EXPECT_NE(error.find("test.yaml:3:3:"), std::string::npos) << error;
  EXPECT_NE(error.find("service.max_conections"), std::string::npos) << error;
}

TEST(ServeConfig, WrongTypesAndRangesAreErrors) {
  EXPECT_NE(error_of("pipeline:\n  workers: many\n").find("test.yaml:2:12:"), std::string::npos);
  EXPECT_NE(error_of("pipeline:\n  workers: 1000\n").find("between 0 and 256"), std::string::npos);
  EXPECT_NE(error_of("service:\n  drain_timeout: soon\n").find("a duration"), std::string::npos);
  EXPECT_NE(error_of("service:\n  limits: {max_frame_bytes: 12parsecs}\n").find("a size"),
            std::string::npos);
  EXPECT_NE(error_of("outputs: {fsync: maybe}\n").find("true or false"), std::string::npos);
  EXPECT_NE(error_of("inputs:\n  - {type: carrier_pigeon}\n").find("inputs[0].type"),
            std::string::npos);
  EXPECT_NE(error_of("inputs:\n  - {name: a}\n").find("needs a type"), std::string::npos);
  EXPECT_NE(error_of("inputs: {}\n").find("must be a list"), std::string::npos);
  EXPECT_NE(error_of("- a\n- b\n").find("must hold a map"), std::string::npos);
  EXPECT_NE(error_of("inputs:\n  - {type: tcp, format: auto}\n").find("format"), std::string::npos);
}

TEST(ServeConfig, BadYamlSaysWhere) {
  const std::string error = error_of("service:\n  limits: {max_connections: 5\n");
  EXPECT_EQ(error.rfind("test.yaml:", 0), 0U) << error;
}

TEST(ServeConfig, TwoInputsCannotShareAName) {
  EXPECT_NE(error_of("inputs:\n  - {type: tcp}\n  - {type: tcp}\n").find("two inputs"),
            std::string::npos);
  EXPECT_NE(error_of("inputs:\n  - {type: stdin, name: a}\n  - {type: stdin, name: b}\n")
                .find("stdin can be read only once"),
            std::string::npos);
  // A name is a file input's checkpoint file name: one of its own in state_dir.
  for (const char* name : {"a/b", "/a", ".", ".."}) {
    EXPECT_NE(error_of(std::string("inputs:\n  - {type: stdin, name: \"") + name + "\"}\n")
                  .find("must not hold '/' or be '.' or '..'"),
              std::string::npos)
        << name;
  }
}

}  // namespace

namespace {

TEST(ServeConfig, TlsAndHttpInputs) {
  const ServeConfig config = parse_serve_config(R"(
inputs:
  - name: secure
    type: syslog_tcp
    tls: {cert: /etc/s.pem, key: /etc/s.key, client_ca: /etc/ca.pem}
  - {name: web, type: http, listen: "127.0.0.1:8080"}
service:
  limits: {max_body_bytes: 4MiB}
)",
                                                "tls.yaml");
  ASSERT_EQ(config.inputs.size(), 2U);
  EXPECT_TRUE(config.inputs[0].tls.enabled());
  EXPECT_EQ(config.inputs[0].tls.client_ca, "/etc/ca.pem");
  EXPECT_EQ(config.inputs[1].type, InputType::http);
  EXPECT_EQ(config.inputs[1].format, conveyor::stages::Format::json);
  EXPECT_FALSE(config.inputs[1].tls.enabled());
  EXPECT_EQ(config.limits.max_body_bytes, 4U << 20U);

  EXPECT_NE(error_of("inputs:\n  - {type: syslog_udp, tls: {cert: a, key: b}}\n")
                .find("test.yaml:2:29: inputs[0].tls is for syslog_tcp, tcp and http inputs"),
            std::string::npos);
  EXPECT_NE(error_of("inputs:\n  - {type: tcp, tls: {cert: a}}\n")
                .find("inputs[0].tls needs both cert and key"),
            std::string::npos);
  EXPECT_NE(error_of("inputs:\n  - {type: tcp, tls: {cert: a, key: b, ca: c}}\n")
                .find("unknown key 'inputs[0].tls.ca'"),
            std::string::npos);
}

}  // namespace

namespace {

TEST(ServeConfig, FlushAndRotatePolicies) {
  const ServeConfig config = parse_serve_config(R"(
outputs:
  flush: {records: 1000, interval: 200ms}
  rotate: {size: 100MiB, interval: 1h, keep: 5}
)",
                                                "policy.yaml");
  EXPECT_EQ(config.output.flush_records, 1000U);
  EXPECT_EQ(config.output.flush_interval, std::chrono::milliseconds(200));
  EXPECT_EQ(config.output.rotate_bytes, 100U << 20U);
  EXPECT_EQ(config.output.rotate_interval, std::chrono::hours(1));
  EXPECT_EQ(config.output.keep, 5U);
  EXPECT_FALSE(config.output.fsync);
  const ServeConfig defaults = parse_serve_config("", "empty.yaml");
  EXPECT_EQ(defaults.output, conveyor::log_ingest::OutputPolicy{});
  EXPECT_NE(error_of("outputs:\n  rotate: {keep: 0}\n").find("outputs.rotate.keep must be between"),
            std::string::npos);
  EXPECT_NE(error_of("outputs:\n  flush: {every: 3}\n").find("unknown key 'outputs.flush.every'"),
            std::string::npos);
}

TEST(ServeConfig, FileInputs) {
  const ServeConfig config = parse_serve_config(R"(
inputs:
  - name: nginx
    type: file
    include: ["/var/log/nginx/**/*.log"]
    exclude: ["/var/log/nginx/old/*"]
    read_from: end
    glob_interval: 2s
    rotate_wait: 10s
    partial_line_timeout: 500ms
    checkpoint_interval: 250ms
    max_line_bytes: 1MiB
    max_open_files: 64
    close_idle: 30s
    linger: 2ms
    watch: poll
service:
  state_dir: /tmp/state
)",
                                                "file.yaml");
  ASSERT_EQ(config.inputs.size(), 1U);
  const auto& file = config.inputs[0].file;
  EXPECT_EQ(config.inputs[0].type, InputType::file);
  EXPECT_EQ(config.inputs[0].format, conveyor::stages::Format::combined);
  EXPECT_EQ(file.include, std::vector<std::string>{"/var/log/nginx/**/*.log"});
  EXPECT_EQ(file.exclude, std::vector<std::string>{"/var/log/nginx/old/*"});
  EXPECT_TRUE(file.read_from_end);
  EXPECT_EQ(file.glob_interval, std::chrono::seconds(2));
  EXPECT_EQ(file.rotate_wait, std::chrono::seconds(10));
  EXPECT_EQ(file.partial_line_timeout, std::chrono::milliseconds(500));
  EXPECT_EQ(file.checkpoint_interval, std::chrono::milliseconds(250));
  EXPECT_EQ(file.max_line_bytes, 1U << 20U);
  EXPECT_EQ(file.max_open_files, 64U);
  EXPECT_EQ(file.close_idle, std::chrono::seconds(30));
  EXPECT_EQ(file.linger, std::chrono::milliseconds(2));
  EXPECT_FALSE(file.inotify);
  EXPECT_EQ(config.state_dir, "/tmp/state");

  EXPECT_NE(error_of("inputs:\n  - {type: file}\n").find("it needs include"), std::string::npos);
  EXPECT_NE(error_of("inputs:\n  - {type: tcp, include: [a]}\n").find("are for file inputs"),
            std::string::npos);
  EXPECT_NE(error_of("inputs:\n  - {type: file, include: [a], read_from: middle}\n")
                .find("must be beginning or end"),
            std::string::npos);
  EXPECT_NE(error_of("inputs:\n  - {type: file, include: [\"\"]}\n").find("an empty glob"),
            std::string::npos);
}

}  // namespace
