// A source that returns plain values cannot say where its stream ends.
// expect: a source is f\(\) -> std::optional<T>
#include <conveyor/framework.hpp>

int main() {
  conveyor::Pipeline p;
  p.source([] { return 1; }) | conveyor::sink([](int) {});
}
