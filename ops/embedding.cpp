// ops::embedding: checks, then the cpu loop or the cuda kernel (ops/dispatch.h explains the
// pattern). Ids in host memory are range-checked here; ids on a GPU are checked by the kernel.
#include "ops/embedding.h"

#include <string>
#include <vector>

#include "ops/check.h"
#include "ops/dispatch.h"
#include "profiler/scope.h"

namespace attnscope::ops {

namespace {

// Checks shared by both overloads: out [rows, width] in an activation dtype; the token table
// [V, width] in that dtype too, or on the cpu in any weight dtype; the position table, when
// there is one, [P, width] in out's dtype on out's device.
void check_tables(Device device, const Tensor& token_table, const Tensor& position_table,
                  std::int64_t rows, const Tensor& out) {
  require_float(out, device, "embedding", "out");
  require_weight(token_table, device, out.dtype(), "embedding", "token_table");
  check(token_table.rank() == 2, "embedding", "token_table must be 2-D");
  require_shape(out, {rows, token_table.dim(1)}, "embedding", "out");
  if (!position_table.defined()) return;
  common_device("embedding", {{out, "out"}, {position_table, "position_table"}});
  require_dtype(position_table, out.dtype(), "embedding", "position_table");
  check(position_table.rank() == 2 && position_table.dim(1) == token_table.dim(1), "embedding",
        "position_table must be [positions, the token table's width]");
}

// The cost in embedding.h: a row of each table read per output row (a token row in the token
// table's dtype), out written, one add per element with learned positions.
void record_embedding_work(const profiler::Scope& scope, const Tensor& token_table,
                           const Tensor& position_table, const Tensor& out) {
  const double elements = static_cast<double>(out.numel());
  const double position_bytes = position_table.defined() ? static_cast<double>(out.nbytes()) : 0;
  scope.set_work(position_table.defined() ? elements : 0,
                 static_cast<double>(storage_bytes(token_table.dtype(), out.numel())) +
                     position_bytes + static_cast<double>(out.nbytes()));
}

// Range-checks host ids and positions, then runs the cpu loop.
void embedding_on_cpu(Context& ctx, const Tensor& token_table, const Tensor& position_table,
                      std::span<const std::int32_t> token_ids,
                      std::span<const std::int64_t> positions, Tensor& out) {
  const std::int64_t vocab = token_table.dim(0);
  const std::int64_t n_positions = position_table.defined() ? position_table.dim(0) : 0;
  for (std::size_t i = 0; i < token_ids.size(); ++i) {
    const std::int64_t id = token_ids[i];
    const std::int64_t pos = positions[i];
    check(0 <= id && id < vocab, "embedding", [&] {
      return "token id " + std::to_string(id) + " is outside the vocabulary [0, " +
             std::to_string(vocab) + ")";
    });
    check(!position_table.defined() || (0 <= pos && pos < n_positions), "embedding", [&] {
      return "position " + std::to_string(pos) + " is outside the context [0, " +
             std::to_string(n_positions) + ")";
    });
  }
  cpu::embedding(ctx, token_table, position_table, token_ids, positions, out);
}

}  // namespace

void embedding(Context& ctx, const Tensor& token_table, const Tensor& position_table,
               std::span<const std::int32_t> token_ids, std::span<const std::int64_t> positions,
               Tensor& out) {
  profiler::Scope scope(ctx, "embedding");
  const Device device = common_device("embedding", {{token_table, "token_table"}, {out, "out"}});
  check(device == Device::CPU, "embedding",
        "ids in host memory need cpu tables; on a GPU pass ids and positions as i32 tensors on "
        "the device");
  check(positions.size() == token_ids.size(), "embedding", "ids and positions differ in length");
  check_tables(device, token_table, position_table, static_cast<std::int64_t>(token_ids.size()),
               out);
  record_embedding_work(scope, token_table, position_table, out);
  embedding_on_cpu(ctx, token_table, position_table, token_ids, positions, out);
}

void embedding(Context& ctx, const Tensor& token_table, const Tensor& position_table,
               const Tensor& token_ids, const Tensor& positions, Tensor& out) {
  profiler::Scope scope(ctx, "embedding");
  const Device device = common_device("embedding", {{token_table, "token_table"},
                                                    {token_ids, "token_ids"},
                                                    {positions, "positions"},
                                                    {out, "out"}});
  require_dtype(token_ids, DType::I32, "embedding", "token_ids");
  require_dtype(positions, DType::I32, "embedding", "positions");
  check(token_ids.rank() == 1, "embedding", "token_ids must be 1-D");
  const std::int64_t rows = token_ids.dim(0);
  require_shape(positions, {rows}, "embedding", "positions");
  check_tables(device, token_table, position_table, rows, out);
  record_embedding_work(scope, token_table, position_table, out);
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) {
      cuda::embedding(ctx, token_table, position_table, token_ids, positions, out);
    }
    return;
  }
  const std::int32_t* ids = token_ids.data<std::int32_t>();
  const std::int32_t* pos = positions.data<std::int32_t>();
  const std::vector<std::int64_t> wide_positions(pos, pos + rows);
  embedding_on_cpu(ctx, token_table, position_table,
                   std::span<const std::int32_t>(ids, static_cast<std::size_t>(rows)),
                   wide_positions, out);
}

}  // namespace attnscope::ops
