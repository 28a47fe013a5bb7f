// `flash` on the cpu (cpu/flash.cpp), the bodies flash.cpp dispatches to after its checks:
// flash_plan is this device's half of the cost model (the path, the chunks and the temporaries
// its tiles take); the tiled step, or the two split-KV steps around the partials tensor that
// flash.cpp allocates (split_kv_partial_floats(shape, plan.chunks) floats, flash.h); and a paged
// call's plan and its one tiled step.
#pragma once

#include "ops/attention/flash.h"
#include "ops/attention/paged.h"

namespace attnscope::ops::attention::cpu {

FlashPlan flash_plan(const Context& ctx, const Shape& shape);
void flash_tiled(Context& ctx, const Call& call);
void flash_split_kv_partials(Context& ctx, const Call& call, const FlashPlan& plan,
                             Tensor& partials);
void flash_split_kv_combine(Context& ctx, const Call& call, const FlashPlan& plan,
                            const Tensor& partials);
// A paged call (paged.h): the tiled path, reading each key tile block by block.
FlashPlan flash_paged_plan(const Context& ctx, const RaggedShape& shape);
void flash_paged(Context& ctx, const PagedCall& call);

}  // namespace attnscope::ops::attention::cpu
