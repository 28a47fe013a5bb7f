// The offline serving benchmark behind `attnscope bench --op serving`, in the manner of vLLM's
// benchmark_throughput: a fixed list of requests run through the engine (engine/engine.h) with at
// most `concurrency` of them in flight (a client that keeps C requests open, sending the next as
// soon as one finishes), timed from the client's side.
//
// Per request: time to first token (TTFT: from its submission to the step that sampled its first
// token), time per output token (TPOT: (finish - first token) / (tokens - 1), requests of two or
// more tokens) and the inter-token latencies. Per run: requests/s and output tokens/s over the
// wall time from the first submission to the last finish; the KV cache's reserved and used bytes
// at every step; and the PagedAttention paper's comparison (Kwon et al. 2023, Fig. 2), from the
// same steps: the bytes a contiguous cache would hold for the running requests if each reserved
// the model's whole context (as KVCache does, and as early serving systems did), against the
// positions they actually hold, and the paged cache's own waste (the unwritten tail of each
// request's last block). Concurrency 1 is running the requests one at a time: the baseline that
// continuous batching is compared with.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "models/language_model.h"

namespace attnscope::cli {

// The requests of one benchmark: every run of every concurrency gets the same list.
struct ServingWorkload {
  std::vector<engine::Request> requests;
  std::string description;  // "64 requests, random prompts of 64-256 tokens, 32-128 new tokens"
};

// Inclusive length ranges for the random workload.
struct LengthRange {
  std::int64_t min = 0, max = 0;
};

// `count` requests of random ids (seeded): prompt lengths uniform in `input`, the first
// `shared_prefix` ids the same in every prompt (prefix caching), max_tokens uniform in `output`,
// greedy, eos ignored so every request generates its max_tokens.
ServingWorkload random_workload(std::int64_t count, LengthRange input, LengthRange output,
                                std::int64_t shared_prefix, std::int64_t vocab_size,
                                std::uint64_t seed);

// Reads a dataset of JSON lines, {"prompt_ids": [ids...], "max_tokens": N} each (max_tokens
// optional, `default_max_tokens` when absent), up to `count` of them (0: all), through the one
// opener of input files. Throws Error naming the file and line of anything malformed.
ServingWorkload dataset_workload(const std::string& path, std::int64_t count,
                                 std::int64_t default_max_tokens);

struct ServingResult {
  std::int64_t concurrency = 0;
  std::int64_t requests = 0;
  std::int64_t output_tokens = 0;
  std::int64_t prompt_tokens = 0;
  double seconds = 0;                            // first submission to last finish
  std::vector<double> ttft_ms, tpot_ms, itl_ms;  // per request (ITL: per token gap)
  std::int64_t steps = 0;
  std::int64_t preemptions = 0;
  std::int64_t prefix_hits = 0, prefix_lookups = 0;
  // KV bytes, time-averaged over the steps: the paged cache's used blocks, and within them the
  // positions held; a contiguous cache reserving the whole context per running request.
  double reserved_bytes = 0;       // the pool, allocated up front
  double paged_used_bytes = 0;     // blocks held
  double paged_wasted_bytes = 0;   // held but not yet written
  double contiguous_bytes = 0;     // running requests x context x bytes per position
  double held_position_bytes = 0;  // positions the running requests hold, written or not
  std::int64_t peak_used_bytes = 0;

  double requests_per_s() const { return static_cast<double>(requests) / seconds; }
  double output_tokens_per_s() const { return static_cast<double>(output_tokens) / seconds; }
};

// Runs `workload` through a fresh engine over `model` (its backend as set) with `options`, at most
// `concurrency` requests in flight, and the tokenizer's `vocabulary` (for requests in JSON mode).
// Throws Error when a request is refused (the workload does not fit the model or the cache).
ServingResult run_serving(const LanguageModel& model, Context& ctx,
                          const engine::EngineOptions& options, const ServingWorkload& workload,
                          std::int64_t concurrency, const engine::TokenVocabulary& vocabulary = {});

}  // namespace attnscope::cli
