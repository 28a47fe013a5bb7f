// Which SIMD instruction sets this CPU offers, and which kernel level the CPU ops use.
//
// The CPU kernels that read 16-bit and 8-bit weights, and the f32 prefill GEMM under every linear
// layer (ops/cpu/gemm.cpp: its packed kernel from avx512 on, Eigen's GEMM below), come in six
// levels, chosen at run time:
//   portable:   plain C++ that every x86-64 and Arm compiler builds (it may be vectorized);
//   avx2:       AVX2 + FMA + F16C (x86-64 since ~2013: Haswell, Zen 1);
//   avx512:     AVX-512 F + BW + VL (Skylake-SP, Ice Lake, Zen 4);
//   avx512vnni: avx512 plus AVX-512 VNNI's byte dot product vpdpbusd (Ice Lake, Sapphire
//               Rapids, Zen 4). Only the q8_0 kernels have code of their own for it: decode
//               (ops/cpu/linear_q8_0.cpp) and the prefill GEMM (ops/cpu/gemm_q8_0_vnni.cpp);
//               the 16-bit kernels run their avx512 code.
//   avx512bf16: avx512vnni plus AVX-512 BF16's pair dot product vdpbf16ps (Cooper Lake, Sapphire
//               Rapids, Zen 4). Only linear layers with bf16 weights have code of their own for
//               it (from 5 rows, x rounded to bf16: the decode tiles of ops/cpu/dot_tile.h, the
//               prefill GEMM of ops/cpu/gemm.cpp); everything else runs its avx512vnni code.
//   amx:        avx512bf16 plus AMX's bf16 tiles (Sapphire Rapids on), which
//               Linux lends a process only when asked: cpu_level() asks once, the first time it
//               would return amx (runtime/cpu_features.cpp says why not sooner). Only the prefill
//               GEMM with bf16, f16 or q8_0 weights has code of its own for it
//               (ops/cpu/gemm_amx.cpp); everything else runs its avx512bf16 code.
// Why run-time dispatch rather than build-time selection: one binary built on one x86-64 machine
// runs on another (a CI runner, a laptop, a GPU host), and the tests can run every level this CPU
// has, not just the best one, by capping the level (ATTNSCOPE_CPU_LEVEL=portable|avx2|avx512|
// avx512vnni|avx512bf16|amx, or set_cpu_level_cap in a test).
#pragma once

#include <optional>
#include <string_view>

namespace attnscope {

struct CpuFeatures {
  bool amd = false;  // CPUID's vendor is "AuthenticAMD" (kernels tuned per vendor say why)
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false;
  bool avx512_vnni = false;
  bool avx512_bf16 = false;
  bool amx_tile = false, amx_bf16 = false;  // and the OS saves the tiles' state (XCR0)
};

// What CPUID reports, read once.
const CpuFeatures& cpu_features();

enum class CpuLevel { Portable, Avx2, Avx512, Avx512Vnni, Avx512Bf16, Amx };
inline constexpr CpuLevel kCpuLevels[] = {CpuLevel::Portable,   CpuLevel::Avx2,
                                          CpuLevel::Avx512,     CpuLevel::Avx512Vnni,
                                          CpuLevel::Avx512Bf16, CpuLevel::Amx};  // lowest first

// "portable", "avx2", "avx512", "avx512vnni", "avx512bf16", "amx"
std::string_view cpu_level_name(CpuLevel level);
std::optional<CpuLevel> parse_cpu_level(std::string_view name);

// The best level this CPU supports, no higher than the cap: set_cpu_level_cap, else the
// ATTNSCOPE_CPU_LEVEL environment variable (an unknown value is an Error), else no cap. amx only
// once Linux has lent the process its tiles (asked here the first time; avx512bf16 if refused).
CpuLevel cpu_level();

// Caps cpu_level() (std::nullopt removes the cap). For tests and benchmarks that compare levels.
void set_cpu_level_cap(std::optional<CpuLevel> cap);

}  // namespace attnscope
