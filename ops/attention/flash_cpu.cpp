// `flash` attention on the CPU (DRAFT COMMENT)
#include "ops/attention/flash_cpu.h"

#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>

#include "ops/attention/cpu_steps.h"
#include "ops/check.h"
#include "profiler/scope.h"

namespace attnscope::ops::attention {

namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMatrix, Eigen::Unaligned>;
using Map = Eigen::Map<RowMatrix, Eigen::Unaligned>;

#ifndef FLASH_QB
#define FLASH_QB 64
#endif
#ifndef FLASH_KB
#define FLASH_KB 64
#endif
constexpr std::int64_t kQueryBlock = FLASH_QB;
constexpr std::int64_t kKeyBlock = FLASH_KB;
constexpr std::int64_t kSplitMaxQueries = 8;
constexpr std::int64_t kMinChunkKeys = 256;
constexpr std::int64_t kSplitTasksPerThread = 4;
static_assert(kSplitMaxQueries <= kMinChunkKeys, "every split-KV chunk must start at or before "
                                                 "the first query's position");

enum class Path { tiled, split_kv };

// How one call is cut into work: the path, the tile sizes and the temporaries they need.
struct Plan {
  Path path = Path::tiled;
  std::int64_t query_block = 0;  // query rows per tile (Bq)
  std::int64_t key_block = 0;    // keys per tile (Bk)
  std::int64_t chunks = 1;       // split-KV: key chunks per (batch, head)
  std::int64_t threads = 1;
  std::int64_t scratch_floats = 0;        // per thread
  std::int64_t partial_floats = 0;        // per (batch, head, chunk), split-KV only
  std::int64_t partial_count = 0;         // (batch, head, chunk) triples, split-KV only

  std::size_t temporary_bytes() const {
    return static_cast<std::size_t>(threads * scratch_floats + partial_count * partial_floats) *
           sizeof(float);
  }
};

// The online-softmax state of `rows` query rows, laid out in one float array: the unnormalised
// output O [rows, D], then the running max m [rows], then the running sum l [rows].
struct Accumulator {
  float* out;
  float* max;
  float* sum;

  Accumulator(float* base, std::int64_t rows, std::int64_t head_dim)
      : out(base), max(base + rows * head_dim), sum(base + rows * head_dim + rows) {}
  static std::int64_t floats(std::int64_t rows, std::int64_t head_dim) {
    return rows * (head_dim + 2);
  }
};

Plan plan_of(const Context& ctx, const Call& call) {
  const HeadLayout l = layout_of(call);
  Plan plan;
  plan.threads = ctx.threads();
  plan.key_block = std::min(kKeyBlock, l.kv_len);
  const std::int64_t wanted_chunks =
      (kSplitTasksPerThread * plan.threads + l.heads() - 1) / l.heads();
  plan.chunks = std::min(wanted_chunks, l.kv_len / kMinChunkKeys);
  if (l.q_len <= kSplitMaxQueries && plan.chunks >= 2) {
    plan.path = Path::split_kv;
    plan.query_block = l.q_len;
    plan.scratch_floats = plan.query_block * plan.key_block;
    plan.partial_floats = Accumulator::floats(l.q_len, l.head_dim);
    plan.partial_count = l.heads() * plan.chunks;
  } else {
    plan.chunks = 1;
    plan.query_block = std::min(kQueryBlock, l.q_len);
    plan.scratch_floats = plan.query_block * plan.key_block +
                          Accumulator::floats(plan.query_block, l.head_dim);
  }
  return plan;
}

// One (batch, query head): where its queries, keys and values start.
struct Head {
  const float* q;  // row 0 of this head's queries
  const float* k;  // row 0 of its kv head's keys
  const float* v;
  std::int64_t head_dim;
  std::int64_t first_position;  // position of query row 0: kv_len - Tq
};

Head head_of(const Call& call, const HeadLayout& l, std::int64_t bh) {
  return {call.q.data<float>() + bh * l.q_len * l.head_dim, call.k.data<float>() + l.kv_offset(bh),
          call.v.data<float>() + l.kv_offset(bh), l.head_dim, l.kv_len - l.q_len};
}

// Attends query rows [first_row, first_row + rows) of `head` to keys [key_begin, key_end), one
// key tile of up to `key_block` keys at a time, leaving the unnormalised state in `acc`.
// `scores` holds rows x key_block floats. Requires key_begin <= the first row's position: every
// row then sees at least one key of the first tile, so its max is finite from the start.
void attend_key_range(const Head& head, std::int64_t first_row, std::int64_t rows,
                      std::int64_t key_begin, std::int64_t key_end, std::int64_t key_block,
                      float scale, float* scores, const Accumulator& acc) {
  const std::int64_t d = head.head_dim;
  const ConstMap q_tile(head.q + first_row * d, rows, d);
  Map out(acc.out, rows, d);
  for (std::int64_t key_start = key_begin; key_start < key_end; key_start += key_block) {
    const std::int64_t cols = std::min(key_block, key_end - key_start);
    const ConstMap k_tile(head.k + key_start * d, cols, d);
    const ConstMap v_tile(head.v + key_start * d, cols, d);
    Map s(scores, rows, cols);
    s.noalias() = q_tile * k_tile.transpose();
    const bool first_tile = key_start == key_begin;
    const std::int64_t first_position = head.first_position + first_row;
    const bool diagonal = key_start + cols - 1 > first_position;
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t visible =
          diagonal ? std::clamp(first_position + r - key_start + 1, std::int64_t{0}, cols) : cols;
      auto row = s.row(r);
      row.tail(cols - visible).setZero();
      if (visible == 0) continue;
      auto kept = row.head(visible).array();
      const float tile_max = (kept * scale).maxCoeff();
      if (first_tile) {
        acc.max[r] = tile_max;
        kept = (kept * scale - tile_max).exp();
        acc.sum[r] = kept.sum();
      } else {
        const float new_max = std::max(acc.max[r], tile_max);
        const float correction = std::exp(acc.max[r] - new_max);
        kept = (kept * scale - new_max).exp();
        acc.sum[r] = acc.sum[r] * correction + kept.sum();
        acc.max[r] = new_max;
        out.row(r) *= correction;
      }
    }
    if (first_tile) {
      out.noalias() = s * v_tile;
    } else {
      out.noalias() += s * v_tile;
    }
  }
}

class FlashCpu final : public Backend {
 public:
  std::string_view name() const override { return "flash"; }
  std::string_view summary() const override {
    return "tiled online softmax, causal tile skipping; split-KV for decode";
  }

  CostModel cost_model(const Context& ctx, const Call& call) const override {
    const Plan plan = plan_of(ctx, call);
    return {plan.temporary_bytes(), plan.path == Path::tiled ? 1 : 2};
  }

  void forward(Context& ctx, const Call& call) const override {
    profiler::Scope scope(ctx, "attention.flash", "attention");
    validate_call(call);
    require_cpu_f32(call.q, "attention flash", "q");
    const HeadLayout layout = layout_of(call);
    const Plan plan = plan_of(ctx, call);
    if (plan.path == Path::tiled) {
      tiled(ctx, call, layout, plan);
    } else {
      split_kv(ctx, call, layout, plan);
    }
  }

 private:
  static void tiled(Context& ctx, const Call& call, const HeadLayout& l, const Plan& plan) {
    Tensor scratch = Tensor::empty({plan.threads, plan.scratch_floats}, DType::F32,
                                   ctx.allocator());
    profiler::Scope step(ctx, "flash.tiled", "kernel");
    const std::int64_t query_blocks = (l.q_len + plan.query_block - 1) / plan.query_block;
#pragma omp parallel for num_threads(plan.threads) schedule(dynamic, 1)
    for (std::int64_t task = 0; task < l.heads() * query_blocks; ++task) {
      const std::int64_t block = query_blocks - 1 - task / l.heads();  // longest rows first
      const std::int64_t bh = task % l.heads();
      const std::int64_t first_row = block * plan.query_block;
      const std::int64_t rows = std::min(plan.query_block, l.q_len - first_row);
      float* scores = scratch.data<float>() + omp_get_thread_num() * plan.scratch_floats;
      const Accumulator acc(scores + plan.query_block * plan.key_block, rows, l.head_dim);
      const Head head = head_of(call, l, bh);
      const std::int64_t key_end = head.first_position + first_row + rows;
      attend_key_range(head, first_row, rows, 0, key_end, plan.key_block, call.scale, scores,
                       acc);
      Map out(call.out.data<float>() + (bh * l.q_len + first_row) * l.head_dim, rows, l.head_dim);
      for (std::int64_t r = 0; r < rows; ++r) {
        out.row(r) = Map(acc.out, rows, l.head_dim).row(r) / acc.sum[r];
      }
    }
  }

  static void split_kv(Context& ctx, const Call& call, const HeadLayout& l, const Plan& plan) {
    Tensor scratch = Tensor::empty({plan.threads, plan.scratch_floats}, DType::F32,
                                   ctx.allocator());
    Tensor partials = Tensor::empty({plan.partial_count, plan.partial_floats}, DType::F32,
                                    ctx.allocator());
    {
      profiler::Scope step(ctx, "flash.split_kv_partials", "kernel");
#pragma omp parallel for num_threads(plan.threads) schedule(dynamic, 1)
      for (std::int64_t task = 0; task < plan.partial_count; ++task) {
        const std::int64_t bh = task / plan.chunks;
        const std::int64_t chunk = task % plan.chunks;
        const std::int64_t key_begin = chunk * l.kv_len / plan.chunks;
        const std::int64_t key_end = (chunk + 1) * l.kv_len / plan.chunks;
        float* scores = scratch.data<float>() + omp_get_thread_num() * plan.scratch_floats;
        const Accumulator acc(partials.data<float>() + task * plan.partial_floats, l.q_len,
                              l.head_dim);
        attend_key_range(head_of(call, l, bh), 0, l.q_len, key_begin, key_end, plan.key_block,
                         call.scale, scores, acc);
      }
    }
    profiler::Scope step(ctx, "flash.split_kv_combine", "kernel");
#pragma omp parallel for num_threads(plan.threads) schedule(static)
    for (std::int64_t row = 0; row < l.heads() * l.q_len; ++row) {
      const std::int64_t bh = row / l.q_len;
      const std::int64_t r = row % l.q_len;
      const float* first = partials.data<float>() + bh * plan.chunks * plan.partial_floats;
      float max_value = Accumulator(const_cast<float*>(first), l.q_len, l.head_dim).max[r];
      for (std::int64_t c = 1; c < plan.chunks; ++c) {
        const Accumulator part(const_cast<float*>(first + c * plan.partial_floats), l.q_len,
                               l.head_dim);
        max_value = std::max(max_value, part.max[r]);
      }
      Eigen::Map<Eigen::RowVectorXf> out(call.out.data<float>() + row * l.head_dim, l.head_dim);
      out.setZero();
      float sum = 0.0f;
      for (std::int64_t c = 0; c < plan.chunks; ++c) {
        const Accumulator part(const_cast<float*>(first + c * plan.partial_floats), l.q_len,
                               l.head_dim);
        const float weight = std::exp(part.max[r] - max_value);
        sum += weight * part.sum[r];
        out += weight * Eigen::Map<const Eigen::RowVectorXf>(part.out + r * l.head_dim, l.head_dim);
      }
      out /= sum;
    }
  }
};

}  // namespace

const Backend& flash_cpu_backend() {
  static const FlashCpu backend;
  return backend;
}

}  // namespace attnscope::ops::attention
