// Loading what a subcommand runs: the model (with a line of progress on stderr), the tokenizer
// that goes with it, and its chat template.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "models/language_model.h"
#include "models/tokenizer/chat_template.h"
#include "runtime/context.h"
#include "tools/attnscope/cli/flags.h"
#include "tools/attnscope/cli/text_tokenizer.h"

namespace attnscope::cli {

// Loads the model (GPT-2 or Llama, see open_model in models/language_model.h) onto ctx's device
// in `dtype`, then says what and how long on stderr (nothing is printed on failure, so the error
// stays the only line).
std::unique_ptr<LanguageModel> load_model(const std::string& spec, Context& ctx,
                                          DType dtype = DType::F32);

// A context made from the device flags and a model loaded onto it (in their --dtype) with the
// attention backend `attention` set: what generate and perplexity run.
struct ModelOnDevice {
  std::unique_ptr<Context> ctx;
  std::unique_ptr<LanguageModel> model;
};
ModelOnDevice load_model_on_device(const std::string& spec, const DeviceOptions& device,
                                   const std::string& attention);
// "attention NAME, DEVICE, DTYPES": what ran, as generate's and perplexity's summary line on
// stderr begins it.
std::string run_description(const LanguageModel& model, const Context& ctx);
// {"model": spec, "attention", "threads", "device", "dtype", "activation_dtype"}: the fields of
// generate's and perplexity's --json object that say what ran.
nlohmann::json run_json(const std::string& spec, const LanguageModel& model, const Context& ctx);

// The tokenizer in `flag_dir` when given (an error if it has none); otherwise the model
// directory's own files (vocab.json + merges.txt, else tokenizer.json), or for synthetic GPT-2
// models the GPT-2 files this build was configured with (the shared fixtures); nullopt when
// none is found (synthetic Llama shapes have none: their vocabularies are not GPT-2's).
std::optional<TextTokenizer> find_tokenizer(const std::string& flag_dir,
                                            const std::string& model_spec);

// The chat template that goes with the model: `template_file`'s (--chat-template; an error if it
// cannot be read or used), else the one saved beside the tokenizer in `tokenizer_dir` or the
// checkpoint (tokenizer::ChatTemplate::find_in), with GPT-2's special tokens when `text` is
// GPT-2's vocab.json kind. nullopt with `why_none` saying why when there is none, there is no
// tokenizer, or the checkpoint's template cannot be used (not an error: a server still serves
// completions).
std::optional<tokenizer::ChatTemplate> find_chat_template(const std::string& template_file,
                                                          const std::string& tokenizer_dir,
                                                          const std::string& model_spec,
                                                          const std::optional<TextTokenizer>& text,
                                                          std::string& why_none);

}  // namespace attnscope::cli
