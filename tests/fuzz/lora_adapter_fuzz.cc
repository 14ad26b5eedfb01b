// libFuzzer target: the LoRA adapter readers (src/nlp/lora/, NOTE [LoRA adapters]) and their
// matching to a model. An input starting with "GGUF" is a llama.cpp adapter file; any other is a
// PEFT adapter: a 4-byte little-endian length, that many bytes of adapter_config.json, then the
// bytes of adapter_model.safetensors (seeds: tests/fuzz/corpus/lora_adapter/, written by
// tools/make_lora_fixtures.py).
//
// Contract checked: any input either gives an adapter or throws spore::Error (never nlohmann's
// exceptions, a crash or a sanitizer report); a bound adapter's pairs are float32 A [rank, in]
// and B [out, rank] with the tiny llama model's widths and a finite scale, on layers it has.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "nlp/lora/lora_files.h"
#include "nlp/model_internal.h"
#include "spore/error.h"
#include "spore/format.h"
#include "spore/gguf.h"
#include "spore/nlp/lora.h"

namespace {
void require(bool ok) {
  if (!ok) __builtin_trap();
}

// tests/fixtures/llm/llama/hf/config.json's sizes (hidden 32, 4 heads of 8, 2 kv heads, ffn 64).
const spore::nlp::ModelConfig& model() {
  static const spore::nlp::ModelConfig c = spore::nlp::config_from_json(
      spore::nlp::parse_json_text(
          R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 256, "hidden_size": 32,
              "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
              "head_dim": 8, "max_position_embeddings": 64, "rms_norm_eps": 1e-5})",
          "fuzz-model"),
      "fuzz-model");
  return c;
}

void check(const spore::nlp::LoraAdapter& a) {
  using spore::nlp::LoraProjection;
  const auto& c = model();
  require(a.layers.size() == static_cast<size_t>(c.num_layers));
  for (const auto& layer : a.layers)
    for (size_t p = 0; p < layer.size(); ++p) {
      const spore::nlp::LoraPair& pair = layer[p];
      if (!pair.defined()) continue;
      require(pair.a.dtype() == spore::DType::kFloat32 && pair.b.dtype() == spore::DType::kFloat32);
      require(pair.a.ndim() == 2 && pair.b.ndim() == 2 && pair.a.size(0) == pair.b.size(1) && pair.a.size(0) > 0);
      const auto proj = static_cast<LoraProjection>(p);
      const int64_t in = proj == LoraProjection::kDown ? c.intermediate_size : c.hidden_size;
      require(pair.a.size(1) == in);
      require(std::isfinite(pair.scale));
    }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spore;
  const std::span<const uint8_t> bytes(data, size);
  try {
    if (size >= 4 && std::memcmp(data, "GGUF", 4) == 0) {
      const GgufFile g = GgufFile::from_bytes(bytes, "fuzz.gguf");
      const nlp::lora::RawAdapter raw = nlp::lora::read_gguf_adapter(g);
      for (bool gguf_base : {false, true}) check(nlp::lora::bind_adapter(raw, {}, model(), gguf_base));
      return 0;
    }
    uint32_t n = 0;
    if (size >= 4) std::memcpy(&n, data, 4);
    const size_t json_len = size >= 4 ? std::min<size_t>(n, size - 4) : size;
    const std::string text(reinterpret_cast<const char*>(data) + (size >= 4 ? 4 : 0), json_len);
    nlp::lora::PeftConfig cfg;
    try {
      cfg = nlp::lora::parse_peft_config(text, "fuzz/adapter_config.json");
      require(cfg.r > 0 && cfg.lora_alpha > 0);
    } catch (const Error&) {
      cfg = nlp::lora::PeftConfig{};
      cfg.r = 4;
      cfg.lora_alpha = 8;
    }
    if (size < 4) return 0;
    const SafeTensors st = load_safetensors_bytes(bytes.subspan(4 + json_len), "fuzz/adapter_model.safetensors");
    const nlp::lora::RawAdapter raw = nlp::lora::read_peft_tensors(cfg, st, "fuzz/adapter_model.safetensors");
    for (bool gguf_base : {false, true}) check(nlp::lora::bind_adapter(raw, cfg.target_modules, model(), gguf_base));
  } catch (const Error&) {
  }
  return 0;
}
