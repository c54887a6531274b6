// A chain of strings that ends in a sink partitioned by a key function that takes integers.
// expect: the key function of this stage's Dispatch::by_key or by_partition takes another type
#include <conveyor/framework.hpp>

#include <string>

int main() {
  const auto chain =
      conveyor::chain<std::string>() |
      conveyor::sink([](const std::string&) {}, {.mode = conveyor::Mode::parallel, .workers = 2},
                     conveyor::Dispatch::by_partition([](unsigned x) { return x; }));
  (void)chain;
}
