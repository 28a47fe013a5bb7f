// Choosing the next token from the logits.
//
// Greedy (temperature 0): the arg max, lowest id on ties. Otherwise, in Hugging Face's order:
//   1. temperature: p = softmax(logits / T)
//   2. top-k: keep the k most probable tokens (k = 0: all)
//   3. top-p (nucleus): keep the smallest most-probable set whose mass reaches p (p = 1: all)
//   4. renormalise and draw with a seeded generator (splitmix64), walking the kept tokens in id
//      order, so a seed reproduces a run on any machine.
// Cost: O(V) for greedy, plain temperature and top-k (a selection); top-p sorts the most probable
// tokens until their mass is reached (a few for a peaked distribution, O(V log V) at worst).
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace attnscope {

struct SamplingOptions {
  float temperature = 0.0f;  // 0: greedy
  std::int64_t top_k = 0;    // 0: no limit
  float top_p = 1.0f;        // 1: no limit
  std::uint64_t seed = 0;
};

// Throws Error naming the flag when an option is out of range.
void validate_sampling(const SamplingOptions& options);

class Sampler {
 public:
  // Draws from the seeded stream's numbers in order, starting at number `first_draw` (0: the
  // first), so a Sampler started at n draws what one that already drew n times draws next.
  explicit Sampler(const SamplingOptions& options, std::uint64_t first_draw = 0);
  // Throws Error when the logits are empty or contain NaN.
  std::int32_t sample(std::span<const float> logits);

 private:
  double next_uniform();  // in [0, 1)
  // The least probable token top-k and top-p keep of probabilities_ (fills candidates_).
  std::pair<float, std::int32_t> least_probable_kept();

  SamplingOptions options_;
  std::uint64_t state_;
  // Reused between calls: p_i at this temperature, and (p_i, i) for top-k and top-p.
  std::vector<float> probabilities_;
  std::vector<std::pair<float, std::int32_t>> candidates_;
};

}  // namespace attnscope
