#include "runtime/cuda/step_graph.h"

#include <cuda_runtime.h>

#include "runtime/cuda/caching_allocator.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/error.h"
#include "runtime/transfer.h"

namespace attnscope::gpu {

namespace {

cudaGraphExec_t as_exec(void* p) { return static_cast<cudaGraphExec_t>(p); }

// Ends a capture even when the step threw, so the stream is usable again.
class Capture {
 public:
  explicit Capture(cudaStream_t stream) : stream_(stream) {
    // Relaxed: a cudaMalloc by the caching allocator (a new size class) may happen meanwhile;
    // it is not part of the graph and needs no ordering with it.
    check_cuda(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed), "graph capture");
  }
  ~Capture() {
    if (stream_ == nullptr) return;
    cudaGraph_t abandoned = nullptr;
    cudaStreamEndCapture(stream_, &abandoned);
    if (abandoned) cudaGraphDestroy(abandoned);
    cudaGetLastError();  // the capture error that made us abandon it
  }
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;

  cudaGraph_t finish() {
    cudaGraph_t graph = nullptr;
    const cudaStream_t stream = stream_;
    stream_ = nullptr;
    check_cuda(cudaStreamEndCapture(stream, &graph), "graph capture");
    return graph;
  }

 private:
  cudaStream_t stream_;
};

// Owns a captured graph until it has been turned into (or merged into) an executable one.
struct GraphOwner {
  cudaGraph_t graph;
  ~GraphOwner() { cudaGraphDestroy(graph); }
};

std::int64_t node_count(cudaGraph_t graph) {
  std::size_t count = 0;
  check_cuda(cudaGraphGetNodes(graph, nullptr, &count), "graph nodes");
  return static_cast<std::int64_t>(count);
}

// Serves the allocator from `pool` while it lives, whatever the step throws.
class PoolInUse {
 public:
  PoolInUse(CachingAllocator& allocator, std::uint64_t pool) : allocator_(allocator) {
    allocator_.use_pool(pool);
  }
  ~PoolInUse() { allocator_.use_pool(0); }
  PoolInUse(const PoolInUse&) = delete;
  PoolInUse& operator=(const PoolInUse&) = delete;

 private:
  CachingAllocator& allocator_;
};

// A copy of `t` in fresh memory of ctx's allocator, queued on the stream.
Tensor copy_of(Context& ctx, const Tensor& t) {
  Tensor copy = Tensor::empty(t.shape(), t.dtype(), ctx.allocator());
  copy_into(ctx, t, copy);
  return copy;
}

}  // namespace

StepGraph::~StepGraph() {
  if (exec_) cudaGraphExecDestroy(as_exec(exec_));
  drop_replayed();
}

void StepGraph::drop_replayed() noexcept {
  // Work already queued on the stream that uses the pool runs before whatever reuses its blocks.
  if (replay_exec_) cudaGraphExecDestroy(as_exec(replay_exec_));
  replay_exec_ = nullptr;
  replay_key_.clear();
  replay_result_ = Tensor();
  if (pool_ != 0) static_cast<CachingAllocator*>(pool_allocator_)->release_pool(pool_);
  pool_ = 0;
}

Tensor StepGraph::replay(Context& ctx, const std::vector<std::uintptr_t>& key,
                         const std::function<Tensor()>& step) {
  const cudaStream_t stream = stream_of(ctx);
  // The graph's pool lives in the allocator of the context it was captured on.
  check(replay_exec_ == nullptr || &ctx.allocator() == pool_allocator_, "cuda graph",
        "a replayed step graph is launched on the context it was captured on only");
  if (replay_exec_ == nullptr || key != replay_key_) {
    drop_replayed();
    auto& allocator = dynamic_cast<CachingAllocator&>(ctx.allocator());
    pool_allocator_ = &allocator;
    pool_ = allocator.new_pool();
    Tensor result;
    cudaGraph_t graph = nullptr;
    {
      const PoolInUse in_pool(allocator, pool_);
      Capture capture(stream);
      result = step();
      graph = capture.finish();
    }
    const GraphOwner captured{graph};
    nodes_ = node_count(captured.graph);
    cudaGraphExec_t exec = nullptr;
    check_cuda(cudaGraphInstantiate(&exec, captured.graph, 0), "graph instantiate");
    replay_exec_ = exec;
    replay_key_ = key;
    replay_result_ = result;
    ++instantiations_;
  } else {
    ++replays_;
  }
  check_cuda(cudaGraphLaunch(as_exec(replay_exec_), stream), "graph launch");
  return copy_of(ctx, replay_result_);
}

Tensor StepGraph::run(Context& ctx, const std::function<Tensor()>& step) {
  const cudaStream_t stream = stream_of(ctx);
  Capture capture(stream);
  Tensor result = step();
  const GraphOwner captured{capture.finish()};
  nodes_ = node_count(captured.graph);

  bool updated = false;
  if (exec_) {
    cudaGraphExecUpdateResultInfo info{};
    const cudaError_t status = cudaGraphExecUpdate(as_exec(exec_), captured.graph, &info);
    updated = status == cudaSuccess;
    if (status == cudaErrorGraphExecUpdateFailure) {
      cudaGetLastError();  // a refused update is expected when the structure changed
      cudaGraphExecDestroy(as_exec(exec_));
      exec_ = nullptr;
    } else {
      check_cuda(status, "graph update");  // any other error is the device's, not the graph's
    }
  }
  if (updated) {
    ++updates_;
  } else {
    cudaGraphExec_t exec = nullptr;
    check_cuda(cudaGraphInstantiate(&exec, captured.graph, 0), "graph instantiate");
    exec_ = exec;
    ++instantiations_;
  }
  check_cuda(cudaGraphLaunch(as_exec(exec_), stream), "graph launch");
  return result;
}

}  // namespace attnscope::gpu
