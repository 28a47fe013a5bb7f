// What every kernel on AMX's tiles shares (ops/cpu/gemm_amx.cpp, the prefill GEMM;
// ops/attention/cpu/query_tile_amx.cpp, flash's products): the one tile shape they use and how a
// thread takes and gives back the tiles. Eight tile registers, each 16 rows of 64 bytes: an A
// tile of 16 rows x 32 bf16, a B tile of 16 rows holding 16 pairs of bf16 (row p: inputs 2p and
// 2p + 1 of 16 columns, the pairs TDPBF16PS multiplies), a C tile of 16 x 16 f32.
#pragma once

#include <cstdint>

namespace attnscope::ops::cpu {

// n rounded up to a multiple of `multiple`: the kernels pad rows and inputs to whole tiles.
constexpr std::int64_t round_up(std::int64_t n, std::int64_t multiple) {
  return (n + multiple - 1) / multiple * multiple;
}

}  // namespace attnscope::ops::cpu

#if defined(__x86_64__)
#include <immintrin.h>

namespace attnscope::ops::cpu {

constexpr std::int64_t kTileRows = 16;   // rows of every tile
constexpr std::int64_t kTileDepth = 32;  // bf16 inputs in a tile row of 64 bytes
constexpr std::int64_t kTileElements = kTileRows * kTileDepth;  // bf16 in one 1 KB tile

// What LDTILECFG reads: palette 1, then each tile's bytes per row and rows. All 8 tiles here are
// 16 rows of 64 bytes (16 f32 outputs, or 32 bf16 inputs).
struct alignas(64) TileConfig {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t bytes_per_row[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  std::uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};

// Configures this thread's tiles (call before the first tile instruction; Linux must have lent the
// process the tiles, as the amx level of runtime/cpu_features.h ensures). The config lives in
// read-only data, not on the stack: GCC 12's _tile_loadconfig tells the compiler it reads 8 of the
// 64 bytes, and a stack copy's other stores may then be dropped.
__attribute__((target("amx-tile"))) inline void configure_tiles() {
  static constexpr TileConfig kConfig{};
  _tile_loadconfig(&kConfig);
}

// Gives this thread's tiles back (their state no longer saved on a context switch).
__attribute__((target("amx-tile"))) inline void release_tiles() { _tile_release(); }

// The kernels keep a 32 x 32 block of f32 sums in the four C tiles tmm0-3: tmm0 its top left
// 16 x 16, tmm1 top right, tmm2 bottom left, tmm3 bottom right. The block set to zero, loaded from
// c, or stored to c (c's rows ld floats apart).
__attribute__((target("amx-tile"))) inline void zero_block_tiles() {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
}

__attribute__((target("amx-tile"))) inline void load_block_tiles(const float* c, std::int64_t ld) {
  const std::int64_t stride = ld * static_cast<std::int64_t>(sizeof(float));
  _tile_loadd(0, c, stride);
  _tile_loadd(1, c + kTileRows, stride);
  _tile_loadd(2, c + kTileRows * ld, stride);
  _tile_loadd(3, c + kTileRows * ld + kTileRows, stride);
}

__attribute__((target("amx-tile"))) inline void store_block_tiles(float* c, std::int64_t ld) {
  const std::int64_t stride = ld * static_cast<std::int64_t>(sizeof(float));
  _tile_stored(0, c, stride);
  _tile_stored(1, c + kTileRows, stride);
  _tile_stored(2, c + kTileRows * ld, stride);
  _tile_stored(3, c + kTileRows * ld + kTileRows, stride);
}

}  // namespace attnscope::ops::cpu

#endif  // __x86_64__
