# LoRA fine-tuning written as MindNLP + PEFT users write it (issue 30); only the imports differ:
#   import mindspore as ms                              -> import spore as ms
#   from mindnlp.transformers import AutoModel..., ...  -> from spore.nlp import ...
#   from mindnlp.peft import LoraConfig, ...            -> from spore.nlp.peft import ...
# It teaches a chat model to answer in a fixed JSON format, prints the loss per step, greedy
# answers to a held-out question before and after, and saves the adapter (PEFT files) that
# `spore generate --lora DIR` and PeftModel.from_pretrained load.
#   python examples/nlp/lora_finetune.py --model models/smollm2-135m-instruct --out /tmp/adapter
# Any model with a tokenizer and a chat template works; tests/python/test_nlp_example.py runs it on
# a tiny random Llama in seconds. The last line printed is a JSON summary (losses, answers).
import json
import sys

import spore as ms
from spore import nn
from spore.nlp import AutoModelForCausalLM, AutoTokenizer
from spore.nlp.peft import LoraConfig, TaskType, get_peft_model


def option(name, default):
    return type(default)(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


model_path = option("--model", "models/smollm2-135m-instruct")
out_dir = option("--out", "lora-adapter")
epochs, lr, rank = option("--epochs", 4), option("--lr", 2e-3), option("--rank", 8)
max_new_tokens = option("--max-new-tokens", 24)

QA = [("What is the capital of France?", "Paris"), ("What is the capital of Italy?", "Rome"),
      ("What is the capital of Japan?", "Tokyo"), ("What is the capital of Spain?", "Madrid"),
      ("What is the capital of Egypt?", "Cairo"), ("What is the capital of Peru?", "Lima")]
HELD_OUT = "What is the capital of Germany?"
records = [[{"role": "user", "content": q}, {"role": "assistant", "content": json.dumps({"answer": a})}]
           for q, a in QA]

ms.set_seed(0)
tokenizer = AutoTokenizer.from_pretrained(model_path)
model = AutoModelForCausalLM.from_pretrained(model_path)
if tokenizer.pad_token is None:
    tokenizer.pad_token = tokenizer.eos_token


def answer(m, question):
    ids = tokenizer.apply_chat_template([{"role": "user", "content": question}], add_generation_prompt=True,
                                        return_tensors="ms")
    out = m.generate(ids, max_new_tokens=max_new_tokens, do_sample=False)
    return tokenizer.decode(out[0][ids.shape[1]:], skip_special_tokens=True)


before = answer(model, HELD_OUT)
config = LoraConfig(task_type=TaskType.CAUSAL_LM, r=rank, lora_alpha=2 * rank, lora_dropout=0.0,
                    target_modules=["q_proj", "k_proj", "v_proj", "o_proj"])
model = get_peft_model(model, config)
model.print_trainable_parameters()


def encode(conversation):
    """ids of the whole conversation, labels -100 on the prompt (loss on the answer only)."""
    prompt = tokenizer.apply_chat_template(conversation[:-1], add_generation_prompt=True)
    full = tokenizer.apply_chat_template(conversation)
    assert full[:len(prompt)] == prompt, "the template renders the prompt as a prefix of the conversation"
    return full, [-100] * len(prompt) + full[len(prompt):]


def batches(size=2):
    for i in range(0, len(records), size):
        rows = [encode(r) for r in records[i:i + size]]
        width = max(len(ids) for ids, _ in rows)
        pad = tokenizer.pad_token_id
        input_ids = [ids + [pad] * (width - len(ids)) for ids, _ in rows]
        mask = [[1] * len(ids) + [0] * (width - len(ids)) for ids, _ in rows]
        labels = [lab + [-100] * (width - len(lab)) for _, lab in rows]
        yield ms.Tensor(input_ids, ms.int64), ms.Tensor(mask, ms.int64), ms.Tensor(labels, ms.int64)


def forward_fn(input_ids, attention_mask, labels):
    return model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss


optimizer = nn.AdamWeightDecay(model.trainable_params(), learning_rate=lr, weight_decay=0.0)
grad_fn = ms.value_and_grad(forward_fn, None, model.trainable_params())
model.train()
losses = []
for epoch in range(epochs):
    for step, (input_ids, attention_mask, labels) in enumerate(batches()):
        loss, grads = grad_fn(input_ids, attention_mask, labels)
        optimizer(grads)
        losses.append(float(loss.asnumpy()))
        print(f"epoch {epoch + 1} step {step + 1}: loss {losses[-1]:.4f}", flush=True)
model.eval()

after = answer(model, HELD_OUT)
model.save_pretrained(out_dir)
print(f"held-out question: {HELD_OUT}\n  before: {before!r}\n  after:  {after!r}\nadapter saved to {out_dir}")
print(json.dumps({"losses": losses, "before": before, "after": after, "adapter": out_dir}))
