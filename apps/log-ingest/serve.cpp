// `log-ingest serve`: inputs on an I/O thread, the pipeline on its workers, signals, the drain and
// the accounting.
#include "serve.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "conveyor/framework.hpp"
#include "conveyor/stages/filter.hpp"
#include "conveyor/stages/json_writer.hpp"
#include "conveyor/stages/live_totals.hpp"
#include "conveyor/stages/parse_stage.hpp"
#include "conveyor/stages/tallies.hpp"
#include "descriptor_budget.hpp"
#include "filter_error.hpp"
#include "ingress.hpp"
#include "input_set.hpp"
#include "serve_writer.hpp"
#include "service_input.hpp"
#include "systemd_notify.hpp"

#ifdef CONVEYOR_HAS_PROMETHEUS
#include "conveyor/prometheus/metrics_server.hpp"
#include "conveyor/prometheus/pipeline_metrics.hpp"
#include "live_metrics.hpp"
#include "serve_metrics.hpp"
#endif

namespace conveyor::log_ingest {

namespace {

namespace asio = boost::asio;
using std::chrono::steady_clock;

// Everything counted so far, and whether it adds up.
struct Tally {
  std::uint64_t received = 0;
  std::uint64_t written = 0;
  std::uint64_t rejected = 0;
  std::uint64_t filtered = 0;
  std::uint64_t dropped = 0;
  std::uint64_t lost_on_output = 0;

  [[nodiscard]] std::uint64_t accounted() const {
    return written + rejected + filtered + dropped + lost_on_output;
  }
  [[nodiscard]] std::string line() const {
    const std::uint64_t unaccounted = received > accounted() ? received - accounted() : 0;
    return "received=" + std::to_string(received) + " written=" + std::to_string(written) +
           " rejected=" + std::to_string(rejected) + " filtered=" + std::to_string(filtered) +
           " dropped=" + std::to_string(dropped) +
           " lost_on_output=" + std::to_string(lost_on_output) +
           " lost=" + std::to_string(unaccounted);
  }
};

// For the tests: CONVEYOR_WRITE_FAULT=N makes the write of the Nth batch throw, which fails the
// pipeline as a bug or a bad_alloc in a stage would.
std::uint64_t write_fault() {
  // Read once, before any thread starts, and nothing in the service sets the environment.
  const char* text = std::getenv("CONVEYOR_WRITE_FAULT");  // NOLINT(concurrency-mt-unsafe)
  return text != nullptr ? std::strtoull(text, nullptr, 10) : 0;
}

Tally tally(const InputSet& inputs, const Accounting& counts) {
  Tally result;
  for (const InputCounters* input : inputs.counters()) {
    result.received += InputCounters::read(input->received);
    result.dropped += InputCounters::read(input->dropped);
  }
  result.written = counts.written.load(std::memory_order_relaxed);
  result.rejected = counts.rejected.load(std::memory_order_relaxed);
  result.filtered = counts.filtered.load(std::memory_order_relaxed);
  result.lost_on_output = counts.lost_on_output.load(std::memory_order_relaxed);
  return result;
}

#ifdef CONVEYOR_HAS_PROMETHEUS
// GET /summary: the totals and the closed windows; ?window=current: the window in progress.
prometheus::Page summary_page(stages::Tallies& tallies, std::size_t top, std::string_view query) {
  const auto json = [top](const stages::Summary& summary) {
    std::string text = summary.to_json(top);
    if (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
  };
  const auto window = [&json](const stages::Tallies::Window& w) {
    const auto seconds = [](std::chrono::system_clock::time_point at) {
      return std::chrono::duration_cast<std::chrono::seconds>(at.time_since_epoch()).count();
    };
    std::string text = R"({"start":")";
    text.append(stages::format_time(seconds(w.start))).append(R"(","end":")");
    text.append(stages::format_time(seconds(w.end))).append(R"(","summary":)");
    return text.append(json(w.summary)).append("}");
  };
  if (query == "window=current") return {.body = window(tallies.current()) + "\n"};
  if (!query.empty()) {
    return {.status = 400,
            .body = R"({"error":"the query may be window=current, or none"})"
                    "\n"};
  }
  std::string body = R"({"window_seconds":)";
  body.append(
      std::to_string(std::chrono::duration<double>(tallies.window_options().width).count()));
  body.append(R"(,"totals":)").append(json(tallies.totals())).append(R"(,"windows":[)");
  bool first = true;
  for (const stages::Tallies::Window& w : tallies.windows()) {
    if (!first) body.push_back(',');
    first = false;
    body.append(window(w));
  }
  return {.body = body.append("]}\n")};
}
#endif

// The addresses `serve` would bind; throws ConfigError for one that is not HOST:PORT.
void check_addresses(const ServeConfig& config) {
  for (const InputConfig& input : config.inputs) {
    if (input.type == InputType::stdin_lines) continue;
    try {
      (void)parse_endpoint(input.listen);
    } catch (const std::invalid_argument& error) {
      throw ConfigError(config.file + ": input '" + input.name + "': listen " + error.what());
    }
  }
  if (config.metrics_listen != "none") {
    try {
      (void)parse_endpoint(config.metrics_listen);
    } catch (const std::invalid_argument& error) {
      throw ConfigError(config.file + ": service.metrics_listen " + error.what());
    }
  }
}

}  // namespace

ServeConfig serve_config_from(const ServeFlags& flags) {
  ServeConfig config =
      flags.config.empty() ? default_serve_config() : load_serve_config(flags.config);
  if (!flags.listen_syslog.empty()) {
    config.inputs.erase(std::remove_if(config.inputs.begin(), config.inputs.end(),
                                       [](const InputConfig& input) {
                                         return input.type == InputType::syslog_tcp ||
                                                input.type == InputType::syslog_udp;
                                       }),
                        config.inputs.end());
    config.inputs.push_back(
        {"syslog_tcp", InputType::syslog_tcp, flags.listen_syslog, stages::Format::syslog});
    config.inputs.push_back(
        {"syslog_udp", InputType::syslog_udp, flags.listen_syslog, stages::Format::syslog});
  }
  if (!flags.listen_tcp.empty()) {
    const std::optional<stages::Format> format =
        stages::parse_format(flags.format.empty() ? "combined" : flags.format);
    if (!format || *format == stages::Format::auto_detect) {
      throw ConfigError("--format must be common, combined, json or syslog");
    }
    config.inputs.push_back({"tcp", InputType::tcp, flags.listen_tcp, *format});
  }
  if (flags.stdin_input) {
    config.inputs.push_back({"stdin", InputType::stdin_lines, "", stages::Format::combined});
  }
  if (!flags.output.empty()) config.records = flags.output;
  if (!flags.metrics_listen.empty()) config.metrics_listen = flags.metrics_listen;
  for (std::size_t i = 0; i < config.inputs.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (config.inputs[i].name == config.inputs[j].name) {
        throw ConfigError("two inputs are named '" + config.inputs[i].name + "'");
      }
    }
  }
  return config;
}

int validate_config(const ServeFlags& flags) {
  try {
    const ServeConfig config = serve_config_from(flags);
    check_addresses(config);
    if (!parse_filter("where", config.where)) return 1;
    std::printf("%s: valid (%zu inputs)\n", config.file.c_str(), config.inputs.size());
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "log-ingest: %s\n", error.what());
  }
  return 1;
}

namespace {

// Closes the outputs, but not past `deadline`: the last flush to a pipe whose reader stalls could
// wait for ever, and the timer that enforces stop_timeout has stopped by then. Past it,
// `too_late` ends the process.
bool close_outputs_by(ServeOutputs& outputs, steady_clock::time_point deadline,
                      const std::function<void()>& too_late) {
  std::mutex mutex;
  std::condition_variable closed_cv;
  bool done = false;
  std::thread guard([&] {
    std::unique_lock lock(mutex);
    if (!closed_cv.wait_until(lock, deadline, [&] { return done; })) too_late();
  });
  const bool closed = outputs.close();
  {
    const std::lock_guard lock(mutex);
    done = true;
  }
  closed_cv.notify_one();
  guard.join();
  return closed;
}

// Says when the inputs may hold more descriptors than the process may open (descriptor_budget.hpp).
void warn_of_descriptors(const ServeConfig& config, std::uint64_t may_open) {
  const std::uint64_t wanted = descriptors_wanted(config);
  if (may_open == 0 || wanted <= may_open) return;
  std::fprintf(stderr,
               "log-ingest: warning: the inputs may hold %llu file descriptors (limits."
               "max_connections per TCP or HTTP input, max_open_files per file input, and %llu "
               "more), and the process may open %llu: an output or a checkpoint could then fail "
               "to open; lower those limits or raise the process's (LimitNOFILE)\n",
               static_cast<unsigned long long>(wanted),
               static_cast<unsigned long long>(descriptor_reserve),
               static_cast<unsigned long long>(may_open));
}

}  // namespace

int run_serve(const ServeConfig& config, const std::function<ServeConfig()>& reload) {
  try {
    check_addresses(config);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "log-ingest: %s\n", error.what());
    return 2;
  }
  const std::uint64_t may_open = raise_descriptor_limit();
  warn_of_descriptors(config, may_open);
  std::optional<stages::Filter> filter = parse_filter("where", config.where);
  if (!filter) return 2;
  const std::size_t workers =
      config.workers != 0 ? config.workers : std::max(1U, std::thread::hardware_concurrency());

  auto parse = std::make_shared<stages::ParseConfig>();
  parse->filter = std::move(*filter);
  parse->projection.fields = config.fields;
  // Frames over the limit are dead-lettered by the inputs; every other one is parsed, even once
  // its line feeds became `#012`. Each input's chunks carry the limit it was opened with
  // (ServiceInput), so that a reload that raises it takes effect; this is the bound of them all.
  parse->max_line_length =
      LimitsConfig{.max_frame_bytes = LimitsConfig::largest_frame}.max_parsed_line();
  parse->syslog_year = stages::current_utc_year();

  // A write over a file size limit, or to a pipe nobody reads, fails (EFBIG, EPIPE) instead of
  // ending the process: the outputs hold what they could not write, or count it lost.
  (void)std::signal(SIGXFSZ, SIG_IGN);
  (void)std::signal(SIGPIPE, SIG_IGN);
  std::shared_ptr<ServeOutputs> outputs;
  try {
    outputs = std::make_shared<ServeOutputs>(config.records, config.dead_letters, config.output);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "log-ingest: %s\n", error.what());
    return 1;
  }
  parse->write_records = outputs->writes_records();
  parse->write_dead_letters = outputs->writes_dead_letters();

  Ingress ingress(config.queue_chunks);
  asio::io_context io;
  InputSet inputs(io, ingress, config.state_dir);

  auto live = std::make_shared<Shared<stages::LiveTotals>>(
      "live-totals", std::vector<std::string>{"update", "snapshot"}, stages::LiveTotals(workers));
  auto tallies = std::make_shared<stages::Tallies>(
      workers, stages::SummaryOptions{}, live,
      stages::WindowOptions{.width = config.summary_window, .keep = config.summary_windows});
  // A failure drops what the pipeline holds, and the tokens of dropped chunks settle: the file
  // inputs stop saving checkpoints before that, so that those lines are read again.
  Pipeline pipeline({.name = "log-ingest-serve",
                     .executor = Executor::threads(),
                     .sample_interval = std::chrono::milliseconds(500),
                     .on_failure = [&ingress](const std::exception_ptr&) { ingress.fail(); }});
  pipeline.track(*live);

  std::atomic<bool> ready{false};
  std::atomic<bool> draining{false};
#ifdef CONVEYOR_HAS_PROMETHEUS
  std::unique_ptr<prometheus::MetricsServer> server;
  if (config.metrics_listen != "none") {
    try {
      server = std::make_unique<prometheus::MetricsServer>(prometheus::MetricsServerOptions{
          .listen = config.metrics_listen, .auth_file = config.auth_file});
    } catch (const prometheus::MetricsServerError& error) {
      std::fprintf(stderr, "log-ingest: %s\n", error.what());
      outputs->close();
      return 1;
    }
    auto metrics = std::make_shared<prometheus::PipelineMetrics>();
    server->add(metrics);
    server->add(std::make_shared<LiveMetrics>(live));
    server->add(
        std::make_shared<ServeMetrics>([&inputs] { return inputs.counters(); }, outputs,
                                       [&ingress] { return double(ingress.size_approx()); }));
    server->add_page("/summary", [tallies, top = config.summary_top](std::string_view query) {
      return summary_page(*tallies, top, query);
    });
    server->set_readiness([&ready, &draining] {
      return ready.load(std::memory_order_relaxed) && !draining.load(std::memory_order_relaxed);
    });
    pipeline.add_observer(metrics);
    std::fprintf(stderr, "log-ingest: metrics on http://%s/metrics\n", server->address().c_str());
  }
#endif

  pipeline.source([&ingress] { return ingress.pop(); }, {.name = "receive"}) |
      stage(stages::ParseStage(parse, tallies), {.name = "parse",
                                                 .mode = Mode::parallel,
                                                 .workers = workers,
                                                 .channel = Channel::queue(2)}) |
      sink(ServeWriter(outputs, write_fault()),
           {.name = "write", .mode = Mode::serial_in_order, .channel = Channel::queue(4)});

  // Whichever thread a signal lands on, signal_set hands it to the I/O thread's handler below.
  asio::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);
  pipeline.start();

  // The pipeline ends when the Ingress is closed and drained, or when a stage throws.
  std::exception_ptr failure;
  std::atomic<bool> pipeline_done{false};
  std::thread waiter([&] {
    try {
      pipeline.wait();
    } catch (...) {
      failure = std::current_exception();
    }
    pipeline_done.store(true, std::memory_order_release);
    asio::post(io, [&io] { io.stop(); });
  });

  const auto log_inputs = [&inputs] {
    for (const InputSet::Listening& input : inputs.listening()) {
      std::fprintf(stderr, "log-ingest: input '%s' (%s) on %s\n", input.name.c_str(),
                   to_string(input.type), input.where.c_str());
    }
  };
  try {
    inputs.open(config.inputs, config.limits);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "log-ingest: %s\n", error.what());
    ingress.close();
    inputs.close_all();
    io.run();  // lets the inputs that did start end
    waiter.join();
    outputs->close();
    return 1;
  }
  log_inputs();
  ready.store(true, std::memory_order_relaxed);
  std::fprintf(stderr, "log-ingest: serving; SIGTERM or Ctrl-C drains and stops\n");
  std::fflush(stderr);
  notify_ready("serving " + std::to_string(inputs.size()) + " inputs");

  // The drain, checked every 20 ms once it starts (or once every input has ended by itself, as
  // stdin does at its end).
  std::optional<steady_clock::time_point> deadline;
  steady_clock::time_point stop_deadline;
  bool forced = false;
  bool closed = false;
  asio::steady_timer tick(io);
  const auto begin_drain = [&] {
    if (deadline) return;
    draining.store(true, std::memory_order_relaxed);
    notify_stopping("draining");
    deadline = steady_clock::now() + config.drain_timeout;
    stop_deadline = steady_clock::now() + config.stop_timeout;
    inputs.stop_accepting();
  };
  // A drain that cannot end (a second signal, or an output that takes nothing past
  // stop_timeout): what is in flight is lost, and counted.
  const auto stop_now = [&](const std::string& why) {
    const Tally now = tally(inputs, outputs->accounting);
    std::fprintf(stderr, "log-ingest: %s: %s\n", why.c_str(), now.line().c_str());
    std::fflush(stderr);
    std::_Exit(1);
  };
  std::function<void()> watch = [&] {
    tick.expires_after(std::chrono::milliseconds(20));
    tick.async_wait([&](const boost::system::error_code& error) {
      if (error) return;
      inputs.tick();
      outputs->tick();
      const bool all_finished = inputs.finished();
      if (all_finished && !deadline) begin_drain();
      if (deadline && !forced && steady_clock::now() >= *deadline) {
        forced = true;
        inputs.close_all();
        // An output still failing gives up what it holds (counted lost; a file input reads it
        // again), so that the drain ends with an exact count instead of at stop_timeout.
        outputs->abandon();
      }
      if (deadline && all_finished && !closed) {
        closed = true;
        ingress.close();  // the pipeline drains what is queued, then ends
      }
      if (deadline && steady_clock::now() >= stop_deadline) {
        stop_now("the drain did not end within stop_timeout (" +
                 std::to_string(config.stop_timeout.count()) + " ms); stopped");
      }
      watch();
    });
  };
  watch();

  // SIGHUP: the configuration again. An invalid one changes nothing; inputs are reloaded
  // (InputSet::reload), and what else changed waits for a restart.
  const auto reload_inputs = [&] {
    if (!reload) return;
    ServeConfig next;
    try {
      next = reload();
      check_addresses(next);
      if (!parse_filter("where", next.where)) {
        throw ConfigError("pipeline.where does not parse (see above)");
      }
    } catch (const std::exception& error) {
      std::fprintf(stderr, "log-ingest: SIGHUP: keeping the running configuration: %s\n",
                   error.what());
      return;
    }
    try {
      const std::string changes = inputs.reload(next.inputs, next.limits, config.drain_timeout);
      std::fprintf(stderr, "log-ingest: SIGHUP: configuration reloaded; inputs: %s\n",
                   changes.c_str());
      log_inputs();
      warn_of_descriptors(next, may_open);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "log-ingest: SIGHUP: %s\n", error.what());
    }
    const bool restart =
        next.where != config.where || next.fields != config.fields ||
        next.workers != config.workers || next.queue_chunks != config.queue_chunks ||
        next.records != config.records || next.dead_letters != config.dead_letters ||
        next.output != config.output || next.metrics_listen != config.metrics_listen ||
        next.auth_file != config.auth_file || next.drain_timeout != config.drain_timeout ||
        next.stop_timeout != config.stop_timeout;
    if (restart) {
      std::fprintf(stderr,
                   "log-ingest: SIGHUP: pipeline, outputs and service settings changed; they take "
                   "effect at the next start\n");
    }
  };

  std::function<void()> on_signal = [&] {
    signals.async_wait([&](const boost::system::error_code& error, int number) {
      if (error) return;
      if (number == SIGHUP && !deadline) {
        notify_reloading();
        outputs->reopen();
        std::fprintf(stderr, "log-ingest: SIGHUP: reopening the outputs\n");
        reload_inputs();
        notify_ready("serving " + std::to_string(inputs.size()) + " inputs");
      } else if (number == SIGHUP) {
        std::fprintf(stderr, "log-ingest: SIGHUP while draining: ignored\n");
      } else if (!deadline) {
        std::fprintf(stderr,
                     "log-ingest: draining (clients up to %lld ms, the drain up to %lld ms); a "
                     "second signal stops at once\n",
                     static_cast<long long>(config.drain_timeout.count()),
                     static_cast<long long>(config.stop_timeout.count()));
        begin_drain();
      } else {
        stop_now("stopped before the drain ended");
      }
      std::fflush(stderr);
      on_signal();
    });
  };
  on_signal();

  io.run();
  // Ended: the pipeline is done (drained, or failed).
  waiter.join();
  if (failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "log-ingest: the pipeline failed: %s\n", error.what());
    }
    inputs.abandon();  // what the pipeline dropped is read again after a restart
    ingress.close();   // a reader waiting for room gives up
    inputs.close_all();
    (void)close_outputs_by(*outputs, steady_clock::now() + config.stop_timeout, [&] {
      stop_now("the outputs did not close within stop_timeout; stopped");
    });
    return 1;
  }
  const bool outputs_closed = close_outputs_by(
      *outputs, deadline ? stop_deadline : steady_clock::now() + config.stop_timeout,
      [&] { stop_now("the outputs did not close within stop_timeout; stopped"); });
  const Tally final_tally = tally(inputs, outputs->accounting);
  std::fprintf(stderr, "log-ingest: drained: %s\n", final_tally.line().c_str());
  if (!outputs_closed || final_tally.lost_on_output != 0) {
    std::fprintf(stderr, "log-ingest: could not finish writing the outputs\n");
    return 1;
  }
  return 0;
}

}  // namespace conveyor::log_ingest
