// Uses the installed conveyor::sync and conveyor::framework: a semaphore hand-off between two
// threads, then a small pipeline whose in-order sink checks what it receives.
#include <conveyor/framework.hpp>
#include <conveyor/sync/semaphore.hpp>

#include <cstdio>
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
  std::printf("conveyor %s: ok\n", CONVEYOR_VERSION);
  return 0;
}
