"""spore.nlp in transformers' / MindNLP's spelling (NOTE [Python NLP]) against independent
references: PEFT's loss and adapter gradients (tests/fixtures/finetune/peft_reference.safetensors,
made by tools/make_finetune_fixtures.py with PyTorch + PEFT), the C++ CLI's greedy generation
(`spore generate`), and the engine's adapter loader (`--lora`) reading what save_pretrained writes."""
import json
import os
import subprocess
import threading

import numpy as np
import pytest

import spore
from spore.nlp import AutoModelForCausalLM, AutoTokenizer, TextIteratorStreamer
from spore.nlp.peft import LoraConfig, PeftModel, get_peft_model

from nlp_fixtures import (CLI, LLAMA_GGUF, LLAMA_HF, PEFT_REFERENCE, ROOT, cli_generate, make_tiny_chat_llama,
                          read_safetensors)

# tools/make_finetune_fixtures.py's SEQS: ids and the flags of the tokens the loss counts.
SEQS = [([1, 17, 42, 99, 3, 250, 7, 8, 9], [0, 0, 0, 0, 0, 1, 1, 1, 1]),
        ([1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15], [0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 1, 1])]
ALL = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


@pytest.fixture(scope="module")
def chat_model(tmp_path_factory):
    return make_tiny_chat_llama(tmp_path_factory.mktemp("tiny_chat_llama"))


def padded_batch(side):
    """The two sequences as transformers users batch them: padded (pad id 0), attention mask,
    labels -100 where the loss does not count."""
    width = max(len(ids) for ids, _ in SEQS)
    ids, mask, labels = [], [], []
    for s, flags in SEQS:
        n = width - len(s)
        lab = [t if f else -100 for t, f in zip(s, flags)]
        if side == "left":
            ids.append([0] * n + s), mask.append([0] * n + [1] * len(s)), labels.append([-100] * n + lab)
        else:
            ids.append(s + [0] * n), mask.append([1] * len(s) + [0] * n), labels.append(lab + [-100] * n)
    return [spore.Tensor(np.asarray(x, np.int64)) for x in (ids, mask, labels)]


@pytest.mark.parametrize("side", ["right", "left"])
def test_loss_and_adapter_gradients_equal_peft(side):
    ref = read_safetensors(PEFT_REFERENCE)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(LLAMA_HF),
                           LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules=ALL))
    params = model.trainable_params()
    assert len(params) == 28  # A and B of 7 projections x 2 layers
    for p in params:
        p.set_data(spore.Tensor(ref["init." + p.name].copy()))

    def forward_fn(input_ids, attention_mask, labels):
        return model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss

    loss, grads = spore.value_and_grad(forward_fn, None, params)(*padded_batch(side))
    assert abs(float(loss.asnumpy()) - float(ref["step0.loss"].reshape(-1)[0])) < 1e-4
    for p, g in zip(params, grads):
        want = ref["grad." + p.name]
        assert np.abs(g.asnumpy() - want).max() < 1e-4, p.name
        assert np.abs(want).max() > 1e-3, p.name  # a real gradient, not a zero compared with a zero


def test_print_trainable_parameters_counts_as_peft(capsys):
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(LLAMA_HF),
                           LoraConfig(r=4, lora_alpha=8, target_modules=ALL))
    model.print_trainable_parameters()
    c = model.config
    h, f, kv = c.hidden_size, c.intermediate_size, c.num_key_value_heads * c.head_dim
    per_layer = 4 * ((h + h) + (h + kv) * 2 + (h + h) + (h + f) * 2 + (f + h))  # r (in + out) per projection
    trainable = per_layer * c.num_hidden_layers
    base = sum(a.size for a in read_safetensors(LLAMA_HF / "model.safetensors").values())
    assert capsys.readouterr().out.strip() == (f"trainable params: {trainable:,d} || all params: {base + trainable:,d} "
                                               f"|| trainable%: {100 * trainable / (base + trainable):.4f}")


def test_generate_equals_the_cli_greedy(chat_model):
    tok = AutoTokenizer.from_pretrained(chat_model)
    model = AutoModelForCausalLM.from_pretrained(chat_model)
    prompt = tok.apply_chat_template([{"role": "user", "content": "Name three colours."}], add_generation_prompt=True)
    assert tok.apply_chat_template([{"role": "user", "content": "Name three colours."}], tokenize=False,
                                   add_generation_prompt=True) == \
        "<|im_start|>user\nName three colours.<|im_end|>\n<|im_start|>assistant\n"
    out = model.generate(spore.Tensor(np.asarray([prompt], np.int64)), max_new_tokens=12)
    new = out.asnumpy()[0, len(prompt):].tolist()
    cli = cli_generate(chat_model, prompt, 12)
    assert new[:len(cli["ids"])] == cli["ids"] and len(cli["ids"]) > 0
    assert new[len(cli["ids"]):] in ([], [2], [0])  # transformers keeps the EOS the CLI drops
    assert tok.decode(cli["ids"]) == cli["text"]
    # do_sample=False (transformers' default) is greedy whatever temperature says.
    hot = model.generate([prompt], max_new_tokens=12, temperature=1.5, top_k=0).asnumpy()[0, len(prompt):].tolist()
    assert hot == new

    # A batch (left padding, as transformers users pad for generation) gives each row its own.
    other = tok("Hi")["input_ids"]
    tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    enc = tok([tok.decode(prompt), "Hi"], return_tensors="ms", padding=True)
    rows = model.generate(**enc, max_new_tokens=12).asnumpy()
    width = enc.input_ids.shape[1]
    assert rows[0, width:width + len(cli["ids"])].tolist() == cli["ids"]
    alone = model.generate([other], max_new_tokens=12).asnumpy()[0, len(other):].tolist()
    assert rows[1, width:width + len(alone)].tolist() == alone


def test_streaming_pieces_join_to_the_decoded_text(chat_model):
    tok = AutoTokenizer.from_pretrained(chat_model)
    model = AutoModelForCausalLM.from_pretrained(chat_model)
    ids = tok.apply_chat_template([{"role": "user", "content": "Tell me a story."}], add_generation_prompt=True,
                                  return_tensors="ms")
    full = model.generate(ids, max_new_tokens=16, ignore_eos=True).asnumpy()[0, ids.shape[1]:].tolist()
    text = tok.decode(full)
    streamer = TextIteratorStreamer(tok, skip_prompt=True)
    worker = threading.Thread(target=model.generate,
                              kwargs=dict(input_ids=ids, max_new_tokens=16, ignore_eos=True, streamer=streamer))
    worker.start()
    pieces = list(streamer)
    worker.join()
    assert "".join(pieces) == text and len(pieces) > 1
    assert "".join(model.stream_generate(ids, max_new_tokens=16, ignore_eos=True)) == text
    # A stop string ends the text before it; nothing of it is streamed.
    stop = text[4:6]
    assert "".join(model.stream_generate(ids, max_new_tokens=16, ignore_eos=True, stop=[stop])) == \
        text[:text.find(stop)]
    # Sampling with a seed is reproducible.
    a = model.generate(ids, max_new_tokens=8, do_sample=True, temperature=1.5, top_k=40, seed=7).asnumpy()
    b = model.generate(ids, max_new_tokens=8, do_sample=True, temperature=1.5, top_k=40, seed=7).asnumpy()
    assert (a == b).all()


def trained_like(model, seed):
    """Adapters with non-zero B (as after training), so that they change the model's outputs."""
    rng = np.random.default_rng(seed)
    for p in model.trainable_params():
        p.set_data(spore.Tensor((rng.normal(size=p.shape) * 0.2).astype(np.float32)))


def test_save_pretrained_loads_in_the_cpp_loader(chat_model, tmp_path):
    tok = AutoTokenizer.from_pretrained(chat_model)
    base = AutoModelForCausalLM.from_pretrained(chat_model)
    model = get_peft_model(base, LoraConfig(r=4, lora_alpha=16, target_modules=["q_proj", "v_proj", "down_proj"]))
    trained_like(model, 1)
    model.save_pretrained(tmp_path / "adapter")
    config = json.loads((tmp_path / "adapter/adapter_config.json").read_text())
    assert (config["r"], config["lora_alpha"], sorted(config["target_modules"])) == (4, 16, ["down_proj", "q_proj", "v_proj"])
    saved = read_safetensors(tmp_path / "adapter/adapter_model.safetensors")
    assert sorted(saved) == sorted(p.name for p in model.trainable_params())
    for p in model.trainable_params():
        assert (saved[p.name] == p.asnumpy()).all()

    prompt = tok.apply_chat_template([{"role": "user", "content": "Hello there"}], add_generation_prompt=True)
    # The engine's forward with the adapter file equals the training forward's logits.
    loaded = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(chat_model), tmp_path / "adapter")
    train_logits = model([prompt]).logits.asnumpy()
    engine_logits = loaded([prompt]).logits.asnumpy()
    assert np.abs(train_logits - engine_logits).max() < 1e-4
    assert np.abs(train_logits - base([prompt]).logits.asnumpy()).max() > 1e-2  # the adapter does something
    # `spore generate --lora` greedy equals Python's, with the adapter and without.
    cli = cli_generate(chat_model, prompt, 10, lora=tmp_path / "adapter")
    py = model.generate([prompt], max_new_tokens=10, ignore_eos=True).asnumpy()[0, len(prompt):].tolist()
    assert py[:len(cli["ids"])] == cli["ids"]
    assert cli["ids"] != cli_generate(chat_model, prompt, 10)["ids"]
    # The same adapter as llama.cpp's GGUF LoRA.
    model.save_gguf(tmp_path / "adapter.gguf")
    assert cli_generate(chat_model, prompt, 10, lora=tmp_path / "adapter.gguf")["ids"] == cli["ids"]


def test_merge_and_unload_bakes_the_adapter_in(chat_model, tmp_path):
    """merge_and_unload (`spore merge`, NOTE [LoRA merge]) gives a plain model whose logits are the
    adapted model's, for a trained PeftModel (HF base) and for an adapter file over a GGUF base."""
    tok = AutoTokenizer.from_pretrained(chat_model)
    prompt = tok.apply_chat_template([{"role": "user", "content": "Hello there"}], add_generation_prompt=True)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(chat_model),
                           LoraConfig(r=4, lora_alpha=16, target_modules=["q_proj", "v_proj", "down_proj"]))
    trained_like(model, 3)
    merged = model.merge_and_unload()
    assert not isinstance(merged, PeftModel) and merged.name_or_path == model.name_or_path
    adapted = model([prompt]).logits.asnumpy()
    assert np.abs(merged([prompt]).logits.asnumpy() - adapted).max() < 1e-4
    base = AutoModelForCausalLM.from_pretrained(chat_model)
    assert np.abs(base([prompt]).logits.asnumpy() - adapted).max() > 1e-2  # the adapter does something

    ids = SEQS[1][0]
    gguf = get_peft_model(AutoModelForCausalLM.from_pretrained(LLAMA_GGUF), LoraConfig(r=4, target_modules=ALL))
    trained_like(gguf, 4)
    gguf.save_pretrained(tmp_path / "adapter")
    loaded = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(LLAMA_GGUF), tmp_path / "adapter")
    merged = loaded.merge_and_unload()
    assert np.abs(merged([ids]).logits.asnumpy() - loaded([ids]).logits.asnumpy()).max() < 1e-4
    assert sorted(os.listdir(tmp_path)) == ["adapter"]  # the merged copy was a temporary


def test_a_gguf_base_trains_and_saves_in_hugging_faces_order(tmp_path):
    ids = SEQS[1][0]
    hf = get_peft_model(AutoModelForCausalLM.from_pretrained(LLAMA_HF), LoraConfig(r=4, target_modules=ALL))
    gguf = get_peft_model(AutoModelForCausalLM.from_pretrained(LLAMA_GGUF), LoraConfig(r=4, target_modules=ALL))
    labels = [[-100] * 3 + ids[3:]]
    assert abs(float(hf([ids], labels=labels).loss.asnumpy()) - float(gguf([ids], labels=labels).loss.asnumpy())) < 1e-4
    trained_like(gguf, 2)  # B rows in the GGUF's (llama.cpp's permuted) q/k order
    gguf.save_pretrained(tmp_path / "adapter")
    on_hf = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(LLAMA_HF, numerics="reference"),
                                      tmp_path / "adapter")
    assert np.abs(on_hf([ids]).logits.asnumpy() - gguf([ids]).logits.asnumpy()).max() < 1e-4


def test_bad_input_raises_the_typed_errors(chat_model, tmp_path):
    with pytest.raises(spore.SporeIOError, match="/no/such/model"):
        AutoModelForCausalLM.from_pretrained("/no/such/model")
    with pytest.raises(spore.SporeIOError, match="/no/such/model"):
        AutoTokenizer.from_pretrained("/no/such/model")
    bad = tmp_path / "not-a-model.gguf"
    bad.write_text("hello")
    with pytest.raises(spore.FormatError, match="not-a-model.gguf"):
        AutoModelForCausalLM.from_pretrained(bad)
    with pytest.raises(spore.SporeValueError, match="target_modules.*qkv_proj"):
        LoraConfig(target_modules=["qkv_proj"])
    # An adapter of the 32-wide llama fixture on the 64-wide chat llama: the loader's kShape.
    small = get_peft_model(AutoModelForCausalLM.from_pretrained(LLAMA_HF), LoraConfig(r=4))
    small.save_pretrained(tmp_path / "small")
    with pytest.raises(spore.ShapeError, match="q_proj"):
        PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(chat_model), tmp_path / "small")
    model = AutoModelForCausalLM.from_pretrained(LLAMA_HF)
    with pytest.raises(spore.SporeValueError, match="outside the vocabulary"):
        get_peft_model(model, LoraConfig(r=2))([[1, 2, 999]], labels=[[1, 2, 999]])
    with pytest.raises(ValueError, match="labels"):
        model([[1, 2, 3]], labels=[[1, 5, 3]])
    with pytest.raises(ValueError, match="padding inside"):
        model([[1, 2, 3]], attention_mask=[[1, 0, 1]])


def test_the_embedded_smollm2_gguf_generates_as_the_cli():
    """The embedded model (a directory holding one Q4_1 GGUF: tokenizer and template inside);
    skipped where scripts/fetch-model.sh has not fetched it."""
    path = os.environ.get("SPORE_MODEL") or str(ROOT / "models/smollm2-135m-instruct")
    if not os.path.isdir(path) or not any(f.endswith(".gguf") for f in os.listdir(path)):
        pytest.skip(f"{path} is not there (bash scripts/fetch-model.sh)")
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    ids = tok.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}],
                                  add_generation_prompt=True)
    new = model.generate([ids], max_new_tokens=16).asnumpy()[0, len(ids):].tolist()
    cli = cli_generate(path, ids, 16)
    assert new[:len(cli["ids"])] == cli["ids"] and len(cli["ids"]) > 4
    # apply_chat_template renders and tokenizes the prompt as `spore generate --chat` does.
    r = subprocess.run([CLI, "generate", "--model", path, "--chat", "--prompt", "What is the capital of France?",
                        "--max-tokens", "1", "--temperature", "0", "--print-ids"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1])["prompt_ids"] == ids


def test_the_logits_are_differentiable_too():
    """A loss written over .logits with the framework's ops (as a user's custom loss would be)
    gives PEFT's gradients as well: the logits are on the tape."""
    ref = read_safetensors(PEFT_REFERENCE)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(LLAMA_HF),
                           LoraConfig(r=4, lora_alpha=8, target_modules=ALL))
    params = model.trainable_params()
    for p in params:
        p.set_data(spore.Tensor(ref["init." + p.name].copy()))
    input_ids, attention_mask, labels = padded_batch("right")
    lab = labels.asnumpy()
    nxt = np.where(lab[:, 1:] < 0, 0, lab[:, 1:])  # the token each position predicts
    weight = (lab[:, 1:] >= 0).astype(np.float32)
    index = spore.Tensor(nxt[..., None].astype(np.int64))
    w = spore.Tensor(weight)

    def custom_loss(ids, mask):
        logits = model(input_ids=ids, attention_mask=mask).logits  # [B, S, vocab]
        logp = spore.ops.log_softmax(spore.ops.slice(logits, [0, 0, 0], [2, 11, 256]), -1)
        picked = spore.ops.squeeze(spore.ops.gather_elements(logp, 2, index), 2)
        return (picked * w).sum() * (-1.0 / float(weight.sum()))

    loss, grads = spore.value_and_grad(custom_loss, None, params)(input_ids, attention_mask)
    assert abs(float(loss.asnumpy()) - float(ref["step0.loss"].reshape(-1)[0])) < 1e-4
    for p, g in zip(params, grads):
        assert np.abs(g.asnumpy() - ref["grad." + p.name]).max() < 1e-4, p.name


@pytest.mark.parametrize("base", [LLAMA_HF, LLAMA_GGUF], ids=["hf", "gguf"])
def test_training_goes_on_from_a_saved_adapter(base, tmp_path):
    first = get_peft_model(AutoModelForCausalLM.from_pretrained(base),
                           LoraConfig(r=4, lora_alpha=8, lora_dropout=0.1, target_modules=["q_proj", "k_proj", "up_proj"]))
    trained_like(first, 3)
    first.save_pretrained(tmp_path / "adapter")
    again = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base), tmp_path / "adapter", is_trainable=True)
    cfg = again.peft_config["default"]
    assert (cfg.r, cfg.lora_alpha, cfg.lora_dropout, sorted(cfg.target_modules)) == (4, 8.0, 0.1, ["k_proj", "q_proj", "up_proj"])
    # The same values in the same (for a GGUF base: llama.cpp's permuted q/k) row order.
    for p, q in zip(first.trainable_params(), again.trainable_params()):
        assert p.name == q.name and (p.asnumpy() == q.asnumpy()).all(), p.name
    ids = SEQS[1][0]
    labels = [[-100] * 3 + ids[3:]]
    fn = spore.value_and_grad(lambda x: again(input_ids=x, labels=labels).loss, None, again.trainable_params())
    loss, grads = fn(spore.Tensor(np.asarray([ids], np.int64)))
    assert abs(float(loss.asnumpy()) - float(first([ids], labels=labels).loss.asnumpy())) < 1e-6
    spore.nn.SGD(again.trainable_params(), learning_rate=0.5)(grads)
    assert float(again([ids], labels=labels).loss.asnumpy()) < float(loss.asnumpy())
