// HyperLogLog: merge, and Ertl's improved raw estimator ("New cardinality estimation algorithms
// for HyperLogLog sketches", 2017, algorithm 6).
#include "conveyor/stages/hyperloglog.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace conveyor::stages {

namespace {

constexpr int q = 64 - HyperLogLog::precision;

// sigma(x) = x + sum_{k>=1} x^(2^k) 2^(k-1), for the registers still zero.
double sigma(double x) noexcept {
  if (x == 1) return std::numeric_limits<double>::infinity();
  double y = 1;
  double z = x;
  for (;;) {
    x *= x;
    const double before = z;
    z += x * y;
    y += y;
    if (z == before) return z;
  }
}

// tau(x) = (1 - x - sum_{k>=1} (1 - x^(2^-k))^2 2^-k) / 3, for the registers at their maximum.
double tau(double x) noexcept {
  if (x == 0 || x == 1) return 0;
  double y = 1;
  double z = 1 - x;
  for (;;) {
    x = std::sqrt(x);
    const double before = z;
    y *= 0.5;
    z -= (1 - x) * (1 - x) * y;
    if (z == before) return z / 3;
  }
}

}  // namespace

void HyperLogLog::merge(const HyperLogLog& other) noexcept {
  for (std::size_t i = 0; i < registers; ++i)
    registers_[i] = std::max(registers_[i], other.registers_[i]);
}

double HyperLogLog::estimate() const noexcept {
  std::array<double, q + 2> histogram{};
  for (const std::uint8_t value : registers_)
    ++histogram[value];
  const auto m = static_cast<double>(registers);
  double z = m * tau(1 - histogram[q + 1] / m);
  for (int k = q; k >= 1; --k)
    z = 0.5 * (z + histogram[k]);
  z += m * sigma(histogram[0] / m);
  const double alpha = 1 / (2 * std::log(2.0));
  return alpha * m * m / z;
}

double HyperLogLog::relative_error() noexcept {
  return 1.04 / std::sqrt(static_cast<double>(registers));
}

}  // namespace conveyor::stages
