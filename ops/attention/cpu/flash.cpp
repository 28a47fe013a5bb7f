// `flash` attention on the CPU (flash.cpp states the algorithm, flash.h what the devices share):
// how the work is cut into tasks, and the loops that run them.
//
// Tiled path. One task per (batch, head, query tile of Bq rows); tasks go head by head, so that
// both threads work on one head's K and V while they are in cache, and longest tile first within
// a head (the work is triangular), so the short ones even out the end of a dynamic schedule. Per
// task, for each key tile of up to Bk keys from key 0 up to the tile's last query position:
// S = Q_tile K_tile^T ([Bq, Bk], Eigen GEMM), the online-softmax update of each row over its
// visible keys (online_softmax_update below, which the split-KV path uses too; all of the keys
// except on a diagonal tile), O += P V_tile ([Bq, D] GEMM); then
// out_tile = O / l row by row. The key range ends at the tile's last query position, so the
// masked work is at most the Bq x Bq triangle of the last key tile, whatever Bk is. Where they
// apply (D a multiple of 16) the two products are hand-written kernels instead of Eigen's general
// ones from the avx2 level on: decode_row.h's for a tile of one query row (decode; measured:
// 1.25x per layer at 16 sequences behind 512 tokens, docs/results/2026-12-04-decode-attention/),
// query_tile.h's for more (D <= 256; measured there). Where the call may
// round its operands to bf16 (Call::bf16_products: a bf16 model) and the cpu has AMX, the tiles of
// every sequence of at least kAmxMinRows query rows, at head dims that are multiples of 32,
// multiply on bf16 tiles instead (query_tile_amx.h), their K and V packed once per call before the
// tasks start.
//
// Split-KV path: at most kSplitKvMaxQueries rows, with (batch, head) pairs that do not share out
// evenly among the threads (one head, two threads). Split when chunks >= 2, where
//   chunks = min(threads / gcd(B Hq, threads), floor(kv_len / 256)),
// the fewest chunks that make the number of (equal) tasks, B Hq chunks, a multiple of the
// thread count, so that every thread gets the same work; none shorter than 256 keys (128 KiB
// of K and V at D = 64: enough to pay for a task and its share of the combine). Decode with
// B = 1, H = 12 on 2 threads stays tiled (12 heads already split evenly); one head on 2 threads
// gets 2 chunks. Measured (kv_len = 4096, D = 64, 2 threads): one head, Tq = 1 took 0.024 ms in
// 2 chunks against 0.032 ms unsplit (Tq = 4: 0.077 against 0.139 ms); splitting beyond balance
// only adds tasks: two heads took 0.063 ms in 8 chunks against 0.052 ms unsplit.
// Tried and dropped: one task per kv head for grouped-query decode (its g query heads' rows as
// one block, so K and V are read once per group, not once per query head). On Zen 5 (2
// threads, synthetic:smollm2-135m, 9 query heads on 3 kv heads, decode behind 2048 tokens) a
// layer's split_kv_partials took 0.166 ms against 0.118-0.140 ms per query head: Eigen runs a
// one-row product as a GEMV but packs both operands for a 3-row GEMM, and the other query heads'
// reads of a kv head hit the cache anyway, so the DRAM bytes were the same (warm, the whole call
// takes 0.048 ms; in the model, with K and V coming from memory, 0.118).
//
// Tile sizes: Bq = 64 query rows, Bk = 256 keys. A task's working set is Q (Bq D), K and V
// (2 Bk D), S (Bq Bk) and O (Bq D) floats: 224 KiB at D = 64, 384 KiB at D = 128, plus
// Eigen's packed copies of the GEMM operands (about as much again), within Zen 4's 1 MiB L2
// for D <= 128 (L1d, 32 KiB, is left to the GEMM's own register and L1 blocking). A long Bk
// amortises the per-tile costs (packing Q and P, the per-row rescaling) and adds no masked
// work (above); Bq = 64 keeps the masked triangle near 1/16 of the work at T = 1024 and gives
// 16 tasks per head. Measured at T = 1024: on one thread (D = 64) the grid {32, 64, 128} x
// {64, 128, 256, 512} lies within 15%, 64 x 256 among the fastest; on two threads 64 x 256
// was within 5% of 128 x 256, 64 x 128 and 128 x 128 at D = 64 and the fastest at D = 128.
//
// Temporaries (flash_plan; f32; threads = ctx.threads(), Bq = min(64, Tq) and
// Bk = min(256, kv_len), both at least 1; each thread's share rounded up to whole 64-byte cache
// lines): tiled, threads (Bq Bk + Bq (D + 2)) floats: per thread one score tile and one
// (O, m, l) state, and for a paged cache of another element type Bk D more, its rows as f32;
// split-KV, threads Tq Bk floats of score tiles plus the partials (flash.h), both live during
// the first step. With the AMX products, per thread also the tile's q and p rounded to bf16
// (Bq' D + Bq' Bk' bf16, Bq' and Bk' rounded up to 32), and once the packed K and V of every
// sequence that takes them, 2 Hkv kv_len' D bf16 each (kv_len' rounded up to 32); a paged call
// also gathers one kv head's rows as f32 per thread before packing them (the longest such
// kv_len D floats). Eigen's GEMM packing buffers (stack memory up to 128 KiB, heap beyond, as in
// the other CPU GEMMs) and query_tile's transposed keys (32 D floats on the stack) are not
// counted.

#include "ops/attention/cpu/flash.h"

#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "ops/attention/cpu/decode_row.h"
#include "ops/attention/cpu/query_tile.h"
#include "ops/attention/cpu/query_tile_amx.h"
#include "ops/cpu/eigen_maps.h"
#include "ops/cpu/element_rows.h"
#include "runtime/cpu_features.h"

namespace attnscope::ops::attention::cpu {

namespace {

using ConstArrayMap = Eigen::Map<const Eigen::ArrayXf, Eigen::Unaligned>;

constexpr std::int64_t kQueryBlock = 64;
constexpr std::int64_t kKeyBlock = 256;
constexpr std::int64_t kMinChunkKeys = 256;
constexpr std::int64_t kCacheLineBytes = 64;
constexpr std::int64_t kCacheLineFloats = kCacheLineBytes / sizeof(float);
// The fewest query rows per tile for the AMX products (a whole tile of kQueryBlock): with fewer,
// packing K and V and the tiles' latency cost more than they save. Measured (2 threads of a
// Xeon with AMX, 4 x 12 heads of 64, prefill): T = 16 0.58x f32's speed, 48 0.94x, 64 1.45x,
// 128 1.36x (docs/results/2026-12-06-amx-attention/).
constexpr std::int64_t kAmxMinRows = kQueryBlock;
static_assert(kSplitKvMaxQueries <= kMinChunkKeys,
              "a split-KV chunk must start at or before the first query row's position");

// The online-softmax state of `rows` query rows in one float array: the unnormalised output
// O [rows, D], then the running max m [rows], then the running sum l [rows].
struct StateLayout {
  std::int64_t rows = 0;
  std::int64_t head_dim = 0;

  std::int64_t max_offset() const { return rows * head_dim; }
  std::int64_t sum_offset() const { return rows * head_dim + rows; }
  std::int64_t floats() const { return rows * (head_dim + 2); }
};

// How one call is cut into tasks, and the temporaries that takes; the steps and flash_plan()
// both read it, so the bytes promised are the bytes allocated.
struct Tiling {
  FlashPath path = FlashPath::tiled;
  std::int64_t threads = 1;
  std::int64_t query_block = 1;     // Bq: query rows per tile
  std::int64_t key_block = 1;       // Bk: keys per tile
  std::int64_t chunks = 1;          // split-KV: key ranges per (batch, head)
  std::int64_t scratch_floats = 0;  // per thread
  StateLayout partial;              // split-KV: one per (batch, head, chunk)
  std::int64_t partial_count = 0;
  // AMX products (query_tile_amx.h): the K and V of each sequence whose tiles take them packed as
  // bf16 tiles once per call, sequence s's at packed_offsets[s] (-1: none), each kv head's K then
  // V, amx_packed_elements(kv_len, D) bf16 each, packed_total in all. A thread's scratch then also
  // holds, from rounded_offset on, its tile's q and p rounded to bf16, and for a paged call, from
  // gathered_offset on, one kv head's key or value rows as f32 to be packed.
  bool amx = false;
  std::vector<std::int64_t> packed_offsets;
  std::int64_t packed_total = 0;
  std::int64_t rounded_offset = 0;   // floats from the start of a thread's scratch
  std::int64_t gathered_offset = 0;  // floats from the start of a thread's scratch

  std::size_t temporary_bytes() const {
    return static_cast<std::size_t>(threads * scratch_floats + partial_count * partial.floats()) *
               sizeof(float) +
           static_cast<std::size_t>(packed_total) * sizeof(std::uint16_t);
  }
};

// Per-thread slices start on their own cache line (the workspace itself is 64-byte aligned): no
// two threads write one line, and every thread sees the same alignment, hence the same result.
std::int64_t round_up_to_cache_line(std::int64_t floats) {
  return (floats + kCacheLineFloats - 1) / kCacheLineFloats * kCacheLineFloats;
}

// Plans the AMX products for sequences of `lengths` with `kv_heads` heads of `head_dim`, where the
// call allows them (bf16_products) and the cpu has them: every sequence with a whole query tile
// takes them (packed_offsets, packed_total); `amx` says whether any does. Returns the floats of
// rounded q and p a thread's scratch then needs (none without).
std::int64_t plan_amx_products(Tiling& plan, bool bf16_products,
                               const std::vector<RaggedShape::Lengths>& lengths,
                               std::int64_t kv_heads, std::int64_t head_dim) {
  plan.packed_offsets.assign(lengths.size(), -1);
  if (!bf16_products || !amx_tile_products_apply(head_dim)) return 0;
  for (std::size_t s = 0; s < lengths.size(); ++s) {
    if (lengths[s].q_len < kAmxMinRows) continue;
    plan.packed_offsets[s] = plan.packed_total;
    plan.packed_total += 2 * kv_heads * amx_packed_elements(lengths[s].kv_len, head_dim);
  }
  plan.amx = plan.packed_total > 0;
  if (!plan.amx) return 0;
  return (amx_rounded_elements(plan.query_block, head_dim) +
          amx_rounded_elements(plan.query_block, plan.key_block)) /
         2;
}

Tiling tiling_of(const Context& ctx, const Shape& l) {
  Tiling plan;
  plan.threads = ctx.threads();
  plan.key_block = std::clamp(l.kv_len, std::int64_t{1}, kKeyBlock);
  const std::int64_t balancing_chunks = plan.threads / std::gcd(l.heads(), plan.threads);
  const std::int64_t chunks = std::min(balancing_chunks, l.kv_len / kMinChunkKeys);
  if (l.q_len <= kSplitKvMaxQueries && chunks >= 2) {
    plan.path = FlashPath::split_kv;
    plan.query_block = l.q_len;
    plan.chunks = chunks;
    plan.scratch_floats = round_up_to_cache_line(plan.query_block * plan.key_block);
    plan.partial = {l.q_len, l.head_dim};
    plan.partial_count = l.heads() * chunks;
  } else {
    plan.query_block = std::clamp(l.q_len, std::int64_t{1}, kQueryBlock);
    const std::vector<RaggedShape::Lengths> lengths(static_cast<std::size_t>(l.batch),
                                                    {l.q_len, l.kv_len});
    const std::int64_t rounded_floats =
        plan_amx_products(plan, l.bf16_products, lengths, l.kv_heads, l.head_dim);
    plan.rounded_offset =
        plan.query_block * plan.key_block + StateLayout{plan.query_block, l.head_dim}.floats();
    plan.scratch_floats = round_up_to_cache_line(plan.rounded_offset + rounded_floats);
  }
  return plan;
}

// Where one kv head's key and value rows lie: in one piece (a contiguous cache, row j at j D), or
// in the blocks of a paged cache (row j is row j % block_tokens of block table[j / block_tokens];
// one kv head's rows of one block lie together). A paged cache on the cpu may hold f16, bf16 or
// q8_0 rows (fewer bytes to read, the engine's --kv-dtype): decode_row.h's kernels read them as
// f32 as they load each vector; the other products read a run made f32 first in the thread's
// `widened` rows (as_f32; 4 KiB for a block of 16 positions at D = 64: they stay in L1).
struct KeyRows {
  const void* k;  // contiguous: the kv head's row 0; paged: its rows in block 0 of the pool
  const void* v;
  std::int64_t head_dim;
  DType dtype = DType::F32;              // of k and v's elements
  std::int64_t row_bytes = 0;            // of one row: storage_bytes(dtype, head_dim)
  const std::int32_t* blocks = nullptr;  // paged: the sequence's block table
  std::int64_t block_tokens = 0;
  std::int64_t block_stride = 0;  // rows from one block to the next
  float* widened = nullptr;       // not f32: room for a key tile's rows as f32
  // AMX products (Tiling::amx): the kv head's keys and values packed as bf16 tiles.
  const std::uint16_t* packed_keys = nullptr;
  const std::uint16_t* packed_values = nullptr;

  // Which rows a pass over the runs reads: keys (S = Q K^T) or values (O += P V).
  enum class Reading { keys, values };

  // Calls f(column, count, rows) for the runs of rows lying together that cover keys
  // [first, first + count), in order, `rows` being the run's key or value rows (`reading`), of
  // `dtype`: one run for a contiguous cache, one per block when paged.
  // Paged, the next run's rows that the pass reads are asked into L2 before f computes this run:
  // a block's rows lie together (4 KiB per kv head at 16 positions and D = 64 in f32), but the
  // blocks lie anywhere, and the hardware prefetcher, which follows a stream within a 4 KiB page,
  // starts over at every block. Measured (Zen 4, 2 threads, 12 heads of 64, blocks of 16,
  // docs/results/2026-12-04-paged-prefetch/): decode per call 1.36x at 16 sequences behind 384
  // positions and 1.50x behind 1024, where K and V come from memory; the engine's serving
  // 1.02-1.17x tokens/s. Where K and V are already in cache (the same call repeated over 6 MiB,
  // one sequence behind 1024) the prefetches are all cost: 0.80x. Prefetching both K and V on
  // both passes was 0.60x there; into L1, slower everywhere.
  template <typename F>
  void for_each_run(std::int64_t first, std::int64_t count, Reading reading, F&& f) const {
    const void* rows = reading == Reading::keys ? k : v;
    if (blocks == nullptr) {
      f(0, count, row(rows, first));
      return;
    }
    for (std::int64_t done = 0; done < count;) {
      const std::int64_t key = first + done;
      const std::int64_t in_block = key % block_tokens;
      const std::int64_t run = std::min(count - done, block_tokens - in_block);
      const std::int64_t at = blocks[key / block_tokens] * block_stride + in_block;
      if (done + run < count) {  // the next run starts a block
        const std::int64_t next = blocks[(key + run) / block_tokens] * block_stride;
        prefetch_to_l2(row(rows, next), std::min(count - done - run, block_tokens) * row_bytes);
      }
      f(done, run, row(rows, at));
      done += run;
    }
  }

  // A run's `count` rows as f32: in place, or converted into `widened`.
  const float* as_f32(const void* rows, std::int64_t count) const {
    if (dtype == DType::F32) return static_cast<const float*>(rows);
    ops::cpu::rows_to_f32(rows, dtype, count * head_dim, widened);
    return widened;
  }

 private:
  const char* row(const void* rows, std::int64_t index) const {
    return static_cast<const char*>(rows) + index * row_bytes;
  }
  // Asks for `bytes` bytes from `first` on into L2 (prefetcht1 on x86), a cache line at a time.
  static void prefetch_to_l2(const char* first, std::int64_t bytes) {
    for (std::int64_t i = 0; i < bytes; i += kCacheLineBytes) __builtin_prefetch(first + i, 0, 2);
  }
};

// One (sequence, query head): where its query rows are read and its output rows written (row r
// at r * row_stride: D for a contiguous call's [B, Hq, Tq, D], Hq D for a paged call's token-major
// [N, Hq, D]), and where its keys and values lie.
struct Head {
  const float* q;  // its query row 0
  float* out;      // its output row 0
  std::int64_t row_stride;
  KeyRows kv;
  std::int64_t head_dim;
  std::int64_t first_position;  // position of query row 0: kv_len - Tq
};

using StridedConstMap = Eigen::Map<const RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;
using StridedMap = Eigen::Map<RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;

// Where kv head `kv_head` of sequence `s` (of kv_len keys of head_dim) has its packed keys in the
// call's packed keys and values (Tiling::packed_offsets; its values follow, one
// amx_packed_elements later), or -1 when that sequence has none.
std::int64_t packed_keys_offset(const Tiling& plan, std::int64_t s, std::int64_t kv_head,
                                std::int64_t kv_len, std::int64_t head_dim) {
  const std::int64_t first = plan.packed_offsets[static_cast<std::size_t>(s)];
  return first < 0 ? -1 : first + 2 * kv_head * amx_packed_elements(kv_len, head_dim);
}

// Points `head`'s key rows at kv head `kv_head` of sequence `s` in the call's packed keys and
// values `packed`, where there are any.
void attach_packed(Head& head, const Tiling& plan, const std::uint16_t* packed, std::int64_t s,
                   std::int64_t kv_head, std::int64_t kv_len) {
  if (!plan.amx) return;
  const std::int64_t offset = packed_keys_offset(plan, s, kv_head, kv_len, head.head_dim);
  if (offset < 0) return;
  head.kv.packed_keys = packed + offset;
  head.kv.packed_values = head.kv.packed_keys + amx_packed_elements(kv_len, head.head_dim);
}

// Query head bh of a contiguous call; `packed`: the call's packed keys and values
// (pack_keys_values), or null.
Head head_of(const Call& call, const HeadLayout& l, std::int64_t bh, const Tiling& plan,
             const std::uint16_t* packed) {
  const std::int64_t first_row = bh * l.q_len * l.head_dim;
  Head head{call.q.data<float>() + first_row,
            call.out.data<float>() + first_row,
            l.head_dim,
            {call.k.data<float>() + l.kv_offset(bh), call.v.data<float>() + l.kv_offset(bh),
             l.head_dim, DType::F32, l.head_dim * static_cast<std::int64_t>(sizeof(float))},
            l.head_dim,
            l.kv_len - l.q_len};
  attach_packed(head, plan, packed, bh / l.q_heads, l.kv_index(bh) % l.kv_heads, l.kv_len);
  return head;
}

// Query head h of sequence s of a paged call; `widened`: the thread's rows for a cache not in f32.
Head head_of(const PagedCall& call, std::int64_t s, std::int64_t h, float* widened) {
  const RaggedBatch& batch = *call.batch;
  const std::int64_t d = call.head_dim(), q_heads = call.q_heads();
  const std::int64_t kv_head = h / (q_heads / call.kv_heads());
  const DType dtype = call.key_blocks.dtype();
  const auto row_bytes = static_cast<std::int64_t>(storage_bytes(dtype, d));
  const std::int64_t block_head_bytes = kv_head * batch.block_tokens * row_bytes;
  const std::int64_t first_row = (batch.first_row(s) * q_heads + h) * d;
  return {call.q.data<float>() + first_row,
          call.out.data<float>() + first_row,
          q_heads * d,
          {static_cast<const char*>(call.key_blocks.raw_data()) + block_head_bytes,
           static_cast<const char*>(call.value_blocks.raw_data()) + block_head_bytes, d, dtype,
           row_bytes, batch.blocks(s).data(), batch.block_tokens,
           call.kv_heads() * batch.block_tokens, widened},
          d,
          batch.kv_len(s) - batch.q_len(s)};
}

// What multiplies a tile of `rows` query rows by its keys and values: hand-written kernels where
// they apply, query_tile_amx.h's on bf16 tiles where the call's tiling packed K and V for them
// (`amx`), else decode_row.h's for one row (decode), query_tile.h's for more; Eigen's products
// elsewhere.
enum class TileProducts { one_row, query_tile, amx, eigen };
TileProducts tile_products(CpuLevel level, std::int64_t rows, std::int64_t head_dim, bool amx) {
  if (amx) return TileProducts::amx;
  if (rows == 1 && decode_row_kernels_apply(level, head_dim)) return TileProducts::one_row;
  if (rows > 1 && query_tile_kernels_apply(level, head_dim)) return TileProducts::query_tile;
  return TileProducts::eigen;
}

// exp(m - new_max): the rescale factor that moves a state kept relative to max m onto new_max.
float rescale_factor(float m, float new_max) { return std::exp(m - new_max); }

// x = exp(scale x - shift) over a row of scores. Eigen runs exp on whole SIMD vectors and the
// rest one value at a time through the C library's expf, and a diagonal tile's rows end on any
// key; so the last, partial vector of 16 goes through a copy padded to 16 lanes (the padding is
// exponentiated and dropped). Measured at GPT-2's 12 heads x 512 (Emerald Rapids, 2 threads):
// the scalar expf took ~8% of flash's AMX path; without it the path ran 1.04x (0.848-0.851 ms
// against 0.881-0.890), the f32 path within its noise.
void exponentiate(Eigen::Ref<Eigen::RowVectorXf> row, float scale, float shift) {
  constexpr Eigen::Index kVector = 16;
  auto x = row.array();
  const Eigen::Index whole = x.size() / kVector * kVector;
  x.head(whole) = (x.head(whole) * scale - shift).exp();
  const Eigen::Index rest = x.size() - whole;
  if (rest == 0) return;
  Eigen::Array<float, 1, kVector> last = Eigen::Array<float, 1, kVector>::Zero();
  last.head(rest) = x.tail(rest) * scale - shift;
  x.tail(rest) = last.exp().head(rest);
}

// The online-softmax update of one query row over one key tile (flash.cpp's algorithm; the
// pieces named as in flash-attention's softmax.h): `scores` holds the row's visible raw scores
// q . k and leaves with P = exp(scale q . k - m'), where m' is the new running max; the row sum
// l and the unnormalised output O (`out_row`) move onto m' by the rescale factor exp(m - m')
// before P's sum is added to l (P V is added to O by the caller, one GEMM per tile). On the
// row's first tile (`first`) m and l start from the tile, and O, not yet written, is left alone.
void online_softmax_update(Eigen::Ref<Eigen::RowVectorXf> scores, float scale, bool first,
                           float& running_max, float& row_sum,
                           Eigen::Ref<Eigen::RowVectorXf> out_row) {
  auto kept = scores.array();
  const float tile_max = (kept * scale).maxCoeff();
  if (first) {
    running_max = tile_max;
    exponentiate(scores, scale, tile_max);
    row_sum = kept.sum();
    return;
  }
  const float new_max = std::max(running_max, tile_max);
  const float factor = rescale_factor(running_max, new_max);
  exponentiate(scores, scale, new_max);
  row_sum = row_sum * factor + kept.sum();
  running_max = new_max;
  out_row *= factor;
}

// Attends query rows [first_row, first_row + layout.rows) of `head` to keys
// [key_begin, key_end), one tile of up to `key_block` keys at a time, leaving the unnormalised
// state in `state` (see StateLayout). `scores` holds rows x key_block floats; `rounded`, for the
// AMX products (head.kv packed), the rows' q and p rounded to bf16 (Tiling's scratch). Requires
// key_begin <= the first row's position, so that every row sees a key of the first tile.
void attend_key_range(const Head& head, std::int64_t first_row, const StateLayout& layout,
                      std::int64_t key_begin, std::int64_t key_end, std::int64_t key_block,
                      float scale, float* scores, float* state, std::uint16_t* rounded) {
  const std::int64_t rows = layout.rows, d = head.head_dim;
  const std::int64_t first_position = head.first_position + first_row;
  const StridedConstMap q_tile(head.q + first_row * head.row_stride, rows, d,
                               Eigen::OuterStride<>(head.row_stride));
  MatrixMap out(state, rows, d);
  float* running_max = state + layout.max_offset();
  float* row_sum = state + layout.sum_offset();
  // s's one row is `scores`, O's is `state` (decode_row.h's products).
  const CpuLevel level = cpu_level();
  const TileProducts products = tile_products(level, rows, d, head.kv.packed_keys != nullptr);
  const bool one_row = products == TileProducts::one_row;
  const bool query_tile = products == TileProducts::query_tile;
  const bool amx = products == TileProducts::amx;
  std::uint16_t* rounded_q = rounded;
  std::uint16_t* rounded_p = amx ? rounded + amx_rounded_elements(rows, d) : nullptr;
  if (amx) amx_round_rows(q_tile.data(), head.row_stride, rows, d, rounded_q);
  for (std::int64_t key_start = key_begin; key_start < key_end; key_start += key_block) {
    const std::int64_t cols = std::min(key_block, key_end - key_start);
    MatrixMap s(scores, rows, cols);
    if (amx) {
      amx_tile_scores(rounded_q, rows, head.kv.packed_keys, key_start, cols, d, scores, cols);
    } else {
      head.kv.for_each_run(key_start, cols, KeyRows::Reading::keys,
                           [&](std::int64_t column, std::int64_t count, const void* run) {
                             if (one_row) {
                               decode_row_scores(level, q_tile.data(), run, head.kv.dtype, count, d,
                                                 scores + column);
                               return;
                             }
                             const float* k_rows = head.kv.as_f32(run, count);
                             if (query_tile) {
                               query_tile_scores(level, q_tile.data(), head.row_stride, rows,
                                                 k_rows, count, d, scores + column, cols);
                               return;
                             }
                             s.middleCols(column, count).noalias() =
                                 q_tile * ConstMatrixMap(k_rows, count, d).transpose();
                           });
    }
    const bool first_tile = key_start == key_begin;
    const bool diagonal = key_start + cols - 1 > first_position;
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t visible =
          diagonal ? std::clamp(first_position + r - key_start + 1, std::int64_t{0}, cols) : cols;
      auto row = s.row(r);
      if (visible > 0) {
        online_softmax_update(row.head(visible), scale, first_tile, running_max[r], row_sum[r],
                              out.row(r));
      }
      if (amx) {  // P's row rounded while in L1, zeros past its visible keys
        amx_round_row(row.data(), visible, cols, r, rounded_p);
      } else {
        row.tail(cols - visible).setZero();
      }
    }
    if (amx) {
      amx_zero_padding(rows, cols, rounded_p);
      amx_tile_values(rounded_p, rows, head.kv.packed_values, key_start, cols, d, state,
                      first_tile);
      continue;
    }
    head.kv.for_each_run(key_start, cols, KeyRows::Reading::values,
                         [&](std::int64_t column, std::int64_t count, const void* run) {
                           if (one_row) {
                             if (first_tile && column == 0) std::fill_n(state, d, 0.0f);
                             decode_row_values(level, scores + column, run, head.kv.dtype, count, d,
                                               state);
                             return;
                           }
                           const float* v_rows = head.kv.as_f32(run, count);
                           if (query_tile) {
                             query_tile_values(level, scores + column, cols, rows, v_rows, count, d,
                                               state, d, first_tile && column == 0);
                             return;
                           }
                           const ConstMatrixMap v_run(v_rows, count, d);
                           if (first_tile && column == 0) {
                             out.noalias() = s.middleCols(column, count) * v_run;
                           } else {
                             out.noalias() += s.middleCols(column, count) * v_run;
                           }
                         });
  }
}

// out rows = O / l: the tile's finished state, normalised, written to its output rows.
void write_tile(const Head& head, std::int64_t first_row, const StateLayout& layout,
                const float* state) {
  StridedMap(head.out + first_row * head.row_stride, layout.rows, layout.head_dim,
             Eigen::OuterStride<>(head.row_stride))
      .array() = ConstMatrixMap(state, layout.rows, layout.head_dim).array().colwise() /
                 ConstArrayMap(state + layout.sum_offset(), layout.rows);
}

// A paged call's tiling: the tiled path over every (sequence, query head, query tile), with tiles
// sized by its longest sequence (Tq and kv_len), so one scratch per thread serves every task.
Tiling paged_tiling_of(const Context& ctx, const RaggedShape& shape) {
  std::int64_t longest_q = 1, longest_kv = 1;
  for (const RaggedShape::Lengths& l : shape.lengths) {
    longest_q = std::max(longest_q, l.q_len);
    longest_kv = std::max(longest_kv, l.kv_len);
  }
  Tiling plan;
  plan.threads = ctx.threads();
  plan.query_block = std::min(longest_q, kQueryBlock);
  plan.key_block = std::min(longest_kv, kKeyBlock);
  const std::int64_t widened_floats =
      shape.kv_dtype == DType::F32 ? 0 : plan.key_block * shape.head_dim;
  const std::int64_t rounded_floats =
      plan_amx_products(plan, shape.bf16_products, shape.lengths, shape.kv_heads, shape.head_dim);
  std::int64_t gathered_floats = 0;  // the longest packed sequence's rows of one kv head
  for (std::size_t s = 0; s < shape.lengths.size(); ++s) {
    if (plan.packed_offsets[s] < 0) continue;
    gathered_floats = std::max(gathered_floats, shape.lengths[s].kv_len * shape.head_dim);
  }
  plan.rounded_offset = plan.query_block * plan.key_block +
                        StateLayout{plan.query_block, shape.head_dim}.floats() + widened_floats;
  plan.gathered_offset = plan.rounded_offset + rounded_floats;
  plan.scratch_floats = round_up_to_cache_line(plan.gathered_offset + gathered_floats);
  return plan;
}

// The AMX products' keys and values of every (sequence, kv head) pair that takes them
// (Tiling::packed_offsets), packed once per call: each kv head's rows are read block by block as
// f32 into the thread's scratch, then packed as the contiguous call packs them.
void pack_paged_keys_values(const PagedCall& call, const Tiling& plan, float* scratch,
                            std::uint16_t* packed) {
  const RaggedBatch& batch = *call.batch;
  const std::int64_t d = call.head_dim(), kv_heads = call.kv_heads();
  const std::int64_t group = call.q_heads() / kv_heads;
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs;  // (sequence, kv head)
  for (std::int64_t s = 0; s < batch.sequences(); ++s) {
    if (plan.packed_offsets[static_cast<std::size_t>(s)] < 0) continue;
    for (std::int64_t g = 0; g < kv_heads; ++g) pairs.emplace_back(s, g);
  }
#pragma omp parallel for num_threads(plan.threads) schedule(dynamic, 1)
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const std::int64_t s = pairs[i].first, g = pairs[i].second;
    const std::int64_t kv_len = batch.kv_len(s);
    float* rows = scratch + omp_get_thread_num() * plan.scratch_floats + plan.gathered_offset;
    const KeyRows kv = head_of(call, s, g * group, nullptr).kv;
    const std::int64_t elements = amx_packed_elements(kv_len, d);
    std::uint16_t* keys = packed + packed_keys_offset(plan, s, g, kv_len, d);
    for (const auto reading : {KeyRows::Reading::keys, KeyRows::Reading::values}) {
      kv.for_each_run(0, kv_len, reading,
                      [&](std::int64_t column, std::int64_t count, const void* run) {
                        ops::cpu::rows_to_f32(run, kv.dtype, count * d, rows + column * d);
                      });
      if (reading == KeyRows::Reading::keys) {
        amx_pack_keys(rows, kv_len, d, keys);
      } else {
        amx_pack_values(rows, kv_len, d, keys + elements);
      }
    }
  }
}

}  // namespace

FlashPlan flash_paged_plan(const Context& ctx, const RaggedShape& shape) {
  const Tiling tiling = paged_tiling_of(ctx, shape);
  return {FlashPath::tiled, 1, tiling.temporary_bytes(),
          std::string("the tiled loop reading key tiles block by block") +
              (tiling.amx ? ", on AMX bf16 tiles for the sequences of " +
                                std::to_string(kAmxMinRows) + " rows or more"
                          : ""),
          "a paged call has one path"};
}

void flash_paged(Context& ctx, const PagedCall& call) {
  const Tiling plan = paged_tiling_of(ctx, ragged_shape_of(call));
  const RaggedBatch& batch = *call.batch;
  struct Task {
    std::int64_t sequence, head, first_row;
  };
  std::vector<Task> tasks;  // sequence by sequence, head by head, longest tile first
  for (std::int64_t s = 0; s < batch.sequences(); ++s) {
    const std::int64_t tiles = (batch.q_len(s) + plan.query_block - 1) / plan.query_block;
    for (std::int64_t h = 0; h < call.q_heads(); ++h) {
      for (std::int64_t tile = tiles - 1; tile >= 0; --tile) {
        tasks.push_back({s, h, tile * plan.query_block});
      }
    }
  }
  Tensor scratch = Tensor::empty({plan.threads, plan.scratch_floats}, DType::F32, ctx.allocator());
  Tensor packed;  // the AMX products' K and V (Tiling::amx)
  if (plan.amx) {
    packed = Tensor::empty({plan.packed_total}, DType::BF16, ctx.allocator());
    pack_paged_keys_values(call, plan, scratch.data<float>(), packed.data<std::uint16_t>());
  }
#pragma omp parallel for num_threads(plan.threads) schedule(dynamic, 1)
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const Task& task = tasks[i];
    const StateLayout layout{
        std::min(plan.query_block, batch.q_len(task.sequence) - task.first_row), call.head_dim()};
    float* scores = scratch.data<float>() + omp_get_thread_num() * plan.scratch_floats;
    float* state = scores + plan.query_block * plan.key_block;
    float* widened = state + StateLayout{plan.query_block, call.head_dim()}.floats();
    Head head = head_of(call, task.sequence, task.head, widened);
    attach_packed(head, plan, plan.amx ? packed.data<std::uint16_t>() : nullptr, task.sequence,
                  task.head / (call.q_heads() / call.kv_heads()), batch.kv_len(task.sequence));
    auto* rounded = reinterpret_cast<std::uint16_t*>(scores + plan.rounded_offset);
    const std::int64_t key_end = head.first_position + task.first_row + layout.rows;
    attend_key_range(head, task.first_row, layout, 0, key_end, plan.key_block, call.scale, scores,
                     state, rounded);
    write_tile(head, task.first_row, layout, state);
  }
}

namespace {

// flash_plan's words for tile_products.
std::string products_words(std::int64_t rows, std::int64_t head_dim, bool amx) {
  const CpuLevel level = cpu_level();
  const std::string width = level >= CpuLevel::Avx512 ? "AVX-512" : "AVX2";
  switch (tile_products(level, rows, head_dim, amx)) {
    case TileProducts::one_row:
      return width + " one-row products";
    case TileProducts::query_tile:
      return width + " register-tiled products";
    case TileProducts::amx:
      return "AMX bf16-tile products (q, k, p and v rounded to bf16)";
    case TileProducts::eigen:
      break;
  }
  return "Eigen GEMMs";
}

}  // namespace

FlashPlan flash_plan(const Context& ctx, const Shape& shape) {
  const Tiling tiling = tiling_of(ctx, shape);
  FlashPlan plan;
  plan.path = tiling.path;
  plan.chunks = tiling.chunks;
  plan.temporary_bytes = tiling.temporary_bytes();
  const std::string threads = std::to_string(tiling.threads) + " threads";
  const std::string heads = "B Hq = " + std::to_string(shape.heads()) + " heads";
  if (tiling.path == FlashPath::split_kv) {
    plan.how = std::to_string(shape.heads() * tiling.chunks) + " tasks (" +
               std::to_string(tiling.chunks) + " key chunks per head) of " +
               products_words(shape.q_len, shape.head_dim, false) + " over tiles of " +
               std::to_string(tiling.key_block) + " keys, over " + threads + "; then the combine";
    plan.why = std::to_string(shape.q_len) + " query rows per head (split-KV takes at most " +
               std::to_string(kSplitKvMaxQueries) + ") and " + heads +
               " do not share out evenly over " + threads + ": " + std::to_string(tiling.chunks) +
               " chunks of at least " + std::to_string(kMinChunkKeys) +
               " keys make the tasks a multiple of the threads";
    return plan;
  }
  const std::int64_t tiles = (shape.q_len + tiling.query_block - 1) / tiling.query_block;
  plan.how = std::to_string(shape.heads() * tiles) + " tasks (" + std::to_string(tiles) +
             " query tiles of " + std::to_string(tiling.query_block) + " rows per head), " +
             products_words(tiling.query_block, shape.head_dim, tiling.amx) +
             " over key tiles of " + std::to_string(tiling.key_block) + ", over " + threads;
  if (shape.q_len > kSplitKvMaxQueries) {
    plan.why = std::to_string(shape.q_len) + " query rows per head give every thread work " +
               "without splitting the keys (split-KV takes at most " +
               std::to_string(kSplitKvMaxQueries) + ")";
  } else if (shape.heads() % tiling.threads == 0) {
    plan.why = heads + " share out evenly over " + threads + ": no split needed";
  } else {
    plan.why = "only " + std::to_string(shape.kv_len) + " keys: a split-KV chunk needs at least " +
               std::to_string(kMinChunkKeys) + ", and " + heads + " do not fill " + threads +
               " evenly";
  }
  return plan;
}

// The AMX products' keys and values of every (batch, kv head) pair, packed once per call
// (query_tile_amx.h; Tiling::packed_offsets: pair after pair, K then V).
void pack_keys_values(const Call& call, const HeadLayout& l, const Tiling& plan,
                      std::uint16_t* packed) {
  const std::int64_t elements = amx_packed_elements(l.kv_len, l.head_dim);
#pragma omp parallel for num_threads(plan.threads) schedule(static)
  for (std::int64_t pair = 0; pair < l.batch * l.kv_heads; ++pair) {
    const std::int64_t offset = pair * l.capacity * l.head_dim;
    std::uint16_t* keys = packed + packed_keys_offset(plan, pair / l.kv_heads, pair % l.kv_heads,
                                                      l.kv_len, l.head_dim);
    amx_pack_keys(call.k.data<float>() + offset, l.kv_len, l.head_dim, keys);
    amx_pack_values(call.v.data<float>() + offset, l.kv_len, l.head_dim, keys + elements);
  }
}

void flash_tiled(Context& ctx, const Call& call) {
  const Tiling plan = tiling_of(ctx, shape_of(call));
  const HeadLayout l = layout_of(call);
  Tensor packed;  // the AMX products' K and V (Tiling::amx)
  if (plan.amx) {
    packed = Tensor::empty({plan.packed_total}, DType::BF16, ctx.allocator());
    pack_keys_values(call, l, plan, packed.data<std::uint16_t>());
  }
  Tensor scratch = Tensor::empty({plan.threads, plan.scratch_floats}, DType::F32, ctx.allocator());
  const std::int64_t query_tiles = (l.q_len + plan.query_block - 1) / plan.query_block;
#pragma omp parallel for num_threads(plan.threads) schedule(dynamic, 1)
  for (std::int64_t task = 0; task < l.heads() * query_tiles; ++task) {
    const std::int64_t bh = task / query_tiles;
    const std::int64_t tile = query_tiles - 1 - task % query_tiles;  // longest rows first
    const std::int64_t first_row = tile * plan.query_block;
    const StateLayout layout{std::min(plan.query_block, l.q_len - first_row), l.head_dim};
    float* scores = scratch.data<float>() + omp_get_thread_num() * plan.scratch_floats;
    float* state = scores + plan.query_block * plan.key_block;
    auto* rounded = reinterpret_cast<std::uint16_t*>(scores + plan.rounded_offset);
    const Head head = head_of(call, l, bh, plan, plan.amx ? packed.data<std::uint16_t>() : nullptr);
    const std::int64_t key_end = head.first_position + first_row + layout.rows;
    attend_key_range(head, first_row, layout, 0, key_end, plan.key_block, call.scale, scores, state,
                     rounded);
    write_tile(head, first_row, layout, state);
  }
}

// Partial (m_c, l_c, O_c) of every (batch, head, chunk), in the StateLayout of Tq rows.
void flash_split_kv_partials(Context& ctx, const Call& call, const FlashPlan& /*plan*/,
                             Tensor& partials) {
  const Tiling plan = tiling_of(ctx, shape_of(call));
  const HeadLayout l = layout_of(call);
  Tensor scratch = Tensor::empty({plan.threads, plan.scratch_floats}, DType::F32, ctx.allocator());
#pragma omp parallel for num_threads(plan.threads) schedule(dynamic, 1)
  for (std::int64_t task = 0; task < plan.partial_count; ++task) {
    const std::int64_t bh = task / plan.chunks;
    const std::int64_t chunk = task % plan.chunks;
    const std::int64_t key_begin = chunk * l.kv_len / plan.chunks;
    const std::int64_t key_end = (chunk + 1) * l.kv_len / plan.chunks;
    float* scores = scratch.data<float>() + omp_get_thread_num() * plan.scratch_floats;
    float* state = partials.data<float>() + task * plan.partial.floats();
    attend_key_range(head_of(call, l, bh, plan, nullptr), 0, plan.partial, key_begin, key_end,
                     plan.key_block, call.scale, scores, state, nullptr);
  }
}

void flash_split_kv_combine(Context& ctx, const Call& call, const FlashPlan& /*plan*/,
                            const Tensor& partials) {
  const Tiling plan = tiling_of(ctx, shape_of(call));
  const HeadLayout l = layout_of(call);
#pragma omp parallel for num_threads(plan.threads) schedule(static)
  for (std::int64_t row = 0; row < l.heads() * l.q_len; ++row) {
    const std::int64_t bh = row / l.q_len;
    const std::int64_t r = row % l.q_len;
    const float* first_partial = partials.data<float>() + bh * plan.chunks * plan.partial.floats();
    auto partial_max = [&](std::int64_t c) {
      return first_partial[c * plan.partial.floats() + plan.partial.max_offset() + r];
    };
    float max_value = partial_max(0);
    for (std::int64_t c = 1; c < plan.chunks; ++c) max_value = std::max(max_value, partial_max(c));
    Eigen::Map<Eigen::RowVectorXf> out(call.out.data<float>() + row * l.head_dim, l.head_dim);
    out.setZero();
    float sum = 0.0f;
    for (std::int64_t c = 0; c < plan.chunks; ++c) {
      const float* partial = first_partial + c * plan.partial.floats();
      const float weight = rescale_factor(partial_max(c), max_value);
      sum += weight * partial[plan.partial.sum_offset() + r];
      out += weight * Eigen::Map<const Eigen::RowVectorXf>(partial + r * l.head_dim, l.head_dim);
    }
    out /= sum;
  }
}

}  // namespace attnscope::ops::attention::cpu
