// cpu_features() and cpu_level() (runtime/cpu_features.h).
#include "runtime/cpu_features.h"

#include <cstdlib>
#include <iterator>
#include <string>

#include "runtime/error.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif
#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace attnscope {

namespace {

// Linux keeps AMX's 8 KB of tile registers out of a thread's saved state until the process asks
// for them (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); a tile instruction before that
// faults. The permission holds for the whole process, every thread included, and has a cost: from
// then on sigaltstack refuses an alternate signal stack too small for the tiles' state (the
// request itself fails while some thread has one). So it is asked once, by cpu_level(), the first
// time the amx level would be chosen, not when the features are read.
bool os_lends_amx_tiles() {
#if defined(__x86_64__) && defined(__linux__)
  constexpr int kRequestPermission = 0x1023;  // ARCH_REQ_XCOMP_PERM
  constexpr int kTileData = 18;               // XFEATURE_XTILEDATA
  return syscall(SYS_arch_prctl, kRequestPermission, kTileData) == 0;
#else
  return false;
#endif
}

// CPUID and XGETBV read directly (not __builtin_cpu_supports, whose feature names differ between
// GCC and Clang versions). A vector extension counts only when the OS saves its registers.
CpuFeatures read_cpu_features() {
  CpuFeatures f;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __get_cpuid(0, &eax, &ebx, &ecx, &edx);  // the vendor's 12 characters in ebx, edx, ecx
  f.amd = ebx == 0x68747541u && edx == 0x69746e65u && ecx == 0x444d4163u;  // "Auth" "enti" "cAMD"
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return f;
  const auto bit = [](unsigned reg, int n) { return ((reg >> n) & 1u) != 0; };
  if (!bit(ecx, 27) || !bit(ecx, 28)) return f;  // OSXSAVE and AVX
  unsigned xcr0_low = 0, xcr0_high = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
  const bool os_saves_avx = (xcr0_low & 0x6u) == 0x6u;            // XMM and YMM state
  const bool os_saves_avx512 = (xcr0_low & 0xE6u) == 0xE6u;       // plus opmask and ZMM state
  const bool os_saves_tiles = (xcr0_low & 0x60000u) == 0x60000u;  // tile config and tile data
  if (!os_saves_avx) return f;
  f.fma = bit(ecx, 12);
  f.f16c = bit(ecx, 29);
  __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx);
  const unsigned leaf7_subleaves = eax;
  f.avx2 = bit(ebx, 5);
  const bool cpu_has_amx = bit(edx, 24) && bit(edx, 22);  // AMX-TILE and AMX-BF16
  if (os_saves_avx512) {
    f.avx512f = bit(ebx, 16);
    f.avx512bw = bit(ebx, 30);
    f.avx512vl = bit(ebx, 31);
    f.avx512_vnni = bit(ecx, 11);
    if (leaf7_subleaves >= 1) {
      __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx);
      f.avx512_bf16 = bit(eax, 5);
    }
  }
  if (cpu_has_amx && os_saves_tiles) f.amx_tile = f.amx_bf16 = true;
#endif
  return f;
}

CpuLevel best_supported_level() {
  const CpuFeatures& f = cpu_features();
  if (f.avx512f && f.avx512bw && f.avx512vl && f.fma && f.f16c) {
    if (!f.avx512_vnni) return CpuLevel::Avx512;
    if (!f.avx512_bf16) return CpuLevel::Avx512Vnni;
    return f.amx_tile && f.amx_bf16 ? CpuLevel::Amx : CpuLevel::Avx512Bf16;
  }
  if (f.avx2 && f.fma && f.f16c) return CpuLevel::Avx2;
  return CpuLevel::Portable;
}

std::optional<CpuLevel> cap_from_environment() {
  const char* value = std::getenv("ATTNSCOPE_CPU_LEVEL");
  if (value == nullptr || *value == '\0') return std::nullopt;
  const std::optional<CpuLevel> level = parse_cpu_level(value);
  check(level.has_value(), "ATTNSCOPE_CPU_LEVEL", [&] {
    return "unknown level '" + std::string(value) +
           "' (portable, avx2, avx512, avx512vnni, avx512bf16 or amx)";
  });
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

// Each level's name, as reports print it and ATTNSCOPE_CPU_LEVEL takes it: one table both ways.
struct NamedLevel {
  CpuLevel level;
  std::string_view name;
};
constexpr NamedLevel kLevelNames[] = {
    {CpuLevel::Portable, "portable"},     {CpuLevel::Avx2, "avx2"},
    {CpuLevel::Avx512, "avx512"},         {CpuLevel::Avx512Vnni, "avx512vnni"},
    {CpuLevel::Avx512Bf16, "avx512bf16"}, {CpuLevel::Amx, "amx"}};
static_assert(std::size(kLevelNames) == std::size(kCpuLevels), "every level has a name");

std::string_view cpu_level_name(CpuLevel level) {
  for (const NamedLevel& named : kLevelNames) {
    if (named.level == level) return named.name;
  }
  return "portable";
}

std::optional<CpuLevel> parse_cpu_level(std::string_view name) {
  for (const NamedLevel& named : kLevelNames) {
    if (named.name == name) return named.level;
  }
  return std::nullopt;
}

CpuLevel cpu_level() {
  static const std::optional<CpuLevel> environment_cap = cap_from_environment();
  const LevelCap& cap = level_cap();
  const std::optional<CpuLevel> limit = cap.set_by_caller ? cap.cap : environment_cap;
  const CpuLevel best = best_supported_level();
  const CpuLevel level = limit && *limit < best ? *limit : best;
  if (level == CpuLevel::Amx) {
    static const bool tiles_lent = os_lends_amx_tiles();
    if (!tiles_lent) return CpuLevel::Avx512Bf16;
  }
  return level;
}

void set_cpu_level_cap(std::optional<CpuLevel> cap) { level_cap() = {true, cap}; }

}  // namespace attnscope
