// spore convert HF_DIR OUT.gguf --type TYPE: a Hugging Face model directory to GGUF
// (include/spore/nlp/convert.h). Progress on stderr; a summary on stdout.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>

#include "commands.h"
#include "spore/nlp/convert.h"

namespace spore::cli {

void add_convert_command(CLI::App& app, Handlers& h) {
  auto* cmd = add_command(app, "convert",
                          "Convert a Hugging Face model directory (llama, qwen2, qwen3, minicpm3, mistral, gemma, gemma2, gemma3, phi3, granite, olmo2) to a GGUF file, quantising on the way",
                          "spore convert models/Qwen2.5-0.5B qwen2.5-0.5b-q8_0.gguf --type q8_0");
  auto dir = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto opts = std::make_shared<nlp::ConvertOptions>();
  auto quiet = std::make_shared<bool>(false);
  cmd->add_option("HF_DIR", *dir, "Directory with config.json, *.safetensors and tokenizer.json")->required();
  cmd->add_option("OUT", *out, "The GGUF file to write (atomically)")->required();
  cmd->add_option("--type", opts->type, "Weight type of the matrices: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q4_k, q6_k, or q4_k_m (llama.cpp's mix: q6_k output, attn_v and ffn_down in some layers)")
      ->capture_default_str();
  cmd->add_option("--name", opts->name, "general.name (default: the directory's name)");
  cmd->add_flag("--quiet", *quiet, "No progress lines");
  cmd->callback([&h, dir, out, opts, quiet] {
    h.action = [dir, out, opts, quiet] {
      nlp::ConvertOptions o = *opts;
      if (!*quiet && ::isatty(2))  // a progress line rewritten in place: for a terminal only
        o.progress = [](size_t done, size_t total, const std::string& name) {
          std::fprintf(stderr, "\r  [%zu/%zu] %-40s", done, total, name.c_str());
          if (done == total) std::fprintf(stderr, "\n");
        };
      const auto t0 = std::chrono::steady_clock::now();
      const nlp::ConvertReport r = nlp::convert_hf_to_gguf(*dir, *out, o);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::map<std::string, int> by_type;
      for (const auto& t : r.tensors) {
        ++by_type[quant_traits(t.type).name];
        if (!t.fallback.empty()) std::fprintf(stderr, "note: %s: %s\n", t.name.c_str(), t.fallback.c_str());
      }
      std::string types;
      for (const auto& [name, n] : by_type) types += (types.empty() ? "" : ", ") + std::to_string(n) + " " + name;
      std::printf("wrote %s: %s, %.1fM parameters, %zu tensors (%s), vocab %zu, %zu merges, %.1f MB in %.1f s\n",
                  out->c_str(), r.architecture.c_str(), (double)r.parameters / 1e6, r.tensors.size(), types.c_str(),
                  r.vocab_size, r.merges, (double)r.file_bytes / 1e6, s);
      return 0;
    };
  });
}

}  // namespace spore::cli
