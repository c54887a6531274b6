// CompoundLock: the paper's CompoundSynch interface (Claim/Release by group), and the catalogue of
// the variants the LockTest harness runs: the paper's reference locks and the library's.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace conveyor::locktest {

class CompoundLock {
 public:
  virtual ~CompoundLock() = default;
  // Blocks until the calling thread holds the lock as a member of `group`.
  virtual void claim(std::size_t group) = 0;
  // Called by a thread that holds the lock as a member of `group`.
  virtual void release(std::size_t group) = 0;
};

// What is known about a variant's mutual exclusion (docs/locktest.md gives the interleavings).
enum class Soundness {
  sound,    // no interleaving lets two groups in
  racy,     // a known interleaving lets two groups in; it needs a nanosecond-wide window
  unsound,  // lets two groups in by design or often enough to show in a run
};

struct Variant {
  std::string name;
  std::string description;
  Soundness soundness = Soundness::sound;
  // nullptr when the variant does not support that many groups (the paper's CCCR needs 2).
  std::function<std::unique_ptr<CompoundLock>(std::size_t groups)> make;
};

// In the order of the paper's Figure 1, then the library's locks and the standard ones.
std::vector<Variant> all_variants();

}  // namespace conveyor::locktest
