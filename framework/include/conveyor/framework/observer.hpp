// Observer: what a pipeline tells those who watch it (a metrics exporter, a progress display).
//
//   class Progress : public conveyor::Observer {
//     void on_sample(const conveyor::Pipeline&, const conveyor::PipelineStats& stats) override {
//       ...
//     }
//   };
//   conveyor::Pipeline p({.sample_interval = std::chrono::milliseconds(500)});
//   p.add_observer(std::make_shared<Progress>());
//
// Contract:
// - `on_start` is called by `start()` once the workers run; from then on the observer may call
//   `pipeline.stats()` from any thread (a Prometheus scrape does) until `on_finish` returns.
// - `on_sample` is called by the thread in `wait()` every `PipelineOptions::sample_interval`.
// - `on_finish` is called by `wait()` once every worker has returned, with the final, exact
//   statistics and the first error (null if none); the observer must not call
//   `pipeline.stats()` after it returns unless it knows the pipeline is still alive.
// - Callbacks run on the pipeline's controlling thread and should return quickly; an exception
//   from one is dropped (an observer cannot fail a pipeline).
// Recording is pull-based: workers only count into counters of their own, and nothing an
// observer does touches the hot path.
#pragma once

#include <exception>

#include "conveyor/framework/stats.hpp"

namespace conveyor {

class Pipeline;

class Observer {
 public:
  virtual ~Observer() = default;
  virtual void on_start(const Pipeline& /*pipeline*/) {}
  virtual void on_sample(const Pipeline& /*pipeline*/, const PipelineStats& /*stats*/) {}
  virtual void on_finish(const Pipeline& /*pipeline*/, const PipelineStats& /*stats*/,
                         const std::exception_ptr& /*error*/) {}
};

}  // namespace conveyor
