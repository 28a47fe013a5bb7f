// The shared flags (tools/attnscope/cli/flags.h): their CLI11 options, the context the device flags
// describe, and token ids given on the command line.
#include "tools/attnscope/cli/flags.h"

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "engine/json_grammar.h"
#include "models/language_model.h"
#include "ops/attention/registry.h"
#include "runtime/error.h"
#include "runtime/input_file.h"

namespace attnscope::cli {

void add_model_flag(CLI::App& app, std::string& spec) {
  app.add_option(
         "-m,--model", spec,
         "A directory with config.json + model.safetensors (Hugging Face layout: GPT-2, "
         "or the Llama family: Llama, Mistral, Qwen2, Qwen3), or synthetic:NAME with NAME in " +
             synthetic_model_names())
      ->required();
}

namespace {

// A registered backend name or alias (and "all" where the list allows it).
CLI::Validator backend_validator(AttentionList list) {
  return CLI::Validator(
      [list](const std::string& name) -> std::string {
        const bool all = list == AttentionList::AllowingAll;
        if (all && name == "all") return {};
        try {
          ops::attention::find_backend(name);
          return {};
        } catch (const Error&) {  // CLI11 prefixes the flag's name to what is returned
          return "unknown attention backend '" + name + "' (valid: " + (all ? "all, " : "") +
                 ops::attention::backend_list() + ")";
        }
      },
      "BACKEND");
}

}  // namespace

void add_attention_flag(CLI::App& app, std::string& name, const std::string& flag,
                        const std::string& help) {
  app.add_option(flag, name, help + ": " + ops::attention::backend_list())
      ->capture_default_str()
      ->check(backend_validator(AttentionList::NamesOnly));
}

CLI::Option* add_attention_list_flag(CLI::App& app, std::vector<std::string>& names,
                                     AttentionList list, const std::string& help,
                                     const std::string& default_text) {
  return app.add_option("--attn", names, help)
      ->delimiter(',')
      ->default_str(default_text)
      ->check(backend_validator(list));
}

void add_threads_flag(CLI::App& app, int& threads) {
  app.add_option("-t,--threads", threads, "CPU threads (0 = every hardware thread)")
      ->capture_default_str()
      ->check(CLI::Range(0, 4096));
}

namespace {

const std::vector<std::string> kDevices = {"cpu", "cuda"};
const std::vector<std::string> kDTypes = {"f32", "f16", "bf16", "q8_0"};

}  // namespace

void add_device_flags(CLI::App& app, DeviceOptions& options) {
  app.add_option("--device", options.device, "Where to compute: cpu, or cuda (GPU 0)")
      ->capture_default_str()
      ->check(CLI::IsMember(kDevices));
  app.add_option("--dtype", options.dtype,
                 "Storage dtype: f32, f16, bf16, q8_0. On cuda of weights and activations (q8_0: "
                 "cpu only); on the cpu of the weight matrices only (activations and KV cache "
                 "stay f32; q8_0 = blocks of 32 int8 with an f16 scale, 34 bytes per 32 "
                 "weights; q8_0 products quantize their input rows too, and bf16 products of 5 "
                 "rows or more on AVX-512 BF16 round them to bf16). Math accumulates in f32")
      ->capture_default_str()
      ->check(CLI::IsMember(kDTypes));
  add_threads_flag(app, options.threads);
}

void add_against_device_flags(CLI::App& app, DeviceOptions& against) {
  app.add_option("--against-device", against.device,
                 "The second run's device (default: --device's)")
      ->check(CLI::IsMember(kDevices));
  app.add_option("--against-dtype", against.dtype, "The second run's --dtype (default: --dtype's)")
      ->check(CLI::IsMember(kDTypes));
}

CLI::Option* add_attention_map_flags(CLI::App& app, AttentionMapOptions& options,
                                     const std::string& what) {
  CLI::Option* out = app.add_option("--attention-out", options.path,
                                    "Save the softmax probabilities as a .npy array [layer, head, "
                                    "query, key] of f32 (numpy.load reads it): " +
                                        what +
                                        "; flash never materialises them, so they are recomputed "
                                        "from its q and k");
  const auto index = CLI::Range(std::int64_t{0}, std::int64_t{1} << 20);
  app.add_option("--attention-layers", options.layers,
                 "With --attention-out: the layers to keep, e.g. 0,5 (default: all)")
      ->delimiter(',')
      ->check(index)
      ->needs(out);
  app.add_option("--attention-heads", options.heads,
                 "With --attention-out: the query heads to keep, e.g. 0,1 (default: all)")
      ->delimiter(',')
      ->check(index)
      ->needs(out);
  return out;
}

std::unique_ptr<Context> make_context(const DeviceOptions& options) {
  // Refused before a GPU is looked for, so the answer is the same on a machine without one.
  check(!(options.device == "cuda" && options.dtype == "q8_0"), "--dtype",
        "q8_0 runs on the cpu only (on cuda use f32, f16 or bf16)");
  const Device device = options.device == "cuda" ? Device::CUDA : Device::CPU;
  const unsigned hardware_threads = std::thread::hardware_concurrency();
  if (hardware_threads > 0 && static_cast<unsigned>(options.threads) > hardware_threads) {
    std::cerr << "attnscope: warning: --threads " << options.threads << " exceeds this machine's "
              << hardware_threads << " hardware threads; the extra threads only take turns\n";
  }
  return std::make_unique<Context>(device, options.threads);
}

DType parse_attention_dtype(const std::string& name) {
  const DType dtype = parse_dtype(name);
  check(dtype != DType::Q8_0, "--dtype",
        "q8_0 is a weight format; the attention op takes f32, f16 or bf16");
  return dtype;
}

CLI::Validator number_check(std::function<bool(double)> ok, const std::string& description,
                            const std::string& message) {
  return CLI::Validator(
      [ok, message](const std::string& text) -> std::string {
        double value = std::numeric_limits<double>::quiet_NaN();
        try {
          value = std::stod(text);
        } catch (const std::exception&) {
          return "'" + text + "' is not a number";
        }
        return !std::isnan(value) && ok(value) ? "" : message;
      },
      description);
}

std::uint64_t random_seed() {
  std::random_device entropy;
  return (static_cast<std::uint64_t>(entropy()) << 32) ^ entropy();
}

std::vector<std::int32_t> parse_ids(const std::vector<std::string>& items, const char* flag) {
  std::vector<std::int32_t> ids;
  for (const std::string& item : items) {
    // Ids are split by commas, spaces or both; a comma with no id on one side is a typo.
    std::istringstream pieces(item);
    std::string piece;
    while (std::getline(pieces, piece, ',')) {
      std::istringstream words(piece);
      std::string word;
      bool any = false;
      while (words >> word) {
        std::size_t used = 0;
        long long value = -1;
        try {
          value = std::stoll(word, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        check(used == word.size() && value >= 0 && value <= INT32_MAX, flag,
              "'" + word + "' is not a token id (a non-negative integer)");
        ids.push_back(static_cast<std::int32_t>(value));
        any = true;
      }
      check(any || item.find(',') == std::string::npos, flag,
            "'" + item + "' has a comma with no id beside it");
    }
    check(item.empty() || item.back() != ',', flag,
          "'" + item + "' has a comma with no id beside it");
  }
  return ids;
}

std::string schema_of_flags(bool json_object, const std::string& schema_file) {
  if (!json_object && schema_file.empty()) return "";
  const char* flag = json_object ? "--json-object" : "--json-schema";
  const std::string schema = json_object
                                 ? std::string(engine::kJsonObjectSchema)
                                 : read_input_file(schema_file, std::uint64_t{1} << 20, flag);
  try {
    (void)engine::json_schema_grammar(schema);
  } catch (const Error& e) {
    throw Error(flag, e.what());
  }
  return schema;
}

void refuse_shared_outputs(const std::vector<std::pair<std::string, std::string>>& outputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    for (std::size_t j = i + 1; j < outputs.size(); ++j) {
      const auto& [flag, path] = outputs[i];
      const auto& [other_flag, other_path] = outputs[j];
      if (path.empty() || other_path.empty()) continue;
      const auto normal = [](const std::string& file) {
        return std::filesystem::weakly_canonical(std::filesystem::absolute(file))
            .lexically_normal();
      };
      if (normal(path) == normal(other_path)) {
        throw CLI::ValidationError(other_flag, "names the same file as " + flag + " (" + path +
                                                   "): each output needs a file of its own");
      }
    }
  }
}

void as_usage_error(const std::function<void()>& check_syntax) {
  try {
    check_syntax();
  } catch (const Error& e) {
    throw CLI::ValidationError(e.what());
  }
}

void refuse_out_of_range_integers(const CLI::App& app) {
  for (const CLI::Option* option : app.get_options()) {
    const std::string type = option->get_type_name();
    const bool is_signed = type.starts_with("INT");
    if (!is_signed && !type.starts_with("UINT")) continue;
    for (const std::string& text : option->results()) {
      const char* end = text.data() + text.size();
      std::int64_t signed_value = 0;
      std::uint64_t unsigned_value = 0;
      const std::from_chars_result read = is_signed
                                              ? std::from_chars(text.data(), end, signed_value)
                                              : std::from_chars(text.data(), end, unsigned_value);
      if (read.ec == std::errc::result_out_of_range || (!is_signed && text.starts_with('-'))) {
        throw CLI::ValidationError(
            option->get_name(),
            text + " is out of range (" + (is_signed ? "a 64-bit integer" : "0 to 2^64 - 1") + ")");
      }
    }
  }
  for (const CLI::App* sub : app.get_subcommands()) refuse_out_of_range_integers(*sub);
}

void refuse_empty_list_items(const CLI::App& app, const std::vector<std::string>& args) {
  // The app's flags and its subcommand's, named by the first argument (this runs before parsing:
  // CLI11 misreads some values with empty items, `-b ,` taking the next flag as its value).
  std::vector<const CLI::App*> owners = {&app};
  if (!args.empty()) {
    const std::string& command = args.front();
    for (const CLI::App* sub : app.get_subcommands(
             [&](const CLI::App* candidate) { return candidate->check_name(command); })) {
      owners.push_back(sub);
    }
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& token = args[i];
    if (!token.starts_with('-') || token == "--") continue;
    // The flag's name and, when written in the same argument, its value: --flag=VALUE, -fVALUE.
    std::string name = token;
    std::optional<std::string> value;
    if (const std::size_t equals = token.find('=');
        token.starts_with("--") && equals != std::string::npos) {
      name = token.substr(0, equals);
      value = token.substr(equals + 1);
    } else if (!token.starts_with("--") && token.size() > 2) {
      name = token.substr(0, 2);
      value = token.substr(2);
    }
    for (const CLI::App* owner : owners) {
      const CLI::Option* option = owner->get_option_no_throw(name);
      if (option == nullptr) continue;
      const char delimiter = option->get_delimiter();
      // A value in the next argument is the flag's, never a flag itself (--prompt "-b ,").
      if (!value && option->get_items_expected_max() > 0 && i + 1 < args.size()) {
        value = args[++i];
      }
      if (delimiter != '\0' && value &&
          (value->empty() || value->front() == delimiter || value->back() == delimiter ||
           value->find(std::string(2, delimiter)) != std::string::npos)) {
        throw CLI::ValidationError(option->get_name(), "'" + *value + "' has an empty item");
      }
      break;
    }
  }
}

}  // namespace attnscope::cli
