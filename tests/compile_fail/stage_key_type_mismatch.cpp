// A stage of integers whose workers get them by a key function that takes strings.
// expect: the key function of this stage's Dispatch::by_key or by_partition takes another type
#include <conveyor/framework.hpp>

#include <cstddef>
#include <optional>
#include <string>

int main() {
  conveyor::Pipeline p;
  p.source([]() -> std::optional<int> { return std::nullopt; }) |
      conveyor::stage([](int x) { return x; }, {.mode = conveyor::Mode::parallel, .workers = 2},
                      conveyor::Dispatch::by_key([](const std::string& s) { return s.size(); })) |
      conveyor::sink([](int) {});
}
