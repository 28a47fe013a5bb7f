// The engine's loop (engine/engine.h): refusals, one step, sampling, finishing.
#include "engine/engine.h"

#include <algorithm>

#include "engine/json_grammar.h"
#include "profiler/scope.h"
#include "profiler/summary.h"
#include "runtime/error.h"
#include "runtime/log_probs.h"
#include "runtime/transfer.h"

namespace attnscope::engine {

std::string_view finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::length:
      return "length";
    case FinishReason::eos:
      return "eos";
    case FinishReason::stop:
      return "stop";
    case FinishReason::cancelled:
      return "cancelled";
    case FinishReason::refused:
      return "refused";
    case FinishReason::failed:
      return "failed";
  }
  return "unknown";
}

std::uint64_t default_kv_memory(const LanguageModel& model, const Context& ctx,
                                const EngineOptions& options) {
  const PagedKVCache::Geometry geometry = model.kv_geometry(options.block_tokens, options.kv_dtype);
  const auto full_contexts =
      static_cast<std::uint64_t>(16 * model.config().context_length) * geometry.position_bytes();
  return std::min(ctx.memory_bytes() / 8, full_contexts);
}

namespace {

PagedKVCache make_cache(const LanguageModel& model, Context& ctx, const EngineOptions& options) {
  check(options.block_tokens >= 1 && options.block_tokens <= 4096, "--block-size",
        "must be in [1, 4096]");
  const PagedKVCache::Geometry geometry = model.kv_geometry(options.block_tokens, options.kv_dtype);
  const std::uint64_t budget = options.kv_memory_bytes != 0
                                   ? options.kv_memory_bytes
                                   : default_kv_memory(model, ctx, options);
  const std::int64_t blocks = PagedKVCache::blocks_within(geometry, budget);
  check(blocks >= 1, "--kv-memory", [&] {
    return profiler::binary_bytes(budget) + " holds no block of " +
           profiler::binary_bytes(geometry.block_bytes()) + " (" +
           std::to_string(options.block_tokens) + " positions of this model)";
  });
  const std::uint64_t needed =
      model.weight_bytes() + static_cast<std::uint64_t>(blocks) * geometry.block_bytes();
  check(needed <= ctx.memory_bytes(), "--kv-memory", [&] {
    return "the weights and " + std::to_string(blocks) + " KV blocks need " +
           profiler::binary_bytes(needed) + ", more than the device's " +
           profiler::binary_bytes(ctx.memory_bytes());
  });
  return PagedKVCache(geometry, blocks, ctx.allocator());
}

}  // namespace

Engine::Engine(const LanguageModel& model, Context& ctx, const EngineOptions& options,
               TokenVocabulary vocabulary)
    : model_(model),
      ctx_(ctx),
      options_(options),
      vocabulary_(std::move(vocabulary)),
      schema_masks_(vocabulary_, model.config()),
      cache_(make_cache(model, ctx, options)),
      total_blocks_(cache_.pool().counters().blocks),
      scheduler_(cache_.pool(), options.scheduler) {}

Engine::~Engine() = default;

std::int64_t Engine::longest_sequence() const {
  return std::min(model_.config().context_length, total_blocks_ * cache_.block_tokens());
}

std::string Engine::refusal(const Request& request) const {
  const ModelConfig& shape = model_.config();
  const auto length = static_cast<std::int64_t>(request.prompt.size());
  if (length == 0) return "the prompt is empty";
  for (const std::int32_t id : request.prompt) {
    if (id < 0 || id >= shape.vocab_size) {
      return "token id " + std::to_string(id) + " is outside the vocabulary [0, " +
             std::to_string(shape.vocab_size) + ")";
    }
  }
  if (length >= shape.context_length) {
    return "a prompt of " + std::to_string(length) + " tokens leaves no room to generate in the " +
           "model's context of " + std::to_string(shape.context_length);
  }
  // BlockPool::blocks_for and block_tokens are fixed at construction: safe from any thread.
  if (cache_.pool().blocks_for(length + 1) > total_blocks_) {
    return "a prompt of " + std::to_string(length) +
           " tokens needs more than the whole KV cache (" + std::to_string(total_blocks_) +
           " blocks of " + std::to_string(cache_.block_tokens()) + " positions; raise --kv-memory)";
  }
  if (request.max_tokens < 1) return "max_tokens must be at least 1";
  if (request.logprobs > shape.vocab_size) {
    return "logprobs " + std::to_string(request.logprobs) + " is more than the vocabulary of " +
           std::to_string(shape.vocab_size);
  }
  if (!request.stop.empty() && !vocabulary_.text) {
    return "stop strings need the tokenizer's text of each token, and this engine has none";
  }
  if (!request.json_schema.empty()) {
    if (!vocabulary_.text) {
      return "JSON mode and JSON schemas need the tokenizer's text of each token, and this "
             "engine has none";
    }
    try {
      const Grammar grammar = json_schema_grammar(request.json_schema);
      if (std::string why = grammar_prefix_refusal(grammar, request.json_prefix); !why.empty()) {
        return why;
      }
    } catch (const Error& e) {
      return e.what();
    }
  }
  for (const std::string& stop : request.stop) {
    if (stop.empty()) return "a stop string is empty";
  }
  try {
    validate_sampling(request.sampling);
  } catch (const Error& e) {
    return e.what();
  }
  return request.adjustments.refusal(shape.vocab_size);
}

std::string Engine::device_failure() const {
  return device_failed_.load(std::memory_order_acquire) ? device_error_ : std::string();
}

RequestId Engine::submit(Request request) {
  const RequestId id = next_id_++;
  if (std::string failure = device_failure(); !failure.empty()) {
    pending_events_.push_back(
        {id, false, 0, true, FinishReason::failed, std::move(failure), 0, {}});
    return id;
  }
  if (std::string why = refusal(request); !why.empty()) {
    pending_events_.push_back({id, false, 0, true, FinishReason::refused, std::move(why), 0, {}});
    return id;
  }
  std::shared_ptr<GrammarTokenMask> mask;
  if (!request.json_schema.empty()) mask = schema_masks_.mask(request.json_schema);
  auto sequence = std::make_unique<Sequence>(id, std::move(request), std::move(mask));
  scheduler_.add(sequence.get());
  mark(*sequence);
  sequences_.emplace(id, std::move(sequence));
  return id;
}

bool Engine::cancel(RequestId id) {
  const auto found = sequences_.find(id);
  if (found == sequences_.end()) return false;
  scheduler_.remove(found->second.get());
  if (ScopeSink* sink = ctx_.profiler()) sink->end_span(id);
  sequences_.erase(found);
  pending_events_.push_back({id, false, 0, true, FinishReason::cancelled, "", 0, {}});
  return true;
}

std::int64_t Engine::running_positions() const {
  std::int64_t total = 0;
  for (const auto& [id, sequence] : sequences_) {
    if (cache_.pool().running(id)) total += sequence->computed;
  }
  return total;
}

bool Engine::finished(Sequence& sequence, FinishReason& reason) {
  const std::int32_t token = sequence.tokens.back();
  if (!sequence.request.ignore_eos && model_.config().is_eos(token)) {
    reason = FinishReason::eos;
    return true;
  }
  if (sequence.picker.grammar_finished()) {
    reason = FinishReason::stop;
    return true;
  }
  if (!sequence.request.stop.empty()) {
    sequence.text += vocabulary_.text(token);
    for (const std::string& stop : sequence.request.stop) {
      if (sequence.text.find(stop) != std::string::npos) {
        reason = FinishReason::stop;
        return true;
      }
    }
  }
  // The context is full when the next step would compute a position past it; the cache is full
  // when even the whole pool could not hold one more position.
  const auto length = static_cast<std::int64_t>(sequence.tokens.size());
  reason = FinishReason::length;
  return sequence.generated() >= sequence.request.max_tokens ||
         length >= model_.config().context_length ||
         cache_.pool().blocks_for(length + 1) > total_blocks_;
}

void Engine::finish(Sequence& sequence) {
  scheduler_.remove(&sequence);
  if (ScopeSink* sink = ctx_.profiler()) sink->end_span(sequence.id);
  sequences_.erase(sequence.id);
}

void Engine::mark(Sequence& sequence) {
  ScopeSink* sink = ctx_.profiler();
  if (sink == nullptr) return;
  const bool recomputing = sequence.preemptions > 0;
  const char* phase = nullptr;
  if (!cache_.pool().running(sequence.id)) {
    phase = recomputing ? "preempted" : "queued";
  } else if (sequence.pending() > 1 || sequence.generated() == 0) {
    phase = recomputing ? "recompute" : "prefill";
  } else {
    phase = "decode";
  }
  if (phase == sequence.phase) return;
  sink->begin_span(sequence.id, phase);
  sequence.phase = phase;
}

namespace {

// "engine.step: 96 prefill tokens in 2 chunks, 14 decodes; requests 3 5 8": the scope of a
// step, named by its batch (only built when a profiler listens).
std::string step_name(const StepPlan& plan) {
  const auto chunks = std::count_if(plan.items.begin(), plan.items.end(),
                                    [](const StepPlan::Item& item) { return !item.decode; });
  std::string name = "engine.step: " + std::to_string(plan.prefill_tokens()) +
                     " prefill tokens in " + std::to_string(chunks) + " chunks, " +
                     std::to_string(plan.decode_tokens()) + " decodes; requests";
  for (const StepPlan::Item& item : plan.items) {
    name.append(" ").append(std::to_string(item.sequence->id));
  }
  return name;
}

}  // namespace

StepReport Engine::step() {
  StepReport report;
  report.events = std::move(pending_events_);
  pending_events_.clear();
  if (device_failed_.load(std::memory_order_acquire)) {
    while (!sequences_.empty()) {
      Sequence& s = *sequences_.begin()->second;
      report.events.push_back({.id = s.id,
                               .finished = true,
                               .reason = FinishReason::failed,
                               .error = device_error_,
                               .top_logprobs = {}});
      finish(s);
    }
    return report;
  }
  const StepPlan plan = scheduler_.schedule();
  for (Sequence* s : plan.preempted) {
    report.preempted.push_back(s->id);
    mark(*s);
  }
  if (plan.items.empty()) return report;
  for (const StepPlan::Item& item : plan.items) mark(*item.sequence);
  const std::string name = ctx_.profiler() != nullptr ? step_name(plan) : std::string();
  profiler::Scope scope(ctx_, name.c_str(), "engine");

  std::vector<LanguageModel::SequenceStep> steps;
  const BlockPool& pool = cache_.pool();
  for (const StepPlan::Item& item : plan.items) {
    const Sequence& s = *item.sequence;
    // The one rule of sharing: a block another sequence holds is never written. The block pool
    // guarantees it (a shared block is a full, committed prefix block, and writing starts after
    // it); checked here on every block the step writes, because a violation would corrupt
    // another request's output silently.
    for (std::int64_t p = s.computed; p < s.computed + item.tokens; ++p) {
      check(!pool.is_shared(
                pool.block_table(s.id)[static_cast<std::size_t>(p / pool.block_tokens())]),
            "engine", "internal error: a step would write a block another sequence shares");
    }
    steps.push_back({std::span(s.tokens).subspan(static_cast<std::size_t>(s.computed),
                                                 static_cast<std::size_t>(item.tokens)),
                     s.computed, pool.block_table(s.id)});
    report.scheduled.push_back(s.id);
  }
  report.prefill_tokens = plan.prefill_tokens();
  report.decode_tokens = plan.decode_tokens();
  // A forward pass that throws (its temporaries out of memory, a device error) fails the
  // requests it ran, each with the error, and returns their blocks; the waiting requests go on.
  // Nothing else needs undoing: positions count as computed, and blocks are committed to the
  // prefix cache, only after the pass, and the pass writes no block another sequence shares.
  Tensor logits;
  try {
    logits = to_host(ctx_, model_.forward_paged(ctx_, steps, cache_));
  } catch (const std::exception& error) {
    const std::string what = std::string("the model step failed: ") + error.what();
    for (const StepPlan::Item& item : plan.items) {
      report.events.push_back({.id = item.sequence->id,
                               .finished = true,
                               .reason = FinishReason::failed,
                               .error = what,
                               .top_logprobs = {}});
      finish(*item.sequence);
    }
    if (dynamic_cast<const DeviceError*>(&error) != nullptr) {
      device_error_ = what + " (the device is unusable from here on: restart)";
      device_failed_.store(true, std::memory_order_release);
    }
    return report;
  }
  const std::int64_t vocab = logits.dim(1);

  for (std::size_t i = 0; i < plan.items.size(); ++i) {
    Sequence& s = *plan.items[i].sequence;
    s.computed += plan.items[i].tokens;
    if (options_.prefix_caching) {
      cache_.pool().commit(s.id, std::span(s.tokens).first(static_cast<std::size_t>(s.computed)));
    }
    if (s.pending() > 0) continue;  // a prefill chunk with more to come: its logits are unused
    const std::span<const float> row(logits.data<float>() + static_cast<std::int64_t>(i) * vocab,
                                     static_cast<std::size_t>(vocab));
    const std::optional<std::int32_t> token = s.picker.pick(row);
    if (!token) {
      report.events.push_back({.id = s.id,
                               .finished = true,
                               .reason = FinishReason::failed,
                               .error = "JSON mode: no token of the vocabulary continues the "
                                        "reply (it lacks single-byte tokens)",
                               .top_logprobs = {}});
      finish(s);
      continue;
    }
    s.tokens.push_back(*token);
    FinishReason reason;
    const bool done = finished(s, reason);
    report.events.push_back(
        {s.id, true, s.tokens.back(), done, done ? reason : FinishReason::length, "", 0, {}});
    if (s.request.logprobs >= 0) {
      const std::vector<double> log_probs = log_softmax(row);
      report.events.back().logprob = log_probs[static_cast<std::size_t>(s.tokens.back())];
      report.events.back().top_logprobs = top_log_probs(log_probs, s.request.logprobs);
    }
    if (done) {
      finish(s);
    } else {
      mark(s);
    }
  }
  return report;
}

}  // namespace attnscope::engine
