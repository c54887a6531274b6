// A chain that takes strings after a source of integers.
// expect: this chain cannot take the items the stage before it emits
#include <conveyor/framework.hpp>

#include <optional>
#include <string>

int main() {
  const auto lengths = conveyor::chain<std::string>() |
                       conveyor::stage([](const std::string& s) { return s.size(); });
  conveyor::Pipeline p;
  p.source([]() -> std::optional<int> { return std::nullopt; }) | lengths |
      conveyor::sink([](std::size_t) {});
}
