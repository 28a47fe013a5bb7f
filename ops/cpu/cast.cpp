// ops::cast on the cpu (arguments checked by ops/cast.cpp): the runtime's element conversion.
#include "ops/cast.h"

#include "runtime/dtype.h"

namespace attnscope::ops::cpu {

void cast(Context&, const Tensor& x, Tensor& out) {
  convert_elements(x.raw_data(), x.dtype(), out.raw_data(), out.dtype(),
                   static_cast<std::size_t>(x.numel()));
}

}  // namespace attnscope::ops::cpu
