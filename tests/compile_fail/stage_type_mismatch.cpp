// A stage that takes strings after a source of integers.
// expect: this stage cannot take the items the stage before it emits
#include <conveyor/framework.hpp>

#include <optional>
#include <string>

int main() {
  conveyor::Pipeline p;
  p.source([]() -> std::optional<int> { return std::nullopt; }) |
      conveyor::stage([](const std::string& s) { return s.size(); }) |
      conveyor::sink([](std::size_t) {});
}
