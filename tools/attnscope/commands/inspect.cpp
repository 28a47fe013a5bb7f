// `attnscope inspect`: a model's config, parameter count and tensors, and the bytes its weights
// take when loaded on the cpu at --dtype (bf16/f16/q8_0 narrow the matrices, ModelDTypes).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "tools/attnscope/cli/flags.h"
#include "tools/attnscope/cli/model_loading.h"
#include "tools/attnscope/commands/commands.h"

namespace attnscope::cli {

namespace {

struct InspectFlags {
  std::string model;
  std::string dtype = "f32";
  bool json = false;
};

// The model's shape (ModelConfig), how positions enter and whether the head is the embedding.
nlohmann::json config_json(const LanguageModel& model) {
  const ModelConfig& c = model.config();
  nlohmann::json json = {{"model_type", c.model_type},
                         {"vocab_size", c.vocab_size},
                         {"context_length", c.context_length},
                         {"d_model", c.d_model},
                         {"n_layers", c.n_layers},
                         {"n_heads", c.n_heads},
                         {"n_kv_heads", c.n_kv_heads},
                         {"head_dim", c.head_dim},
                         {"d_ff", c.d_ff},
                         {"layer_norm_epsilon", c.layer_norm_epsilon},
                         {"activation", c.activation},
                         {"eos_token_id", c.eos_token_id()},
                         {"eos_token_ids", c.eos_token_ids},
                         {"positions", model.positions_name()},
                         {"tied_embeddings", model.head_is_embedding()}};
  if (model.positions_name() == "rotary") {
    json["rope_theta"] = c.rope_theta;
    json["rope_scaling"] = c.rope_scaling;
  }
  return json;
}

int run_inspect(const InspectFlags& flags) {
  Context ctx;
  const std::unique_ptr<LanguageModel> loaded =
      load_model(flags.model, ctx, parse_dtype(flags.dtype));
  const LanguageModel& model = *loaded;
  std::uint64_t stored_bytes = 0;
  for (const StoredTensor& t : model.stored_tensors()) stored_bytes += t.bytes;
  const nlohmann::json config = config_json(model);
  if (flags.json) {
    nlohmann::json tensors = nlohmann::json::array();
    for (const StoredTensor& t : model.stored_tensors()) {
      tensors.push_back(
          {{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}, {"bytes", t.bytes}});
    }
    std::cout << nlohmann::json{{"model", flags.model},
                                {"config", config},
                                {"parameters", model.parameter_count()},
                                {"stored_bytes", stored_bytes},
                                {"dtype", dtype_name(model.weight_dtype())},
                                {"activation_dtype", dtype_name(model.activation_dtype())},
                                {"weight_bytes", model.weight_bytes()},
                                {"resident_bytes", ctx.allocator().current_bytes()},
                                {"tensors", tensors}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::cout << "model       " << flags.model << "\n";
  for (const auto& [key, value] : config.items()) {
    std::cout << "  " << std::left << std::setw(20) << key << value << "\n";
  }
  std::cout << "parameters  " << model.parameter_count() << "\n"
            << "stored      " << stored_bytes << " bytes in " << model.stored_tensors().size()
            << " tensors\n"
            << "weights     " << model.weight_bytes() << " bytes (" << model.dtype_summary()
            << ")\n"
            << "resident    " << ctx.allocator().current_bytes() << " bytes\n\n";
  std::size_t name_width = 0;
  for (const StoredTensor& t : model.stored_tensors())
    name_width = std::max(name_width, t.name.size());
  for (const StoredTensor& t : model.stored_tensors()) {
    std::cout << std::left << std::setw(static_cast<int>(name_width + 2)) << t.name << std::setw(6)
              << t.dtype << std::setw(20) << shape_string(t.shape) << t.bytes << "\n";
  }
  return 0;
}

}  // namespace

Subcommand add_inspect(CLI::App& app) {
  auto flags = std::make_shared<InspectFlags>();
  CLI::App* sub =
      app.add_subcommand("inspect", "Show a model's config, parameter count and tensors");
  add_model_flag(*sub, flags->model);
  sub->add_option("--dtype", flags->dtype,
                  "Storage dtype of the weight matrices on the cpu (the weights line shows their "
                  "bytes): f32, f16, bf16, q8_0")
      ->capture_default_str()
      ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0"}));
  sub->add_flag("--json", flags->json, "Print one JSON object");
  return {sub, [flags] { return run_inspect(*flags); }};
}

}  // namespace attnscope::cli
