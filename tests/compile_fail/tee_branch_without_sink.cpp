// A tee whose second branch does not end in a sink.
// expect: each branch of a tee ends in a sink
#include <conveyor/framework.hpp>

int main() {
  const auto branches =
      conveyor::tee(conveyor::chain<int>() | conveyor::sink([](int) {}),
                    conveyor::chain<int>() | conveyor::stage([](int x) { return x + 1; }));
  (void)branches;
}
