// cpu_level(): the level the CPU kernels dispatch to never exceeds what CPUID reports, and a cap
// lowers it (the tests of the 16-bit and 8-bit kernels run every level this way).
#include <doctest/doctest.h>

#include <algorithm>

#include "runtime/cpu_features.h"

namespace attnscope {

TEST_CASE("cpu levels round-trip through their names") {
  for (CpuLevel level : {CpuLevel::Portable, CpuLevel::Avx2, CpuLevel::Avx512}) {
    CHECK(parse_cpu_level(cpu_level_name(level)) == level);
  }
  CHECK_FALSE(parse_cpu_level("sse2").has_value());
}

TEST_CASE("cpu_level follows CPUID and its cap") {
  const CpuFeatures& f = cpu_features();
  set_cpu_level_cap(std::nullopt);
  const CpuLevel best = cpu_level();
  if (best == CpuLevel::Avx512) CHECK((f.avx512f && f.avx512bw && f.avx512vl));
  if (best >= CpuLevel::Avx2) CHECK((f.avx2 && f.fma && f.f16c));
  MESSAGE("this CPU runs the " << cpu_level_name(best) << " kernels");

  set_cpu_level_cap(CpuLevel::Portable);
  CHECK(cpu_level() == CpuLevel::Portable);
  set_cpu_level_cap(CpuLevel::Avx2);
  CHECK(cpu_level() == std::min(best, CpuLevel::Avx2));
  set_cpu_level_cap(std::nullopt);
  CHECK(cpu_level() == best);
}

}  // namespace attnscope
