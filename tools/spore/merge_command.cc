// spore merge --model BASE --lora ADAPTER[:SCALE] ... --out PATH [--type T]: LoRA adapters baked
// into a new model (include/spore/nlp/lora_merge.h, NOTE [LoRA merge]). Progress on stderr when it
// is a terminal; a summary on stdout.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include "commands.h"
#include "spore/nlp/lora.h"
#include "spore/nlp/lora_merge.h"

namespace spore::cli {

namespace {

struct MergeArgs {
  std::string model, out, type = "same";
  std::vector<std::string> lora;
  bool quiet = false;
};

int run_merge(const MergeArgs& a) {
  std::vector<nlp::MergeAdapter> adapters;
  for (const std::string& arg : a.lora) {
    const auto [path, scale] = nlp::parse_lora_argument(arg);
    adapters.push_back({path, scale});
  }
  nlp::MergeOptions o;
  o.type = a.type;
  if (!a.quiet && ::isatty(2))  // a progress line rewritten in place: for a terminal only
    o.progress = [](size_t done, size_t total, const std::string& name) {
      std::fprintf(stderr, "\r  [%zu/%zu] %-40s", done, total, name.c_str());
      if (done == total) std::fprintf(stderr, "\n");
    };
  const auto t0 = std::chrono::steady_clock::now();
  const nlp::MergeReport r = nlp::merge_lora(a.model, adapters, a.out, o);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const std::string& n : r.notes) std::fprintf(stderr, "note: %s\n", n.c_str());
  std::printf("wrote %s (%s, %s): %lld of %lld tensors updated by %zu adapter%s (%lld pairs), type %s, %.1f MB in %.1f s\n",
              a.out.c_str(), r.family.c_str(), r.out_format == "gguf" ? "GGUF" : "Hugging Face folder",
              (long long)r.merged_tensors, (long long)r.tensors, adapters.size(), adapters.size() == 1 ? "" : "s",
              (long long)r.adapter_pairs, a.type.c_str(), (double)r.out_bytes / 1e6, s);
  return 0;
}

}  // namespace

void add_merge_command(CLI::App& app, Handlers& h) {
  auto* cmd = add_command(app, "merge", "Bake LoRA adapters into a new model (GGUF file or Hugging Face folder)",
                          "spore merge --model models/smollm2-135m-instruct --lora runs/lora1 --out smollm2-tuned.gguf "
                          "--type q8_0");
  auto a = std::make_shared<MergeArgs>();
  cmd->add_option("--model", a->model, "The base: a Hugging Face model folder or a .gguf file")->required();
  cmd->add_option("--lora", a->lora,
                  "An adapter, PATH or PATH:SCALE (a PEFT folder or a llama.cpp GGUF adapter); repeat for several")
      ->required();
  cmd->add_option("--out", a->out,
                  "The merged model: a .gguf file, or a new folder (Hugging Face layout; from a Hugging Face base)")
      ->required();
  cmd->add_option("--type", a->type,
                  "Weight type of the matrices: f32, f16, bf16, q8_0, q4_0, q4_k (GGUF only), or same (each tensor "
                  "keeps its type; a quantised one is requantised)")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0", "q4_0", "q4_k", "same"}))
      ->capture_default_str();
  cmd->add_flag("--quiet", a->quiet, "No progress lines");
  cmd->callback([&h, a] { h.action = [a] { return run_merge(*a); }; });
}

}  // namespace spore::cli
