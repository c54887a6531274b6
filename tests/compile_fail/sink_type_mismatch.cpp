// A sink for records after a stage that emits integers.
// expect: this sink cannot take the items the stage before it emits
#include <conveyor/framework.hpp>

#include <optional>

struct Record {
  int status;
};

int main() {
  conveyor::Pipeline p;
  p.source([]() -> std::optional<int> { return std::nullopt; }) |
      conveyor::stage([](int x) { return x * 2; }) | conveyor::sink([](const Record&) {});
}
