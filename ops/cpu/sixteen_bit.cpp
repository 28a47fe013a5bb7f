// widen_16bit and narrow_16bit (ops/cpu/sixteen_bit.h), per cpu level.
#include "ops/cpu/sixteen_bit.h"

#include <string>

#include "runtime/cpu_features.h"
#include "runtime/error.h"

#if defined(__x86_64__)
#include "ops/cpu/dot_tile.h"
#endif

namespace attnscope::ops::cpu {

namespace {

void check_format(DType format, const char* op) {
  check(format == DType::F16 || format == DType::BF16, op,
        [&] { return "converts f16 or bf16, not " + std::string(dtype_name(format)); });
}

#if defined(__x86_64__)

template <typename Values>
__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) void widen_avx512(
    const std::uint16_t* src, std::int64_t n, float* dst) {
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, Values::load(src + i));
  if (i < n) {
    const __mmask16 lanes = first_lanes(n - i);
    _mm512_mask_storeu_ps(dst + i, lanes, Values::load(src + i, lanes));
  }
}

template <typename Values>
__attribute__((target("avx2,fma,f16c"))) void widen_avx2(const std::uint16_t* src, std::int64_t n,
                                                         float* dst) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, Values::load8(src + i));
  for (; i < n; ++i) dst[i] = Values::one(src[i]);
}

template <typename Values>
void widen_at_level(const std::uint16_t* src, std::int64_t n, float* dst) {
  const CpuLevel level = cpu_level();
  if (level >= CpuLevel::Avx512) {
    widen_avx512<Values>(src, n, dst);
  } else if (level == CpuLevel::Avx2) {
    widen_avx2<Values>(src, n, dst);
  } else {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = Values::one(src[i]);
  }
}

// 16 f32 lanes rounded to bf16 (sixteen_bit.h's rule).
__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) __m256i narrow_bf16(
    __m512 values) {
  const __m512i bits = _mm512_castps_si512(values);
  const __m512i last_kept_bit = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i rounding = _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), last_kept_bit);
  const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(bits, rounding), 16);
  const __m512i quiet_nan = _mm512_or_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x40));
  const __mmask16 nan = _mm512_cmp_ps_mask(values, values, _CMP_UNORD_Q);
  return _mm512_cvtepi32_epi16(_mm512_mask_mov_epi32(rounded, nan, quiet_nan));
}

// 16 f32 lanes rounded to f16 (vcvtps2ph) or bf16.
template <bool kBf16>
__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) __m256i narrow(__m512 values) {
  if constexpr (kBf16) return narrow_bf16(values);
  return _mm512_cvtps_ph(values, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

template <bool kBf16>
__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) void narrow_avx512(
    const float* src, std::int64_t n, std::uint16_t* dst) {
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        narrow<kBf16>(_mm512_loadu_ps(src + i)));
  }
  if (i < n) {
    const __mmask16 lanes = first_lanes(n - i);
    _mm256_mask_storeu_epi16(dst + i, lanes, narrow<kBf16>(_mm512_maskz_loadu_ps(lanes, src + i)));
  }
}

#endif  // __x86_64__

}  // namespace

void widen_16bit(const std::uint16_t* src, DType format, std::int64_t n, float* dst) {
  check_format(format, "widen_16bit");
#if defined(__x86_64__)
  if (format == DType::BF16) {
    widen_at_level<Bf16Weights>(src, n, dst);
  } else {
    widen_at_level<F16Weights>(src, n, dst);
  }
#else
  convert_elements(src, format, dst, DType::F32, static_cast<std::size_t>(n));
#endif
}

void narrow_16bit(const float* src, DType format, std::int64_t n, std::uint16_t* dst) {
  check_format(format, "narrow_16bit");
#if defined(__x86_64__)
  if (cpu_level() >= CpuLevel::Avx512) {
    if (format == DType::BF16) {
      narrow_avx512<true>(src, n, dst);
    } else {
      narrow_avx512<false>(src, n, dst);
    }
    return;
  }
#endif
  convert_elements(src, DType::F32, dst, format, static_cast<std::size_t>(n));
}

}  // namespace attnscope::ops::cpu
