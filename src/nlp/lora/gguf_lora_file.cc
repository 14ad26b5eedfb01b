// llama.cpp's GGUF LoRA adapter (NOTE [LoRA adapters]), read with the facts of its writer
// (convert_lora_to_gguf.py: general.type "adapter", adapter.type "lora", adapter.lora.alpha,
// "<base tensor>.lora_a" ne [in, rank] and ".lora_b" ne [rank, out]) and its reader
// (src/llama-adapter.cpp: both halves required, no other tensors, scale alpha / rank or 1 when
// alpha is 0).
#include <cmath>
#include <vector>

#include "nlp/lora/lora_files.h"
#include "spore/error.h"
#include "spore/gguf.h"
#include "spore/ops.h"
#include "spore/quant.h"

namespace spore::nlp::lora {

namespace {

[[noreturn]] void fail(ErrorCode code, const std::string& source, const std::string& what) {
  throw Error(code, source + ": " + what);
}

// One adapter matrix as float32 [rows, cols] (ne[1], ne[0]), dequantized when stored in blocks.
Tensor matrix_f32(const GgufFile& g, const GgufTensorInfo& t) {
  if (t.dims.size() != 2)
    fail(ErrorCode::kShape, g.source(), "tensor \"" + t.name + "\" has " + std::to_string(t.dims.size()) +
                                            " dimensions; LoRA A and B are matrices");
  const int64_t cols = static_cast<int64_t>(t.dims[0]), rows = static_cast<int64_t>(t.dims[1]);
  const QuantTraits& q = quant_traits(t.type);
  if (!q.dequantize)
    fail(ErrorCode::kDType, g.source(), "tensor \"" + t.name + "\" is " + q.name + ", which has no float values");
  if (!q.quantized()) return cast(g.tensor(t.name), DType::kFloat32).contiguous();
  const std::span<const uint8_t> bytes = g.tensor_bytes(t.name);
  const size_t row_bytes = quant_row_bytes(t.type, cols);
  Tensor out = Tensor::empty(Shape{rows, cols}, DType::kFloat32, Device::cpu());
  for (int64_t r = 0; r < rows; ++r)
    dequantize_row(t.type, bytes.subspan(static_cast<size_t>(r) * row_bytes, row_bytes),
                   {out.data<float>() + r * cols, static_cast<size_t>(cols)});
  return out;
}

}  // namespace

RawAdapter read_gguf_adapter(const GgufFile& g) {
  const std::string& src = g.source();
  const GgufValue* type = g.find("general.type");
  if (!type || type->type != GgufType::kString || std::get<std::string>(type->value) != "adapter")
    fail(ErrorCode::kFormat, src, "general.type is not \"adapter\": this is not a LoRA adapter file (a model is "
                                  "loaded with --model; an adapter comes from llama.cpp's convert_lora_to_gguf.py)");
  if (g.get_string("adapter.type") != "lora")
    fail(ErrorCode::kUnsupported, src, "adapter.type is \"" + g.get_string("adapter.type") +
                                           "\"; only \"lora\" adapters are applied");
  if (g.contains("adapter.alora.invocation_tokens"))
    fail(ErrorCode::kUnsupported, src, "an activated LoRA (adapter.alora.invocation_tokens) applies only after its "
                                       "invocation tokens, which is not implemented");
  RawAdapter raw;
  raw.format = "gguf";
  raw.source = src;
  raw.arch = g.get_string("general.architecture");
  raw.alpha = g.get_float("adapter.lora.alpha");
  if (!(raw.alpha >= 0) || !std::isfinite(raw.alpha))
    fail(ErrorCode::kFormat, src, "adapter.lora.alpha is " + std::to_string(raw.alpha) + "; it must be a finite number >= 0");
  for (const GgufTensorInfo& t : g.tensors()) {
    const bool is_a = t.name.ends_with(".lora_a"), is_b = t.name.ends_with(".lora_b");
    if (!is_a && !is_b)
      fail(ErrorCode::kFormat, src, "tensor \"" + t.name + "\" is neither a .lora_a nor a .lora_b half");
    RawPair& p = raw.pairs[t.name.substr(0, t.name.size() - 7)];
    (is_a ? p.a_name : p.b_name) = t.name;
    (is_a ? p.a : p.b) = matrix_f32(g, t);
  }
  for (auto& [base, p] : raw.pairs) {
    if (!p.a.defined() || !p.b.defined())
      fail(ErrorCode::kFormat, src, "tensor \"" + (p.a.defined() ? p.a_name : p.b_name) + "\" has no " +
                                        (p.a.defined() ? ".lora_b" : ".lora_a") + " partner");
    const int64_t rank = p.a.size(0);
    if (rank <= 0 || p.b.size(1) != rank)
      fail(ErrorCode::kShape, src, "\"" + p.a_name + "\" has rank " + std::to_string(rank) + " but \"" + p.b_name +
                                       "\" has " + std::to_string(p.b.size(1)) + " (is lora_a transposed?)");
    p.scale = raw.alpha != 0 ? raw.alpha / static_cast<double>(rank) : 1.0;
  }
  if (raw.pairs.empty()) fail(ErrorCode::kFormat, src, "holds no LoRA tensors");
  return raw;
}

}  // namespace spore::nlp::lora
