// cpu_features() and cpu_level() (runtime/cpu_features.h).
#include "runtime/cpu_features.h"

#include <cstdlib>
#include <string>

#include "runtime/error.h"

namespace attnscope {

namespace {

CpuFeatures read_cpu_features() {
  CpuFeatures f;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.f16c = __builtin_cpu_supports("f16c");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512_bf16 = __builtin_cpu_supports("avx512bf16");
  f.avx512_vnni = __builtin_cpu_supports("avx512vnni");
#endif
  return f;
}

CpuLevel best_supported_level() {
  const CpuFeatures& f = cpu_features();
  if (f.avx512f && f.avx512bw && f.avx512vl && f.fma && f.f16c) return CpuLevel::Avx512;
  if (f.avx2 && f.fma && f.f16c) return CpuLevel::Avx2;
  return CpuLevel::Portable;
}

std::optional<CpuLevel> cap_from_environment() {
  const char* value = std::getenv("ATTNSCOPE_CPU_LEVEL");
  if (value == nullptr || *value == '\0') return std::nullopt;
  const std::optional<CpuLevel> level = parse_cpu_level(value);
  check(level.has_value(), "ATTNSCOPE_CPU_LEVEL",
        [&] { return "unknown level '" + std::string(value) + "' (portable, avx2 or avx512)"; });
  return level;
}

struct LevelCap {
  bool set_by_caller = false;
  std::optional<CpuLevel> cap;
};

LevelCap& level_cap() {
  static LevelCap cap;
  return cap;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = read_cpu_features();
  return features;
}

std::string_view cpu_level_name(CpuLevel level) {
  switch (level) {
    case CpuLevel::Portable:
      return "portable";
    case CpuLevel::Avx2:
      return "avx2";
    case CpuLevel::Avx512:
      return "avx512";
  }
  return "portable";
}

std::optional<CpuLevel> parse_cpu_level(std::string_view name) {
  for (CpuLevel level : {CpuLevel::Portable, CpuLevel::Avx2, CpuLevel::Avx512}) {
    if (name == cpu_level_name(level)) return level;
  }
  return std::nullopt;
}

CpuLevel cpu_level() {
  static const std::optional<CpuLevel> environment_cap = cap_from_environment();
  const LevelCap& cap = level_cap();
  const std::optional<CpuLevel> limit = cap.set_by_caller ? cap.cap : environment_cap;
  const CpuLevel best = best_supported_level();
  return limit && *limit < best ? *limit : best;
}

void set_cpu_level_cap(std::optional<CpuLevel> cap) { level_cap() = {true, cap}; }

}  // namespace attnscope
