#include "tools/attnscope/common.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "ops/attention/registry.h"
#include "runtime/error.h"

namespace attnscope::cli {

void add_model_flag(CLI::App& app, std::string& spec) {
  app.add_option("--model", spec,
                 "A directory with config.json + model.safetensors (Hugging Face layout), or "
                 "synthetic:NAME with NAME in gpt2, gpt2-medium, gpt2-large, gpt2-xl, tiny")
      ->required();
}

void add_attention_flag(CLI::App& app, std::string& name) {
  app.add_option("--attn", name, "Attention backend: " + ops::attention::backend_list())
      ->capture_default_str()
      ->check([](const std::string& value) -> std::string {
        try {
          ops::attention::find_backend(value);
          return {};
        } catch (const Error& e) {
          return e.what();
        }
      });
}

void add_threads_flag(CLI::App& app, int& threads) {
  app.add_option("--threads", threads, "CPU threads (0 = every hardware thread)")
      ->capture_default_str()
      ->check(CLI::Range(0, 4096));
}

void add_device_flags(CLI::App& app, DeviceOptions& options) {
  app.add_option("--device", options.device, "Where to compute: cpu, or cuda (GPU 0)")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--dtype", options.dtype,
                 "Storage dtype of weights and activations: f32, f16, bf16 (f16/bf16 need "
                 "--device cuda; math accumulates in f32)")
      ->capture_default_str()
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  add_threads_flag(app, options.threads);
}

std::unique_ptr<Context> make_context(const DeviceOptions& options) {
  const Device device = options.device == "cuda" ? Device::CUDA : Device::CPU;
  check(device == Device::CUDA || options.dtype == "f32", "--dtype",
        options.dtype + " needs --device cuda (the CPU path computes in f32)");
  return std::make_unique<Context>(device, options.threads);
}

gpt2::Model load_model(const std::string& spec, Context& ctx, DType dtype) {
  const auto start = std::chrono::steady_clock::now();
  gpt2::Model model = gpt2::Model::open(spec, ctx, 0, dtype);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  std::cerr << "attnscope: loaded " << spec << " ("
            << static_cast<double>(model.parameter_count()) / 1e6 << "M parameters) in "
            << took.count() << " s\n";
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

std::vector<std::int32_t> parse_ids(const std::vector<std::string>& items, const char* flag) {
  std::vector<std::int32_t> ids;
  for (const std::string& item : items) {
    std::string text = item;
    for (char& c : text) {
      if (c == ',') c = ' ';
    }
    std::istringstream in(text);
    std::string word;
    while (in >> word) {
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
    }
  }
  return ids;
}

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (!line.starts_with("model name")) continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    const std::size_t start = line.find_first_not_of(' ', colon + 1);
    return start == std::string::npos ? "unknown CPU" : line.substr(start);
  }
  return "unknown CPU";
}

namespace {

// Length of the UTF-8 sequence that `lead` starts (1 for bytes that cannot lead one, which are
// printed as they are).
std::size_t sequence_length(unsigned char lead) {
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  return 1;
}

}  // namespace

std::string Utf8Stream::push(const std::string& bytes) {
  pending_ += bytes;
  // Look at most 3 bytes back for a lead byte whose sequence is not complete yet.
  std::size_t keep_from = pending_.size();
  for (std::size_t back = 1; back <= 3 && back <= pending_.size(); ++back) {
    const auto byte = static_cast<unsigned char>(pending_[pending_.size() - back]);
    if ((byte & 0xC0) != 0x80) {  // not a continuation byte: a lead (or ASCII)
      if (sequence_length(byte) > back) keep_from = pending_.size() - back;
      break;
    }
  }
  std::string ready = pending_.substr(0, keep_from);
  pending_.erase(0, keep_from);
  return ready;
}

std::string Utf8Stream::flush() { return std::exchange(pending_, {}); }

}  // namespace attnscope::cli
