// The one exception type of attnscope.
//
// Every failure caused by input (a file, a flag, a shape) is thrown as an Error whose message
// says what failed and where: "model.safetensors: tensor 'h.0.attn.c_attn.weight': expected
// shape [768, 2304], found [768, 768]". The command line catches it and prints that single line.
#pragma once

#include <concepts>
#include <stdexcept>
#include <string>
#include <string_view>

namespace attnscope {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
  Error(std::string_view where, std::string_view what)
      : std::runtime_error(std::string(where) + ": " + std::string(what)) {}
};

// A failure the GPU reported (a CUDA or cuBLAS status), not one of the input: a kernel fault, a
// refused launch. Callers that turn an Error into "this backend cannot run this case" rethrow
// it: the device may be unusable from then on, and a fault must fail the run.
class DeviceError : public Error {
 public:
  using Error::Error;
};

// Throws Error(where, what) when `ok` is false. A real check: it is never compiled out.
inline void check(bool ok, std::string_view where, std::string_view what) {
  if (!ok) throw Error(where, what);
}

// The same with a message that takes work to build (numbers, shapes): `what` is a callable that
// returns it, called only on failure, so the success path of an op builds no string:
//   check(n <= capacity, "kv cache", [&] { return "cannot hold " + std::to_string(n); });
template <std::invocable Message>
void check(bool ok, std::string_view where, Message&& what) {
  if (!ok) throw Error(where, what());
}

}  // namespace attnscope
