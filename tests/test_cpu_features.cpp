// cpu_level(): the level the CPU kernels dispatch to never exceeds what CPUID reports, and a cap
// lowers it (the tests of the 16-bit and 8-bit kernels run every level this way).
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "runtime/cpu_features.h"

namespace attnscope {

TEST_CASE("cpu levels round-trip through their names") {
  for (CpuLevel level : kCpuLevels) {
    CHECK(parse_cpu_level(cpu_level_name(level)) == level);
  }
  CHECK_FALSE(parse_cpu_level("sse2").has_value());
}

TEST_CASE("cpu_level follows CPUID and its cap") {
  const CpuFeatures& f = cpu_features();
  set_cpu_level_cap(std::nullopt);
  const CpuLevel best = cpu_level();
  if (best >= CpuLevel::Avx512) CHECK((f.avx512f && f.avx512bw && f.avx512vl));
  if (best == CpuLevel::Avx512) CHECK_FALSE(f.avx512_vnni);  // else the best would be avx512vnni
  if (best >= CpuLevel::Avx512Vnni) CHECK(f.avx512_vnni);
  if (best == CpuLevel::Avx512Vnni) CHECK_FALSE(f.avx512_bf16);  // else avx512bf16 or amx
  if (best >= CpuLevel::Avx512Bf16) CHECK(f.avx512_bf16);
  if (best == CpuLevel::Avx512Bf16) CHECK_FALSE((f.amx_tile && f.amx_bf16));
  if (best == CpuLevel::Amx) CHECK((f.avx512_bf16 && f.amx_tile && f.amx_bf16));
  if (best >= CpuLevel::Avx2) CHECK((f.avx2 && f.fma && f.f16c));
  MESSAGE("this CPU runs the " << cpu_level_name(best) << " kernels");

  set_cpu_level_cap(CpuLevel::Portable);
  CHECK(cpu_level() == CpuLevel::Portable);
  set_cpu_level_cap(CpuLevel::Avx2);
  CHECK(cpu_level() == std::min(best, CpuLevel::Avx2));
  set_cpu_level_cap(std::nullopt);
  CHECK(cpu_level() == best);
}

// The kernel's own flags (/proc/cpuinfo on Linux) are the independent reference for CPUID.
TEST_CASE("cpu_features agrees with /proc/cpuinfo") {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, vendor;
  std::set<std::string> flags;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("vendor_id", 0) == 0 && vendor.empty()) {
      std::istringstream(line.substr(line.find(':') + 1)) >> vendor;
    }
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    for (std::string word; words >> word;) flags.insert(word);
    break;
  }
  if (flags.empty()) {
    MESSAGE("SKIPPED: no /proc/cpuinfo flags on this system");
    return;
  }
  const CpuFeatures& f = cpu_features();
  CHECK(f.amd == (vendor == "AuthenticAMD"));
  CHECK(f.avx2 == flags.count("avx2"));
  CHECK(f.fma == flags.count("fma"));
  CHECK(f.f16c == flags.count("f16c"));
  CHECK(f.avx512f == flags.count("avx512f"));
  CHECK(f.avx512bw == flags.count("avx512bw"));
  CHECK(f.avx512vl == flags.count("avx512vl"));
  CHECK(f.avx512_bf16 == flags.count("avx512_bf16"));
  CHECK(f.avx512_vnni == flags.count("avx512_vnni"));
  // The tiles count only once Linux lends them to the process (arch_prctl), so only one way.
  if (f.amx_tile) CHECK((flags.count("amx_tile") && flags.count("amx_bf16")));
}

}  // namespace attnscope
