// Loading the model and its tokenizer for a subcommand (tools/attnscope/cli/model_loading.h).
#include "tools/attnscope/cli/model_loading.h"

#include <filesystem>
#include <iostream>
#include <sstream>

#include "models/llama/weights.h"
#include "runtime/error.h"
#include "tools/attnscope/cli/elapsed.h"

namespace attnscope::cli {

std::unique_ptr<LanguageModel> load_model(const std::string& spec, Context& ctx, DType dtype) {
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<LanguageModel> model = open_model(spec, ctx, 0, dtype);
  const double took = seconds_since(start);
  std::cerr << "attnscope: loaded " << spec << " ("
            << static_cast<double>(model->parameter_count()) / 1e6 << "M parameters) in " << took
            << " s\n";
  const ModelConfig& config = model->config();
  if (config.eos_token_ids.empty()) {
    std::cerr << "attnscope: warning: the config names no eos_token_id: generation will not stop "
                 "at an end-of-text token\n";
  } else if (!config.eos_in_vocabulary()) {
    std::cerr << "attnscope: warning: eos_token_id = " << config.eos_token_id()
              << " is outside the vocabulary [0, " << config.vocab_size
              << "): generation will not stop at an end-of-text token\n";
  }
  return model;
}

namespace {

// The tokenizer files in `dir`: GPT-2's pair, else a tokenizer.json.
std::optional<TextTokenizer> tokenizer_in(const std::string& dir) {
  if (gpt2::Tokenizer::present_in(dir)) return TextTokenizer(gpt2::Tokenizer::load(dir));
  if (tokenizer::TokenizerJson::present_in(dir)) {
    return TextTokenizer(tokenizer::TokenizerJson::load(dir));
  }
  return std::nullopt;
}

// The folder of a checkpoint given as a folder or as one of its files ("": a synthetic model).
std::string checkpoint_dir(const std::string& model_spec) {
  namespace fs = std::filesystem;
  if (model_spec.starts_with("synthetic:")) return "";
  return fs::is_directory(model_spec) ? model_spec : fs::path(model_spec).parent_path().string();
}

}  // namespace

ModelOnDevice load_model_on_device(const std::string& spec, const DeviceOptions& device,
                                   const std::string& attention) {
  ModelOnDevice loaded;
  loaded.ctx = make_context(device);
  loaded.model = load_model(spec, *loaded.ctx, parse_dtype(device.dtype));
  loaded.model->set_attention(attention);
  return loaded;
}

std::string run_description(const LanguageModel& model, const Context& ctx) {
  std::ostringstream text;
  text << "attention " << model.attention().name() << ", " << ctx.describe() << ", "
       << model.dtype_summary();
  return text.str();
}

nlohmann::json run_json(const std::string& spec, const LanguageModel& model, const Context& ctx) {
  return {{"model", spec},
          {"attention", model.attention().name()},
          {"threads", ctx.threads()},
          {"device", ctx.describe()},
          {"dtype", dtype_name(model.weight_dtype())},
          {"activation_dtype", dtype_name(model.activation_dtype())}};
}

std::optional<TextTokenizer> find_tokenizer(const std::string& flag_dir,
                                            const std::string& model_spec) {
  if (!flag_dir.empty()) {
    if (std::optional<TextTokenizer> found = tokenizer_in(flag_dir)) return found;
    return TextTokenizer(gpt2::Tokenizer::load(flag_dir));  // its error names what is missing
  }
  if (model_spec.starts_with("synthetic:")) {
    if (model_family(model_spec) == ModelFamily::Llama) return std::nullopt;
    // Synthetic GPT-2 models use GPT-2's vocabulary by construction.
    const std::string shared = ATTNSCOPE_DEFAULT_TOKENIZER_DIR;
    if (gpt2::Tokenizer::present_in(shared)) return TextTokenizer(gpt2::Tokenizer::load(shared));
    return std::nullopt;
  }
  return tokenizer_in(checkpoint_dir(model_spec));
}

std::optional<tokenizer::ChatTemplate> find_chat_template(const std::string& template_file,
                                                          const std::string& tokenizer_dir,
                                                          const std::string& model_spec,
                                                          const std::optional<TextTokenizer>& text,
                                                          std::string& why_none) {
  const std::string dir = !tokenizer_dir.empty() ? tokenizer_dir : checkpoint_dir(model_spec);
  // transformers' GPT2Tokenizer (vocab.json + merges.txt) has these without a config saying so.
  tokenizer::jinja::Value defaults = tokenizer::jinja::Value::object();
  if (text && text->is_gpt2_files()) {
    for (const char* name : {"bos_token", "eos_token", "unk_token"})
      defaults[name] = "<|endoftext|>";
  }
  if (!text) {
    why_none = "a chat needs a tokenizer, and this model has none (--tokenizer DIR)";
    if (template_file.empty()) return std::nullopt;
  }
  if (!template_file.empty()) {
    return tokenizer::ChatTemplate::from_file(template_file, dir, defaults);
  }
  try {
    if (!dir.empty()) {
      if (std::optional<tokenizer::ChatTemplate> found =
              tokenizer::ChatTemplate::find_in(dir, defaults)) {
        return found;
      }
    }
    why_none =
        "this model has no chat template (chat_template.jinja, or chat_template in "
        "tokenizer_config.json): pass one with --chat-template FILE";
  } catch (const Error& e) {
    why_none = std::string("the model's chat template cannot be used: ") + e.what();
  }
  return std::nullopt;
}

}  // namespace attnscope::cli
