// A small pipeline as a user writes it: the README's example (a pulled source, a parallel stage,
// an in-order sink). bench/compile_time.sh times how long this one translation unit takes to
// compile; the bench build also runs it, so that it stays a working program.
#include <conveyor/framework.hpp>

#include <cstdio>
#include <optional>
#include <string>

int main() {
  long next = 0;
  auto read_lines = [&]() -> std::optional<std::string> {
    if (next == 100000) return std::nullopt;
    return std::to_string(next++);
  };
  auto parse = [](const std::string& line) { return std::stol(line); };
  long total = 0;
  auto write = [&](long value) { total += value; };

  conveyor::Pipeline p;
  p.source(read_lines) | conveyor::stage(parse, {.mode = conveyor::Mode::parallel, .workers = 4}) |
      conveyor::sink(write, {.mode = conveyor::Mode::serial_in_order});  // the source's order
  p.run();
  std::printf("%ld\n", total);
  return total == 4999950000L ? 0 : 1;
}
