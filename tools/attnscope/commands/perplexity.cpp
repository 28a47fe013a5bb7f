// `attnscope perplexity`: how well the model predicts a text file, in the spirit of llama.cpp's
// llama-perplexity. The text is tokenized and evaluated in windows (perplexity_windows.h: the
// stride convention of transformers' perplexity guide, so the numbers match transformers');
// every window computes the logits of all its positions in one forward pass.
//
// With n scored tokens of negative log-likelihood l_t = -log p(x_t | context):
//   NLL = mean(l),  perplexity = exp(NLL)
//   standard error: SE(NLL) = sqrt((mean(l^2) - mean(l)^2) / (n - 1)), and by the delta method
//   SE(perplexity) = perplexity * SE(NLL) (as llama-perplexity reports it).
// --save-logits / --kl-divergence save and compare against a baseline (logit_baseline.h).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "runtime/error.h"
#include "runtime/input_file.h"
#include "runtime/log_probs.h"
#include "runtime/transfer.h"
#include "tools/attnscope/cli/elapsed.h"
#include "tools/attnscope/cli/flags.h"
#include "tools/attnscope/cli/model_loading.h"
#include "tools/attnscope/commands/commands.h"
#include "tools/attnscope/measure/logit_baseline.h"
#include "tools/attnscope/measure/perplexity_windows.h"

namespace attnscope::cli {

namespace {

struct PerplexityFlags {
  std::string model;
  std::string file;
  std::string tokenizer;
  std::int64_t ctx = 0;     // 0: kDefaultWindow, or the model's context length when shorter
  std::int64_t stride = 0;  // 0: half the context
  std::string attention = "flash";
  DeviceOptions device;
  std::string save_logits;
  std::string kl_divergence;
  bool json = false;
};

// The default window: long enough for a stable perplexity, short enough that a 128k-context
// model's default run fits in memory (llama.cpp's perplexity defaults to 512, lm-eval to 2048).
constexpr std::int64_t kDefaultWindow = 2048;

std::string read_text(const std::string& path) {
  std::string text = read_input_file(path, kMaxTextBytes, "a text to score");
  check(!text.empty(), path, "empty text file");
  return text;
}

// Running sums of the scored tokens' negative log-likelihoods.
struct NllSums {
  std::int64_t count = 0;
  double sum = 0.0, sum_squares = 0.0;

  void add(double nll) {
    ++count;
    sum += nll;
    sum_squares += nll * nll;
  }
  double mean() const { return sum / static_cast<double>(count); }
  double perplexity() const { return std::exp(mean()); }
  double perplexity_stderr() const {
    if (count < 2) return 0.0;
    const double variance =
        std::max(0.0, sum_squares / static_cast<double>(count) - mean() * mean());
    return perplexity() * std::sqrt(variance / static_cast<double>(count - 1));
  }
};

int run_perplexity(const PerplexityFlags& flags) {
  const std::string text = read_text(flags.file);
  const ModelOnDevice loaded = load_model_on_device(flags.model, flags.device, flags.attention);
  Context& ctx = *loaded.ctx;
  LanguageModel& model = *loaded.model;
  const ModelConfig& config = model.config();
  const std::optional<TextTokenizer> tokenizer = find_tokenizer(flags.tokenizer, flags.model);
  check(tokenizer.has_value(), "--file", "no tokenizer for this model: pass --tokenizer DIR");

  const std::int64_t window_length =
      flags.ctx ? flags.ctx : std::min(kDefaultWindow, config.context_length);
  check(window_length <= config.context_length, "--ctx",
        std::to_string(window_length) + " exceeds the model's context length of " +
            std::to_string(config.context_length));
  model.require_memory(ctx, 1, window_length, window_length, true, "--ctx", "lower --ctx");
  const std::int64_t stride =
      flags.stride ? flags.stride : std::max<std::int64_t>(1, window_length / 2);
  check(stride <= window_length, "--stride",
        std::to_string(stride) + " exceeds --ctx " + std::to_string(window_length) +
            " (tokens between windows would never be scored)");

  const std::vector<std::int32_t> tokens = tokenizer->encode(text);
  const auto token_count = static_cast<std::int64_t>(tokens.size());
  for (std::int32_t id : tokens) {
    check(id < config.vocab_size, "--tokenizer",
          "token id " + std::to_string(id) + " is outside the model's vocabulary [0, " +
              std::to_string(config.vocab_size) + ")");
  }
  const std::vector<Window> windows = plan_windows(token_count, window_length, stride);
  std::int64_t scored = 0, evaluated = 0;
  for (const Window& window : windows) {
    scored += window.scored();
    evaluated += window.end - window.begin;
  }
  check(scored >= 2, flags.file,
        "too short: " + std::to_string(token_count) + " tokens leave " + std::to_string(scored) +
            " to score with --ctx " + std::to_string(window_length) + " --stride " +
            std::to_string(stride) + " (a standard error needs at least 2)");

  const BaselineSource source{tokens, window_length, stride};
  const auto vocab = config.vocab_size;
  std::optional<BaselineWriter> save;
  if (!flags.save_logits.empty()) save.emplace(flags.save_logits, source, vocab);
  std::optional<BaselineComparison> compare;
  if (!flags.kl_divergence.empty()) compare.emplace(flags.kl_divergence, source, scored, vocab);

  NllSums nll;
  const auto start = std::chrono::steady_clock::now();
  auto last_progress = start;
  for (std::size_t w = 0; w < windows.size(); ++w) {
    const Window& window = windows[w];
    const std::int64_t length = window.end - window.begin;
    KVCache cache = model.new_cache(ctx, 1, length);
    const std::span<const std::int32_t> fed(tokens.data() + window.begin,
                                            static_cast<std::size_t>(length));
    const Tensor logits = to_host(ctx, model.forward(ctx, fed, 1, cache, true));
    for (std::int64_t t = window.first_scored; t < window.end; ++t) {
      // The logits at position t - 1 predict token t.
      const std::span<const float> row(logits.data<float>() + (t - 1 - window.begin) * vocab,
                                       static_cast<std::size_t>(vocab));
      nll.add(-log_softmax(row)[static_cast<std::size_t>(tokens[static_cast<std::size_t>(t)])]);
      if (save) save->add(row);
      if (compare) compare->add(row);
    }
    const bool last = w + 1 == windows.size();
    if (!last && seconds_since(last_progress) >= 1.0) {
      last_progress = std::chrono::steady_clock::now();
      std::cerr << "attnscope: window " << w + 1 << "/" << windows.size() << ", " << nll.count
                << "/" << scored << " tokens scored, perplexity so far " << nll.perplexity()
                << "\n";
    }
  }
  const double seconds = seconds_since(start);
  if (save) save->finish();
  const double rate = static_cast<double>(evaluated) / seconds;

  std::cerr << "attnscope: " << run_description(model, ctx) << " | " << evaluated
            << " tokens evaluated in " << seconds << " s, " << rate << " tokens/s\n";
  if (flags.json) {
    nlohmann::json out = run_json(flags.model, model, ctx);
    out.update({
        {"file", flags.file},
        {"tokens", token_count},
        {"ctx", window_length},
        {"stride", stride},
        {"windows", windows.size()},
        {"scored_tokens", nll.count},
        {"mean_nll", nll.mean()},
        {"perplexity", nll.perplexity()},
        {"perplexity_stderr", nll.perplexity_stderr()},
        {"evaluated_tokens", evaluated},
        {"seconds", seconds},
        {"tokens_per_s", rate},
    });
    if (compare) out["kl_divergence"] = compare->to_json();
    std::cout << out.dump() << "\n";
    return 0;
  }
  std::cout << "perplexity " << nll.perplexity() << " +/- " << nll.perplexity_stderr() << " ("
            << nll.count << " of " << token_count << " tokens scored, " << windows.size()
            << " windows, ctx " << window_length << ", stride " << stride << ")\n";
  if (compare) {
    std::cout << "vs " << flags.kl_divergence << ": KL mean " << compare->mean_kl() << " max "
              << compare->max_kl() << " nats | top-1 agreement "
              << compare->top1_agreement_percent() << " % | max |logit diff| "
              << compare->max_abs_logit_diff() << "\n";
  }
  return 0;
}

}  // namespace

Subcommand add_perplexity(CLI::App& app) {
  auto flags = std::make_shared<PerplexityFlags>();
  CLI::App* sub = app.add_subcommand(
      "perplexity",
      "Perplexity of a text file, evaluated in overlapping windows (transformers' stride "
      "convention); optionally saves or compares logits against a baseline run");
  add_model_flag(*sub, flags->model);
  sub->add_option("-f,--file", flags->file, "The text file to score")->required();
  sub->add_option("--tokenizer", flags->tokenizer,
                  "Directory with vocab.json + merges.txt (or encoder.json + vocab.bpe), or "
                  "with a tokenizer.json; default: the model directory's own");
  sub->add_option("-c,--ctx", flags->ctx,
                  "Tokens per window (0 = 2048, or the model's context length when shorter)")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 20));
  sub->add_option("--stride", flags->stride,
                  "Tokens between window starts, at most --ctx; each window scores only the "
                  "tokens the previous one did not (0 = half of --ctx)")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 20));
  add_attention_flag(*sub, flags->attention);
  add_device_flags(*sub, flags->device);
  CLI::Option* save = sub->add_option(
      "--save-logits", flags->save_logits,
      "Save the logits of every scored token as a baseline: FILE (.npy [scored, vocab] f32) and "
      "FILE.json (the tokens, ctx and stride)");
  sub->add_option("--kl-divergence", flags->kl_divergence,
                  "Compare with a baseline saved by --save-logits on the same text, ctx and "
                  "stride: mean and max KL divergence, top-1 agreement, largest logit difference")
      ->excludes(save);
  sub->add_flag("--json", flags->json, "Print one JSON object with the results and timings");
  return {sub, [flags] { return run_perplexity(*flags); }};
}

}  // namespace attnscope::cli
