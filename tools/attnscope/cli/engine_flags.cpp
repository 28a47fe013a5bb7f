// The engine's flags (tools/attnscope/cli/engine_flags.h).
#include "tools/attnscope/cli/engine_flags.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>

#include "runtime/dtype.h"
#include "runtime/error.h"

namespace attnscope::cli {

std::uint64_t parse_bytes(const std::string& text, const char* flag) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  unit.erase(std::remove_if(unit.begin(), unit.end(), [](unsigned char c) { return c == ' '; }),
             unit.end());
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double scale = 0;
  if (unit.empty() || unit == "B") scale = 1;
  if (unit == "KIB" || unit == "KB" || unit == "K") scale = 0x1p10;
  if (unit == "MIB" || unit == "MB" || unit == "M") scale = 0x1p20;
  if (unit == "GIB" || unit == "GB" || unit == "G") scale = 0x1p30;
  check(used > 0 && scale > 0 && value > 0 && value * scale < 0x1p60, flag,
        "expected a size such as 512MiB, 2GiB or a number of bytes, got '" + text + "'");
  return static_cast<std::uint64_t>(value * scale);
}

void add_engine_flags(CLI::App& app, EngineFlags& flags, const std::string& group) {
  app.add_option("--block-size", flags.block_size, "Positions per KV block")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{4096}))
      ->group(group);
  app.add_option("--kv-memory", flags.kv_memory,
                 "KV cache size (512MiB, 2GiB; default min(1/8 of memory, 16 full contexts))")
      ->group(group);
  app.add_option("--kv-dtype", flags.kv_dtype,
                 "KV cache element type (default: the activations': f32 on the cpu, bf16 on "
                 "cuda); on the cpu f16 or bf16 halve the bytes each decode step reads, q8_0 "
                 "(head dims a multiple of 32) takes 34 per 32 values")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0"}))
      ->group(group);
  app.add_option("--max-batch-tokens", flags.max_batch_tokens,
                 "Tokens per engine step, prefill chunks and decodes together")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20))
      ->group(group);
  app.add_option("--max-running", flags.max_running, "Sequences holding KV blocks at once")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20))
      ->group(group);
}

engine::EngineOptions engine_options(const EngineFlags& flags) {
  engine::EngineOptions options;
  options.block_tokens = flags.block_size;
  options.kv_memory_bytes =
      flags.kv_memory.empty() ? 0 : parse_bytes(flags.kv_memory, "--kv-memory");
  if (!flags.kv_dtype.empty()) options.kv_dtype = parse_dtype(flags.kv_dtype);
  options.scheduler = {flags.max_batch_tokens, flags.max_running};
  return options;
}

}  // namespace attnscope::cli
