// Uses the installed conveyor::sync: a semaphore hand-off between two threads.
#include <conveyor/sync/semaphore.hpp>

#include <cstdio>
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
  std::printf("conveyor %s: ok\n", CONVEYOR_VERSION);
  return 0;
}
