// The log-ingest pipeline:
//
//   read (source) -> parse (parallel) -> tee -> count (parallel, fused into parse)
//                                            -> write (serial, in order)
//
// `read` makes chunks of whole lines; `parse` turns each into records, dead letters and JSON
// text. Each batch then goes two ways side by side: `count` adds its records to the partial
// summary of the worker that parsed it (stages::Tallies), on that worker while the records are in
// its cache, and `write` writes its text in the input's order. The partial summaries are merged
// once the run is over.
#include "run.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "conveyor/framework.hpp"
#include "conveyor/stages/file_source.hpp"
#include "conveyor/stages/filter.hpp"
#include "conveyor/stages/live_totals.hpp"
#include "conveyor/stages/memory_source.hpp"
#include "conveyor/stages/parse_stage.hpp"
#include "conveyor/stages/summary.hpp"
#include "conveyor/stages/tallies.hpp"
#include "conveyor/stages/tally_stage.hpp"
#include "conveyor/stages/write_stage.hpp"
#include "filter_error.hpp"
#include "progress.hpp"
#include "sample.hpp"

#ifdef CONVEYOR_HAS_PROMETHEUS
#include "conveyor/prometheus/metrics_server.hpp"
#include "conveyor/prometheus/pipeline_metrics.hpp"
#include "live_metrics.hpp"
#endif

namespace conveyor::log_ingest {

namespace {

namespace fs = std::filesystem;
using stages::Chunk;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr bool sanitizer_build = true;
#else
constexpr bool sanitizer_build = false;
#endif

std::atomic<Pipeline*> interrupted_pipeline{nullptr};
std::atomic<stages::FileSource*> interrupted_source{nullptr};
std::atomic<bool> interrupted{false};

// Ctrl-C (and SIGTERM): the source stops, even inside a read from a quiet pipe, and what is in
// flight drains; the summary so far is then written, marked partial.
extern "C" void on_interrupt(int signal) {
  const int saved_errno = errno;  // write(2) and the futex wake below may change it
  interrupted.store(true, std::memory_order_relaxed);
  if (stages::FileSource* source = interrupted_source.load(std::memory_order_acquire)) {
    // The files end their stream themselves, after handing out what they had read; a stop
    // request would drop the chunk a read returns after it.
    source->cancel();  // a lock-free store and a write(2)
  } else if (Pipeline* pipeline = interrupted_pipeline.load(std::memory_order_acquire)) {
    pipeline->request_stop();  // the embedded sample: lock-free, sets a bit and wakes the workers
  }
  std::signal(signal, SIG_DFL);  // a second one ends the process at once
  errno = saved_errno;
}

// An output path as the options give it: "" means the default in out_dir.
struct Destination {
  std::string path;  // "-" is stdout; empty is none
  bool is_default = false;
};

Destination destination(const std::string& given, const std::string& out_dir,
                        const char* default_name) {
  if (given == "none") return {};
  if (given.empty()) return {(fs::path(out_dir) / default_name).string(), true};
  return {given, false};
}

stages::OutputFile open_output(const Destination& where) {
  if (where.path.empty()) return {};
  if (where.path == "-") return {stdout, "stdout", 0};
  if (where.is_default || fs::path(where.path).has_parent_path()) {
    std::error_code ignored;
    fs::create_directories(fs::path(where.path).parent_path(), ignored);
  }
  std::FILE* file = std::fopen(where.path.c_str(), "wb");
  if (file == nullptr) {
    throw stages::InputError("cannot write '" + where.path +
                             "': " + std::generic_category().message(errno));
  }
  return {file, where.path, 0};
}

void close_output(stages::OutputFile& output) {
  if (output.file == nullptr) return;
  if (output.file == stdout) {
    // What stdio still held goes out now: a pipe closed or a full device shows here.
    const bool flushed = std::fflush(stdout) == 0 && std::ferror(stdout) == 0;
    output.file = nullptr;
    if (!flushed) throw std::runtime_error("cannot finish writing to stdout");
  } else if (std::fclose(output.file) != 0) {
    output.file = nullptr;
    throw std::runtime_error("cannot finish writing '" + output.name + "'");
  }
  output.file = nullptr;
}

// Whether two paths name one file: the same file if both exist, else the same path.
bool same_file(const std::string& a, const std::string& b) {
  std::error_code error;
  if (fs::exists(a, error) && fs::exists(b, error)) return fs::equivalent(a, b, error);
  return fs::weakly_canonical(a, error) == fs::weakly_canonical(b, error);
}

// The reason the outputs cannot be opened as given (each is emptied when it is opened), or
// nothing: an output that is one of the inputs, or one file named for two outputs.
std::optional<std::string> outputs_clash(const std::vector<std::string>& inputs,
                                         const std::vector<const Destination*>& outputs) {
  const auto is_file = [](const std::string& path) { return !path.empty() && path != "-"; };
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const std::string& path = outputs[i]->path;
    if (!is_file(path)) continue;
    for (const std::string& input : inputs) {
      if (is_file(input) && same_file(path, input)) {
        std::string why = "the output '";
        why.append(path).append("' is the input '").append(input);
        return why.append("': opening it would empty it before it is read");
      }
    }
    for (std::size_t j = i + 1; j < outputs.size(); ++j) {
      if (is_file(outputs[j]->path) && same_file(path, outputs[j]->path)) {
        std::string why = "'";
        return why.append(path).append("' is named for two outputs");
      }
    }
  }
  return std::nullopt;
}

}  // namespace

int run_ingest(const RunOptions& options) {
  std::shared_ptr<stages::ParseConfig> config = std::make_shared<stages::ParseConfig>();
  std::optional<stages::Filter> filter = parse_filter("--where", options.where);
  if (!filter) return 2;
  config->filter = std::move(*filter);
  const std::size_t workers =
      options.workers != 0 ? options.workers : std::max(1U, std::thread::hardware_concurrency());
  config->projection.fields = options.fields;
  config->max_line_length = options.max_line_length;
  config->syslog_year = stages::current_utc_year();

  // The source: the files, or the embedded sample.
  const stages::FileSourceOptions source_options{options.chunk_size, options.max_line_length,
                                                 options.format};
  std::unique_ptr<stages::FileSource> files;
  std::unique_ptr<stages::MemorySource> sample;
  try {
    if (options.inputs.empty()) {
      sample = std::make_unique<stages::MemorySource>(
          "(embedded sample)", make_sample({.lines = options.sample_lines}), source_options);
    } else {
      files = std::make_unique<stages::FileSource>(options.inputs, source_options);
    }
  } catch (const stages::InputError& error) {
    std::fprintf(stderr, "log-ingest: %s\n", error.what());
    return 1;
  }

  auto outputs = std::make_shared<stages::Outputs>();
  const Destination records_to = destination(options.output, options.out_dir, "records.jsonl");
  const Destination summary_to = destination(options.summary, options.out_dir, "summary.json");
  const Destination dead_to =
      destination(options.dead_letter, options.out_dir, "dead-letters.jsonl");
  if (const auto clash = outputs_clash(options.inputs, {&records_to, &dead_to, &summary_to})) {
    std::fprintf(stderr, "log-ingest: %s\n", clash->c_str());
    return 2;
  }
  try {
    outputs->records = open_output(records_to);
    outputs->dead_letters = open_output(dead_to);
  } catch (const stages::InputError& error) {
    std::fprintf(stderr, "log-ingest: %s\n", error.what());
    close_output(outputs->records);
    return 1;
  }
  // The records and dead letters are being rewritten: a summary of an earlier run must not stay
  // beside them if this one fails before it writes its own.
  if (!summary_to.path.empty() && summary_to.path != "-") {
    std::error_code ignored;
    fs::remove(summary_to.path, ignored);
  }
  config->write_records = outputs->records.file != nullptr;
  config->write_dead_letters = outputs->dead_letters.file != nullptr;

  std::vector<std::shared_ptr<const stages::Input>> inputs_seen;
  const auto next_chunk = [&]() -> std::optional<Chunk> {
    std::optional<Chunk> chunk = files ? files->next() : sample->next();
    if (chunk && (inputs_seen.empty() || inputs_seen.back() != chunk->input)) {
      inputs_seen.push_back(chunk->input);
    }
    return chunk;
  };

  // Reading files (or the embedded sample) never waits for long, so the whole pipeline runs on a
  // oneTBB arena of `workers` threads: --workers is the number of cores the run uses, and one
  // worker is one thread. A pipe or a terminal may keep the reader waiting for minutes, which
  // would hold one of the arena's threads; then every stage has a thread of its own, so that what
  // was read is processed meanwhile.
  const bool may_wait = files && !files->regular_files();
  // The sanitizers cannot follow oneTBB's suspended tasks (Debian's libtbb switches stacks without
  // telling them; see tests/support/task_suspension.hpp): their builds keep a thread per stage.
  // The counts so far, which the aggregation workers update together and the metrics endpoint
  // reads (a GroupLock with the groups "update" and "snapshot"). Declared before the pipeline,
  // which reports its lock's statistics.
  auto live = std::make_shared<Shared<stages::LiveTotals>>(
      "live-totals", std::vector<std::string>{"update", "snapshot"}, stages::LiveTotals(workers));
  Pipeline pipeline(
      {.name = "log-ingest",
       .executor = may_wait || sanitizer_build ? Executor::threads() : Executor::tbb(workers),
       .sample_interval = std::chrono::milliseconds(200)});
  pipeline.track(*live);
  if (options.progress) {
    pipeline.add_observer(std::make_shared<ProgressBar>(
        [&] { return files ? files->bytes_read() : sample->bytes_read(); },
        [&] { return files ? files->bytes_total() : sample->bytes_total(); }));
  }
#ifdef CONVEYOR_HAS_PROMETHEUS
  std::unique_ptr<prometheus::MetricsServer> server;
  if (!options.metrics_listen.empty()) {
    try {
      server = std::make_unique<prometheus::MetricsServer>(
          prometheus::MetricsServerOptions{.listen = options.metrics_listen});
    } catch (const prometheus::MetricsServerError& error) {
      std::fprintf(stderr, "log-ingest: %s\n", error.what());
      return 1;
    }
    auto metrics = std::make_shared<prometheus::PipelineMetrics>();
    server->add(metrics);
    server->add(std::make_shared<LiveMetrics>(live));
    server->set_readiness([metrics] { return metrics->ready(); });
    pipeline.add_observer(metrics);
    std::fprintf(stderr, "log-ingest: serving metrics on http://%s/metrics\n",
                 server->address().c_str());
  }
#else
  if (!options.metrics_listen.empty()) {
    std::fprintf(stderr, "log-ingest: built without prometheus-cpp: --metrics-listen is ignored\n");
  }
#endif

  // A top list tracks at least four times the keys it shows, so that what it shows is found.
  stages::SummaryOptions summary_options = options.summary_options;
  summary_options.top_capacity = std::max(summary_options.top_capacity, 4 * options.top);
  // Each batch, shared, to the count and the writer side by side. `count` is fused into the
  // parse stage: each parse worker counts the batches it parsed, while their records are in its
  // cache; the writer takes them through a channel, in the input's order.
  auto tallies = std::make_shared<stages::Tallies>(workers, summary_options, live);
  using Parsed = std::shared_ptr<const stages::Batch>;
  auto parse = [parser = stages::ParseStage(config)](Chunk chunk, Emit<Parsed>& emit) mutable {
    emit(std::make_shared<const stages::Batch>(parser.parse(std::move(chunk), emit.worker())));
  };
  pipeline.source(next_chunk, {.name = "read"}) |
      stage(std::move(parse), {.name = "parse",
                               .mode = Mode::parallel,
                               .workers = workers,
                               .channel = Channel::queue(2)}) |
      tee(chain<Parsed>() | sink(stages::TallyStage(tallies),
                                 {.name = "count", .mode = Mode::parallel, .fuse = Fuse::always}),
          chain<Parsed>() |
              sink(stages::WriteSink(outputs),
                   {.name = "write", .mode = Mode::serial_in_order, .channel = Channel::queue(4)}));

  interrupted.store(false, std::memory_order_relaxed);
  interrupted_source.store(files.get(), std::memory_order_release);
  interrupted_pipeline.store(&pipeline, std::memory_order_release);
  const auto previous_int = std::signal(SIGINT, on_interrupt);
  const auto previous_term = std::signal(SIGTERM, on_interrupt);
  int status = 0;
  try {
    pipeline.run();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "log-ingest: %s\n", error.what());
    status = 1;
  }
  std::signal(SIGINT, previous_int);
  std::signal(SIGTERM, previous_term);
  interrupted_pipeline.store(nullptr, std::memory_order_release);
  interrupted_source.store(nullptr, std::memory_order_release);

  try {
    close_output(outputs->records);
    close_output(outputs->dead_letters);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "log-ingest: %s\n", error.what());
    status = 1;
  }
  if (status != 0) return status;

  const PipelineStats stats = pipeline.stats();
  stages::Summary summary = tallies->merged();
  summary.partial = interrupted.load(std::memory_order_relaxed);
  summary.elapsed_seconds = stats.elapsed_seconds;
  summary.input_bytes = files ? files->bytes_read() : sample->bytes_read();
  for (const auto& input : inputs_seen) {
    summary.inputs.push_back(
        {input->name, std::string(stages::to_string(input->format)), input->gzip});
  }

  if (!summary_to.path.empty()) {
    try {
      stages::OutputFile file = open_output(summary_to);
      const std::string json = summary.to_json(options.top);
      const bool whole = std::fwrite(json.data(), 1, json.size(), file.file) == json.size();
      close_output(file);
      if (!whole) throw std::runtime_error("cannot write the summary to '" + file.name + "'");
    } catch (const std::exception& error) {
      std::fprintf(stderr, "log-ingest: %s\n", error.what());
      return 1;
    }
  }

  if (!options.quiet) {
    std::FILE* terminal =
        records_to.path == "-" || dead_to.path == "-" || summary_to.path == "-" ? stderr : stdout;
    const std::string table = summary.to_table(options.top);
    std::fputs(table.c_str(), terminal);
    std::fputs("\n", terminal);
    const auto where = [&](const char* what, const Destination& to, const std::string& detail) {
      if (to.path.empty()) return;
      std::fprintf(terminal, "  %-13s %s%s\n", what, to.path == "-" ? "stdout" : to.path.c_str(),
                   detail.c_str());
    };
    where("records", records_to, " (" + std::to_string(summary.counts.records) + " records)");
    where("dead letters", dead_to, " (" + std::to_string(summary.counts.rejected) + " lines)");
    where("summary", summary_to, "");
    std::fflush(terminal);
  }
  return 0;
}

}  // namespace conveyor::log_ingest
