// The scheduler's three passes and its preemption (engine/scheduler.h).
#include "engine/scheduler.h"

#include <algorithm>
#include <string>

#include "runtime/error.h"

namespace attnscope::engine {

std::int64_t StepPlan::prefill_tokens() const {
  std::int64_t total = 0;
  for (const Item& item : items) total += item.decode ? 0 : item.tokens;
  return total;
}

std::int64_t StepPlan::decode_tokens() const {
  std::int64_t total = 0;
  for (const Item& item : items) total += item.decode ? 1 : 0;
  return total;
}

Scheduler::Scheduler(BlockPool& pool, const SchedulerOptions& options)
    : pool_(pool), options_(options) {
  check(options.max_batch_tokens >= 1, "--max-batch-tokens", "must be at least 1");
  check(options.max_running >= 1, "--max-running", "must be at least 1");
}

void Scheduler::add(Sequence* sequence) { waiting_.push_back(sequence); }

void Scheduler::remove(Sequence* sequence) {
  if (pool_.running(sequence->id)) pool_.release(sequence->id);
  std::erase(running_, sequence);
  std::erase(waiting_, sequence);
}

bool Scheduler::planned(const StepPlan& plan, const Sequence* sequence) const {
  return std::ranges::any_of(plan.items,
                             [&](const StepPlan::Item& item) { return item.sequence == sequence; });
}

void Scheduler::preempt(Sequence* sequence, StepPlan& plan) {
  pool_.release(sequence->id);
  sequence->computed = 0;
  ++sequence->preemptions;
  ++preemptions_;
  std::erase(running_, sequence);
  waiting_.push_front(sequence);
  plan.preempted.push_back(sequence);
}

bool Scheduler::make_room(Sequence* sequence, std::int64_t positions, StepPlan& plan) {
  while (!pool_.can_grow(sequence->id, positions)) {
    // The newest running sequence this step has not planned yet (running_ is oldest first).
    const auto victim = std::find_if(running_.rbegin(), running_.rend(),
                                     [&](const Sequence* s) { return !planned(plan, s); });
    Sequence* chosen = *victim;  // `sequence` itself is never planned yet, so one exists
    preempt(chosen, plan);
    if (chosen == sequence) return false;
  }
  pool_.grow(sequence->id, positions);
  return true;
}

StepPlan Scheduler::schedule() {
  StepPlan plan;
  std::int64_t budget = options_.max_batch_tokens;
  const std::vector<Sequence*> running = running_;  // preemptions edit running_
  // 1. decodes, 2. prefill chunks; each pass oldest first.
  for (const bool decodes : {true, false}) {
    for (Sequence* s : running) {
      if (budget == 0) break;
      if (!pool_.running(s->id) || (s->pending() == 1) != decodes) continue;  // preempted
      const std::int64_t tokens = std::min(s->pending(), budget);
      if (!make_room(s, s->computed + tokens, plan)) continue;
      plan.items.push_back({s, tokens, decodes});
      budget -= tokens;
    }
  }
  // 3. admissions, first come first served.
  while (!waiting_.empty() && budget > 0 && plan.preempted.empty() &&
         static_cast<std::int64_t>(running_.size()) < options_.max_running) {
    Sequence* s = waiting_.front();
    if (!pool_.can_admit(s->tokens)) break;
    s->computed = pool_.admit(s->id, s->tokens);
    waiting_.pop_front();
    running_.push_back(s);
    const std::int64_t tokens = std::min(s->pending(), budget);
    plan.items.push_back({s, tokens, false});
    budget -= tokens;
  }
  return plan;
}

}  // namespace attnscope::engine
