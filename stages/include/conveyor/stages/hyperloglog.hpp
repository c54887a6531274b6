// HyperLogLog: the number of distinct keys in 16 KiB, within about 0.8 % (one standard error).
//
//   HyperLogLog clients;  clients.add(hash_key(ip));  ...  double n = clients.estimate();
//
// Precision 14: 2^14 one-byte registers, standard error 1.04 / sqrt(2^14) = 0.81 %. The estimate
// is Ertl's improved raw estimator (2017), which needs no bias tables and holds from 0 to beyond
// 2^50 keys. Two sketches merge (register-wise maximum) into the sketch of both streams. Hashes
// must be uniform 64-bit values (hash_key). Not thread-safe: one per worker, merged at the end.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace conveyor::stages {

class HyperLogLog {
 public:
  static constexpr int precision = 14;
  static constexpr std::size_t registers = std::size_t{1} << precision;

  HyperLogLog() : registers_(registers, 0) {}

  void add(std::uint64_t hash) noexcept {
    const std::size_t index = hash >> (64 - precision);
    // The rank of the first one bit after the index bits, at most 64 - precision + 1.
    const std::uint64_t rest = (hash << precision) | (std::uint64_t{1} << (precision - 1));
    const auto rank = static_cast<std::uint8_t>(std::countl_zero(rest) + 1);
    if (rank > registers_[index]) registers_[index] = rank;
  }
  void merge(const HyperLogLog& other) noexcept;
  [[nodiscard]] double estimate() const noexcept;
  // One standard error, relative to the true count.
  [[nodiscard]] static double relative_error() noexcept;

 private:
  std::vector<std::uint8_t> registers_;
};

}  // namespace conveyor::stages
