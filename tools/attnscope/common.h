// Pieces shared by the subcommands: flag helpers, model and tokenizer loading with progress on
// stderr, id-list parsing, and a UTF-8 aware text streamer.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/gpt2/model.h"
#include "models/gpt2/tokenizer.h"
#include "runtime/context.h"

namespace attnscope::cli {

// --model DIR|synthetic:NAME (required).
void add_model_flag(CLI::App& app, std::string& spec);
// --attn NAME, checked against the registry at parse time (a usage error lists the names).
void add_attention_flag(CLI::App& app, std::string& name);
// --threads N (0 = every hardware thread).
void add_threads_flag(CLI::App& app, int& threads);

// Where and in what the model computes.
struct DeviceOptions {
  std::string device = "cpu";  // cpu | cuda
  std::string dtype = "f32";   // f32 | f16 | bf16 (storage; math accumulates in f32)
  int threads = 0;             // CPU threads (0 = every hardware thread)
};
// --device, --dtype and --threads.
void add_device_flags(CLI::App& app, DeviceOptions& options);
// The context for `options`; throws Error with one line when the device cannot be used, or when
// a 16-bit dtype is asked of the CPU (its ops compute in f32 only).
std::unique_ptr<Context> make_context(const DeviceOptions& options);

// Loads the model onto ctx's device in `dtype`, then says what and how long on stderr (nothing
// is printed on failure, so the error stays the only line).
gpt2::Model load_model(const std::string& spec, Context& ctx, DType dtype = DType::F32);

// The tokenizer in `flag_dir` when given (an error if it has none); otherwise the model
// directory's own files, or for synthetic models the GPT-2 files this build was configured with
// (the shared fixtures); nullopt when none is found.
std::optional<gpt2::Tokenizer> find_tokenizer(const std::string& flag_dir,
                                              const std::string& model_spec);

// The CPU's model name from /proc/cpuinfo ("unknown CPU" when it cannot be read).
std::string cpu_model();

// Parses ids given as "1,2,3", "1 2 3" or several arguments; throws Error on anything else.
std::vector<std::int32_t> parse_ids(const std::vector<std::string>& items, const char* flag);

// Holds back the bytes of an incomplete UTF-8 character until the rest arrives, so streamed
// tokens never print half a character.
class Utf8Stream {
 public:
  // Appends `bytes`; returns what can be printed now.
  std::string push(const std::string& bytes);
  // Whatever is left (an incomplete sequence at the very end).
  std::string flush();

 private:
  std::string pending_;
};

}  // namespace attnscope::cli
