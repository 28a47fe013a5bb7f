// The flags several subcommands share (--model, --attn, --threads, --device, --dtype), what the
// device flags turn into (a Context), and the parsing of token ids given on the command line.
// --attn, one backend or a list, has one definition and one validator here.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/context.h"
#include "runtime/dtype.h"
#include "tools/attnscope/cli/cli11_fwd.h"

namespace attnscope::cli {

// --model DIR|synthetic:NAME (required).
void add_model_flag(CLI::App& app, std::string& spec);
// What an --attn list may say besides the registered names and aliases.
enum class AttentionList {
  NamesOnly,    // a usage error lists the names: "(valid: naive, ...)"
  AllowingAll,  // "all" stands for every backend: "(valid: all, naive, ...)"
};
// --attn NAME: one backend, checked against the registry at parse time (a usage error lists the
// names); `flag` names another flag of the same kind (diverge's --against).
void add_attention_flag(CLI::App& app, std::string& name, const std::string& flag = "--attn",
                        const std::string& help = "Attention backend");
// --attn A,B,...: a comma list of backends, each checked as --attn NAME is (and "all" where the
// list allows it); `default_text` is what the help shows as the default ("": none shown).
CLI::Option* add_attention_list_flag(CLI::App& app, std::vector<std::string>& names,
                                     AttentionList list, const std::string& help,
                                     const std::string& default_text);
// --threads N (0 = every hardware thread).
void add_threads_flag(CLI::App& app, int& threads);

// Where and in what the model computes.
struct DeviceOptions {
  std::string device = "cpu";  // cpu | cuda
  std::string dtype = "f32";   // f32 | f16 | bf16 | q8_0 (storage, ModelDTypes; math in f32)
  int threads = 0;             // CPU threads (0 = every hardware thread)
};
// --device, --dtype and --threads.
void add_device_flags(CLI::App& app, DeviceOptions& options);
// --against-device and --against-dtype: a second run's device and dtype (diverge), with the
// values --device and --dtype take; `against` keeps what it holds when they are not given.
void add_against_device_flags(CLI::App& app, DeviceOptions& against);
// The context for `options`; throws Error with one line when the device cannot be used.
std::unique_ptr<Context> make_context(const DeviceOptions& options);

// --attention-out FILE and the layers and heads it keeps (generate, profile --model; the map
// itself is tools/attnscope/measure/attention_map.h).
struct AttentionMapOptions {
  std::string path;                  // empty: no map
  std::vector<std::int64_t> layers;  // empty: every layer
  std::vector<std::int64_t> heads;   // empty: every query head
};
// --attention-out, --attention-layers and --attention-heads; `what` says which positions the map
// covers, for --help. Returns --attention-out.
CLI::Option* add_attention_map_flags(CLI::App& app, AttentionMapOptions& options,
                                     const std::string& what);

// --dtype of the attention op alone (bench-attention, profile --op, study): f32, f16 or bf16;
// throws Error for q8_0 (a weight format) and anything else.
DType parse_attention_dtype(const std::string& name);

// Parses ids given as "1,2,3", "1 2 3" or several arguments; throws Error on anything else.
// A check that a flag's value is a number (NaN is not) for which `ok` holds; otherwise the
// usage error `message`. `description` is what --help shows of the range.
CLI::Validator number_check(std::function<bool(double)> ok, const std::string& description,
                            const std::string& message);

// A seed from the operating system's entropy, for --seed -1.
std::uint64_t random_seed();

std::vector<std::int32_t> parse_ids(const std::vector<std::string>& items, const char* flag);

// The JSON schema --json-object (JSON mode's schema) or --json-schema FILE (the file's text, up
// to 1 MiB) asks for, "" when neither does; checked by engine::json_schema_grammar, an Error
// naming the flag otherwise.
std::string schema_of_flags(bool json_object, const std::string& schema_file);

// Runs `check_syntax` while the flags are parsed (in a subcommand's callback): an Error it throws
// becomes a usage error (exit 2), said before any model loads.
void as_usage_error(const std::function<void()>& check_syntax);

// Throws CLI::ValidationError (a usage error) when an integer flag of `app` or of its parsed
// subcommands was given a number its type cannot hold: CLI11 2.1 saturates it (--seed
// 99999999999999999999 would run with 2^63 - 1) and reads -1 into an unsigned as 2^64 - 1.
void refuse_out_of_range_integers(const CLI::App& app);

// Throws CLI::ValidationError (a usage error) when `args` (the command line, in order, before
// parsing) give a comma list flag of `app` or of the subcommand args[0] names a value with an
// empty item ("1,,2", ",", "1,"): CLI11 2.1 drops empty items before any check sees them, so
// `-b 1,,2` ran as `-b 1,2`.
void refuse_empty_list_items(const CLI::App& app, const std::vector<std::string>& args);

// Throws CLI::ValidationError (a usage error) when two output flags name one file, so that the
// later write would replace or corrupt the earlier: `outputs` are (flag, path) pairs, an empty
// path meaning the flag is unset. Paths are compared made absolute and normal.
void refuse_shared_outputs(const std::vector<std::pair<std::string, std::string>>& outputs);

}  // namespace attnscope::cli
