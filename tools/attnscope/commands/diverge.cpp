// `attnscope diverge`: runs one model in two configurations (attention backend, dtype, device) on
// the same tokens, one prefill each with every position's logits, and reports where they part
// ways: per layer and head the attention output's difference, the difference of the softmax
// statistics computed from each run's own q and k (where those differ, the layer's inputs
// already did), each run's own error against a float64 reference (the backend's local error),
// the first layer whose logit lens flips a next-token top-1, and the final next-token KL
// divergence. The math is tools/attnscope/measure/divergence.h.
//
// Output: a table on stdout, --json FILE with everything, --heatmap FILE.svg (layers x heads of
// the largest output difference). --perturb-layer L rounds the second run's attention output of
// layer L to bf16, a deliberate divergence that the report must find at layer L.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "runtime/error.h"
#include "tools/attnscope/cli/flags.h"
#include "tools/attnscope/cli/model_loading.h"
#include "tools/attnscope/cli/output_files.h"
#include "tools/attnscope/commands/commands.h"
#include "tools/attnscope/measure/divergence.h"
#include "tools/attnscope/report/markdown.h"
#include "tools/attnscope/report/svg_heatmap.h"

namespace attnscope::cli {

namespace {

constexpr std::int64_t kDefaultPromptLength = 32;
constexpr std::size_t kWorstHeadsShown = 5;

struct DivergeFlags {
  std::string model, against_model;  // against_model empty: --model
  std::string attention = "flash";
  std::string against = "naive";
  DeviceOptions device;
  DeviceOptions against_device{"", "", 0};  // empty: the first run's
  std::string tokenizer;
  std::string prompt;
  std::vector<std::string> prompt_ids;
  std::int64_t prompt_len = 0;  // 0: kDefaultPromptLength random ids, when no prompt is given
  std::uint64_t seed = 0;
  std::int64_t perturb_layer = -1;
  std::string json_path;
  std::string heatmap_path;
};

// One configuration's run and what it was.
struct Run {
  RunRecord record;
  nlohmann::json json;      // run_json: model, attention, device, dtypes
  std::string description;  // run_description
};

Run run_configuration(ModelOnDevice& loaded, const std::string& spec,
                      std::span<const std::int32_t> tokens, std::int64_t perturb_layer) {
  Run run;
  run.record = record_run(*loaded.ctx, *loaded.model, tokens, perturb_layer);
  run.json = run_json(spec, *loaded.model, *loaded.ctx);
  run.description = run_description(*loaded.model, *loaded.ctx);
  return run;
}

std::vector<std::int32_t> prompt_tokens(const DivergeFlags& flags, const ModelConfig& config) {
  if (!flags.prompt_ids.empty()) return parse_ids(flags.prompt_ids, "--prompt-ids");
  if (!flags.prompt.empty()) {
    const std::optional<TextTokenizer> tokenizer = find_tokenizer(flags.tokenizer, flags.model);
    check(tokenizer.has_value(), "--prompt",
          "no tokenizer for this model: pass --tokenizer DIR or use --prompt-ids or --prompt-len");
    return tokenizer->encode(flags.prompt);
  }
  const std::int64_t length =
      flags.prompt_len ? flags.prompt_len : std::min(kDefaultPromptLength, config.context_length);
  std::mt19937_64 rng(flags.seed);
  std::uniform_int_distribution<std::int32_t> id(0,
                                                 static_cast<std::int32_t>(config.vocab_size - 1));
  std::vector<std::int32_t> ids(static_cast<std::size_t>(length));
  for (std::int32_t& value : ids) value = id(rng);
  return ids;
}

std::string number(double value) {
  if (value == 0) return "0";
  char text[32];
  std::snprintf(text, sizeof(text), "%.3g", value);
  return text;
}

// Where a layer's difference comes from: "equal", "inputs" (its softmax statistics differ: the
// layer's q or k already did) or "backend" (the same inputs, a different output).
std::string source_of(const LayerDivergence& layer) {
  if (layer.all.lse_max > 0 || layer.all.row_max_max > 0) return "inputs";
  return layer.all.out_max > 0 ? "backend" : "equal";
}

nlohmann::json layer_index(std::int64_t layer) {
  return layer >= 0 ? nlohmann::json(layer) : nlohmann::json(nullptr);
}

nlohmann::json head_json(const HeadDivergence& h) {
  return {{"out_max", h.out_max},
          {"out_rms", h.out_rms},
          {"row_max_max", h.row_max_max},
          {"lse_max", h.lse_max},
          {"lse_rms", h.lse_rms},
          {"error_run", h.error_run},
          {"error_against", h.error_against}};
}

nlohmann::json report_json(const DivergeFlags& flags, const Run& run, const Run& against,
                           std::span<const std::int32_t> tokens, const Divergence& d) {
  nlohmann::json layers = nlohmann::json::array();
  for (std::size_t l = 0; l < d.layers.size(); ++l) {
    nlohmann::json layer = head_json(d.layers[l].all);
    layer["layer"] = l;
    layer["top1_flips"] = d.layers[l].top1_flips;
    layer["source"] = source_of(d.layers[l]);
    nlohmann::json heads = nlohmann::json::array();
    for (const HeadDivergence& h : d.layers[l].heads) heads.push_back(head_json(h));
    layer["heads"] = heads;
    layers.push_back(layer);
  }
  return {{"run", run.json},
          {"against", against.json},
          {"tokens", tokens},
          {"positions", d.positions},
          {"perturb_layer", layer_index(flags.perturb_layer)},
          {"first_output_difference_layer", layer_index(d.first_output_difference)},
          {"first_input_difference_layer", layer_index(d.first_input_difference)},
          {"first_flip_layer", layer_index(d.first_flip)},
          {"kl_mean", d.kl_mean},
          {"kl_max", d.kl_max},
          {"layers", layers}};
}

void print_report(const Run& run, const Run& against, const Divergence& d) {
  std::cout << "run:     " << run.description << "\nagainst: " << against.description << "\n"
            << d.positions << " positions, one prefill each\n\n";
  MarkdownTable table({{"layer"},
                       {"out max"},
                       {"out rms"},
                       {"lse max"},
                       {"row max max"},
                       {"own error (run)"},
                       {"own error (against)"},
                       {"top-1 flips"},
                       {"source", MarkdownTable::Align::Left}});
  for (std::size_t l = 0; l < d.layers.size(); ++l) {
    const LayerDivergence& layer = d.layers[l];
    table.add_row({std::to_string(l), number(layer.all.out_max), number(layer.all.out_rms),
                   number(layer.all.lse_max), number(layer.all.row_max_max),
                   number(layer.all.error_run), number(layer.all.error_against),
                   std::to_string(layer.top1_flips) + "/" + std::to_string(d.positions),
                   source_of(layer)});
  }
  std::cout << table.text() << "\n";

  struct WorstHead {
    std::size_t layer, head;
    const HeadDivergence* divergence;
  };
  std::vector<WorstHead> heads;
  for (std::size_t l = 0; l < d.layers.size(); ++l) {
    for (std::size_t h = 0; h < d.layers[l].heads.size(); ++h) {
      if (d.layers[l].heads[h].out_max > 0) heads.push_back({l, h, &d.layers[l].heads[h]});
    }
  }
  std::sort(heads.begin(), heads.end(), [](const WorstHead& a, const WorstHead& b) {
    return a.divergence->out_max > b.divergence->out_max;
  });
  if (!heads.empty()) std::cout << "worst heads (largest output difference):\n";
  for (std::size_t i = 0; i < std::min(heads.size(), kWorstHeadsShown); ++i) {
    const HeadDivergence& h = *heads[i].divergence;
    std::cout << "  layer " << heads[i].layer << " head " << heads[i].head << ": out max "
              << number(h.out_max) << ", rms " << number(h.out_rms) << ", lse max "
              << number(h.lse_max) << "\n";
  }
  const auto layer_text = [](std::int64_t layer) {
    return layer >= 0 ? std::to_string(layer) : std::string("none");
  };
  std::cout << "first layer whose attention output differs: "
            << layer_text(d.first_output_difference) << "\n"
            << "first layer whose attention inputs differ (softmax statistics): "
            << layer_text(d.first_input_difference) << "\n"
            << "first layer whose logit-lens top-1 flips: " << layer_text(d.first_flip) << "\n"
            << "final next-token KL(against || run): mean " << number(d.kl_mean) << ", max "
            << number(d.kl_max) << " nats\n";
}

int run_diverge(DivergeFlags flags) {
  if (flags.against_model.empty()) flags.against_model = flags.model;
  if (flags.against_device.device.empty()) flags.against_device.device = flags.device.device;
  if (flags.against_device.dtype.empty()) flags.against_device.dtype = flags.device.dtype;
  flags.against_device.threads = flags.device.threads;

  std::vector<std::int32_t> tokens;
  Run run, against;
  {  // one model in memory at a time
    ModelOnDevice loaded = load_model_on_device(flags.model, flags.device, flags.attention);
    check_perturb_layer(loaded.model->config(), flags.perturb_layer);
    tokens = prompt_tokens(flags, loaded.model->config());
    run = run_configuration(loaded, flags.model, tokens, -1);
  }
  {
    ModelOnDevice loaded =
        load_model_on_device(flags.against_model, flags.against_device, flags.against);
    against = run_configuration(loaded, flags.against_model, tokens, flags.perturb_layer);
  }
  const Divergence divergence = compare_runs(run.record, against.record);
  print_report(run, against, divergence);
  if (!flags.json_path.empty()) {
    write_text_file(flags.json_path,
                    report_json(flags, run, against, tokens, divergence).dump(2) + "\n");
  }
  if (!flags.heatmap_path.empty()) {
    HeatMap map;
    // "flash bf16 against naive f32", the devices named when they differ.
    const bool devices_differ = flags.device.device != flags.against_device.device;
    const auto label = [&](const Run& r, const std::string& device) {
      return std::string(r.json["attention"]) + " " + std::string(r.json["dtype"]) +
             (devices_differ ? " on " + device : "");
    };
    map.title = "max |attention output difference|: " + label(run, flags.device.device) +
                " against " + label(against, flags.against_device.device);
    map.rows_name = "layer";
    map.columns_name = "head";
    map.unit = "max |diff|";
    for (const LayerDivergence& layer : divergence.layers) {
      std::vector<double>& row = map.cells.emplace_back();
      for (const HeadDivergence& head : layer.heads) row.push_back(head.out_max);
    }
    write_text_file(flags.heatmap_path, heatmap_svg(map));
  }
  return 0;
}

}  // namespace

Subcommand add_diverge(CLI::App& app) {
  auto flags = std::make_shared<DivergeFlags>();
  CLI::App* sub = app.add_subcommand(
      "diverge",
      "Run one model in two configurations on the same tokens and report where they diverge, "
      "layer by layer and head by head");
  add_model_flag(*sub, flags->model);
  sub->add_option("--against-model", flags->against_model,
                  "The second run's model (default: --model); it must have the same shape");
  add_attention_flag(*sub, flags->attention, "--attn", "The first run's attention backend");
  add_attention_flag(*sub, flags->against, "--against", "The second run's attention backend");
  add_device_flags(*sub, flags->device);
  add_against_device_flags(*sub, flags->against_device);
  sub->add_option("--tokenizer", flags->tokenizer,
                  "Directory with the tokenizer for --prompt (default: the model's own)");
  CLI::Option* prompt = sub->add_option("--prompt", flags->prompt, "Prompt text");
  CLI::Option* ids =
      sub->add_option("--prompt-ids", flags->prompt_ids, "Prompt as token ids, e.g. 464,2068")
          ->excludes(prompt);
  sub->add_option("--prompt-len", flags->prompt_len,
                  "Random token ids to run (default: " + std::to_string(kDefaultPromptLength) +
                      ", fewer when the context holds less)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20))
      ->excludes(prompt)
      ->excludes(ids);
  sub->add_option("--seed", flags->seed, "Seed of the random ids")->capture_default_str();
  sub->add_option("--perturb-layer", flags->perturb_layer,
                  "Round the second run's attention output of layer L to bf16 (a deliberate "
                  "divergence, for teaching and tests)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 20));
  sub->add_option("--json", flags->json_path, "Write everything as JSON");
  sub->add_option("--heatmap", flags->heatmap_path,
                  "Write an SVG heat map of layers x heads of the largest attention-output "
                  "difference (log colour scale)");
  sub->callback([flags] {
    refuse_shared_outputs({{"--json", flags->json_path}, {"--heatmap", flags->heatmap_path}});
    as_usage_error([&] { (void)parse_ids(flags->prompt_ids, "--prompt-ids"); });
  });
  return {sub, [flags] { return run_diverge(*flags); }};
}

}  // namespace attnscope::cli
