// metrics_service: a long-running pipeline that Prometheus scrapes.
//
// Its source produces a steady stream of readings at --rate per second; a parallel stage adds them
// into a shared summary (update group) and a sink takes a snapshot of it now and then (snapshot
// group). It serves /metrics (the pipeline, the shared summary's lock, the process), /healthz and
// /readyz until SIGINT or SIGTERM; then it stops the source, drains what is in flight, and exits 0.
//
//   metrics_service [--listen HOST:PORT] [--rate N] [--workers N] [--auth-file FILE]
//
// It prints the address it serves on (useful with port 0, which picks a free port). A port that
// is taken or an address that is not this host's is reported with exit status 1.
#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <thread>

#include "command_line.hpp"
#include "conveyor/framework.hpp"
#include "conveyor/prometheus/metrics_server.hpp"
#include "conveyor/prometheus/pipeline_metrics.hpp"

namespace {

conveyor::Pipeline* running = nullptr;

extern "C" void on_signal(int) {
  if (running != nullptr) running->request_stop();  // async-signal-safe
}

struct Summary {
  std::atomic<std::uint64_t> readings{0};
  std::atomic<std::uint64_t> total{0};
};

int run(int argc, char** argv) {
  CLI::App app{"A long-running conveyor pipeline that serves Prometheus metrics"};
  std::string listen = "127.0.0.1:9464";
  double rate = 1000;
  std::size_t workers = 2;
  std::string auth_file;
  app.add_option("--listen", listen, "Address to serve /metrics on (HOST:PORT; port 0: any)")
      ->capture_default_str();
  app.add_option("--rate", rate, "Readings per second")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--workers", workers, "Workers of the parallel stage")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--auth-file", auth_file, "File of user:password lines for HTTP basic auth")
      ->check(CLI::ExistingFile);
  if (const auto status = conveyor::examples::parse_command_line(app, argc, argv)) return *status;

  std::unique_ptr<conveyor::prometheus::MetricsServer> server;
  try {
    server = std::make_unique<conveyor::prometheus::MetricsServer>(
        conveyor::prometheus::MetricsServerOptions{.listen = listen, .auth_file = auth_file});
  } catch (const conveyor::prometheus::MetricsServerError& error) {
    std::fprintf(stderr, "metrics_service: %s\n", error.what());
    return 1;
  }

  auto metrics = std::make_shared<conveyor::prometheus::PipelineMetrics>();
  server->add(metrics);
  server->set_readiness([metrics] { return metrics->ready(); });

  conveyor::Shared<Summary> summary("summary", {"update", "snapshot"});
  conveyor::Pipeline pipeline({.name = "metrics_service"});
  pipeline.add_observer(metrics);
  pipeline.track(summary);

  const auto period = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(1.0 / rate));
  pipeline.source(
      [period](conveyor::Emit<std::uint64_t>& emit) {
        auto next = std::chrono::steady_clock::now();
        for (std::uint64_t reading = 0; !emit.stop_requested(); ++reading) {
          // Sleep in short slices, so that a stop request ends the wait at once.
          for (auto now = std::chrono::steady_clock::now(); now < next && !emit.stop_requested();
               now = std::chrono::steady_clock::now()) {
            std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
                next - now, std::chrono::milliseconds(20)));
          }
          if (!emit(reading)) return;
          next += period;
        }
      },
      {.name = "readings"}) |
      conveyor::stage(
          [&summary](std::uint64_t reading) {
            summary.access(0, [reading](Summary& s) {
              s.readings.fetch_add(1, std::memory_order_relaxed);
              s.total.fetch_add(reading, std::memory_order_relaxed);
            });
            return reading;
          },
          {.name = "update", .mode = conveyor::Mode::parallel, .workers = workers}) |
      conveyor::sink(
          [&summary](std::uint64_t reading) {
            if (reading % 1000 == 0) {
              summary.access(1, [](Summary& s) { return s.readings.load(); });
            }
          },
          {.name = "snapshot", .mode = conveyor::Mode::serial_in_order});

  running = &pipeline;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  pipeline.start();
  std::printf("serving metrics on http://%s/metrics\n", server->address().c_str());
  std::fflush(stdout);
  pipeline.wait();

  const auto stats = pipeline.stats();
  std::printf("stopped after %llu readings in %.1f s\n",
              static_cast<unsigned long long>(stats.stages.back().items_in), stats.elapsed_seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return conveyor::examples::guarded("metrics_service", [&] { return run(argc, argv); });
}
