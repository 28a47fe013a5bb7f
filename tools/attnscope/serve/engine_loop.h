// EngineLoop: the one thread that drives the engine for `attnscope serve`. HTTP threads only
// enqueue (submit, cancel) and read their request's events; the engine itself (engine/engine.h)
// is touched by this thread alone, so it needs no lock of its own. Its OpenMP team (the workers
// of every parallel region a step runs) must be the process's only one: see serve.cpp's
// load_on_a_passing_thread for what a second team costs.
//
//   HTTP thread:  stream = loop.submit(request)    -> inbox (mutex), wakes the loop
//                 while (stream->next(event, ...))  <- the loop pushes each event of its request
//                 loop.cancel(*stream)              (a client that went away)
//   loop thread:  take the inbox and the cancels; engine.submit / engine.cancel; engine.step()
//                 while there is work; hand each event to its request's stream; publish the
//                 numbers /metrics shows; sleep on a condition variable when idle.
//
// Backpressure: at most `max_queue` requests in flight (waiting or running); submit returns
// nullptr beyond that, at once, so the server answers 429 instead of queueing without bound.
// Shutdown: stop_accepting() makes every later submit return nullptr; drain(deadline) waits for
// the requests in flight until the deadline, then cancels what is left; the destructor stops the
// thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/engine.h"

namespace attnscope::cli {

// The numbers /metrics reports, published by the loop after every step.
struct LoopMetrics {
  std::int64_t running = 0, waiting = 0;
  std::int64_t kv_blocks_used = 0, kv_blocks_free = 0, kv_blocks = 0;
  std::int64_t prefix_hits = 0, prefix_lookups = 0, preemptions = 0;
  std::int64_t requests_finished = 0, requests_rejected = 0;
  std::int64_t prompt_tokens = 0, generation_tokens = 0;
  double busy_seconds = 0;           // time spent in engine steps
  std::int64_t allocated_bytes = 0;  // the engine's allocator, between steps
  // Histograms (Prometheus: cumulative counts per upper bound, plus sum and count), seconds.
  struct Histogram {
    std::vector<double> bounds;
    std::vector<std::int64_t> counts;  // one per bound, then +Inf
    double sum = 0;
    std::int64_t count = 0;
    void add(double value);
  };
  Histogram time_to_first_token{{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}, {}};
  Histogram inter_token{{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}, {}};
};

class EngineLoop {
 public:
  // A request's events, in order, as the loop produces them; the last one has finished = true.
  class Stream {
   public:
    // Waits up to `timeout` for the next event; false when none came in time.
    bool next(engine::Event& event, std::chrono::milliseconds timeout);

   private:
    friend class EngineLoop;
    void push(const engine::Event& event);

    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<engine::Event> events_;
    engine::RequestId id_ = 0;  // set by the loop thread once submitted (0: not yet)
    bool cancelled_ = false;    // asked before the loop submitted it
    std::chrono::steady_clock::time_point submitted_, last_token_;
    bool first_token_seen_ = false;
  };

  EngineLoop(engine::Engine& engine, std::int64_t max_queue);
  ~EngineLoop();
  EngineLoop(const EngineLoop&) = delete;
  EngineLoop& operator=(const EngineLoop&) = delete;

  // Queues `request`; nullptr when max_queue requests are in flight or the loop stopped
  // accepting.
  std::shared_ptr<Stream> submit(engine::Request request);
  // Cancels the stream's request (its blocks return at once); its last event is the
  // cancellation. Safe to call after it finished.
  void cancel(const std::shared_ptr<Stream>& stream);
  void stop_accepting();
  // Waits until nothing is in flight or `deadline` passes; then cancels what is left. Returns the
  // number of requests it had to cancel.
  std::int64_t drain(std::chrono::steady_clock::time_point deadline);
  LoopMetrics metrics() const;

 private:
  void run();

  engine::Engine& engine_;
  std::int64_t max_queue_;
  mutable std::mutex mutex_;
  std::condition_variable work_;
  std::condition_variable idle_;
  std::vector<std::pair<engine::Request, std::shared_ptr<Stream>>> inbox_;
  std::vector<std::shared_ptr<Stream>> cancels_;
  std::int64_t in_flight_ = 0;
  bool accepting_ = true;
  bool stopping_ = false;
  LoopMetrics metrics_;
  std::map<engine::RequestId, std::shared_ptr<Stream>> streams_;  // loop thread only
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace attnscope::cli
