// spore logits --model PATH --ids 1,2,3 [--lora PATH[:SCALE]]...: one forward pass, every
// position's float32 logits as a JSON array of arrays ([[l0_0, l0_1, ...], [l1_0, ...], ...]),
// floats printed round-trippably (%.9g). Tests and tools (tools/make_llm_fixtures.py checks,
// comparisons) rely on exactly this form; the memory figures go to stderr with --verbose so
// stdout stays the JSON.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "id_list.h"
#include "spore/error.h"
#include "spore/nlp/lora.h"
#include "spore/nlp/model.h"

namespace spore::cli {

namespace {

std::string mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

void add_logits_command(CLI::App& app, Handlers& h) {
  auto* cmd = add_command(app, "logits", "Print every position's logits for token ids (one forward pass, JSON)",
                          "spore logits --model tests/fixtures/llm/llama/hf --ids 1,2,3");
  auto model = std::make_shared<std::string>();
  auto ids = std::make_shared<std::string>();
  auto verbose = std::make_shared<bool>(false);
  auto unverified = std::make_shared<bool>(false);
  auto kv_cache = std::make_shared<std::string>("f32");
  auto numerics = std::make_shared<std::string>("auto");
  auto lora = std::make_shared<std::vector<std::string>>();
  cmd->add_option("--model", *model, "Model directory (config.json + safetensors) or .gguf file; default: the embedded SmolLM2");
  cmd->add_option("--ids", *ids, "Token ids, comma-separated")->required();
  cmd->add_flag("--verbose", *verbose, "Print load time and memory (mapped / resident weights, KV cache) to stderr");
  cmd->add_flag("--allow-unverified", *unverified, "Load even when the artifact does not match its lock");
  cmd->add_option("--kv-cache", *kv_cache, "KV cache dtype: f32 (default, for float32 references), f16 or bf16")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  cmd->add_option("--numerics", *numerics,
                  "auto (ggml for GGUF, reference for HF directories), reference (float32 as transformers) or ggml "
                  "(rounding as llama.cpp)")
      ->check(CLI::IsMember({"auto", "reference", "ggml"}));
  cmd->add_option("--lora", *lora, "A LoRA adapter, PATH or PATH:SCALE (GGUF or PEFT; NOTE [LoRA adapters]); repeatable");
  cmd->callback([&h, model, ids, verbose, unverified, kv_cache, numerics, lora] {
    h.action = [=] {
      const std::vector<int32_t> tokens = parse_id_list(*ids, "--ids");
      nlp::LoadOptions lo;
      lo.allow_unverified = *unverified;
      lo.numerics = nlp::parse_numerics(*numerics);
      const auto m = nlp::load_model(model->empty() ? nlp::default_model_path() : std::filesystem::path(*model), lo);
      const int64_t n = static_cast<int64_t>(tokens.size());
      // float32 cache by default: these logits are compared against float32 references
      // (llama.cpp's cache is float16: --kv-cache f16 for that comparison).
      const DType kv = *kv_cache == "f16" ? DType::kFloat16 : *kv_cache == "bf16" ? DType::kBFloat16 : DType::kFloat32;
      auto cache = m.lm->make_cache(1, std::min<int64_t>(n, m.lm->config().max_position_embeddings), kv);
      if (*verbose) {
        const auto w = m.lm->weight_memory();
        std::fprintf(stderr, "model     %s (%s, %s, %lld layers, vocab %lld)\nload      %.3f s\n",
                     m.path.c_str(), m.lm->config().family.c_str(), m.format.c_str(),
                     (long long)m.lm->config().num_layers, (long long)m.lm->config().vocab_size, m.load_seconds);
        std::fprintf(stderr, "weights   %s mapped, %s resident\nkv cache  %s (%s, %lld positions)\n",
                     mib(w.weights_mapped).c_str(), mib(w.weights_resident).c_str(), mib(cache->nbytes()).c_str(),
                     dtype_name(kv), (long long)cache->context());
        if (m.verification_overridden) std::fprintf(stderr, "lock      MISMATCH, loaded with --allow-unverified\n");
      }
      nlp::SequenceChunk c;
      c.slot = 0;
      c.position = 0;
      c.tokens = tokens;
      c.all_logits = true;
      std::vector<nlp::LoraUse> adapters;
      for (const std::string& arg : *lora) {
        const auto [path, scale] = nlp::parse_lora_argument(arg);
        adapters.push_back({nlp::load_lora(path, m), scale});
      }
      c.lora = adapters;
      const Tensor logits = m.lm->forward({&c, 1}, *cache);
      const std::vector<float> v = logits.to_vector<float>();
      const int64_t vocab = logits.size(1);
      std::string out = "[";
      char buf[32];
      for (int64_t i = 0; i < logits.size(0); ++i) {
        out += i ? ",\n[" : "[";
        for (int64_t j = 0; j < vocab; ++j) {
          std::snprintf(buf, sizeof buf, j ? ",%.9g" : "%.9g", static_cast<double>(v[static_cast<size_t>(i * vocab + j)]));
          out += buf;
        }
        out += "]";
      }
      out += "]\n";
      std::fwrite(out.data(), 1, out.size(), stdout);
      return 0;
    };
  });
}

}  // namespace spore::cli
