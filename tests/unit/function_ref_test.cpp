// Unit tests for FunctionRef, the non-owning callable reference behind the in-order loop.
#include "conveyor/framework/detail/function_ref.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace {

using conveyor::detail::FunctionRef;

TEST(FunctionRefTest, CallsALambdaWithItsArgumentsAndReturnsItsResult) {
  auto add = [](int a, int b) { return a + b; };
  const FunctionRef<int(int, int)> ref(add);
  EXPECT_EQ(ref(2, 3), 5);
}

TEST(FunctionRefTest, CallsAFunctor) {
  struct Twice {
    std::uint64_t operator()(std::uint64_t value) const { return 2 * value; }
  };
  const Twice twice;
  const FunctionRef<std::uint64_t(std::uint64_t)> ref(twice);
  EXPECT_EQ(ref(21), 42U);
}

TEST(FunctionRefTest, RefersToTheCallableRatherThanCopyingIt) {
  int calls = 0;
  auto count = [&calls, seen = 0]() mutable { calls = ++seen; };
  const FunctionRef<void()> ref(count);
  const FunctionRef<void()> copy = ref;
  ref();
  copy();
  ref();
  EXPECT_EQ(calls, 3);  // one object's state, through both references
}

TEST(FunctionRefTest, PassesAnRvalueArgumentOnAsAnRvalue) {
  std::string taken;
  auto take = [&taken](std::string&& value) { taken = std::move(value); };
  const FunctionRef<void(std::string &&)> ref(take);
  std::string value(64, 'x');
  ref(std::move(value));
  EXPECT_EQ(taken, std::string(64, 'x'));
}

TEST(FunctionRefTest, TakesAMoveOnlyArgument) {
  auto read = [](std::unique_ptr<int> value) { return *value; };
  const FunctionRef<int(std::unique_ptr<int>)> ref(read);
  EXPECT_EQ(ref(std::make_unique<int>(7)), 7);
}

TEST(FunctionRefTest, DiscardsAResultTheSignatureDoesNotReturn) {
  int calls = 0;
  auto counted = [&calls] { return ++calls; };
  const FunctionRef<void()> ref(counted);
  ref();
  EXPECT_EQ(calls, 1);
}

TEST(FunctionRefTest, ATemporaryLambdaLivesForTheCallThatTakesIt) {
  auto call = [](FunctionRef<int()> ref) { return ref() + ref(); };
  EXPECT_EQ(call([] { return 4; }), 8);
}

}  // namespace
