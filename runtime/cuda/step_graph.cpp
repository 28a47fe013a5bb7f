#include "runtime/cuda/step_graph.h"

#include <cuda_runtime.h>

#include "runtime/cuda/cuda_context.h"

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

}  // namespace

StepGraph::~StepGraph() {
  if (exec_) cudaGraphExecDestroy(as_exec(exec_));
}

Tensor StepGraph::run(Context& ctx, const std::function<Tensor()>& step) {
  const cudaStream_t stream = stream_of(ctx);
  Capture capture(stream);
  Tensor result = step();
  const GraphOwner captured{capture.finish()};

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
