// `attnscope serve` in a build without cpp-httplib (a dependency folder, as on the lent GPU
// machine; cmake/dependencies.cmake): the command exists and says why it cannot run.
#include <CLI/CLI.hpp>

#include "runtime/error.h"
#include "tools/attnscope/commands/commands.h"

namespace attnscope::cli {

Subcommand add_serve(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("serve", "Serve the model over HTTP (not in this build)");
  sub->allow_extras();
  return {sub, []() -> int {
            throw Error("serve",
                        "this build has no HTTP server: cpp-httplib (Debian's "
                        "libcpp-httplib-dev) was not found when it was configured");
          }};
}

}  // namespace attnscope::cli
