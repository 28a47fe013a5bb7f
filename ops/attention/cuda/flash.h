// `flash` on a GPU, the bodies flash.cpp dispatches to after its checks: flash_plan
// (cuda/flash_split_kv.cu) is this device's half of the cost model (the path, the chunks and the
// partials it allocates, from the SM count); flash_tiled (cuda/flash_simt.cu) picks the
// tensor-core or the SIMT kernel; the two split-KV steps (cuda/flash_split_kv.cu) fill and
// combine the partials tensor that flash.cpp allocates (split_kv_partial_floats(shape,
// plan.chunks) floats, flash.h). Declared in every build, defined in a CUDA build only
// (ops/dispatch.h says why a CPU-only build never calls them).
#pragma once

#include "ops/attention/flash.h"
#include "ops/attention/paged.h"

namespace attnscope::ops::attention::cuda {

FlashPlan flash_plan(const Context& ctx, const Shape& shape);
void flash_tiled(Context& ctx, const Call& call);
void flash_split_kv_partials(Context& ctx, const Call& call, const FlashPlan& plan,
                             Tensor& partials);
void flash_split_kv_combine(Context& ctx, const Call& call, const FlashPlan& plan,
                            const Tensor& partials);
// A paged call (paged.h; cuda/flash_paged.cu): one kernel reading keys through the block tables.
FlashPlan flash_paged_plan(const Context& ctx, const RaggedShape& shape);
void flash_paged(Context& ctx, const PagedCall& call);

}  // namespace attnscope::ops::attention::cuda
