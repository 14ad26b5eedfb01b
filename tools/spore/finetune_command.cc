// spore finetune --model PATH --data FILE.jsonl --out DIR: LoRA / QLoRA training of a model the
// engine loads (NOTE [LoRA training], NOTE [Fine-tuning data]). Prints what it read (records,
// examples, truncated or skipped ones), a progress line per step (loss, tokens/s, ETA), and
// writes the adapter as PEFT safetensors and as a llama.cpp GGUF LoRA, with the loss curve.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "commands.h"
#include "spore/context.h"
#include "spore/error.h"
#include "spore/nlp/finetune.h"
#include "spore/nlp/model.h"

namespace spore::cli {

namespace {

struct FinetuneArgs {
  std::string model, data, out, targets = "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj";
  int64_t rank = 8, epochs = 1, batch_tokens = 2048, grad_accum = 1, max_tokens = 0, eval_every = 0, save_every = 0,
          max_steps = 0;
  double alpha = 0, dropout = 0.05, lr = 2e-4, weight_decay = 0, warmup = 0.03, eval_split = 0, max_grad_norm = 1.0;
  uint64_t seed = 0;
  int threads = 0;
  bool resume = false, skip_long = false, grad_checkpoint = false, allow_unverified = false, bf16 = false;
};

std::string read_data(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(ErrorCode::kIO, "finetune: cannot read --data '" + path + "': " +
                                    (std::filesystem::exists(path) ? "permission denied or not a file" : "no such file"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int run_finetune(const FinetuneArgs& a) {
  set_num_threads(a.threads);
  const std::vector<std::string> targets = nlp::parse_lora_targets(a.targets);
  const std::string text = read_data(a.data);
  const std::vector<nlp::DataRecord> records = nlp::parse_jsonl(text, a.data);
  const std::filesystem::path model_path = a.model.empty() ? nlp::default_model_path() : std::filesystem::path(a.model);
  nlp::LoadOptions lo;
  lo.allow_unverified = a.allow_unverified;
  lo.require_tokenizer = true;
  const nlp::LoadedModel loaded = nlp::load_model(model_path, lo);
  nlp::LoraConfig lc;
  lc.rank = a.rank;
  lc.alpha = a.alpha > 0 ? a.alpha : 2.0 * static_cast<double>(a.rank);
  lc.dropout = a.dropout;
  lc.targets = targets;
  lc.seed = a.seed;
  lc.bf16 = a.bf16;
  auto model = nlp::LoraModel::load(model_path, lc);
  nlp::DataOptions dopt;
  dopt.max_tokens = a.max_tokens > 0 ? a.max_tokens : model->model_config().max_position_embeddings;
  dopt.skip_long = a.skip_long;
  nlp::DataReport rep;
  std::vector<nlp::TrainExample> examples = nlp::tokenize_records(
      records, *loaded.tokenizer, loaded.chat_template ? &*loaded.chat_template : nullptr, dopt, a.data, rep);
  std::printf("finetune %s (%s, %s) on %s\n", model_path.string().c_str(), model->model_config().family.c_str(),
              loaded.format.c_str(), a.data.c_str());
  std::printf("%lld records -> %lld examples, %lld tokens (%lld targets); %lld truncated, %lld skipped as longer than %lld tokens\n",
              (long long)rep.records, (long long)rep.examples, (long long)rep.tokens, (long long)rep.target_tokens,
              (long long)rep.truncated, (long long)rep.skipped_long, (long long)dopt.max_tokens);
  std::printf("LoRA rank %lld, alpha %g, dropout %g on %s: %zu adapters\n", (long long)lc.rank, lc.alpha, lc.dropout,
              a.targets.c_str(), model->adapters().size());
  std::fflush(stdout);
  if (examples.empty())
    throw Error(ErrorCode::kValue, "finetune: no example of " + a.data + " fits " + std::to_string(dopt.max_tokens) +
                                       " tokens; raise --max-tokens or drop --skip-long");
  nlp::FinetuneOptions o;
  o.epochs = a.epochs;
  o.lr = a.lr;
  o.weight_decay = a.weight_decay;
  o.warmup_ratio = a.warmup;
  o.max_grad_norm = a.max_grad_norm;
  o.batch_tokens = a.batch_tokens;
  o.grad_accum = a.grad_accum;
  o.eval_split = a.eval_split;
  o.eval_every = a.eval_every;
  o.save_every = a.save_every;
  o.gradient_checkpointing = a.grad_checkpoint;
  o.seed = a.seed;
  o.out = a.out;
  o.resume = a.resume;
  o.max_steps = a.max_steps;
  o.base_name = std::filesystem::absolute(model_path).lexically_normal().string();
  const nlp::FinetuneResult r = nlp::finetune(*model, std::move(examples), o, stdout);
  std::printf("done: %lld steps, final loss %.4f", (long long)r.steps, r.final_loss);
  if (r.eval_loss >= 0) std::printf(", eval loss %.4f on %lld held-out examples", r.eval_loss, (long long)r.eval_examples);
  std::printf("\nwrote %s/{adapter_config.json, adapter_model.safetensors, adapter.gguf, loss.csv, loss.svg, checkpoint.safetensors}\n",
              a.out.c_str());
  return 0;
}

}  // namespace

void add_finetune_command(CLI::App& app, Handlers& h) {
  auto* cmd = add_command(app, "finetune", "Train a LoRA adapter for a language model on JSONL data (CPU)",
                          "spore finetune --model models/smollm2-135m-instruct --data chats.jsonl --lora-rank 8 "
                          "--epochs 2 --lr 2e-4 --batch-tokens 2048 --out runs/lora1");
  auto a = std::make_shared<FinetuneArgs>();
  cmd->add_option("--model", a->model, "Model directory or .gguf file (a quantised GGUF trains QLoRA-style); default: the embedded SmolLM2");
  cmd->add_option("--data", a->data, "JSONL: {\"messages\": [...]} (loss on assistant turns) or {\"prompt\", \"completion\"} per line")->required();
  cmd->add_option("--out", a->out, "Folder for the adapter, the loss curve and the checkpoint")->required();
  cmd->add_option("--lora-rank", a->rank, "Adapter rank r")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--lora-alpha", a->alpha, "Adapter alpha (the update is alpha/r * B A x); default 2 r")->check(CLI::PositiveNumber);
  cmd->add_option("--lora-dropout", a->dropout, "Dropout on the adapters' input")->capture_default_str()->check(CLI::Range(0.0, 0.99));
  cmd->add_option("--lora-targets", a->targets, "Comma-separated projections, or all")->capture_default_str();
  cmd->add_option("--epochs", a->epochs, "Passes over the training examples")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--lr", a->lr, "Peak learning rate (AdamW, linear warm-up then cosine decay)")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--weight-decay", a->weight_decay, "AdamW's decoupled weight decay")->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--warmup", a->warmup, "Fraction of the steps spent warming up")->capture_default_str()->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--max-grad-norm", a->max_grad_norm, "Clip the gradients' global norm (0: off)")->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--batch-tokens", a->batch_tokens, "Tokens per micro-batch (whole examples packed up to this)")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--grad-accum", a->grad_accum, "Micro-batches per optimizer step")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--max-tokens", a->max_tokens, "Longest example in tokens (default: the model's context); longer ones are truncated")->check(CLI::PositiveNumber);
  cmd->add_flag("--skip-long", a->skip_long, "Skip examples longer than --max-tokens instead of truncating them");
  cmd->add_option("--eval-split", a->eval_split, "Fraction of the examples held out for the evaluation loss")->capture_default_str()->check(CLI::Range(0.0, 0.9));
  cmd->add_option("--eval-every", a->eval_every, "Steps between evaluations (default: each epoch's end)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--save-every", a->save_every, "Steps between checkpoints (default: each epoch's end)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-steps", a->max_steps, "Stop after this many optimizer steps")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--gradient-checkpointing", a->grad_checkpoint, "Keep only each layer's input; recompute the layer in backward");
  cmd->add_flag("--bf16", a->bf16, "Mixed precision: projections and adapter products in bfloat16, float32 master adapters");
  cmd->add_flag("--resume", a->resume, "Continue from --out's checkpoint (same model, data and options)");
  cmd->add_option("--seed", a->seed, "Seed for the adapters' initialisation, shuffling, split and dropout")->capture_default_str();
  cmd->add_option("--threads", a->threads, "Threads for the kernels (0: one per core)")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--allow-unverified", a->allow_unverified, "Load even when the artifact does not match its lock");
  cmd->callback([&h, a] { h.action = [a] { return run_finetune(*a); }; });
}

}  // namespace spore::cli
