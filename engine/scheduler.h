// The scheduler: which sequences the next step runs, and how many of their tokens, in the manner
// of Orca's iteration-level scheduling and vLLM's scheduler. It owns the waiting and running
// queues and decides against the paged cache's BlockPool (runtime/block_pool.h); it never sees
// a tensor or the model.
//
// Every step has a token budget (max_batch_tokens) and a cap on running sequences
// (max_running). A step is planned in three passes:
//   1. decodes: every running sequence with exactly one token waiting (its last sampled token)
//      gets one token, oldest first. Decodes go first so that a long prompt never starves them.
//   2. prefill chunks: running sequences still in their prompt (or recomputing after a
//      preemption) get as many of their waiting tokens as the budget has left, oldest first:
//      chunked prefill, one chunk per step, so a 2000-token prompt shares the steps.
//   3. admissions: waiting sequences, first come first served (preempted ones first), while the
//      budget, the cap and the pool allow and nothing was preempted this step: BlockPool::admit
//      reuses the cached blocks of the longest cached prefix of its tokens (prefix caching) and
//      takes fresh ones for the rest, so the sequence starts with `computed` = the cached tokens.
// A scheduled sequence's blocks must hold computed + its tokens. When the pool has no block to
// give, the newest running sequence not yet scheduled this step is preempted (vLLM's recompute
// policy): its blocks are released (its full prompt blocks stay cached, so a recompute often hits
// them again), computed drops to 0, and it goes to the front of the waiting queue; its tokens and
// sampler are kept, so it resumes where it stopped. If the sequence being scheduled is itself
// the newest, it is the one preempted.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "engine/sequence.h"
#include "runtime/block_pool.h"

namespace attnscope::engine {

struct SchedulerOptions {
  std::int64_t max_batch_tokens = 512;  // tokens per step, prefill and decode together
  std::int64_t max_running = 256;       // sequences holding blocks at once
};

// One step's plan: the sequences it runs with the number of their waiting tokens each computes
// (in the order the model takes them), and the sequences preempted to make room.
struct StepPlan {
  struct Item {
    Sequence* sequence;
    std::int64_t tokens;
    bool decode;  // its one waiting token, the last sampled; else a prefill chunk
  };
  std::vector<Item> items;
  std::vector<Sequence*> preempted;

  std::int64_t prefill_tokens() const;  // tokens of the prefill chunks
  std::int64_t decode_tokens() const;   // decode items, one token each
};

class Scheduler {
 public:
  // Throws Error unless both options are >= 1.
  Scheduler(BlockPool& pool, const SchedulerOptions& options);

  // Queues `sequence` (owned by the caller, alive until remove()) at the back of the waiting
  // queue.
  void add(Sequence* sequence);
  // Takes `sequence` out of whichever queue holds it, releasing its blocks if it has any
  // (finished or cancelled).
  void remove(Sequence* sequence);
  // Plans the next step (the passes above), taking and preempting blocks as it goes.
  StepPlan schedule();

  std::int64_t waiting() const { return static_cast<std::int64_t>(waiting_.size()); }
  std::int64_t running() const { return static_cast<std::int64_t>(running_.size()); }
  std::int64_t preemptions() const { return preemptions_; }

 private:
  // Makes room for `sequence` to hold `positions` positions by preempting the newest running
  // sequences not yet in `plan`; returns false when `sequence` itself had to go.
  bool make_room(Sequence* sequence, std::int64_t positions, StepPlan& plan);
  void preempt(Sequence* sequence, StepPlan& plan);
  bool planned(const StepPlan& plan, const Sequence* sequence) const;

  BlockPool& pool_;
  SchedulerOptions options_;
  std::deque<Sequence*> waiting_;
  std::vector<Sequence*> running_;  // oldest admission first
  std::int64_t preemptions_ = 0;
};

}  // namespace attnscope::engine
