// A chain of strings joined after a chain that emits integers.
// expect: this chain cannot take the items of the chain before it
#include <conveyor/framework.hpp>

#include <string>

int main() {
  const auto parse =
      conveyor::chain<std::string>() | conveyor::stage([](const std::string& s) { return s[0]; });
  const auto lengths = conveyor::chain<std::string>() |
                       conveyor::stage([](const std::string& s) { return s.size(); });
  const auto both = parse | lengths;
  (void)both;
}
