// Asynchronous stages and sinks: code that returns a boost::asio::awaitable runs as coroutines on
// the pipeline's I/O threads (PipelineOptions::io_threads), up to StageOptions::in_flight items
// per worker at once, so that a stage waiting on the network does not block a thread per request.
//
//   #include <conveyor/framework/async.hpp>
//
//   p.source(read_records)
//     | conveyor::stage([&](Record r) -> asio::awaitable<Reply> { co_return co_await send(r); },
//                       {.mode = conveyor::Mode::parallel, .workers = 2, .in_flight = 64})
//     | conveyor::sink(store, {.mode = conveyor::Mode::serial_in_order});
//
// Contract (docs/guide.md, "Asynchronous stages"):
// - The forms are listed in detail/async_body.hpp. Each worker's coroutines run on one strand.
// - Order, backpressure and stops hold as for synchronous stages: a serial_in_order stage after
//   it sees the source's order; a worker holds at most in_flight items; request_stop() lets the
//   coroutines in flight finish.
// - A throw from a coroutine fails the pipeline, and run() rethrows it. On a failure or an
//   abort, the coroutines still suspended are destroyed without being resumed once every worker
//   has returned (detail/io_pool.hpp): Boost 1.74 has no per-operation cancellation.
#pragma once

#include "conveyor/framework/detail/async_node.hpp"
#include "conveyor/framework/pipeline.hpp"
