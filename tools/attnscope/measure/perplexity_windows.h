// The windows `attnscope perplexity` evaluates a long text in: the stride convention of Hugging
// Face transformers' perplexity guide ("Perplexity of fixed-length models"), so its numbers
// match a transformers run with the same max_length (ctx) and stride.
//
// For N tokens x_0..x_{N-1}, windows start at 0, S, 2S, ... and end at min(start + ctx, N); the
// last is the first that reaches N. A window scores only the targets that the previous window
// did not (those at or after its end), each predicted from the tokens before it inside the
// window; the tokens before those are context only:
//   scored(w) = { t : max(prev_end, begin + 1) <= t < end },  prev_end = the previous end (0)
// so x_0 is never scored, and with S = ctx (no overlap) each window's first token is not either
// (nothing in the window precedes it). Every other token is scored exactly once.
//   NLL = -(1/n) sum over scored t of log p(x_t | x_begin..x_{t-1}),  perplexity = exp(NLL)
// Cost: windows * ctx tokens of forward passes; S = ctx / 2 evaluates about twice the text.
#pragma once

#include <cstdint>
#include <vector>

namespace attnscope::cli {

struct Window {
  std::int64_t begin = 0;         // first token fed to the model
  std::int64_t end = 0;           // one past the last token fed
  std::int64_t first_scored = 0;  // targets first_scored..end-1 are scored
  std::int64_t scored() const { return end - first_scored; }
};

// The windows over `tokens` tokens for a context of `ctx` and a stride `stride` (1 <= stride <=
// ctx, checked by the caller).
std::vector<Window> plan_windows(std::int64_t tokens, std::int64_t ctx, std::int64_t stride);

}  // namespace attnscope::cli
