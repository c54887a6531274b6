// A route of integers whose default branch takes strings.
// expect: a branch of this route cannot take the items the stage before it emits
#include <conveyor/framework.hpp>

#include <optional>
#include <string>

int main() {
  conveyor::Pipeline p;
  int next = 0;
  p.source([&]() -> std::optional<int> {
    return next < 3 ? std::optional(next++) : std::nullopt;
  }) | conveyor::route(conveyor::when([](int x) { return x > 1; },
                                      conveyor::chain<int>() | conveyor::sink([](int) {})),
                       conveyor::otherwise(conveyor::chain<std::string>() |
                                           conveyor::sink([](const std::string&) {})));
}
