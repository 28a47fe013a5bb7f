// attnscope: a from-scratch GPT-2 inference runtime with swappable attention backends.
//
// Exit codes: 0 success, 1 a runtime error (bad file, bad input), 2 a usage error (unknown flag,
// bad value). Every error is one line on stderr: "attnscope: error: <what>".
#include <CLI/CLI.hpp>
#include <iostream>
#include <new>
#include <vector>

#include "runtime/cpu_features.h"
#include "runtime/error.h"
#include "tools/attnscope/cli/output_files.h"
#include "tools/attnscope/commands/commands.h"

int main(int argc, char** argv) {
  using namespace attnscope;
  CLI::App app{
      "attnscope: a teaching-grade inference runtime for GPT-2 and Llama-family models, with "
      "swappable attention backends.\n"
      "Run `attnscope COMMAND --help` for the flags of a command."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "attnscope 0.1.0");
  const std::vector<cli::Subcommand> subcommands = {
      cli::add_generate(app), cli::add_tokenize(app), cli::add_detokenize(app),
      cli::add_inspect(app),  cli::add_bench(app),    cli::add_bench_attention(app),
      cli::add_profile(app),  cli::add_compare(app),  cli::add_perplexity(app),
      cli::add_study(app)};

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "attnscope: error: " << e.what() << " (see --help)\n";
    return 2;
  }

  try {
    cpu_level();  // an unknown ATTNSCOPE_CPU_LEVEL fails here, before any work is done
    for (const cli::Subcommand& subcommand : subcommands) {
      if (!subcommand.app->parsed()) continue;
      const int exit_code = subcommand.run();
      cli::flush_standard_output();
      return exit_code;
    }
    return 2;
  } catch (const Error& e) {
    std::cerr << "attnscope: error: " << e.what() << "\n";
  } catch (const std::bad_alloc&) {
    std::cerr << "attnscope: error: out of memory\n";
  } catch (const std::exception& e) {
    std::cerr << "attnscope: error: " << e.what() << "\n";
  }
  return 1;
}
