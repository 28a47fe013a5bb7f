// Loading what a subcommand runs: the model (with a line of progress on stderr) and the
// tokenizer that goes with it.
#pragma once

#include <optional>
#include <string>

#include "models/gpt2/model.h"
#include "models/gpt2/tokenizer.h"
#include "runtime/context.h"

namespace attnscope::cli {

// Loads the model onto ctx's device in `dtype`, then says what and how long on stderr (nothing
// is printed on failure, so the error stays the only line).
gpt2::Model load_model(const std::string& spec, Context& ctx, DType dtype = DType::F32);

// The tokenizer in `flag_dir` when given (an error if it has none); otherwise the model
// directory's own files, or for synthetic models the GPT-2 files this build was configured with
// (the shared fixtures); nullopt when none is found.
std::optional<gpt2::Tokenizer> find_tokenizer(const std::string& flag_dir,
                                              const std::string& model_spec);

}  // namespace attnscope::cli
