// LoRA / QLoRA fine-tuning of the engine's language models (issue 30, NOTE [LoRA training] in
// docs/design.md): a training forward over a loaded model's frozen base (float, F16/BF16 or
// quantised GGUF blocks through matmul_q) with low-rank adapters on chosen projections, the
// JSONL data it trains on, the loop (AdamW, warm-up + cosine, accumulation, evaluation, atomic
// checkpoints that resume), and the adapter writers (PEFT safetensors, llama.cpp GGUF LoRA).
//
//   spore::nlp::LoraConfig cfg;  cfg.rank = 8;  cfg.alpha = 16;
//   auto model = spore::nlp::LoraModel::load("models/smollm2-135m-instruct", cfg);
//   spore::Tensor loss = model->loss(example);          // differentiable in model->parameters()
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spore/nlp/model.h"
#include "spore/parameter.h"
#include "spore/tensor.h"

namespace spore::nlp {

// ---- adapters ----------------------------------------------------------------------------------
// PEFT's names of the projections an adapter may sit on.
inline const std::vector<std::string> kLoraTargetNames = {"q_proj", "k_proj", "v_proj", "o_proj",
                                                          "gate_proj", "up_proj", "down_proj"};

struct LoraConfig {
  int64_t rank = 8;
  double alpha = 16;    // the update is (alpha / rank) * B A x
  double dropout = 0;   // on the adapter's input, as PEFT's lora_dropout
  std::vector<std::string> targets = kLoraTargetNames;
  uint64_t seed = 0;    // A's Kaiming-uniform initialisation and dropout masks
  // bfloat16 mixed precision (NOTE [bf16 LoRA training]): the layers' float32 projections are
  // held as bfloat16 and every projection and adapter product runs in bfloat16 (x, A and B cast
  // per use); the adapters stay float32 masters, as do their gradients, AdamW, the norms,
  // attention, the residual stream and the head.
  bool bf16 = false;
  double scaling() const { return alpha / static_cast<double>(rank); }
};

// "q_proj,v_proj" -> {"q_proj", "v_proj"}; "all" -> every target; kValue naming an unknown one.
std::vector<std::string> parse_lora_targets(const std::string& text);

// One adapter being trained (the inference side loads files as nlp::LoraAdapter, spore/nlp/lora.h):
// A [rank, in] (Kaiming-uniform, bound 1/sqrt(in), as PEFT), B [out, rank] (zeros).
struct TrainableLora {
  int64_t layer = 0;
  std::string target;  // "q_proj", ...
  Parameter a, b;
};

// ---- the training model (NOTE [LoRA training]) -------------------------------------------------
// One training example: token ids and, per position, whether the token is a target of the loss
// (the token predicted from the position before it; position 0 is never one).
struct TrainExample {
  std::vector<int32_t> ids;
  std::vector<uint8_t> target;  // same length as ids
  int64_t source_line = 0;      // the JSONL line it came from (0: none), for messages
};

class LoraModel {
 public:
  // The model at `path` (a Hugging Face directory or a GGUF file), its weights frozen in the type
  // they are stored in, with adapters on `config.targets` of every layer. kUnsupported naming the
  // family's block for compositions the training forward has no rule for (latent attention,
  // fused projections, mixtures of experts).
  static std::unique_ptr<LoraModel> load(const std::filesystem::path& path, const LoraConfig& config);
  ~LoraModel();

  const ModelConfig& model_config() const;
  const LoraConfig& lora_config() const { return lora_; }
  bool gguf_layout() const;                // the base's q/k rows are llama.cpp's permuted order
  const std::vector<TrainableLora>& adapters() const { return adapters_; }
  std::vector<Parameter> parameters() const;  // a0, b0, a1, b1, ... in adapters() order

  // Sum of the target tokens' negative log-likelihoods (float32 scalar), differentiable in
  // parameters(). `dropout_key` picks the dropout masks (the same key, the same masks); 0 is
  // evaluation, without dropout.
  Tensor nll_sum(const TrainExample& ex, uint64_t dropout_key = 0) const;
  // The same summed over several examples run as one packed forward (NOTE [Packed training
  // batches]): their rows go through every projection together, attention stays within each
  // example, so the result equals the sum of nll_sum over them (to float32 rounding).
  Tensor batch_nll_sum(const std::vector<TrainExample>& batch, uint64_t dropout_key = 0) const;
  // Logits [S, vocab] of the ids at positions 0.. (no dropout).
  Tensor logits(const std::vector<int32_t>& ids) const;
  // The gradients of nll_sum(ex) * scale for every parameter, by per-layer gradient
  // checkpointing: the forward keeps only each layer's input, and backward runs layer by layer,
  // recomputing that layer's activations under a tape. Returns nll_sum (unscaled).
  double nll_sum_and_grads_checkpointed(const TrainExample& ex, double scale, uint64_t dropout_key,
                                        std::vector<Tensor>& grads) const;
  // The same for a packed batch (batch_nll_sum's forward).
  double batch_nll_sum_and_grads_checkpointed(const std::vector<TrainExample>& batch, double scale,
                                              uint64_t dropout_key, std::vector<Tensor>& grads) const;

  // The adapter's PEFT name prefix: "base_model.model.model.layers.3.self_attn.q_proj".
  static std::string peft_module(int64_t layer, const std::string& target);

  struct Impl;

 private:
  LoraModel() = default;
  std::unique_ptr<Impl> impl_;
  LoraConfig lora_;
  std::vector<TrainableLora> adapters_;
};

// ---- adapter files -----------------------------------------------------------------------------
// adapter_config.json + adapter_model.safetensors under `dir` (created), PEFT's key names and
// orientation (lora_A.weight [r, in], lora_B.weight [out, r], float32), written atomically;
// q/k B rows of a GGUF llama base are put back into Hugging Face's order.
void write_peft_adapter(const LoraModel& model, const std::filesystem::path& dir,
                        const std::string& base_model_name);
// A llama.cpp LoRA adapter: general.type = adapter, adapter.type = lora, adapter.lora.alpha, and
// per projection `<gguf tensor>.lora_a` (ne {in, r}) / `.lora_b` (ne {r, out}), float32, with
// llama's q/k B rows permuted as llama.cpp's converter permutes them. kUnsupported for a family
// spore convert does not write.
void write_gguf_adapter(const LoraModel& model, const std::filesystem::path& path);

// ---- data (NOTE [Fine-tuning data]) ------------------------------------------------------------
struct DataOptions {
  int64_t max_tokens = 0;       // longer examples: truncated (or skipped, below); 0: no limit
  bool skip_long = false;
};
struct DataReport {
  int64_t records = 0, examples = 0, truncated = 0, skipped_long = 0, target_tokens = 0, tokens = 0;
};
// One parsed JSONL record: {"messages": [{"role", "content"}, ...]} or {"prompt", "completion"}.
struct DataRecord {
  int64_t line = 0;
  std::string messages_json;      // the array as JSON text, or empty
  std::string prompt, completion;
};
// The records of a JSONL text. kFormat naming `source`, the line and what is wrong: invalid
// UTF-8 (with the byte offset), a line that is not a JSON object, neither form, a message without
// a string role / content, a conversation without an assistant turn. Blank lines are skipped.
std::vector<DataRecord> parse_jsonl(std::string_view text, const std::string& source);

// Tokenised examples with their loss masks: chat records through the model's chat template (loss
// on the assistant turns' tokens), prompt/completion through the tokenizer (loss on the
// completion and the end-of-sequence token).
std::vector<TrainExample> tokenize_records(const std::vector<DataRecord>& records, const Tokenizer& tokenizer,
                                           const ChatTemplate* chat_template, const DataOptions& options,
                                           const std::string& source, DataReport& report);

// ---- the loop ----------------------------------------------------------------------------------
struct FinetuneOptions {
  int64_t epochs = 1;
  double lr = 2e-4, weight_decay = 0.0, warmup_ratio = 0.03, min_lr = 0, max_grad_norm = 1.0;
  int64_t batch_tokens = 2048;  // target tokens' sequences packed into one micro-batch up to this many tokens
  int64_t grad_accum = 1;       // micro-batches per optimizer step
  double eval_split = 0;        // fraction of the examples held out for the evaluation loss
  int64_t eval_every = 0;       // steps between evaluations (0: at each epoch's end)
  int64_t save_every = 0;       // steps between checkpoints (0: at each epoch's end)
  bool gradient_checkpointing = false;
  uint64_t seed = 0;
  std::filesystem::path out;     // adapter files, loss curve, checkpoint
  bool resume = false;
  std::string base_name;        // recorded in the adapter config and checkpoint
  int64_t max_steps = 0;        // stop after this many optimizer steps (0: the epochs decide)
  int64_t stop_after = 0;       // end this call after this many steps, checkpoint saved, as an interruption would (tests)
};
struct FinetuneResult {
  int64_t steps = 0, train_examples = 0, eval_examples = 0;
  double final_loss = 0, eval_loss = -1;
  int64_t resumed_from = 0;
};
// Trains `model`'s adapters on `examples`; prints progress on `log`. Writes under options.out:
// checkpoint.safetensors (atomic), loss.csv, loss.svg, adapter_config.json,
// adapter_model.safetensors and adapter.gguf (when the family has a GGUF form).
FinetuneResult finetune(LoraModel& model, std::vector<TrainExample> examples, const FinetuneOptions& options,
                        std::FILE* log);

}  // namespace spore::nlp
