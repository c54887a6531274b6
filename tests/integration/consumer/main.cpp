// Uses the installed conveyor::sync and conveyor::framework: a semaphore hand-off between two
// threads, then a small pipeline whose in-order sink checks what it receives, and (when the package
// has it) conveyor::prometheus's view of that pipeline.
#include <conveyor/framework.hpp>
#include <conveyor/sync/semaphore.hpp>

#ifdef CONVEYOR_HAS_PROMETHEUS
#include <conveyor/prometheus/pipeline_metrics.hpp>
#endif

#include <cstdio>
#include <memory>
#include <optional>
#include <thread>

int main() {
  conveyor::sync::Semaphore ready;
  int value = 0;
  std::thread producer([&] {
    value = 42;
    ready.release();
  });
  ready.acquire();
  producer.join();
  if (value != 42) return 1;

  conveyor::Pipeline pipeline;
#ifdef CONVEYOR_HAS_PROMETHEUS
  auto metrics = std::make_shared<conveyor::prometheus::PipelineMetrics>();
  pipeline.add_observer(metrics);
#endif
  int next = 0;
  int expected = 0;
  bool in_order = true;
  pipeline.source([&]() -> std::optional<int> {
    if (next == 1000) return std::nullopt;
    return next++;
  }) |
      conveyor::stage([](int x) { return x * 2; },
                      {.mode = conveyor::Mode::parallel, .workers = 2}) |
      conveyor::sink(
          [&](int x) {
            in_order = in_order && x == expected;
            expected += 2;
          },
          {.mode = conveyor::Mode::serial_in_order});
  pipeline.run();
  if (!in_order || expected != 2000) return 1;
#ifdef CONVEYOR_HAS_PROMETHEUS
  bool counted = false;
  for (const auto& family : metrics->Collect()) {
    if (family.name == "conveyor_stage_items_sent_total") {
      counted = !family.metric.empty() && family.metric.front().counter.value == 1000;
    }
  }
  if (!counted) return 1;
  std::printf("conveyor::prometheus: ok\n");
#endif
  std::printf("conveyor %s: ok\n", CONVEYOR_VERSION);
  return 0;
}
