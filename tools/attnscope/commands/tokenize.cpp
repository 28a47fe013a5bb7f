// `attnscope tokenize` and `attnscope detokenize`: BPE from the command line, with GPT-2's
// vocab.json + merges.txt (or OpenAI's encoder.json + vocab.bpe) or a Hugging Face
// tokenizer.json (byte-level: SmolLM2, Qwen2, Llama 3; SentencePiece: Llama 2, TinyLlama).
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <variant>

#include "models/gpt2/tokenizer.h"
#include "models/tokenizer/tokenizer_json.h"
#include "tools/attnscope/cli/flags.h"
#include "tools/attnscope/commands/commands.h"

namespace attnscope::cli {

namespace {

constexpr const char* kTokenizerHelp =
    "Directory with vocab.json + merges.txt (or encoder.json + vocab.bpe), or with a "
    "tokenizer.json; or one of those files";

struct TokenizeFlags {
  std::string tokenizer;
  std::optional<std::string> text;
  bool add_special_tokens = true;  // as generate encodes a prompt
};

struct DetokenizeFlags {
  std::string tokenizer;
  std::vector<std::string> ids;
};

using AnyTokenizer = std::variant<gpt2::Tokenizer, tokenizer::TokenizerJson>;

// GPT-2's files when the directory holds them, else its tokenizer.json (or `path` is that file).
// One file of GPT-2's pair (encoder.json, say) names its folder.
AnyTokenizer load_tokenizer(const std::string& path) {
  const std::filesystem::path file(path);
  if (gpt2::Tokenizer::is_file_name(file.filename().string())) {
    return gpt2::Tokenizer::load(file.parent_path().string());
  }
  const bool tokenizer_json =
      path.ends_with(".json") ||
      (!gpt2::Tokenizer::present_in(path) && tokenizer::TokenizerJson::present_in(path));
  if (tokenizer_json) return tokenizer::TokenizerJson::load(path);
  return gpt2::Tokenizer::load(path);
}

}  // namespace

Subcommand add_tokenize(CLI::App& app) {
  auto flags = std::make_shared<TokenizeFlags>();
  CLI::App* sub = app.add_subcommand(
      "tokenize", "Print the token ids of a text (from --text or stdin) as a JSON array");
  sub->add_option("--tokenizer", flags->tokenizer, kTokenizerHelp)->required();
  sub->add_option("--text", flags->text, "Text to encode (default: read stdin to the end)");
  sub->add_flag("--add-special-tokens,!--no-special-tokens", flags->add_special_tokens,
                "Add the tokenizer.json post-processor's tokens (Llama 3's <|begin_of_text|>), "
                "as transformers' encode() and `attnscope generate` do (the default; "
                "--no-special-tokens: the text's tokens only)");
  return {sub, [flags] {
            const AnyTokenizer tokenizer = load_tokenizer(flags->tokenizer);
            const std::string text =
                flags->text ? *flags->text
                            : std::string(std::istreambuf_iterator<char>(std::cin), {});
            const std::vector<std::int32_t> ids =
                std::holds_alternative<gpt2::Tokenizer>(tokenizer)
                    ? std::get<gpt2::Tokenizer>(tokenizer).encode(text)
                    : std::get<tokenizer::TokenizerJson>(tokenizer).encode(
                          text, flags->add_special_tokens);
            std::cout << nlohmann::json(ids).dump() << "\n";
            return 0;
          }};
}

Subcommand add_detokenize(CLI::App& app) {
  auto flags = std::make_shared<DetokenizeFlags>();
  CLI::App* sub =
      app.add_subcommand("detokenize", "Print the text of token ids (e.g. 464 2068 or 464,2068)");
  sub->add_option("--tokenizer", flags->tokenizer, kTokenizerHelp)->required();
  sub->add_option("ids", flags->ids, "Token ids")->required();
  return {sub, [flags] {
            const AnyTokenizer tokenizer = load_tokenizer(flags->tokenizer);
            const std::vector<std::int32_t> ids = parse_ids(flags->ids, "ids");
            std::cout << std::visit([&](const auto& loaded) { return loaded.decode(ids); },
                                    tokenizer)
                      << "\n";
            return 0;
          }};
}

}  // namespace attnscope::cli
