// A stage must produce something: a function returning void is a sink, not a stage.
// expect: this stage cannot take the items the stage before it emits
#include <conveyor/framework.hpp>

#include <optional>

int main() {
  conveyor::Pipeline p;
  p.source([]() -> std::optional<int> { return std::nullopt; }) | conveyor::stage([](int) {}) |
      conveyor::sink([](int) {});
}
