// mailboxes: seed 002 end to end. One producer builds numbered tasks and hands each to the next
// consumer whose single-slot mailbox is empty (phase 1), then stuffs every mailbox with "done"
// (phase 2). Each consumer thread sums the task numbers it receives. After the join, the program
// prints what each consumer got and checks that every task arrived exactly once.
//
//   mailboxes [--consumers N] [--tasks N]
//
// Exit status: 0 when every task arrived exactly once, 1 when not, 2 on a bad command line.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "command_line.hpp"
#include "conveyor/sync/mailbox_set.hpp"

namespace {

constexpr std::size_t max_consumers = 1024;
constexpr std::uint64_t max_tasks = 100'000'000;  // one byte of bookkeeping per task
constexpr std::size_t tasks_shown = 5;

struct Options {
  std::size_t consumers = 4;
  std::uint64_t tasks = 1000;
};

// What one consumer saw. Written by its thread only; read by main after the join.
struct ConsumerReport {
  std::uint64_t received = 0;
  std::uint64_t sum = 0;
  std::vector<std::uint64_t> first_tasks;
};

// How often each task number arrived, over all consumers; checked after the join.
using Tally = std::vector<std::atomic<std::uint8_t>>;

void consume(conveyor::sync::MailboxSet<std::uint64_t>& mailboxes, std::size_t me,
             ConsumerReport& report, Tally& tally) {
  // take() sleeps while the mailbox is empty and returns nullopt at the done sentinel.
  while (std::optional<std::uint64_t> task = mailboxes.take(me)) {
    tally[*task].fetch_add(1, std::memory_order_relaxed);  // read only after the join
    ++report.received;
    report.sum += *task;  // the "work"
    if (report.first_tasks.size() < tasks_shown) report.first_tasks.push_back(*task);
  }
}

int run(const Options& options) {
  std::printf("Seed 002: one producer hands %llu task%s to %zu consumer%s through single-slot\n",
              static_cast<unsigned long long>(options.tasks), options.tasks == 1 ? "" : "s",
              options.consumers, options.consumers == 1 ? "" : "s");
  std::printf("mailboxes (next empty one, round-robin), then sends each consumer \"done\".\n\n");

  conveyor::sync::MailboxSet<std::uint64_t> mailboxes(options.consumers);
  std::vector<ConsumerReport> reports(options.consumers);
  Tally tally(options.tasks + 1);
  std::vector<std::thread> consumers;
  consumers.reserve(options.consumers);
  for (std::size_t i = 0; i < options.consumers; ++i) {
    consumers.emplace_back(consume, std::ref(mailboxes), i, std::ref(reports[i]), std::ref(tally));
  }

  // The producer: phase 1 builds and distributes the tasks, phase 2 stuffs the mailboxes with done.
  bool delivered = true;
  for (std::uint64_t task = 1; task <= options.tasks && delivered; ++task) {
    delivered = mailboxes.put(task);
  }
  delivered = delivered && mailboxes.close();
  for (auto& consumer : consumers)
    consumer.join();

  std::uint64_t received = 0;
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const ConsumerReport& report = reports[i];
    std::printf("consumer %3zu: %8llu tasks, sum %14llu, first:", i,
                static_cast<unsigned long long>(report.received),
                static_cast<unsigned long long>(report.sum));
    for (std::uint64_t task : report.first_tasks)
      std::printf(" %llu", static_cast<unsigned long long>(task));
    std::printf("%s\n", report.received > report.first_tasks.size() ? " ..." : "");
    received += report.received;
    sum += report.sum;
  }

  std::uint64_t received_once = 0;
  for (std::uint64_t task = 1; task <= options.tasks; ++task) {
    received_once += tally[task].load(std::memory_order_relaxed) == 1 ? 1 : 0;
  }
  const bool exactly_once = delivered && received_once == options.tasks &&
                            received == options.tasks && tally[0].load() == 0;
  std::printf(
      "total       : %8llu tasks, sum %14llu; %llu of %llu tasks received exactly once: %s\n",
      static_cast<unsigned long long>(received), static_cast<unsigned long long>(sum),
      static_cast<unsigned long long>(received_once),
      static_cast<unsigned long long>(options.tasks), exactly_once ? "OK" : "MISMATCH");
  return exactly_once ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return conveyor::examples::guarded("mailboxes", [&] {
    CLI::App app{"Seed 002: one producer, K consumers, single-slot mailboxes, done sentinels"};
    Options options;
    app.add_option("--consumers", options.consumers, "Consumer threads, one mailbox each")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t{1}, max_consumers));
    app.add_option("--tasks", options.tasks, "Tasks the producer builds and distributes")
        ->capture_default_str()
        ->check(CLI::Range(std::uint64_t{0}, max_tasks));
    if (const auto status = conveyor::examples::parse_command_line(app, argc, argv)) return *status;
    return run(options);
  });
}
