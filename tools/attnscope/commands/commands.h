// The subcommands of the `attnscope` command line. Each adds itself and its flags to the CLI11
// app and returns the function that runs it once the flags are parsed.
#pragma once

#include <functional>

#include "tools/attnscope/cli/cli11_fwd.h"

namespace attnscope::cli {

struct Subcommand {
  CLI::App* app = nullptr;
  std::function<int()> run;  // returns the exit code
};

Subcommand add_generate(CLI::App& app);
Subcommand add_tokenize(CLI::App& app);
Subcommand add_detokenize(CLI::App& app);
Subcommand add_inspect(CLI::App& app);
Subcommand add_bench(CLI::App& app);
Subcommand add_bench_attention(CLI::App& app);
Subcommand add_profile(CLI::App& app);
Subcommand add_explain(CLI::App& app);
Subcommand add_compare(CLI::App& app);
Subcommand add_diverge(CLI::App& app);
Subcommand add_perplexity(CLI::App& app);
Subcommand add_study(CLI::App& app);
Subcommand add_serve(CLI::App& app);

}  // namespace attnscope::cli
