// Synthetic GPT-2 models: the real shapes with seeded random weights, so that benchmarks and
// profiles run anywhere without a download.
//
// Each element is a pure function of (seed, tensor index, element index) through splitmix64, so
// the weights do not depend on the thread count and fill in parallel. Random projections are
// uniform on [-a, a] with a = 0.02 sqrt(3): the standard deviation 0.02 of GPT-2's
// initialisation, at a fraction of the cost of normal draws. Cost: one write per parameter.
#include <cmath>

#include "models/gpt2/tensor_map.h"
#include "models/gpt2/weights.h"
#include "models/synthetic_shapes.h"
#include "runtime/error.h"

namespace attnscope::gpt2 {

namespace {

struct SyntheticShape {
  const char* name;
  std::int64_t layers, heads, width, context, vocab;
};

constexpr SyntheticShape kShapes[] = {
    {"gpt2", 12, 12, 768, 1024, 50257},
    {"gpt2-medium", 24, 16, 1024, 1024, 50257},
    {"gpt2-large", 36, 20, 1280, 1024, 50257},
    {"gpt2-xl", 48, 25, 1600, 1024, 50257},
    {"tiny", 2, 4, 64, 128, 50257},
};

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

void fill(Tensor& t, Init init, float std_dev, std::uint64_t stream, int threads) {
  float* data = t.data<float>();
  const std::int64_t n = t.numel();
  const float half_width = std_dev * std::sqrt(3.0f);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    switch (init) {
      case Init::Ones:
        data[i] = 1.0f;
        break;
      case Init::Zeros:
        data[i] = 0.0f;
        break;
      default: {
        const std::uint64_t bits = splitmix64(stream ^ static_cast<std::uint64_t>(i));
        const float unit = static_cast<float>(bits >> 40) * 0x1.0p-24f;  // [0, 1)
        data[i] = (2.0f * unit - 1.0f) * half_width;
      }
    }
  }
}

}  // namespace

std::vector<std::string> synthetic_names() { return synthetic_shape_names(kShapes); }

Gpt2Config synthetic_config(const std::string& name) {
  const SyntheticShape& s = find_synthetic_shape(kShapes, name, "synthetic model");
  Gpt2Config config;
  config.n_layers = s.layers;
  config.n_heads = s.heads;
  config.n_kv_heads = s.heads;
  config.d_model = s.width;
  config.head_dim = s.width / s.heads;
  config.d_ff = 4 * s.width;
  config.context_length = s.context;
  config.vocab_size = s.vocab;
  validate_gpt2_config(config, "synthetic:" + name);
  return config;
}

Weights synthetic_weights(const Gpt2Config& config, std::uint64_t seed, Allocator& allocator,
                          int threads) {
  Weights weights;
  const std::vector<TensorSlot> slots = tensor_slots(config, weights);
  const float std_dev = 0.02f;
  const float scaled_std_dev = std_dev / std::sqrt(2.0f * static_cast<float>(config.n_layers));
  for (std::size_t index = 0; index < slots.size(); ++index) {
    const TensorSlot& slot = slots[index];
    Shape shape = slot.stored_shape;
    if (slot.transpose) std::swap(shape[0], shape[1]);
    *slot.destination = Tensor::empty(shape, DType::F32, allocator);
    const std::uint64_t stream = splitmix64(seed ^ (static_cast<std::uint64_t>(index) << 40));
    fill(*slot.destination, slot.init, slot.init == Init::ScaledNormal ? scaled_std_dev : std_dev,
         stream, threads);
  }
  weights.lm_head = weights.token_embedding;
  return weights;
}

std::vector<StoredTensor> synthetic_tensor_list(const Gpt2Config& config) {
  Weights unused;
  std::vector<StoredTensor> list;
  for (const TensorSlot& slot : tensor_slots(config, unused)) {
    const auto bytes = static_cast<std::uint64_t>(checked_numel(slot.stored_shape)) * 4;
    list.push_back({slot.name, "F32", slot.stored_shape, bytes});
  }
  return list;
}

}  // namespace attnscope::gpt2
