// `attnscope tokenize` and `attnscope detokenize`: GPT-2's byte-level BPE from the command line.
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "models/gpt2/tokenizer.h"
#include "tools/attnscope/commands.h"
#include "tools/attnscope/flags.h"

namespace attnscope::cli {

namespace {

struct TokenizeFlags {
  std::string tokenizer;
  std::optional<std::string> text;
};

struct DetokenizeFlags {
  std::string tokenizer;
  std::vector<std::string> ids;
};

}  // namespace

Subcommand add_tokenize(CLI::App& app) {
  auto flags = std::make_shared<TokenizeFlags>();
  CLI::App* sub = app.add_subcommand(
      "tokenize", "Print the GPT-2 token ids of a text (from --text or stdin) as a JSON array");
  sub->add_option("--tokenizer", flags->tokenizer,
                  "Directory with vocab.json + merges.txt (or encoder.json + vocab.bpe)")
      ->required();
  sub->add_option("--text", flags->text, "Text to encode (default: read stdin to the end)");
  return {sub, [flags] {
            const gpt2::Tokenizer tokenizer = gpt2::Tokenizer::load(flags->tokenizer);
            const std::string text =
                flags->text ? *flags->text
                            : std::string(std::istreambuf_iterator<char>(std::cin), {});
            std::cout << nlohmann::json(tokenizer.encode(text)).dump() << "\n";
            return 0;
          }};
}

Subcommand add_detokenize(CLI::App& app) {
  auto flags = std::make_shared<DetokenizeFlags>();
  CLI::App* sub = app.add_subcommand(
      "detokenize", "Print the text of GPT-2 token ids (e.g. 464 2068 or 464,2068)");
  sub->add_option("--tokenizer", flags->tokenizer,
                  "Directory with vocab.json + merges.txt (or encoder.json + vocab.bpe)")
      ->required();
  sub->add_option("ids", flags->ids, "Token ids")->required();
  return {sub, [flags] {
            const gpt2::Tokenizer tokenizer = gpt2::Tokenizer::load(flags->tokenizer);
            std::cout << tokenizer.decode(parse_ids(flags->ids, "ids")) << "\n";
            return 0;
          }};
}

}  // namespace attnscope::cli
