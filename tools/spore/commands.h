// The subcommands of the spore CLI, one file per group.
#pragma once
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "usage.h"

namespace spore::cli {

// The action of the subcommand that was chosen; runs after parsing.
struct Handlers {
  std::function<int()> action;
  int run() const { return action ? action() : 2; }
};

// `--no-repack` on every command that loads a GGUF (one wording; the rule is nlp::repacked_at_load).
inline constexpr const char* kNoRepackHelp =
    "Keep every weight in the file mapping: no 8-row groups repacked at load (q4_0 under the ggml numerics, q4_0 and "
    "q5_0 under the reference ones; NOTE [Repacked weights]): less memory, slower prefill";

void add_env_command(CLI::App& app, Handlers& h, const std::vector<std::string>& command);
void add_probe_commands(CLI::App& app, Handlers& h, const std::vector<std::string>& command);
void add_sample_commands(CLI::App& app, Handlers& h, const std::vector<std::string>& command);
void add_report_commands(CLI::App& app, Handlers& h, const std::vector<std::string>& command);
void add_verify_command(CLI::App& app, Handlers& h);
void add_pull_command(CLI::App& app, Handlers& h);
void add_convert_command(CLI::App& app, Handlers& h);
void add_ir_commands(CLI::App& app, Handlers& h);
void add_lite_commands(CLI::App& app, Handlers& h);
void add_template_command(CLI::App& app, Handlers& h, const std::vector<std::string>& command);
void add_tokenize_commands(CLI::App& app, Handlers& h, const std::vector<std::string>& command);
void add_generate_commands(CLI::App& app, Handlers& h);
void add_logits_command(CLI::App& app, Handlers& h);
void add_perplexity_command(CLI::App& app, Handlers& h);  // NOTE [Perplexity]
void add_finetune_command(CLI::App& app, Handlers& h);    // NOTE [LoRA training]
void add_merge_command(CLI::App& app, Handlers& h);       // NOTE [LoRA merge]
void add_bench_llm_command(CLI::App& app, Handlers& h);
void add_embed_command(CLI::App& app, Handlers& h);  // NOTE [Embeddings]
void add_serve_command(CLI::App& app, Handlers& h);
void add_gate_command(CLI::App& app, Handlers& h, const std::vector<std::string>& command);
void add_launch_command(CLI::App& app, Handlers& h);  // spore launch (NOTE [Distributed training])

}  // namespace spore::cli
