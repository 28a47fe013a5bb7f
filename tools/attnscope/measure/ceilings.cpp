// The roofline's two ceilings, measured and cached (tools/attnscope/measure/ceilings.h).
#include "tools/attnscope/measure/ceilings.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>

#include "ops/linear.h"
#include "runtime/error.h"
#include "runtime/input_file.h"
#include "runtime/strict_json.h"
#include "runtime/transfer.h"
#include "tools/attnscope/cli/elapsed.h"
#include "tools/attnscope/cli/machine_info.h"
#include "tools/attnscope/cli/output_files.h"
#include "tools/attnscope/measure/read_bandwidth.h"

namespace attnscope::cli {

namespace {

constexpr int kRepetitions = 5;
constexpr std::int64_t kReadProbeBytes = std::int64_t{512} << 20;
constexpr std::int64_t kDeviceCopyBytes = std::int64_t{1} << 30;

std::filesystem::path cache_file() {
  if (const char* dir = std::getenv("ATTNSCOPE_CACHE_DIR"); dir != nullptr && *dir != '\0') {
    return std::filesystem::path(dir) / "ceilings.json";
  }
  if (const char* dir = std::getenv("XDG_CACHE_HOME"); dir != nullptr && *dir != '\0') {
    return std::filesystem::path(dir) / "attnscope" / "ceilings.json";
  }
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home != nullptr ? home : ".") / ".cache" / "attnscope" /
         "ceilings.json";
}

// Seconds of the fastest of `repetitions` runs of `work`, after one untimed run.
template <typename Work>
double fastest_seconds(Context& ctx, Work work) {
  work();
  ctx.synchronize();
  double best = 0;
  for (int i = 0; i < kRepetitions; ++i) {
    const auto start = std::chrono::steady_clock::now();
    work();
    ctx.synchronize();
    const double seconds = seconds_since(start);
    best = i == 0 ? seconds : std::min(best, seconds);
  }
  return best;
}

// x [n, n] times W^T [n, n] through ops::linear, inputs drawn once on the host; W in `dtype`, x
// and y too on a GPU (f32 on the cpu).
void measure_gemm(Context& ctx, DType dtype, Ceilings& ceilings) {
  const std::int64_t n = ctx.device() == Device::CUDA ? 4096 : 1024;
  Allocator& staging = ctx.device() == Device::CPU ? ctx.allocator() : ctx.host_allocator();
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const DType activations = ctx.device() == Device::CPU ? DType::F32 : dtype;
  auto random = [&](DType stored) {
    Tensor t = Tensor::empty({n, n}, DType::F32, staging);
    for (std::int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = uniform(rng);
    return to_device(ctx, stored == DType::F32 ? t : t.to_dtype(stored, staging));
  };
  const Tensor x = random(activations);
  const Tensor weight = random(dtype);
  Tensor out = Tensor::empty({n, n}, activations, ctx.allocator());
  const double seconds = fastest_seconds(ctx, [&] { ops::linear(ctx, x, weight, Tensor(), out); });
  ceilings.flops_per_s = 2.0 * static_cast<double>(n * n * n) / seconds;
  ceilings.compute_probe = std::string(dtype_name(dtype)) + " GEMM " + std::to_string(n) +
                           "^3 (ops::linear), best of " + std::to_string(kRepetitions);
}

void measure_memory(Context& ctx, Ceilings& ceilings) {
  if (ctx.device() == Device::CPU) {
    const ReadBandwidth probe = measure_read_bandwidth(ctx, kReadProbeBytes, 1, 3);
    ceilings.bytes_per_s = probe.gb_per_s() * 1e9;
    ceilings.memory_probe = "read 512 MiB, " + probe.variants[probe.best].name;
    return;
  }
  const Tensor from = Tensor::empty({kDeviceCopyBytes / 4}, DType::F32, ctx.allocator());
  Tensor to = Tensor::empty(from.shape(), DType::F32, ctx.allocator());
  const double seconds = fastest_seconds(ctx, [&] { copy_into(ctx, from, to); });
  ceilings.bytes_per_s = 2.0 * static_cast<double>(kDeviceCopyBytes) / seconds;
  ceilings.memory_probe =
      "device copy 1 GiB (read + write), best of " + std::to_string(kRepetitions);
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  char text[16];
  std::strftime(text, sizeof text, "%Y-%m-%d", std::gmtime(&now));
  return text;
}

// The cache's entries, or an empty object when it is absent or unreadable (said once).
nlohmann::json read_cache(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path)) return nlohmann::json::object();
  try {
    nlohmann::json cache = parse_json_refusing_duplicates(
        read_input_file(path, kMaxConfigBytes, "ceilings cache"), path.string(), "");
    if (cache.is_object()) return cache;
  } catch (const std::exception& error) {
    std::cerr << "attnscope: warning: ignoring the ceilings cache: " << error.what() << "\n";
    return nlohmann::json::object();
  }
  std::cerr << "attnscope: warning: ignoring the ceilings cache " << path.string()
            << ": not a JSON object\n";
  return nlohmann::json::object();
}

}  // namespace

double Ceilings::attainable(double intensity) const {
  return std::min(flops_per_s, intensity * bytes_per_s);
}

Ceilings machine_ceilings(Context& ctx, DType dtype, bool refresh) {
  Ceilings ceilings;
  ceilings.machine = ctx.device() == Device::CPU
                         ? cpu_model() + ", " + std::to_string(ctx.threads()) + " threads"
                         : ctx.describe();
  const std::string key = ceilings.machine + " | " + std::string(dtype_name(dtype));
  const std::filesystem::path path = cache_file();
  nlohmann::json cache = read_cache(path);
  if (!refresh && cache.contains(key)) {
    const nlohmann::json& entry = cache[key];
    try {
      ceilings.flops_per_s = entry.at("flops_per_s").get<double>();
      ceilings.bytes_per_s = entry.at("bytes_per_s").get<double>();
      ceilings.compute_probe = entry.at("compute_probe").get<std::string>();
      ceilings.memory_probe = entry.at("memory_probe").get<std::string>();
      ceilings.source = "cached in " + path.string() + " (measured " +
                        entry.at("measured").get<std::string>() +
                        "; --refresh-ceilings measures again)";
      if (ceilings.flops_per_s > 0 && ceilings.bytes_per_s > 0) return ceilings;
    } catch (const nlohmann::json::exception&) {
      // a malformed entry is measured again below
    }
  }
  std::cerr << "attnscope: measuring this machine's ceilings (GEMM FLOP/s, memory bandwidth)\n";
  measure_gemm(ctx, dtype, ceilings);
  measure_memory(ctx, ceilings);
  ceilings.source = "measured now";
  cache[key] = {{"flops_per_s", ceilings.flops_per_s},
                {"bytes_per_s", ceilings.bytes_per_s},
                {"compute_probe", ceilings.compute_probe},
                {"memory_probe", ceilings.memory_probe},
                {"measured", today()}};
  try {
    create_output_directory(path.parent_path().string());
    write_text_file(path, cache.dump(2) + "\n");
  } catch (const Error& error) {
    std::cerr << "attnscope: warning: the ceilings were not cached: " << error.what() << "\n";
  }
  return ceilings;
}

}  // namespace attnscope::cli
