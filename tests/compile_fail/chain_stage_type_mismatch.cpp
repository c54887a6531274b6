// A chain of integers given a stage that takes strings: rejected where the chain is built.
// expect: this stage cannot take the items the stage before it emits
#include <conveyor/framework.hpp>

#include <string>

int main() {
  auto lengths =
      conveyor::chain<int>() | conveyor::stage([](const std::string& s) { return s.size(); });
  (void)lengths;
}
