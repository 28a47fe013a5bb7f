// The measuring layer of the attention op alone, shared by `bench-attention`, `bench --op
// attention`, `profile --op attention` and `study`: the shape of one call, the one builder of a
// random call, the one clock around a call (time_attention), and the microbenchmark of
// bench-attention and bench --op attention (its flags, and each backend timed beside its cost
// model).
//
// A time is a steady clock around attend(); on a GPU the stream is drained before the clock
// starts and again before it stops, so a time is the launches plus the kernels, as a caller
// waiting for the result sees it.
//
// Cost: the inputs (q, k, v, out) plus each backend's temporaries; the study's default shape
// (B=8, H=16, T=1024, D=64) needs about 3 GiB with the naive backend.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ops/attention/backend.h"
#include "runtime/context.h"
#include "tools/attnscope/cli/cli11_fwd.h"
#include "tools/attnscope/report/statistics.h"

namespace attnscope::cli {

// The study's call, the default of `profile --op attention` and `study`: a causal prefill of
// B=8, H=16, T=1024, D=64 in f32 (its dtype f16/bf16 on a GPU only).
inline constexpr ops::attention::Shape kStudyShape = {8, 16, 16, 1024, 1024, 64};

// What the flags of a causal prefill of the attention op alone say in --help.
struct PrefillShapeHelp {
  std::string heads, seq_len, head_dim;
};
// --heads, --seq-len and --head-dim of a causal prefill of the attention op alone (`profile --op
// attention`, `study`), each checked by `range`: every query head has its own kv head (--heads
// sets q_heads and kv_heads) and the keys are the queries' own tokens (--seq-len sets q_len and
// kv_len). Their help shows `shape`'s values as the defaults. Returns the three options, for
// the caller's own rules (needs, excludes).
std::vector<CLI::Option*> add_prefill_shape_flags(CLI::App& app, ops::attention::Shape& shape,
                                                  const PrefillShapeHelp& help,
                                                  const CLI::Validator& range);

// "batch 8, heads 16 (kv 16), q_len 1024, ..." for table captions: the shape of a prefill
// (q_len = kv_len) or a decode (q_len = 1) call.
std::string describe_shape(const ops::attention::Shape& shape);
// {"batch", "heads", "kv_heads", "q_len", "kv_len", "head_dim"} for JSON reports.
nlohmann::json shape_json(const ops::attention::Shape& shape);

// The attention call of `shape` on Normal(0, 1) inputs drawn from `seed`: q, k, v and out on
// ctx's device in shape.dtype, the cache holding exactly kv_len rows. Inputs are drawn in f32 on
// the host, converted there and copied to the device (on the CPU they are made in ctx's
// allocator directly, as a measured run's own).
ops::attention::Call random_attention_call(Context& ctx, const ops::attention::Shape& shape,
                                           std::uint64_t seed);

// Milliseconds of one call of `backend`, timed to the end of its work.
double time_attention(Context& ctx, const ops::attention::Backend& backend,
                      const ops::attention::Call& call);

// ---- the microbenchmark (bench-attention, bench --op attention) ----

struct AttentionBenchFlags {
  std::vector<std::string> backends = {"all"};
  std::int64_t batch = 8;
  std::int64_t heads = 16;
  std::int64_t kv_heads = 0;  // 0 until parsed: then --kv-heads, or --heads when not given
  std::int64_t seq_len = 1024;
  std::int64_t head_dim = 64;
  bool decode = false;
  bool bf16_products = false;     // Call::bf16_products: as a bf16 model's calls on the cpu
  std::int64_t block_tokens = 0;  // --paged: blocks of this many positions; 0 contiguous
  std::string dtype = "f32";
  std::string kv_dtype;  // --paged: the blocks' element type; empty: dtype's
  std::string device = "cpu";
  int warmup = 1;
  int reps = 5;
  int threads = 0;
  std::uint64_t seed = 0;
};

struct BackendResult {
  std::string backend;
  std::optional<std::string> unsupported_reason;  // set when the backend threw Error
  std::vector<double> times_ms;
  TimingStats stats;  // of times_ms
  std::size_t peak_temporary_bytes = 0;
  ops::attention::CostModel predicted;
  int steps_observed = 0;
};

struct AttentionReport {
  ops::attention::Shape shape;
  int threads = 0;
  std::string device;  // Context::describe(): "cpu (2 threads)", "cuda: NVIDIA H200, ..."
  std::int64_t block_tokens = 0;       // paged calls' block size; 0: contiguous
  DType kv_dtype = DType::F32;         // paged calls' blocks' element type
  std::vector<BackendResult> results;  // one per chosen backend, in the order asked
};

// --heads, --kv-heads, --seq-len, --head-dim, --decode, --bf16-products, --paged and --seed.
// `kv_heads_option` receives the --kv-heads option so that the caller can default it to --heads
// once parsed.
void add_attention_shape_flags(CLI::App& app, AttentionBenchFlags& flags,
                               CLI::Option*& kv_heads_option);
// Fills kv_heads from heads when --kv-heads was not given; throws CLI::ValidationError (a usage
// error) when the heads do not split.
void finish_attention_shape(AttentionBenchFlags& flags, const CLI::Option& kv_heads_option);

// Runs every chosen backend: --warmup untimed calls, --reps timed calls, then one instrumented
// call that measures the peak of temporary bytes taken from the allocator and counts the steps
// the profiler sees directly inside the backend's scope. With --paged the same shape runs as a
// ragged call over a paged cache (B sequences of Tq queries and kv_len positions each, blocks in
// a random order), through each backend's attend_paged and paged cost model. A backend that cannot
// serve the case (it throws Error) gets a result with the reason; the others still run. `label`
// prefixes the progress lines on stderr. Throws Error when the device cannot be used.
AttentionReport measure_attention(const AttentionBenchFlags& flags, const std::string& label);

// GFLOP/s of a call that does `cost.flops` useful FLOPs in `ms` milliseconds.
inline double gflop_per_s(const ops::attention::CostModel& cost, double ms) {
  return cost.flops / (ms * 1e-3) / 1e9;
}

}  // namespace attnscope::cli
