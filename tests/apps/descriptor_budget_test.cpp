// log-ingest serve's descriptor budget: what a configuration lets the inputs hold, and the soft
// open-file limit raised to the hard one.
#include "descriptor_budget.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdint>

#include "serve_config.hpp"

namespace {

using conveyor::log_ingest::descriptor_reserve;
using conveyor::log_ingest::descriptors_wanted;
using conveyor::log_ingest::parse_serve_config;
using conveyor::log_ingest::raise_descriptor_limit;

TEST(DescriptorBudget, EachStreamInputItsConnectionsEachFileInputItsFiles) {
  // The defaults: one syslog TCP input (1,024 connections) and one UDP input (one socket, in the
  // reserve).
  EXPECT_EQ(descriptors_wanted(parse_serve_config("", "empty.yaml")), 1024U + descriptor_reserve);
  const auto config = parse_serve_config(R"(
inputs:
  - {name: a, type: syslog_tcp, listen: "127.0.0.1:0"}
  - {name: b, type: http, listen: "127.0.0.1:0"}
  - {name: c, type: syslog_udp, listen: "127.0.0.1:0"}
  - {name: d, type: file, include: ["/var/log/*.log"], max_open_files: 100}
service:
  limits: {max_connections: 10}
)",
                                         "test.yaml");
  EXPECT_EQ(descriptors_wanted(config), 10U + 10U + 100U + descriptor_reserve);
}

TEST(DescriptorBudget, TheSoftLimitIsRaisedToTheHardOne) {
  rlimit before{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &before), 0);
  if (before.rlim_max < 64) GTEST_SKIP() << "a hard limit too low to lower the soft one under";
  const rlimit lowered{.rlim_cur = 64, .rlim_max = before.rlim_max};
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &lowered), 0);
  const std::uint64_t raised = raise_descriptor_limit();
  rlimit after{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &after), 0);
  EXPECT_EQ(after.rlim_cur, before.rlim_max);
  EXPECT_EQ(raised, before.rlim_max == RLIM_INFINITY ? UINT64_MAX : before.rlim_max);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &before), 0);
}

}  // namespace
