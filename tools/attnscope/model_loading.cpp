// Loading the model and its tokenizer for a subcommand (tools/attnscope/model_loading.h).
#include "tools/attnscope/model_loading.h"

#include <filesystem>
#include <iostream>

#include "tools/attnscope/elapsed.h"

namespace attnscope::cli {

gpt2::Model load_model(const std::string& spec, Context& ctx, DType dtype) {
  const auto start = std::chrono::steady_clock::now();
  gpt2::Model model = gpt2::Model::open(spec, ctx, 0, dtype);
  const double took = seconds_since(start);
  std::cerr << "attnscope: loaded " << spec << " ("
            << static_cast<double>(model.parameter_count()) / 1e6 << "M parameters) in " << took
            << " s\n";
  const ModelConfig& config = model.config();
  if (!config.eos_in_vocabulary()) {
    std::cerr << "attnscope: warning: eos_token_id = " << config.eos_token_id
              << " is outside the vocabulary [0, " << config.vocab_size
              << "): generation will not stop at an end-of-text token\n";
  }
  return model;
}

std::optional<gpt2::Tokenizer> find_tokenizer(const std::string& flag_dir,
                                              const std::string& model_spec) {
  if (!flag_dir.empty()) return gpt2::Tokenizer::load(flag_dir);
  namespace fs = std::filesystem;
  if (model_spec.starts_with("synthetic:")) {
    // Synthetic models use GPT-2's vocabulary by construction.
    const std::string shared = ATTNSCOPE_DEFAULT_TOKENIZER_DIR;
    if (gpt2::Tokenizer::present_in(shared)) return gpt2::Tokenizer::load(shared);
    return std::nullopt;
  }
  const fs::path dir =
      fs::is_directory(model_spec) ? fs::path(model_spec) : fs::path(model_spec).parent_path();
  if (gpt2::Tokenizer::present_in(dir.string())) return gpt2::Tokenizer::load(dir.string());
  return std::nullopt;
}

}  // namespace attnscope::cli
