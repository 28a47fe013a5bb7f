// The engine's flags, shared by `bench --op serving` and `serve`: the paged cache's block size,
// memory and element type, the scheduler's token budget and its cap on running sequences.
#pragma once

#include <cstdint>
#include <string>

#include "engine/engine.h"
#include "tools/attnscope/cli/cli11_fwd.h"

namespace attnscope::cli {

struct EngineFlags {
  std::int64_t block_size = 16;
  std::string kv_memory;  // "512MiB", "2GiB", bytes; empty: the engine's default
  std::string kv_dtype;   // "f32", "f16", "bf16", "q8_0"; empty: the activations'
  std::int64_t max_batch_tokens = 512;
  std::int64_t max_running = 256;
};

// --block-size, --kv-memory, --kv-dtype, --max-batch-tokens, --max-running, in the help group
// `group`.
void add_engine_flags(CLI::App& app, EngineFlags& flags, const std::string& group);

// The engine's options from its flags. Throws Error for a --kv-memory that is not a size. (Whether
// --kv-dtype may serve the model's activations is the engine's check: kv_dtype_refusal.)
engine::EngineOptions engine_options(const EngineFlags& flags);

// Bytes from "N", "N KiB|MiB|GiB" (or K/M/G, KB/MB/GB, taken as powers of 1024, with or without a
// space); throws Error naming `flag` otherwise.
std::uint64_t parse_bytes(const std::string& text, const char* flag);

}  // namespace attnscope::cli
