// spore: the command-line program. Thin subcommands over the libraries:
//   spore env                          the environment report (outputs/env-report.json)
//   spore probe list | run | ops       the evidence harness (issue 4)
//   spore samples list | run-all       the chapter's sample suite, each sample in its own process
//   spore report show [--values] | diff | validate
//   spore verify PATH                  an artifact against its lock
//   spore ir info | convert            model IR files
//   spore lite run FILE --input NAME=FILE.npy --output DIR   a model in the Lite runtime
//   spore template PATH --messages FILE.json   a chat template rendered as transformers does
//   spore tokenize | detokenize        tokenizers (tokenizer.json, model directory, GGUF)
//   spore generate | chat              text generation from a language model (default: SmolLM2)
//   spore finetune --model M --data D  a LoRA adapter trained on JSONL data
//   spore merge --model M --lora A --out O   LoRA adapters baked into a new GGUF or Hugging Face model
//   spore serve | gate                 the OpenAI-compatible server, and the machine gate that checks one
//   spore launch -n N -- PROGRAM ARGS  PROGRAM on N MPI processes (data-parallel training)
//   spore --version                    version, git commit and build type
// A probe child is this same binary re-executed as `spore __probe-child NAME ...` (hidden).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "commands.h"
#include "passive_openmp.h"
#include "spore/error.h"
#include "spore/probe.h"

int main(int argc, char** argv) {
  using namespace spore::probe;
  spore::cli::reexec_with_passive_openmp(argv);  // NOTE [Passive OpenMP in the CLI]
  // The child side first: before anything else in this process could touch a device.
  if (argc >= 2 && std::strcmp(argv[1], kChildCommand) == 0) {
    register_op_probes();
    return child_main_from_args(argc - 2, argv + 2);
  }
  std::vector<std::string> command(argv, argv + argc);

  CLI::App app{"spore: the Spore framework's command-line tool", "spore"};
  app.require_subcommand(1);
  app.footer("Example: spore samples run-all    (then `spore <command> --help` for each command)");
  app.set_version_flag("--version", spore::cli::version_text(), "Print version, git commit and build type, then exit");
  spore::cli::Handlers handlers;
  spore::cli::add_env_command(app, handlers, command);
  spore::cli::add_probe_commands(app, handlers, command);
  spore::cli::add_sample_commands(app, handlers, command);
  spore::cli::add_report_commands(app, handlers, command);
  spore::cli::add_verify_command(app, handlers);
  spore::cli::add_pull_command(app, handlers);
  spore::cli::add_convert_command(app, handlers);
  spore::cli::add_ir_commands(app, handlers);
  spore::cli::add_lite_commands(app, handlers);
  spore::cli::add_template_command(app, handlers, command);
  spore::cli::add_tokenize_commands(app, handlers, command);
  spore::cli::add_generate_commands(app, handlers);
  spore::cli::add_logits_command(app, handlers);
  spore::cli::add_perplexity_command(app, handlers);
  spore::cli::add_finetune_command(app, handlers);
  spore::cli::add_merge_command(app, handlers);
  spore::cli::add_embed_command(app, handlers);
  spore::cli::add_bench_llm_command(app, handlers);
  spore::cli::add_serve_command(app, handlers);
  spore::cli::add_gate_command(app, handlers, command);
  spore::cli::add_launch_command(app, handlers);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return spore::cli::explain_usage_error(app, e, argc, argv);  // usage error: 2
  }
  try {
    return handlers.run();
  } catch (const spore::Error& e) {
    std::fprintf(stderr, "spore: %s\n", e.what());
    return e.code() == spore::ErrorCode::kValue ? 2 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spore: %s\n", e.what());
    return 1;
  }
}
