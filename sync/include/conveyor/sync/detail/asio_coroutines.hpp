// Boost.Asio's coroutine support (asio::awaitable, co_spawn, use_awaitable), included the way
// every compiler this project builds with accepts it on Debian 12's Boost 1.74:
// - awaitable.hpp uses std::exchange without including <utility>;
// - Asio 1.74 turns co_await on for clang only with libc++, while clang 14 with libstdc++ 12 (what
//   clang-tidy and the fuzz build use) supports the standard <coroutine> as well as GCC does.
#pragma once

#include <coroutine>
#include <utility>

#if defined(__clang__) && !defined(BOOST_ASIO_HAS_CO_AWAIT)
#define BOOST_ASIO_HAS_CO_AWAIT 1
#define BOOST_ASIO_HAS_STD_COROUTINE 1
#endif

#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
