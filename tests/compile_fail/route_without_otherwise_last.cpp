// A route whose default branch comes before a predicate's.
// expect: a route ends with exactly one otherwise\(branch\)
#include <conveyor/framework.hpp>

int main() {
  const auto routed =
      conveyor::route(conveyor::otherwise(conveyor::chain<int>() | conveyor::sink([](int) {})),
                      conveyor::when([](int x) { return x > 1; },
                                     conveyor::chain<int>() | conveyor::sink([](int) {})));
  (void)routed;
}
