// The engine: many requests at once over one model, by continuous batching on a paged KV cache.
//
// Each step() is one iteration (Orca, vLLM): the scheduler (engine/scheduler.h) picks the running
// sequences and how many tokens of each (decode tokens, prefill chunks), admits waiting ones and
// preempts when blocks run out; the model runs all their tokens in one forward pass
// (LanguageModel::forward_paged), each sequence attending to its own blocks; every sequence whose
// tokens are all computed samples its next token with its own sampler; the finished ones give
// their blocks back. Requests come and go between steps, so a short request never waits for a
// long one to finish, and a sequence's tokens never depend on its batch mates: its sampler is its
// own, and the model computes every row on its own (up to the float rounding of the kernels each
// batch size picks, which can only matter at a near-tie of two logits).
//
// Prefix caching: after each step the full blocks whose keys and values are written are keyed by
// their prefix (BlockPool::commit); a new request whose prompt starts with cached blocks shares
// them and computes only the rest.
//
// Profiling: with a profiler on the context, each step is a scope named by its batch
// ("engine.step: 96 prefill tokens in 2 chunks, 14 decodes; requests 3 5 ..."), the model's
// scopes inside it, and every request gets a track of its own whose spans are its phases:
// queued, prefill, decode, preempted, recompute (profiler/chrome_trace.h draws them).
//
// Threads: one thread drives an engine (submit, cancel, step); a server puts a queue in front.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/json_schema_masks.h"
#include "engine/request.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "engine/token_vocabulary.h"
#include "models/language_model.h"
#include "runtime/paged_kv_cache.h"

namespace attnscope::engine {

struct EngineOptions {
  std::int64_t block_tokens = 16;     // positions per KV block
  std::uint64_t kv_memory_bytes = 0;  // the pool's size; 0: default_kv_memory
  std::optional<DType> kv_dtype;      // the cache's elements; none: the activations'
                                      // (runtime/paged_kv_cache.h: which others may serve)
  SchedulerOptions scheduler;
  bool prefix_caching = true;
};

// The KV memory an engine takes when not told: an eighth of the device's memory (the machine's
// RAM, or the GPU's), and no more than 16 sequences of the model's full context need.
std::uint64_t default_kv_memory(const LanguageModel& model, const Context& ctx,
                                const EngineOptions& options);

// What one step did.
struct StepReport {
  std::vector<Event> events;  // tokens, finishes, and refusals and cancellations since last step
  std::vector<RequestId> scheduled;  // the sequences the forward pass ran, in its order
  std::vector<RequestId> preempted;
  std::int64_t prefill_tokens = 0;
  std::int64_t decode_tokens = 0;
};

class Engine {
 public:
  // An engine over `model` (its attention backend as set) on ctx's device, with a paged cache of
  // options.kv_memory_bytes. Throws Error when the cache holds less than one block or does not
  // fit beside the weights in the device's memory, or on bad scheduler options. Without the
  // vocabulary's text, requests with stop strings or in JSON mode are refused.
  Engine(const LanguageModel& model, Context& ctx, const EngineOptions& options,
         TokenVocabulary vocabulary = {});
  ~Engine();

  // Why `request` can never run on this engine ("" when it can): what submit refuses it for.
  // Reads only what never changes after construction, so any thread may ask (a server checks a
  // request before it queues it, to answer 400 at once).
  std::string refusal(const Request& request) const;
  // The device error that ended this engine's use of its device ("" while there is none). A
  // DeviceError from a forward pass (a kernel fault) leaves a CUDA context unusable for good, so
  // from then on every request in flight and every new one fails with it at once, instead of
  // each running into it again. Any thread may ask (a server's health check does).
  std::string device_failure() const;
  // The most positions one sequence can hold: the model's context, or the whole KV cache when
  // that is smaller. A request reaching it finishes with FinishReason::length. Any thread.
  std::int64_t longest_sequence() const;

  // Queues a request and returns its id. One that can never run (no prompt, an id outside the
  // vocabulary, a prompt that fills the context or the whole cache, max_tokens < 1, bad sampling
  // options, penalties or logit bias, a JSON schema not served or a json_prefix it refuses, stop
  // strings or a JSON schema without the vocabulary's text)
  // is refused: the next step reports it finished, FinishReason::refused, with the reason; the
  // other requests go on. After a device failure, every request finishes at once,
  // FinishReason::failed.
  RequestId submit(Request request);
  // Stops a waiting or running request: its blocks return to the pool at once, and the next step
  // reports it finished, FinishReason::cancelled. False when no such request is in flight.
  bool cancel(RequestId id);
  // One iteration (above). Safe to call with nothing to do (it then only reports refusals and
  // cancellations). When the forward pass throws (out of memory), the requests it ran finish
  // with FinishReason::failed and the error; the others go on. After a DeviceError, every
  // request fails (device_failure()).
  StepReport step();

  // Requests waiting or running.
  std::int64_t in_flight() const { return static_cast<std::int64_t>(sequences_.size()); }
  bool idle() const { return sequences_.empty() && pending_events_.empty(); }
  const Scheduler& scheduler() const { return scheduler_; }
  // Positions whose keys and values the sequences holding blocks have written, each sequence
  // counted on its own (a shared prefix once per sharer): what per-request caches would hold.
  std::int64_t running_positions() const;
  PagedKVCache::Usage kv_usage() const { return cache_.usage(); }
  // Bytes the context's allocator holds now (the weights, the KV pool, and a step's temporaries
  // while it runs): between steps, a number that must not grow with the requests served.
  std::size_t allocated_bytes() const { return ctx_.allocator().current_bytes(); }
  const PagedKVCache& cache() const { return cache_; }

 private:
  // After `sequence` sampled its latest token: whether it is finished, and why.
  bool finished(Sequence& sequence, FinishReason& reason);
  // Takes a finished sequence out: its blocks back to the pool, its track closed.
  void finish(Sequence& sequence);
  // Shows the sequence's phase on its profiler track when it changed (no profiler: nothing).
  void mark(Sequence& sequence);

  const LanguageModel& model_;
  Context& ctx_;
  EngineOptions options_;
  TokenVocabulary vocabulary_;
  JsonSchemaMasks schema_masks_;  // the JSON schemas' masks over the vocabulary
  PagedKVCache cache_;
  const std::int64_t total_blocks_;  // the pool's size, read by refusal() from any thread
  Scheduler scheduler_;
  std::map<RequestId, std::unique_ptr<Sequence>> sequences_;
  std::vector<Event> pending_events_;
  RequestId next_id_ = 1;
  // Written once, before device_failed_ is set (release); read after it is seen set (acquire).
  std::string device_error_;
  std::atomic<bool> device_failed_{false};
};

}  // namespace attnscope::engine
