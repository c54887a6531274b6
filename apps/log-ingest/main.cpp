// log-ingest: turns log files into clean JSON records, dead letters and a summary.
//
//   log-ingest run                                  the embedded sample (200k lines)
//   log-ingest run --input access.log --where 'status>=500'
//   log-ingest generate --lines 1000000 > big.log   the sample generator, for benchmarks
//   log-ingest generate --profile realistic --size 1GiB -o big.log
//   log-ingest serve                                syslog on 127.0.0.1:5514 (docs/serve.md)
//   log-ingest serve --config /etc/log-ingest/log-ingest.yaml
//   log-ingest validate --config /etc/log-ingest/log-ingest.yaml
//   log-ingest --version
//
// Exit status: 0 when the run finished (rejected lines are reported, not failures); 1 for an I/O
// error (a missing file is named); 2 for a bad command line or filter expression.
#include <malloc.h>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <limits>
#include <string>

#include "conveyor/stages/record.hpp"
#include "load_generator.hpp"
#include "run.hpp"
#include "sample.hpp"
#include "serve.hpp"

#ifndef CONVEYOR_VERSION
#define CONVEYOR_VERSION "unknown"
#endif

namespace {

using conveyor::log_ingest::RunOptions;
using conveyor::log_ingest::SampleFormat;

constexpr const char* examples = R"(
Examples:
  log-ingest run                                   # the embedded sample: a summary table
  log-ingest run --input /var/log/apache2/access.log --where 'status>=500'
  log-ingest run --input a.log --input b.log.gz --output - --summary none
  log-ingest run --input app.jsonl --format json --fields time,path,status,duration
  log-ingest run --input /var/log/auth.log --where 'program==sshd and message~Failed'
  zcat old.log.gz | log-ingest run --input - --progress
  log-ingest generate --lines 5000000 --format json > big.jsonl
  log-ingest generate --size 1GiB --output big.log
  log-ingest generate --profile realistic --size 1GiB --format json -o big.jsonl
  log-ingest generate --to tcp://127.0.0.1:5514 --rate 50000 --lines 1000000 --connections 8
  log-ingest serve                                 # syslog on 127.0.0.1:5514, TCP and UDP
  log-ingest serve --config deploy/log-ingest.yaml
  log-ingest validate --config deploy/log-ingest.yaml
See docs/log-ingest.md for the formats, the filter language and the summary, and docs/serve.md
for the service.)";

void add_serve_flags(CLI::App& command, conveyor::log_ingest::ServeFlags& flags) {
  command.add_option("-c,--config", flags.config, "The YAML configuration (docs/serve.md)");
  command.add_option("--listen-syslog", flags.listen_syslog,
                     "Syslog over TCP (RFC 6587) and UDP on HOST:PORT, in place of the "
                     "configuration's syslog inputs");
  command.add_option("--listen-tcp", flags.listen_tcp, "Plain lines over TCP on HOST:PORT");
  command.add_option("--format", flags.format, "The format of --listen-tcp's lines")
      ->check(CLI::IsMember({"common", "combined", "json", "syslog"}));
  command.add_flag("--stdin", flags.stdin_input, "Also read plain lines from stdin");
  command.add_option("-o,--output", flags.output, "Records as JSON lines: FILE, - or none");
  command.add_option("--metrics-listen", flags.metrics_listen,
                     "Serve /metrics, /healthz and /readyz on HOST:PORT, or none");
}

// Writes the generator's lines until `lines` were made or, when `bytes` is not 0, until `bytes`
// were written (whole lines: the file ends at the first line end past the size). `syslog`: each
// line as an RFC 5424 message, one per line.
int generate(conveyor::log_ingest::SampleOptions options, std::uint64_t bytes,
             const std::string& output, bool syslog) {
  std::FILE* out = output == "-" ? stdout : std::fopen(output.c_str(), "wb");
  if (out == nullptr) {
    std::fprintf(stderr, "log-ingest: cannot write '%s'\n", output.c_str());
    return 1;
  }
  if (bytes != 0) {
    // The timestamps span two hours of the lines that make about `bytes`.
    options.expected_lines = conveyor::log_ingest::estimate_lines(options, bytes);
    options.lines = std::numeric_limits<std::uint64_t>::max();
  }
  conveyor::log_ingest::SampleGenerator generator(options);
  std::string buffer;
  std::string line;
  std::uint64_t written = 0;
  std::uint64_t number = 0;
  const std::string timestamp = "2026-11-01T00:00:00.000Z";
  bool more = true;
  while (more) {
    buffer.clear();
    while (buffer.size() < (1U << 20U)) {
      if (syslog) {
        line.clear();
        if (!(more = generator.next(line))) break;
        line.pop_back();
        conveyor::log_ingest::append_syslog5424(buffer, line, number++, timestamp,
                                                conveyor::log_ingest::SyslogFrame::lf);
      } else if (!(more = generator.next(buffer))) {
        break;
      }
      if (bytes != 0 && written + buffer.size() >= bytes) {
        more = false;
        break;
      }
    }
    written += buffer.size();
    if (std::fwrite(buffer.data(), 1, buffer.size(), out) != buffer.size()) {
      std::fprintf(stderr, "log-ingest: cannot write '%s'\n", output.c_str());
      if (out != stdout) (void)std::fclose(out);
      return 1;
    }
  }
  // What stdio still holds is written here: a full disk (or /dev/full) fails now, if not before.
  const bool flushed = std::fflush(out) == 0 && std::ferror(out) == 0;
  const bool closed = out == stdout || std::fclose(out) == 0;
  if (!flushed || !closed) {
    std::fprintf(stderr, "log-ingest: cannot write '%s'\n", output.c_str());
    return 1;
  }
  return 0;
}

int main_guarded(int argc, char** argv) {
  CLI::App app{"log-ingest: logs in, clean JSON records, dead letters and a summary out"};
  app.footer(examples);
  app.set_version_flag("--version", std::string("log-ingest (conveyor) ") + CONVEYOR_VERSION);
  app.require_subcommand(1);

  RunOptions run;
  std::string format = "auto";
  CLI::App* run_command =
      app.add_subcommand("run", "Ingest logs (the embedded sample if no --input)");
  run_command->add_option("-i,--input", run.inputs,
                          "A log file, gzip or not; - for stdin (repeatable)");
  run_command->add_option("-f,--format", format, "Input format")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "common", "combined", "json", "syslog"}));
  run_command->add_option(
      "-w,--where", run.where,
      "Keep records that match, e.g. 'status>=500 and path~^/api' (repeatable: all must match)");
  run_command->add_option("--fields", run.fields, "Fields of the records written, in order")
      ->delimiter(',');
  run_command->add_option(
      "-o,--output", run.output,
      "Records as JSON lines: FILE, - (stdout) or none [default: OUT_DIR/records.jsonl]");
  run_command->add_option("--summary", run.summary,
                          "Summary as JSON: FILE, - or none [default: OUT_DIR/summary.json]");
  run_command->add_option("--dead-letter", run.dead_letter,
                          "Rejected lines: FILE, - or none [default: OUT_DIR/dead-letters.jsonl]");
  run_command->add_option("--out-dir", run.out_dir, "Where the default outputs go")
      ->capture_default_str();
  run_command
      ->add_option("--workers", run.workers,
                   "Cores to use: parse workers, and on files the threads every stage shares (0: "
                   "one per core)")
      ->capture_default_str()
      ->check(CLI::Range(0, 256));
  run_command->add_flag("--progress", run.progress,
                        "A progress bar on stderr (when it is a terminal)");
  run_command->add_option("--metrics-listen", run.metrics_listen,
                          "Serve Prometheus metrics while running, on HOST:PORT");
  run_command->add_option("--top", run.top, "Entries in the summary's top lists")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  run_command
      ->add_option("--top-capacity", run.summary_options.top_capacity,
                   "Keys each top list tracks (Space-Saving; at least 4 x --top): memory is "
                   "bounded, and counts are exact until a list has more distinct keys than this")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{16}, std::size_t{1} << 24U));
  run_command->add_flag("--exact", run.summary_options.exact,
                        "Count every distinct path, client and program exactly (memory grows "
                        "with their number)");
  run_command->add_option("--sample-lines", run.sample_lines, "Lines of the embedded sample")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{10'000'000}));
  run_command
      ->add_option("--max-line-length", run.max_line_length, "Longer lines are dead-lettered")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{16}, std::size_t{1} << 30U));
  run_command->add_flag("-q,--quiet", run.quiet, "No summary table on the terminal");

  std::uint64_t lines = 200'000;
  std::uint64_t seed = 42;
  std::string sample_format;
  std::string sample_profile = "small";
  std::string sample_output = "-";
  CLI::App* generate_command =
      app.add_subcommand("generate", "Write the sample generator's log (for tests and benchmarks)");
  std::uint64_t size = 0;
  generate_command->add_option("--lines", lines, "Lines to write")->capture_default_str();
  generate_command
      ->add_option("--size", size, "Write this much instead (e.g. 1GiB), ending on a whole line")
      ->transform(CLI::AsSizeValue(false));
  generate_command->add_option("--seed", seed, "Random seed: the same seed, the same bytes")
      ->capture_default_str();
  generate_command
      ->add_option("--format", sample_format,
                   "Log format: combined, json, or syslog5424 (each line as nginx sends it to "
                   "syslog); with --to, syslog5424 unless given")
      ->check(CLI::IsMember({"combined", "json", "syslog5424"}));
  generate_command
      ->add_option("--profile", sample_profile,
                   "small (the embedded sample), realistic (two hours of a shop: many distinct "
                   "paths and clients) or distinct (realistic, every path unique)")
      ->capture_default_str()
      ->check(CLI::IsMember({"small", "realistic", "distinct"}));
  generate_command->add_option("-o,--output", sample_output, "File, or - for stdout")
      ->capture_default_str();
  conveyor::log_ingest::LoadOptions load;
  std::string framing = "octet";
  generate_command->add_option("--to", load.to,
                               "Send to a log service instead: tcp://HOST:PORT, udp://HOST:PORT "
                               "or file://PATH");
  generate_command->add_option("--rate", load.rate, "With --to: messages per second (0: no limit)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  generate_command
      ->add_option("--connections", load.connections, "With --to: connections, each a thread")
      ->capture_default_str()
      ->check(CLI::Range(1U, 4096U));
  generate_command->add_option("--framing", framing, "With --to tcp:// and syslog5424: octet or lf")
      ->capture_default_str()
      ->check(CLI::IsMember({"octet", "lf"}));
  generate_command->add_option("--from", load.from,
                               "With --to: send this file's lines, each one message, instead of "
                               "generating them (framed by --framing over TCP)");
  generate_command->add_option(
      "--latency", load.latency_file,
      "With --to: follow this output file of the service and report the latency from send to "
      "write of the marked messages");
  generate_command
      ->add_option("--probe-every", load.probe_every,
                   "With --latency: mark one message in this many")
      ->capture_default_str()
      ->check(CLI::Range(1U, 1000000U));

  conveyor::log_ingest::ServeFlags serve_flags;
  CLI::App* serve_command = app.add_subcommand(
      "serve", "Run as a service: receive logs over the network until SIGTERM (docs/serve.md)");
  add_serve_flags(*serve_command, serve_flags);
  conveyor::log_ingest::ServeFlags validate_flags;
  CLI::App* validate_command = app.add_subcommand(
      "validate", "Check a serve configuration: exit 0, or 1 with the error and where it is");
  add_serve_flags(*validate_command, validate_flags);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : 2;
  }
  if (*generate_command) {
    const conveyor::log_ingest::SampleOptions sample{
        .lines = lines,
        .seed = seed,
        .format = sample_format == "json" ? SampleFormat::json : SampleFormat::combined,
        .profile = *conveyor::log_ingest::parse_profile(sample_profile)};
    if (!load.to.empty()) {
      load.sample = sample;
      load.format = sample_format.empty() ? "syslog5424" : sample_format;
      load.octet_counting = framing == "octet";
      return conveyor::log_ingest::send_load(load);
    }
    return generate(sample, size, sample_output, sample_format == "syslog5424");
  }
  if (*validate_command) return conveyor::log_ingest::validate_config(validate_flags);
  if (*serve_command) {
    conveyor::log_ingest::ServeConfig config;
    try {
      config = conveyor::log_ingest::serve_config_from(serve_flags);
    } catch (const conveyor::log_ingest::ConfigError& error) {
      std::fprintf(stderr, "log-ingest: %s\n", error.what());
      return 2;
    }
    return conveyor::log_ingest::run_serve(
        config, [&serve_flags] { return conveyor::log_ingest::serve_config_from(serve_flags); });
  }
  run.format = *conveyor::stages::parse_format(format);
  return conveyor::log_ingest::run_ingest(run);
}

}  // namespace

int main(int argc, char** argv) {
  // Chunks and the text made from them are megabytes each and come and go all the time. By
  // default glibc hands blocks that big back to the kernel (mmap and munmap, heap trimming) and
  // the next one is faulted in again page by page: measured, a fifth of the CPU time on a virtual
  // machine. Keeping them in the heap costs no more memory than the pipeline holds at its peak.
  // NOLINTBEGIN(concurrency-mt-unsafe): the first thing main does, before any other thread.
  ::mallopt(M_MMAP_THRESHOLD, 64 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 512 << 20);
  // NOLINTEND(concurrency-mt-unsafe)
  try {
    return main_guarded(argc, argv);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "log-ingest: %s\n", error.what());
  } catch (...) {
    std::fprintf(stderr, "log-ingest: unknown error\n");
  }
  return 1;
}
