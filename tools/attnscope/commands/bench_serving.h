// `attnscope bench --op serving`: the offline serving benchmark (measure/serving_run.h) over the
// grid of --model, --attn, --device, --dtype and --concurrency, repeated --reps times with the
// concurrencies interleaved in each round. Its flags, and the report rows (one per model,
// backend, device, dtype and concurrency; medians over the rounds, latency percentiles over
// every request of every round). With --trace, one more run of the first model and backend at
// the last concurrency, untimed and profiled: each engine step a scope named by its batch, the
// model's scopes inside, and a track per request with its phases (engine/engine.h). With
// --json-object every request is in JSON mode (its mask's cost on each sampled token; a request
// ends early when its object closes).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/attnscope/cli/cli11_fwd.h"
#include "tools/attnscope/cli/engine_flags.h"

namespace attnscope::cli {

struct ServingFlags {
  std::int64_t requests = 64;
  std::vector<std::int64_t> concurrency = {1, 4, 16, 64};
  std::string input_len = "64:256";  // MIN:MAX or N
  std::string output_len = "32:128";
  std::int64_t shared_prefix = 0;
  std::string dataset;       // JSON lines of {"prompt_ids", "max_tokens"}; replaces the random mix
  bool json_object = false;  // every request in JSON mode (needs a tokenizer)
  std::string json_schema;   // a schema file: every request's reply valid under it
  std::string tokenizer;     // its folder; "": the model's own (find_tokenizer)
  EngineFlags engine;
  std::string trace;  // a Chrome trace of one more, profiled run (the first model and backend)
};

void add_serving_flags(CLI::App& app, ServingFlags& flags);

// What the grid runs on, from bench's own flags.
struct ServingGrid {
  std::vector<std::string> models, backends, devices, dtypes;
  int threads = 0, repetitions = 1, warmup = 0;
  std::uint64_t seed = 0;  // of the random workload (bench's --seed)
};

// Runs the grid and returns the rows; sets `threads` and `gpu` (the GPU's description, when one
// was used) for the report's machine block.
nlohmann::json run_serving_grid(const ServingFlags& flags, const ServingGrid& grid, int& threads,
                                std::string& gpu);

}  // namespace attnscope::cli
