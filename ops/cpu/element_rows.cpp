// The conversions of ops/cpu/element_rows.h, per cpu level.
#include "ops/cpu/element_rows.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "runtime/cpu_features.h"
#include "runtime/error.h"

#if defined(__x86_64__)
#include "ops/cpu/dot_tile.h"
#endif

namespace attnscope::ops::cpu {

namespace {

// The largest magnitude a q8_0 block holds: 127 times the largest f16 scale.
constexpr float kLargestQ8_0 = 65504.0f * 127.0f;

// A block of values q8_0 cannot hold (element_rows.h): its scale an f16 NaN, its bytes 0, so that
// it reads back as NaN.
void mark_not_held(BlockQ8_0& block) {
  block.scale = 0x7E00;
  std::memset(block.q, 0, sizeof block.q);
}

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

// 16 f32 lanes rounded to f16 (vcvtps2ph) or bf16.
template <bool kBf16>
__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) __m256i narrow(__m512 values) {
  if constexpr (kBf16) return Bf16Format::narrow(values);
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

// The same 8 lanes at a time (F16C's vcvtps2ph at the avx2 level), the tail of fewer than 8
// values one at a time.
template <bool kBf16>
__attribute__((target("avx2,fma,f16c"))) void narrow_avx2(const float* src, std::int64_t n,
                                                          std::uint16_t* dst) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 values = _mm256_loadu_ps(src + i);
    const __m128i narrowed =
        kBf16 ? Bf16Format::narrow8(values)
              : _mm256_cvtps_ph(values, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), narrowed);
  }
  convert_elements(src + i, DType::F32, dst + i, kBf16 ? DType::BF16 : DType::F16,
                   static_cast<std::size_t>(n - i));
}

// The block's scale from the largest magnitude of its values (q8_0_scale), returned as a double
// for the quotients; a scale of 0 (every value rounds to 0) also zeroes the block's bytes, and
// the caller is done.
double set_scale(float largest_magnitude, BlockQ8_0& block) {
  block.scale = q8_0_scale(largest_magnitude);
  const double d = f16_to_f32(block.scale);
  if (d == 0.0) std::memset(block.q, 0, sizeof block.q);
  return d;
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) __m256 upper_half(__m512 v) {
  return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

// One block of q8_0 from 32 values, as quantize_q8_0 makes it (runtime/q8_0.h): d = max|x| / 127
// rounded up to an f16, q = x / d formed in double and rounded to nearest, ties to even. A value
// q8_0 cannot hold makes the scale an f16 NaN.
__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) void quantize_block(
    const float* x, BlockQ8_0& block) {
  const __m512 low = _mm512_loadu_ps(x), high = _mm512_loadu_ps(x + 16);
  const __m512 low_magnitude = _mm512_abs_ps(low), high_magnitude = _mm512_abs_ps(high);
  const __m512 largest = _mm512_set1_ps(kLargestQ8_0);
  const __mmask16 held = _mm512_cmp_ps_mask(low_magnitude, largest, _CMP_LE_OQ) &
                         _mm512_cmp_ps_mask(high_magnitude, largest, _CMP_LE_OQ);
  if (held != 0xFFFF) {  // NaN, an infinity, or past kLargestQ8_0
    mark_not_held(block);
    return;
  }
  const double d =
      set_scale(_mm512_reduce_max_ps(_mm512_max_ps(low_magnitude, high_magnitude)), block);
  if (d == 0.0) return;
  const __m512d divisor = _mm512_set1_pd(d);
  __m256i quarters[4];
  const __m256 eights[4] = {_mm512_castps512_ps256(low), upper_half(low),
                            _mm512_castps512_ps256(high), upper_half(high)};
  for (int i = 0; i < 4; ++i) {
    const __m512d quotient = _mm512_div_pd(_mm512_cvtps_pd(eights[i]), divisor);
    quarters[i] = _mm512_cvtpd_epi32(
        _mm512_roundscale_pd(quotient, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  const __m512i first = _mm512_inserti64x4(_mm512_castsi256_si512(quarters[0]), quarters[1], 1);
  const __m512i second = _mm512_inserti64x4(_mm512_castsi256_si512(quarters[2]), quarters[3], 1);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(block.q), _mm512_cvtepi32_epi8(first));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(block.q + 16), _mm512_cvtepi32_epi8(second));
}

// quantize_block with 8 lanes: the same block from four vectors of 8 values, the quotients formed
// 4 at a time in double, the 32 rounded integers narrowed to bytes by two rounds of saturating
// packs (exact: each lies within [-127, 127]).
__attribute__((target("avx2,fma,f16c"))) void quantize_block_avx2(const float* x,
                                                                  BlockQ8_0& block) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 largest = _mm256_set1_ps(kLargestQ8_0);
  __m256 largest_seen = _mm256_setzero_ps();
  int held = 0xFF;
  for (int i = 0; i < 4; ++i) {
    const __m256 magnitude = _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * i));
    held &= _mm256_movemask_ps(_mm256_cmp_ps(magnitude, largest, _CMP_LE_OQ));
    largest_seen = _mm256_max_ps(largest_seen, magnitude);
  }
  if (held != 0xFF) {  // NaN, an infinity, or past kLargestQ8_0
    mark_not_held(block);
    return;
  }
  __m128 half =
      _mm_max_ps(_mm256_castps256_ps128(largest_seen), _mm256_extractf128_ps(largest_seen, 1));
  half = _mm_max_ps(half, _mm_movehl_ps(half, half));
  half = _mm_max_ss(half, _mm_movehdup_ps(half));
  const double d = set_scale(_mm_cvtss_f32(half), block);
  if (d == 0.0) return;
  const __m256d divisor = _mm256_set1_pd(d);
  __m128i fours[8];
  for (int i = 0; i < 8; ++i) {
    const __m256d quotient = _mm256_div_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + 4 * i)), divisor);
    fours[i] = _mm256_cvtpd_epi32(
        _mm256_round_pd(quotient, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  for (int half_block = 0; half_block < 2; ++half_block) {
    const __m128i* four = fours + 4 * half_block;
    const __m128i bytes =
        _mm_packs_epi16(_mm_packs_epi32(four[0], four[1]), _mm_packs_epi32(four[2], four[3]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(block.q + 16 * half_block), bytes);
  }
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))) void dequantize_avx512(
    const BlockQ8_0* src, std::int64_t n, float* dst) {
  for (std::int64_t c = 0; c < n; c += 16) _mm512_storeu_ps(dst + c, Q8_0Rows::load(src, c));
}

__attribute__((target("avx2,fma,f16c"))) void dequantize_avx2(const BlockQ8_0* src, std::int64_t n,
                                                              float* dst) {
  for (std::int64_t c = 0; c < n; c += 8) _mm256_storeu_ps(dst + c, Q8_0Rows::load8(src, c));
}

#endif  // __x86_64__

// quantize_q8_0 one block at a time, with a NaN scale where it would refuse (element_rows.h).
void quantize_block_portable(const float* x, BlockQ8_0& block) {
  const bool held = std::all_of(x, x + kQ8_0BlockElements, [](float v) {
    return std::isfinite(v) && std::fabs(v) <= kLargestQ8_0;
  });
  if (!held) {
    mark_not_held(block);
    return;
  }
  quantize_q8_0(x, &block, kQ8_0BlockElements);
}

void check_whole_blocks(std::int64_t n, const char* op) {
  check(n % kQ8_0BlockElements == 0, op,
        [&] { return std::to_string(n) + " values are not whole blocks of 32"; });
}

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
  const CpuLevel level = cpu_level();
  if (level >= CpuLevel::Avx512) {
    if (format == DType::BF16) {
      narrow_avx512<true>(src, n, dst);
    } else {
      narrow_avx512<false>(src, n, dst);
    }
    return;
  }
  if (level == CpuLevel::Avx2) {
    if (format == DType::BF16) {
      narrow_avx2<true>(src, n, dst);
    } else {
      narrow_avx2<false>(src, n, dst);
    }
    return;
  }
#endif
  convert_elements(src, DType::F32, dst, format, static_cast<std::size_t>(n));
}

void quantize_q8_0_rows(const float* src, std::int64_t n, BlockQ8_0* dst) {
  check_whole_blocks(n, "quantize_q8_0_rows");
  const std::int64_t blocks = n / kQ8_0BlockElements;
#if defined(__x86_64__)
  const CpuLevel level = cpu_level();
  if (level >= CpuLevel::Avx512) {
    for (std::int64_t b = 0; b < blocks; ++b) quantize_block(src + b * kQ8_0BlockElements, dst[b]);
    return;
  }
  if (level == CpuLevel::Avx2) {
    for (std::int64_t b = 0; b < blocks; ++b) {
      quantize_block_avx2(src + b * kQ8_0BlockElements, dst[b]);
    }
    return;
  }
#endif
  for (std::int64_t b = 0; b < blocks; ++b) {
    quantize_block_portable(src + b * kQ8_0BlockElements, dst[b]);
  }
}

void dequantize_q8_0_rows(const BlockQ8_0* src, std::int64_t n, float* dst) {
  check_whole_blocks(n, "dequantize_q8_0_rows");
#if defined(__x86_64__)
  const CpuLevel level = cpu_level();
  if (level >= CpuLevel::Avx512) {
    dequantize_avx512(src, n, dst);
    return;
  }
  if (level == CpuLevel::Avx2) {
    dequantize_avx2(src, n, dst);
    return;
  }
#endif
  dequantize_q8_0(src, dst, n);
}

void rows_from_f32(const float* src, DType dtype, std::int64_t n, void* dst) {
  switch (dtype) {
    case DType::F32:
      std::copy_n(src, n, static_cast<float*>(dst));
      return;
    case DType::F16:
    case DType::BF16:
      narrow_16bit(src, dtype, n, static_cast<std::uint16_t*>(dst));
      return;
    case DType::Q8_0:
      quantize_q8_0_rows(src, n, static_cast<BlockQ8_0*>(dst));
      return;
    case DType::I32:
      break;
  }
  check(false, "rows_from_f32", "a KV cache holds f32, f16, bf16 or q8_0");
}

void rows_to_f32(const void* src, DType dtype, std::int64_t n, float* dst) {
  switch (dtype) {
    case DType::F32:
      std::copy_n(static_cast<const float*>(src), n, dst);
      return;
    case DType::F16:
    case DType::BF16:
      widen_16bit(static_cast<const std::uint16_t*>(src), dtype, n, dst);
      return;
    case DType::Q8_0:
      dequantize_q8_0_rows(static_cast<const BlockQ8_0*>(src), n, dst);
      return;
    case DType::I32:
      break;
  }
  check(false, "rows_to_f32", "a KV cache holds f32, f16, bf16 or q8_0");
}

}  // namespace attnscope::ops::cpu
