// A merge of a flow of integers and a flow of strings.
// expect: every input of a merge must carry the same item type
#include <conveyor/framework.hpp>

#include <optional>
#include <string>

int main() {
  conveyor::Pipeline p;
  auto numbers = p.source([]() -> std::optional<int> { return std::nullopt; });
  auto words = p.source([]() -> std::optional<std::string> { return std::nullopt; });
  conveyor::merge(numbers, words) | conveyor::sink([](int) {});
}
