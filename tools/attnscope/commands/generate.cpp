// `attnscope generate`: prefill a prompt, then decode token by token with the KV cache,
// streaming text to stdout and timings to stderr (or one JSON object with --json, with each
// token's log-probabilities under --top-logprobs K). --logits-out FILE saves the f32 logits each
// generated token was chosen from as a .npy array [tokens, vocab]; --attention-out FILE the
// attention probabilities of every position (tools/attnscope/measure/attention_map.h).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <sstream>

#include "engine/json_schema_masks.h"
#include "engine/token_picker.h"
#include "models/tokenizer/chat_template.h"
#include "runtime/error.h"
#include "runtime/input_file.h"
#include "runtime/npy.h"
#include "runtime/sampler.h"
#include "runtime/strict_json.h"
#include "runtime/transfer.h"
#include "tools/attnscope/cli/flags.h"
#include "tools/attnscope/cli/generation.h"
#include "tools/attnscope/cli/machine_info.h"
#include "tools/attnscope/cli/model_loading.h"
#include "tools/attnscope/cli/utf8_stream.h"
#include "tools/attnscope/commands/commands.h"
#include "tools/attnscope/measure/attention_map.h"
#include "tools/attnscope/measure/token_log_probs.h"

namespace attnscope::cli {

namespace {

// A conversation file is a request body's size (serve takes 1 MiB by default); far more is not one.
constexpr std::uint64_t kMaxConversationBytes = std::uint64_t{64} << 20;

struct GenerateFlags {
  std::string model;
  std::string tokenizer;
  std::string prompt;
  std::vector<std::string> prompt_ids;
  bool chat = false;     // --prompt is a user's message, rendered by the chat template
  std::string system;    // with --chat: a system message first
  std::string messages;  // with --chat: a JSON file's conversation instead of --prompt's
  bool continue_final_message = false;  // with --messages: the final message is continued
  std::string chat_template;            // with --chat: a Jinja file instead of the checkpoint's
  std::int64_t max_new_tokens = 32;
  SamplingOptions sampling;              // its seed comes from `seed`
  engine::LogitAdjustments adjustments;  // --presence-penalty, --frequency-penalty
  std::vector<std::string> logit_bias;   // ID:BIAS items, read into `adjustments` once loaded
  bool json_object = false;              // JSON mode
  std::string json_schema;               // a JSON schema file: the reply valid under it
  std::int64_t seed = 0;                 // -1: a random seed, printed (as llama.cpp's -1)
  std::string attention = "flash";
  DeviceOptions device;
  bool no_cuda_graphs = false;
  bool ignore_eos = false;
  bool json = false;
  std::int64_t top_logprobs = -1;  // -1: no log-probabilities in the JSON
  std::string logits_out;          // empty: no .npy file
  AttentionMapOptions attention_map;
};

// --logit-bias ID:BIAS,... as pairs (their ranges are LogitAdjustments::refusal's to check).
std::vector<std::pair<std::int32_t, float>> parse_logit_bias(
    const std::vector<std::string>& items) {
  std::vector<std::pair<std::int32_t, float>> biases;
  for (const std::string& list : items) {
    std::istringstream pieces(list);
    std::string item;
    while (std::getline(pieces, item, ',')) {
      const std::size_t colon = item.find(':');
      long long id = -1;
      double bias = 0.0;
      std::size_t id_used = 0, bias_used = 0;
      try {
        id = std::stoll(item.substr(0, colon), &id_used);
        bias = std::stod(item.substr(colon + 1), &bias_used);
      } catch (const std::exception&) {
        id_used = 0;
      }
      check(colon != std::string::npos && id_used == colon && id_used > 0 &&
                bias_used == item.size() - colon - 1 && bias_used > 0 && id >= 0 && id <= INT32_MAX,
            "--logit-bias", "'" + item + "' is not ID:BIAS (e.g. 50256:-100)");
      biases.emplace_back(static_cast<std::int32_t>(id), static_cast<float>(bias));
    }
  }
  return biases;
}

// --chat's conversation: --messages' file (a chat completions request's JSON), or
// [system: --system, if given; user: --prompt].
tokenizer::Conversation chat_conversation(const GenerateFlags& flags) {
  if (!flags.messages.empty()) {
    const std::string text = read_input_file(flags.messages, kMaxConversationBytes, "--messages");
    // Validated strictly first (no duplicate keys, nesting capped), then read keeping the keys'
    // order, which a template's tojson shows.
    const nlohmann::json checked =
        parse_json_refusing_duplicates(text, flags.messages, "the conversation");
    check(checked.is_object(), flags.messages,
          "must be a JSON object with \"messages\" (and \"tools\"), as a chat completions "
          "request writes it");
    try {
      return tokenizer::read_conversation(tokenizer::jinja::Value::parse(text));
    } catch (const tokenizer::ConversationError& e) {
      throw Error(flags.messages, e.what());
    }
  }
  tokenizer::Conversation conversation{tokenizer::jinja::Value::array(), nullptr};
  if (!flags.system.empty()) {
    conversation.messages.push_back({{"role", "system"}, {"content", flags.system}});
  }
  conversation.messages.push_back({{"role", "user"}, {"content", flags.prompt}});
  return conversation;
}

// --chat: the ids of its conversation as the chat template renders it, the assistant's turn
// opened (or the final message left open, --continue-final-message, and `continued` set to the
// text the reply continues); tokenized without adding special tokens (the template writes them).
std::vector<std::int32_t> chat_prompt(const GenerateFlags& flags,
                                      const std::optional<TextTokenizer>& tokenizer,
                                      std::string& continued) {
  std::string why_none;
  const std::optional<tokenizer::ChatTemplate> chat_template =
      find_chat_template(flags.chat_template, flags.tokenizer, flags.model, tokenizer, why_none);
  check(chat_template.has_value() && why_none.empty(), "--chat", why_none);
  const tokenizer::ChatEnding ending =
      tokenizer::chat_ending(!flags.continue_final_message, flags.continue_final_message);
  const tokenizer::Conversation conversation = chat_conversation(flags);
  const std::string text = chat_template->render(conversation, ending);
  if (flags.continue_final_message) continued = tokenizer::continued_text(conversation, text);
  return tokenizer->encode(text, false);
}

int run_generate(const GenerateFlags& flags) {
  check(!flags.chat || !flags.prompt.empty() || !flags.messages.empty(), "--chat",
        "needs --prompt (the user's message) or --messages FILE (a conversation)");
  SamplingOptions sampling = flags.sampling;
  sampling.seed = flags.seed >= 0 ? static_cast<std::uint64_t>(flags.seed) : random_seed();
  if (flags.seed < 0) std::cerr << "attnscope: seed " << sampling.seed << "\n";
  validate_sampling(sampling);
  const ModelOnDevice loaded = load_model_on_device(flags.model, flags.device, flags.attention);
  Context& ctx = *loaded.ctx;
  LanguageModel& model = *loaded.model;
  // A graph would replay the recorded kernels without the map's host copies.
  StepRunner runner(!flags.no_cuda_graphs && flags.attention_map.path.empty());
  const ModelConfig& config = model.config();
  engine::LogitAdjustments adjustments = flags.adjustments;
  adjustments.logit_bias = parse_logit_bias(flags.logit_bias);
  if (std::string why = adjustments.refusal(config.vocab_size); !why.empty()) {
    throw Error("--logit-bias", why);  // the penalties' ranges are the flags' own checks
  }
  const std::optional<TextTokenizer> tokenizer = find_tokenizer(flags.tokenizer, flags.model);

  std::vector<std::int32_t> prompt;
  std::string continued;  // --continue-final-message: the text the reply continues
  if (!flags.prompt_ids.empty()) {
    prompt = parse_ids(flags.prompt_ids, "--prompt-ids");
    check(!prompt.empty(), "--prompt-ids",
          "no token ids given (e.g. --prompt-ids 464,2068; leave the flag out to start from "
          "eos_token_id)");
  } else if (!flags.prompt.empty() || flags.chat) {
    check(tokenizer.has_value(), flags.chat ? "--chat" : "--prompt",
          "no tokenizer for this model: pass --tokenizer DIR (vocab.json + merges.txt, or "
          "tokenizer.json) or use --prompt-ids");
    prompt =
        flags.chat ? chat_prompt(flags, tokenizer, continued) : tokenizer->encode(flags.prompt);
  }
  if (prompt.empty()) {
    check(config.eos_in_vocabulary(), "prompt",
          "an empty prompt starts from eos_token_id = " + std::to_string(config.eos_token_id()) +
              ", which is outside the vocabulary: pass --prompt or --prompt-ids");
    prompt.push_back(static_cast<std::int32_t>(config.eos_token_id()));
  }
  for (std::int32_t id : prompt) {
    check(id < config.vocab_size, "prompt",
          "token id " + std::to_string(id) + " is outside the vocabulary [0, " +
              std::to_string(config.vocab_size) + ")");
  }
  // JSON mode or a JSON schema (the mask built before anything is printed).
  std::shared_ptr<engine::GrammarTokenMask> grammar_mask;
  if (flags.json_object || !flags.json_schema.empty()) {
    const char* flag = flags.json_object ? "--json-object" : "--json-schema";
    check(tokenizer.has_value(), flag,
          "a JSON reply needs the model's tokenizer: pass --tokenizer DIR");
    const std::string schema = schema_of_flags(flags.json_object, flags.json_schema);
    grammar_mask = engine::JsonSchemaMasks(tokenizer->vocabulary(), config).mask(schema);
    if (std::string why = engine::grammar_prefix_refusal(grammar_mask->grammar(), continued);
        !why.empty()) {
      throw Error(flag, why);
    }
  }
  const auto prompt_length = static_cast<std::int64_t>(prompt.size());
  // The last new token is never fed back, so the cache holds the prompt and all but one of them.
  const std::int64_t positions =
      prompt_length + std::max<std::int64_t>(flags.max_new_tokens - 1, 0);
  check(positions <= config.context_length, "prompt",
        std::to_string(prompt_length) + " prompt tokens + " + std::to_string(flags.max_new_tokens) +
            " new tokens need " + std::to_string(positions) +
            " positions, more than the context length of " + std::to_string(config.context_length) +
            " (shorten the prompt or lower --max-new-tokens)");

  model.require_memory(ctx, 1, positions, prompt_length, false, "prompt",
                       "shorten the prompt or lower --max-new-tokens");
  KVCache cache = model.new_cache(ctx, 1, positions);
  Utf8Stream stream;
  const bool stream_text = !flags.json && tokenizer.has_value();
  // With --top-logprobs or --logits-out the whole row of logits also crosses to the host, once
  // per token, between the timed steps.
  std::optional<NpyWriter> logits_file;
  if (!flags.logits_out.empty()) logits_file.emplace(flags.logits_out, config.vocab_size);
  nlohmann::json log_probs = nlohmann::json::array();
  std::size_t emitted = 0;
  auto on_token = [&](std::int32_t id, const Tensor& logits) {
    if (logits_file || flags.top_logprobs >= 0) {
      const Tensor host = to_host(ctx, logits);
      const std::span<const float> row(host.data<float>(),
                                       static_cast<std::size_t>(config.vocab_size));
      if (logits_file) logits_file->append_row(row);
      if (flags.top_logprobs >= 0) {
        log_probs.push_back(
            token_log_probs(row, id, flags.top_logprobs, tokenizer ? &*tokenizer : nullptr));
      }
    }
    if (stream_text) {
      std::cout << stream.push(tokenizer->output_bytes(id)) << std::flush;
    } else if (!flags.json) {
      std::cout << (emitted > 0 ? " " : "") << id << std::flush;
    }
    ++emitted;
  };

  if (stream_text) std::cout << tokenizer->decode(prompt) << std::flush;
  GenerationOptions options;
  options.max_new_tokens = flags.max_new_tokens;
  options.sampling = sampling;
  options.adjustments = adjustments;
  options.ignore_eos = flags.ignore_eos;
  if (grammar_mask) {
    options.grammar_mask = grammar_mask;
    options.json_prefix = continued;
  }
  Generation generation;
  with_attention_map(ctx, model, flags.attention_map, AttentionMapSteps::All, [&] {
    generation = generate_tokens(ctx, model, cache, runner, prompt, options, on_token);
  });
  if (!flags.json) std::cout << stream.flush() << "\n" << std::flush;
  if (logits_file) logits_file->finish();
  const std::vector<std::int32_t>& generated = generation.generated;
  const double prefill_seconds = generation.prefill_seconds;
  const double decode_seconds = generation.decode_seconds;
  const std::int64_t decode_steps = generation.decode_steps;

  const double prefill_rate = static_cast<double>(prompt_length) / prefill_seconds;
  const double decode_rate =
      decode_steps ? static_cast<double>(decode_steps) / decode_seconds : 0.0;
  const bool graphs = ctx.device() == Device::CUDA && runner.cuda_graphs();
  std::cerr << "attnscope: " << run_description(model, ctx) << (graphs ? ", cuda graphs" : "")
            << " | prefill " << prompt_length << " tokens, " << prefill_rate
            << " tokens/s | decode " << decode_steps << " tokens, " << decode_rate << " tokens/s\n";
  if (flags.json) {
    nlohmann::json out = run_json(flags.model, model, ctx);
    out.update({
        {"cpu_kernels",  // null on cuda
         ctx.device() == Device::CPU ? nlohmann::json(cpu_kernels()) : nlohmann::json(nullptr)},
        {"cuda_graphs", graphs},
        {"cuda_graph_instantiations", runner.graph_counts().instantiations},
        {"cuda_graph_updates", runner.graph_counts().updates},
        {"cuda_graph_replays", runner.graph_counts().replays},
        {"cuda_graph_nodes", runner.graph_counts().nodes},
        {"weight_bytes", model.weight_bytes()},
        {"seed", sampling.seed},
        {"prompt_ids", prompt},
        {"generated_ids", generated},
        {"stop_reason", generation.stop_reason},
        {"prefill_tokens", prompt_length},
        {"prefill_seconds", prefill_seconds},
        {"prefill_tokens_per_s", prefill_rate},
        {"decode_tokens", decode_steps},
        {"decode_seconds", decode_seconds},
        {"decode_tokens_per_s", decode_rate},
        {"peak_bytes", ctx.allocator().peak_bytes()},
    });
    if (tokenizer) {
      // Invalid UTF-8 (a token cut mid-character) becomes U+FFFD rather than failing the dump.
      out["text"] = tokenizer->decode_output(generated);
    }
    if (flags.top_logprobs >= 0) out["logprobs"] = {{"content", log_probs}};
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  return 0;
}

}  // namespace

Subcommand add_generate(CLI::App& app) {
  auto flags = std::make_shared<GenerateFlags>();
  CLI::App* sub = app.add_subcommand("generate", "Generate text from a prompt");
  add_model_flag(*sub, flags->model);
  sub->add_option("--tokenizer", flags->tokenizer,
                  "Directory with vocab.json + merges.txt (or encoder.json + vocab.bpe), or "
                  "with a tokenizer.json; default: the model directory's own");
  CLI::Option* prompt = sub->add_option("--prompt", flags->prompt, "Prompt text");
  CLI::Option* ids =
      sub->add_option("--prompt-ids", flags->prompt_ids, "Prompt as token ids, e.g. 464,2068")
          ->excludes(prompt);
  CLI::Option* chat =
      sub->add_flag("--chat", flags->chat,
                    "--prompt is a user's message: rendered by the model's chat template "
                    "(tokenizer_config.json's or chat_template.jinja), the assistant's turn opened")
          ->excludes(ids);
  CLI::Option* system =
      sub->add_option("--system", flags->system, "With --chat: a system message before the user's")
          ->needs(chat);
  sub->add_option("--messages", flags->messages,
                  "With --chat: the conversation of a JSON file, as a chat completions request "
                  "writes it ({\"messages\": [{\"role\", \"content\"}, ...], \"tools\": "
                  "[...]}), instead of --system and --prompt")
      ->needs(chat)
      ->excludes(prompt)
      ->excludes(system)
      ->check(CLI::ExistingFile);
  sub->add_flag("--continue-final-message", flags->continue_final_message,
                "With --messages: the model continues the final message (an assistant's reply "
                "begun in the file) instead of starting a new turn")
      ->needs(sub->get_option("--messages"));
  sub->add_option("--chat-template", flags->chat_template,
                  "With --chat: a Jinja chat template file instead of the model's own")
      ->needs(chat)
      ->check(CLI::ExistingFile);
  sub->add_option("-n,--max-new-tokens", flags->max_new_tokens, "Tokens to generate")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 20));
  sub->add_option("--temperature,--temp", flags->sampling.temperature, "0 = greedy")
      ->capture_default_str()
      ->check(number_check([](double t) { return t >= 0.0 && t <= 100.0; }, "[0, 100]",
                           "must be a number in [0, 100] (0 = greedy)"));
  sub->add_option("--top-k", flags->sampling.top_k, "Keep the K most probable tokens (0 = all)")
      ->capture_default_str()
      ->check(
          number_check([](double k) { return k >= 0.0; }, ">= 0", "must be >= 0 (0 = no limit)"));
  sub->add_option("--top-p", flags->sampling.top_p, "Nucleus sampling mass in (0, 1]")
      ->capture_default_str()
      ->check(number_check([](double p) { return p > 0.0 && p <= 1.0; }, "(0, 1]",
                           "must be in (0, 1]"));
  const auto penalty_range =
      number_check([](double p) { return p >= -2.0 && p <= 2.0; }, "[-2, 2]", "must be in [-2, 2]");
  sub->add_option("--presence-penalty", flags->adjustments.presence_penalty,
                  "As OpenAI's, in [-2, 2]: a token's logit is lowered by this once it has been "
                  "generated")
      ->capture_default_str()
      ->check(penalty_range);
  sub->add_option("--frequency-penalty", flags->adjustments.frequency_penalty,
                  "As OpenAI's, in [-2, 2]: a token's logit is lowered by this times how often "
                  "it has been generated")
      ->capture_default_str()
      ->check(penalty_range);
  sub->add_option("--logit-bias", flags->logit_bias,
                  "As OpenAI's logit_bias: ID:BIAS,... added to those tokens' logits, each bias in "
                  "[-100, 100] (-100 all but bans a token, 100 all but forces it)");
  sub->add_flag("--json-object", flags->json_object,
                "JSON mode (OpenAI's response_format json_object): the reply is one JSON object, "
                "every token that cannot continue one masked, and generation stops at its "
                "closing '}' (stop_reason \"stop\"); the prompt should still ask for JSON");
  sub->add_option("--json-schema", flags->json_schema,
                  "Structured output (OpenAI's response_format json_schema): a JSON schema file; "
                  "the reply is one JSON object valid under it (the keywords enforced: "
                  "docs/SERVER.md), and generation stops at its closing '}'")
      ->excludes("--json-object");
  sub->add_option("--seed", flags->seed, "Sampling seed (-1 = a random one, printed)")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{-1}, std::numeric_limits<std::int64_t>::max()));
  add_attention_flag(*sub, flags->attention);
  add_device_flags(*sub, flags->device);
  sub->add_flag("--no-cuda-graphs", flags->no_cuda_graphs,
                "On a GPU, launch each decode step's kernels one by one instead of as one CUDA "
                "graph");
  sub->add_flag("--ignore-eos", flags->ignore_eos,
                "Keep generating after <|endoftext|> (for benchmarks)");
  CLI::Option* json =
      sub->add_flag("--json", flags->json, "Print one JSON object with ids, text and timings");
  sub->add_option("--top-logprobs", flags->top_logprobs,
                  "With --json: each generated token's log-probability and the K most probable "
                  "tokens at its step (logprobs.content[i] = {id, token, bytes, logprob, "
                  "top_logprobs}; K = 0: the chosen token's only)")
      ->needs(json)
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1000}));
  sub->add_option("--logits-out", flags->logits_out,
                  "Save the f32 logits each generated token was chosen from as a .npy array "
                  "[tokens, vocab] (numpy.load reads it)");
  add_attention_map_flags(*sub, flags->attention_map,
                          "every position the model ran, the prompt's rows and then one row per "
                          "decode step");
  sub->callback([flags] {
    refuse_shared_outputs(
        {{"--logits-out", flags->logits_out}, {"--attention-out", flags->attention_map.path}});
    as_usage_error([&] {
      (void)parse_ids(flags->prompt_ids, "--prompt-ids");
      (void)parse_logit_bias(flags->logit_bias);
    });
  });
  return {sub, [flags] { return run_generate(*flags); }};
}

}  // namespace attnscope::cli
