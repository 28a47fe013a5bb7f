// Where two runs of one model diverge (divergence.h).
#include "tools/attnscope/measure/divergence.h"

#include <algorithm>
#include <cmath>

#include "runtime/error.h"
#include "runtime/log_probs.h"
#include "runtime/transfer.h"

namespace attnscope::cli {

namespace {

// `out` rounded to bf16 and back to its own dtype, in place, on any device.
void round_to_bf16(Context& ctx, Tensor& out) {
  const Tensor rounded = to_host(ctx, out)
                             .to_dtype(DType::BF16, ctx.host_allocator())
                             .to_dtype(out.dtype(), ctx.host_allocator());
  copy_into(ctx, rounded, out);
}

// A running largest absolute difference and sum of squares.
struct Difference {
  double max = 0, sum_squares = 0;
  std::int64_t count = 0;
  void add(double a, double b) {
    const double d = std::fabs(a - b);
    max = std::max(max, d);
    sum_squares += d * d;
    ++count;
  }
  double rms() const { return count ? std::sqrt(sum_squares / static_cast<double>(count)) : 0.0; }
};

// A head's softmax statistics per row, and the run's own largest error against the float64
// reference from its own q, k and v.
struct HeadStatistics {
  std::vector<double> max, lse;
  double error = 0;
};

HeadStatistics statistics_of(const HostAttention& call, std::int64_t head) {
  HeadStatistics s;
  for (std::int64_t i = 0; i < call.q_len; ++i) {
    const SoftmaxRow softmax = softmax_row(call, head, i);
    s.max.push_back(softmax.max);
    s.lse.push_back(softmax.log_sum_exp);
    const std::vector<double> reference = reference_output(call, head, softmax);
    const std::span<const float> out = call.out_row(head, i);
    for (std::size_t x = 0; x < reference.size(); ++x) {
      s.error = std::max(s.error, std::fabs(double(out[x]) - reference[x]));
    }
  }
  return s;
}

void require_same_shape(const RunRecord& run, const RunRecord& against) {
  const auto shape = [](const RunRecord& r) {
    const HostAttention& a = r.layers.front().attention;
    return std::vector<std::int64_t>{static_cast<std::int64_t>(r.layers.size()),
                                     a.q_heads,
                                     a.kv_heads,
                                     a.head_dim,
                                     r.positions,
                                     r.vocab};
  };
  check(!run.layers.empty() && !against.layers.empty(), "diverge", "a run recorded no layers");
  check(shape(run) == shape(against), "diverge", [&] {
    return "the two runs are not of one model on the same tokens: (layers, heads, kv heads, head "
           "dim, positions, vocabulary) " +
           shape_string(shape(run)) + " against " + shape_string(shape(against));
  });
}

}  // namespace

void check_perturb_layer(const ModelConfig& config, std::int64_t layer) {
  check(layer >= -1 && layer < config.n_layers, "--perturb-layer", [&] {
    return "layer " + std::to_string(layer) + " is outside the model's " +
           std::to_string(config.n_layers) + " layers (0.." + std::to_string(config.n_layers - 1) +
           ")";
  });
}

DivergenceRecorder::DivergenceRecorder(const LanguageModel& model, std::int64_t perturb_layer)
    : model_(model), perturb_layer_(perturb_layer) {
  check_perturb_layer(model.config(), perturb_layer);
}

void DivergenceRecorder::attention(Context& ctx, const Call& call) {
  if (call.layer == perturb_layer_) round_to_bf16(ctx, call.out);
  layers_.push_back({copy_to_host(ctx, call), {}});
}

void DivergenceRecorder::layer_output(Context& ctx, std::int64_t /*layer*/, const Tensor& hidden) {
  const Tensor logits = to_host(ctx, model_.logits_of_hidden(ctx, hidden));
  check(!layers_.empty(), "diverge", "a layer's output came before its attention call");
  const auto vocab = static_cast<std::size_t>(logits.dim(1));
  std::vector<std::int32_t>& top1 = layers_.back().lens_top1;
  for (std::int64_t row = 0; row < logits.dim(0); ++row) {
    top1.push_back(
        arg_max(std::span<const float>(logits.data<float>() + row * logits.dim(1), vocab)));
  }
}

RunRecord record_run(Context& ctx, const LanguageModel& model, std::span<const std::int32_t> tokens,
                     std::int64_t perturb_layer) {
  const auto length = static_cast<std::int64_t>(tokens.size());
  check(length >= 1 && length <= model.config().context_length, "diverge", [&] {
    return std::to_string(length) + " tokens: a run needs 1 to the context length of " +
           std::to_string(model.config().context_length);
  });
  model.require_memory(ctx, 1, length, length, true, "diverge", "use a shorter prompt");
  DivergenceRecorder recorder(model, perturb_layer);
  KVCache cache = model.new_cache(ctx, 1, length);
  struct Attached {
    Context& ctx;
    ~Attached() { ctx.set_attention_tap(nullptr); }
  } attached{ctx};
  ctx.set_attention_tap(&recorder);
  const Tensor logits = to_host(ctx, model.forward(ctx, tokens, 1, cache, true));
  RunRecord record;
  record.layers = recorder.take_layers();
  record.positions = length;
  record.vocab = logits.dim(2);
  record.logits.assign(logits.data<float>(), logits.data<float>() + logits.numel());
  return record;
}

Divergence compare_runs(const RunRecord& run, const RunRecord& against) {
  require_same_shape(run, against);
  Divergence result;
  result.positions = run.positions;
  for (std::size_t l = 0; l < run.layers.size(); ++l) {
    const HostAttention& a = run.layers[l].attention;
    const HostAttention& b = against.layers[l].attention;
    LayerDivergence layer;
    Difference out_all, lse_all;
    for (std::int64_t h = 0; h < a.q_heads; ++h) {
      Difference out, row_max, lse;
      for (std::int64_t i = 0; i < a.q_len; ++i) {
        const std::span<const float> x = a.out_row(h, i), y = b.out_row(h, i);
        for (std::size_t e = 0; e < x.size(); ++e) {
          out.add(x[e], y[e]);
          out_all.add(x[e], y[e]);
        }
      }
      const HeadStatistics sa = statistics_of(a, h), sb = statistics_of(b, h);
      for (std::size_t i = 0; i < sa.lse.size(); ++i) {
        row_max.add(sa.max[i], sb.max[i]);
        lse.add(sa.lse[i], sb.lse[i]);
        lse_all.add(sa.lse[i], sb.lse[i]);
      }
      const HeadDivergence head = {out.max,   out.rms(), row_max.max, lse.max,
                                   lse.rms(), sa.error,  sb.error};
      layer.all.row_max_max = std::max(layer.all.row_max_max, head.row_max_max);
      layer.all.error_run = std::max(layer.all.error_run, head.error_run);
      layer.all.error_against = std::max(layer.all.error_against, head.error_against);
      layer.heads.push_back(head);
    }
    layer.all.out_max = out_all.max;
    layer.all.out_rms = out_all.rms();
    layer.all.lse_max = lse_all.max;
    layer.all.lse_rms = lse_all.rms();
    const std::vector<std::int32_t>& top_a = run.layers[l].lens_top1;
    const std::vector<std::int32_t>& top_b = against.layers[l].lens_top1;
    for (std::size_t p = 0; p < top_a.size(); ++p) layer.top1_flips += top_a[p] != top_b[p];
    const auto index = static_cast<std::int64_t>(l);
    if (result.first_output_difference < 0 && layer.all.out_max > 0) {
      result.first_output_difference = index;
    }
    if (result.first_input_difference < 0 && (layer.all.lse_max > 0 || layer.all.row_max_max > 0)) {
      result.first_input_difference = index;
    }
    if (result.first_flip < 0 && layer.top1_flips > 0) result.first_flip = index;
    result.layers.push_back(std::move(layer));
  }
  const auto vocab = static_cast<std::size_t>(run.vocab);
  for (std::int64_t p = 0; p < run.positions; ++p) {
    const auto row = [&](const RunRecord& r) {
      return log_softmax(std::span(r.logits).subspan(static_cast<std::size_t>(p) * vocab, vocab));
    };
    const double kl = kl_divergence(row(against), row(run));
    result.kl_mean += kl / static_cast<double>(run.positions);
    result.kl_max = std::max(result.kl_max, kl);
  }
  return result;
}

}  // namespace attnscope::cli
