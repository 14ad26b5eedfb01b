#!/usr/bin/env python3
"""Writes tests/fixtures/llm/<family>/: tiny random-weight causal LMs and Hugging Face's outputs.

Rerun:  /work/main/.venv-peers/bin/python tools/make_llm_fixtures.py [FAMILY ...]
        (families named: only those, with their seeds unchanged; none: all, and the bad GGUFs;
         bad-moe: the MoE bad GGUFs only)
        (scripts/install-py-peers.sh nlp torch llm: transformers, torch, safetensors, gguf)

For each family the structure of a real config in ../shared/data/models/ at tiny sizes (2 layers,
hidden 32, 4 query heads over 2 kv heads, vocab 256), seeded, float32:
  llama  TinyLlama's structure (untied head) with Llama 3 rope scaling (rope_type llama3, a short
         original context so that all three frequency bands occur)
  qwen2  Qwen2.5's structure (q/k/v biases, tied embeddings)
  qwen3  Qwen3's structure (per-head q/k RMSNorm, head_dim 16 != hidden / heads, tied)
  minicpm3  MiniCPM3-4B's structure (multi-head latent attention: q_lora 16, kv_lora 8, nope 8 +
         rope 8, value 8; LongRoPE short factors; scale_emb 12, scale_depth 1.4, dim_model_base
         256, which llama.cpp's minicpm3 code takes as constants; tied)
  mistral  Mistral 7B v0.1's structure with a sliding window of 4 keys, shorter than prompts 0
         and 2 and the greedy run, so the window changes the logits (the script checks it). No
         model.gguf: llama.cpp writes Mistral as "llama" without the window.
  gemma2 Gemma 2's structure (sandwich norms with weight + 1, GeGLU, sqrt(hidden) embedding
         scale, query_pre_attn_scalar 16, sliding window 4 on even layers) with soft-caps small
         enough to act on random weights (attention 2, logits 8); eager attention (transformers
         soft-caps only there). No model.gguf.
  qwen3moe  Qwen3-30B-A3B's structure: 8 experts of 16, top 2 renormalised, q/k norms, head_dim 16
  qwen2moe  Qwen1.5-MoE's: 4 experts of 16, top 2 not renormalised, a shared expert of 48 behind
         its sigmoid gate, q/k/v biases
  mixtral   Mixtral 8x7B's: 4 experts of 32, top 2 renormalised (GGUF: "llama" with experts)
  deepseek2 DeepSeek-V2's: MiniCPM3's latent attention with its rope on adjacent pairs, a dense
         first layer, then 8 experts of 16 (top 2, routed_scaling_factor 2) and 2 shared experts
  (MoE: NOTE [Mixture of experts]; the script asserts the router's top-k margins; no model.gguf:
  model-llama-cpp.gguf is llama.cpp's converter's, and the tests write spore convert's.)
  gemma  Gemma 1's structure (norm weight + 1, GeGLU, sqrt(hidden) embedding scale, head_dim 8, tied).
  gemma3 Gemma 3's text model (Gemma3ForCausalLM): gemma2's sandwich norms and GeGLU, per-head q/k
         norms (weight + 1), layer_types sliding / full with a window of 4, and two rope bases
         (sliding layers 10000, full layers 1e6); the script checks that both the window and the
         second base change the logits.
  phi3   Phi-3's structure (fused qkv_proj and gate_up_proj, LongRoPE short/long factors with an
         original context of 256 under 512 positions, so HF's attention factor acts; untied).
         llama.cpp picks the long factors when its context passes the original one, transformers
         when the sequence does: the check of llama.cpp below runs it within the original context.
  granite  Granite 3's structure with its four multipliers at values that act (embedding 3,
         residual 0.5, attention 0.2, logits divided by 4; untied).
  olmo2  OLMo 2's structure (no pre-norms: RMSNorm after the attention and after the MLP, before
         each residual add; q/k RMSNorm over the whole projection; untied).
Each directory holds
  hf/          config.json, generation_config.json, model.safetensors (transformers' save_pretrained),
               tokenizer.model (a stand-in SentencePiece vocabulary, tools/llama_convert.py)
  model-llama-cpp.gguf   the same model converted by llama.cpp's own convert_hf_to_gguf.py (f32),
               every family; where llama.cpp reads that file differently from transformers
               (LLAMA_CPP_READING below) reference_llama_cpp.safetensors and reference.json's
               greedy_llama_cpp hold transformers' outputs under llama.cpp's reading, and the
               script checks llama.cpp itself (llama-cpp-python) against the expected logits.
  model.gguf   the same weights as GGUF F32, named and laid out as llama.cpp's convert_hf_to_gguf.py
               does: llama's q/k rows permuted for the interleaved rope, Llama 3's scaled
               frequencies as the rope_freqs.weight divisors, tied models without output.weight
  reference.json         prompts (token ids) and a 16-token greedy continuation of prompt 0
  reference.safetensors  logits_<i>: float32 [len(prompt i), vocab], every position
The weights are drawn wider than transformers' init (std 1/sqrt(fan_in)) so that logits differ
by clear margins and the greedy tokens are stable; the script checks those margins.
GGUF of minicpm3: llama.cpp's names (attn_q_a, attn_q_a_norm, attn_q_b, attn_kv_a_mqa, attn_kv_a_norm,
attn_kv_b), LongRoPE factors as rope_factors_short/long.weight, no q/k permutation (NeoX rope).
"""
import json
import math
import pathlib
import shutil

import numpy as np
import torch
import gguf
from safetensors.torch import save_file
import transformers

ROOT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "llm"
PROMPTS = [[1, 17, 42, 99, 3, 250, 7], [2, 200], [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]]
GREEDY = 16

COMMON = dict(vocab_size=256, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
              rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2, hidden_act="silu")

FAMILIES = {
    "llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM, dict(
        rope_theta=10000.0, tie_word_embeddings=False, attention_bias=False,
        rope_scaling={"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 16})),
    "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM, dict(
        rope_theta=1000000.0, tie_word_embeddings=True, rms_norm_eps=1e-6)),
    "qwen3": (transformers.Qwen3Config, transformers.Qwen3ForCausalLM, dict(
        rope_theta=1000000.0, tie_word_embeddings=True, head_dim=16, attention_bias=False,
        rms_norm_eps=1e-6)),
    "minicpm3": (transformers.MiniCPM3Config, transformers.MiniCPM3ForCausalLM, dict(
        num_key_value_heads=4, q_lora_rank=16, kv_lora_rank=8, qk_nope_head_dim=8, qk_rope_head_dim=8,
        v_head_dim=8, scale_emb=12, scale_depth=1.4, dim_model_base=256, tie_word_embeddings=True,
        rope_theta=10000.0,
        rope_scaling={"type": "longrope", "short_factor": [1.0, 1.5, 2.5, 4.0], "long_factor": [2.0, 3.0, 5.0, 8.0],
                      "original_max_position_embeddings": 64})),
    "mistral": (transformers.MistralConfig, transformers.MistralForCausalLM, dict(
        rope_theta=10000.0, tie_word_embeddings=False, sliding_window=4)),
    "gemma2": (transformers.Gemma2Config, transformers.Gemma2ForCausalLM, dict(
        rope_theta=10000.0, tie_word_embeddings=True, head_dim=8, sliding_window=4, query_pre_attn_scalar=16,
        attn_logit_softcapping=2.0, final_logit_softcapping=8.0, hidden_act=None,
        hidden_activation="gelu_pytorch_tanh", rms_norm_eps=1e-6, attn_implementation="eager")),
    # Mixture of experts (NOTE [Mixture of experts]): router top-k over the experts, per-expert SwiGLU
    # MLPs; Hugging Face stores one tensor per expert, GGUF one 3-D tensor per projection.
    "qwen3moe": (transformers.Qwen3MoeConfig, transformers.Qwen3MoeForCausalLM, dict(
        rope_theta=1000000.0, tie_word_embeddings=False, head_dim=16, rms_norm_eps=1e-6, num_experts=8,
        num_experts_per_tok=2, moe_intermediate_size=16, norm_topk_prob=True)),
    "qwen2moe": (transformers.Qwen2MoeConfig, transformers.Qwen2MoeForCausalLM, dict(
        rope_theta=1000000.0, tie_word_embeddings=False, rms_norm_eps=1e-6, num_experts=4, num_experts_per_tok=2,
        moe_intermediate_size=16, shared_expert_intermediate_size=48, norm_topk_prob=False)),
    "mixtral": (transformers.MixtralConfig, transformers.MixtralForCausalLM, dict(
        rope_theta=1000000.0, tie_word_embeddings=False, num_local_experts=4, num_experts_per_tok=2,
        intermediate_size=32, sliding_window=None)),
    "deepseek2": (transformers.DeepseekV2Config, transformers.DeepseekV2ForCausalLM, dict(
        num_key_value_heads=4, q_lora_rank=16, kv_lora_rank=8, qk_nope_head_dim=8, qk_rope_head_dim=8,
        v_head_dim=8, n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=16, n_shared_experts=2,
        first_k_dense_replace=1, routed_scaling_factor=2.0, norm_topk_prob=False, topk_method="greedy",
        tie_word_embeddings=False, rope_theta=10000.0, rms_norm_eps=1e-6)),
    "gemma": (transformers.GemmaConfig, transformers.GemmaForCausalLM, dict(
        rope_theta=10000.0, tie_word_embeddings=True, head_dim=8, hidden_act="gelu_pytorch_tanh",
        rms_norm_eps=1e-6)),
    "gemma3": (transformers.Gemma3TextConfig, transformers.Gemma3ForCausalLM, dict(
        tie_word_embeddings=True, head_dim=8, sliding_window=4, query_pre_attn_scalar=8,
        layer_types=["sliding_attention", "full_attention"], hidden_act=None,
        hidden_activation="gelu_pytorch_tanh", rms_norm_eps=1e-6, attn_implementation="eager",
        rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                         "full_attention": {"rope_type": "default", "rope_theta": 1000000.0}})),
    "phi3": (transformers.Phi3Config, transformers.Phi3ForCausalLM, dict(
        tie_word_embeddings=False, max_position_embeddings=512, original_max_position_embeddings=256, pad_token_id=0,
        rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0, "short_factor": [1.0, 1.5, 2.5, 4.0],
                         "long_factor": [2.0, 3.0, 5.0, 8.0], "original_max_position_embeddings": 256})),
    "granite": (transformers.GraniteConfig, transformers.GraniteForCausalLM, dict(
        rope_theta=10000.0, tie_word_embeddings=False, embedding_multiplier=3.0, residual_multiplier=0.5,
        attention_multiplier=0.2, logits_scaling=4.0)),
    "olmo2": (transformers.Olmo2Config, transformers.Olmo2ForCausalLM, dict(
        rope_theta=10000.0, tie_word_embeddings=False, rms_norm_eps=1e-6, pad_token_id=0)),
}
# Families without a model.gguf written by this script (their GGUFs are model-llama-cpp.gguf,
# written by llama.cpp's converter, and the one the tests write with spore convert).
NO_GGUF = {"mistral", "gemma2", "gemma", "gemma3", "phi3", "granite", "olmo2"}
# Where llama.cpp reads its converter's file differently from transformers, the config under which
# transformers computes what llama.cpp computes (checked against llama.cpp itself below):
#  mistral  written as "llama" without the window (llama.cpp runs every layer full)
#  gemma2   no query_pre_attn_scalar in the file: llama.cpp scales by 1/sqrt(key_length) below 27B
#  gemma3   no sliding-window pattern in the file: llama.cpp takes 6 (layer i slides unless i % 6 == 5),
#           so at 2 layers both slide, with the sliding layers' rope base
# llama.cpp also differs where the choice depends on its context rather than on the file: it pads
# n_ctx to at least 256 and takes LongRoPE's long factors when that passes the original context,
# so on minicpm3's file (original 64) it always runs the long ones, where transformers (and Spore)
# switch by sequence length. Spore keeps transformers' switch; the check below confirms that this
# is the whole difference (llama.cpp against transformers with the long factors as the short ones).
LLAMA_CPP_CONTEXT_READING = {
    "minicpm3": dict(rope_scaling=dict(FAMILIES["minicpm3"][2]["rope_scaling"],
                                       short_factor=FAMILIES["minicpm3"][2]["rope_scaling"]["long_factor"])),
}
# Families whose converter goes straight to the BPE vocabulary path (mixtral's would not; it is
# given the SentencePiece reader as the MoE branch wrote its fixture).
SENTENCEPIECE_VOCAB = {"olmo2", "qwen3moe", "qwen2moe", "mixtral", "deepseek2"}
# Their seeds, fixed here rather than by their place in FAMILIES (families added elsewhere in the
# list must not reseed them).
SEEDS = {"gemma": 1006, "gemma3": 1007, "phi3": 1008, "granite": 1009, "olmo2": 1010,
         "qwen3moe": 2011, "qwen2moe": 2002, "mixtral": 2003, "deepseek2": 2004}
LLAMA_CPP_READING = {
    "mistral": dict(sliding_window=None),
    "gemma2": dict(query_pre_attn_scalar=8),
    "gemma3": dict(layer_types=["sliding_attention", "sliding_attention"]),
}
# The mixture-of-experts families (NOTE [Mixture of experts]): no model.gguf either; the script
# asserts their routers' top-k margins.
MOE = {"qwen3moe", "qwen2moe", "mixtral", "deepseek2"}
NO_GGUF |= MOE


def init_weights(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim == 1 and "norm" in name:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            elif p.ndim == 1:  # biases
                p.copy_(0.3 * torch.randn(p.shape, generator=g))
            elif "embed" in name:
                # Small against the layers' outputs: with a tied head, a large embedding makes every
                # model repeat its last token.
                # (minicpm3 multiplies its embeddings by scale_emb.)
                p.copy_(0.3 / getattr(model.config, "scale_emb", 1.0) * torch.randn(p.shape, generator=g))
            elif "o_proj" in name or "down_proj" in name:
                p.copy_(3.0 * torch.randn(p.shape, generator=g) / math.sqrt(p.shape[-1]))
            else:  # (experts: [experts, out, in], fan-in last as for a matrix)
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[-1]))


def greedy(model, prompt):
    ids = list(prompt)
    margins = []
    for _ in range(GREEDY):
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0, -1]
        top = torch.topk(logits, 2).values
        margins.append(float(top[0] - top[1]))
        ids.append(int(torch.argmax(logits)))
    return ids[len(prompt):], min(margins)


def router_margin(model, sequences):
    """The smallest gap, over every token of `sequences` and every MoE layer, between the k-th and
    the (k+1)-th router probability: a float32 reordering cannot flip an expert choice when it is
    far above float32's rounding (the script asserts it)."""
    k = model.config.num_experts_per_tok
    gaps = []

    def hook(module, inputs, output):
        probs = torch.softmax(output[0].float(), dim=-1).sort(dim=-1, descending=True).values
        gaps.append(float((probs[:, k - 1] - probs[:, k]).min()))

    hooks = [m.register_forward_hook(hook) for m in model.modules() if type(m).__name__.endswith("Router")]
    assert hooks, "no router modules found"
    try:
        for s in sequences:
            with torch.no_grad():
                model(torch.tensor([s]))
    finally:
        for h in hooks:
            h.remove()
    return min(gaps)


def permute_llama(w, n_head):
    # llama.cpp convert_hf_to_gguf.py LlamaModel.permute: half-split rows -> interleaved pairs.
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def gguf_name(hf):
    if hf == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf == "model.norm.weight":
        return "output_norm.weight"
    if hf == "lm_head.weight":
        return "output.weight"
    parts = hf.split(".")  # model.layers.N.<module>.<proj>.<weight|bias>
    n, rest = parts[2], ".".join(parts[3:])
    table = {"input_layernorm.weight": "attn_norm.weight", "post_attention_layernorm.weight": "ffn_norm.weight",
             "self_attn.q_norm.weight": "attn_q_norm.weight", "self_attn.k_norm.weight": "attn_k_norm.weight",
             "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
             "mlp.down_proj.weight": "ffn_down.weight"}
    table.update({"self_attn.q_a_proj.weight": "attn_q_a.weight", "self_attn.q_a_layernorm.weight": "attn_q_a_norm.weight",
                  "self_attn.q_b_proj.weight": "attn_q_b.weight",
                  "self_attn.kv_a_proj_with_mqa.weight": "attn_kv_a_mqa.weight",
                  "self_attn.kv_a_layernorm.weight": "attn_kv_a_norm.weight", "self_attn.kv_b_proj.weight": "attn_kv_b.weight"})
    for proj, short in (("q", "attn_q"), ("k", "attn_k"), ("v", "attn_v"), ("o", "attn_output")):
        for kind in ("weight", "bias"):
            table[f"self_attn.{proj}_proj.{kind}"] = f"{short}.{kind}"
    return f"blk.{n}.{table[rest]}"


def llama3_rope_factors(cfg):
    # What llama.cpp's converter writes for rope_type llama3: inv_freq_scaled = inv_freq / factor.
    rs = cfg.rope_scaling if getattr(cfg, "rope_scaling", None) else cfg.rope_parameters
    dim = cfg.hidden_size // cfg.num_attention_heads
    base = cfg.rope_theta if hasattr(cfg, "rope_theta") else rs["rope_theta"]
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    factor, low, high, old = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"], \
        rs["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / low, old / high
    out = []
    for f in freqs.tolist():
        wavelen = 2 * math.pi / f
        if wavelen < high_wavelen:
            out.append(1.0)
        elif wavelen > low_wavelen:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def write_gguf(path, family, cfg, state, qtype=None):
    """qtype None: every tensor F32; else 2-D weights as "F16" or "Q8_0" (norms stay F32, as
    llama.cpp's quantizer keeps them)."""
    w = gguf.GGUFWriter(str(path), family)
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    if family == "minicpm3":
        head_dim = cfg.qk_nope_head_dim + cfg.qk_rope_head_dim
    w.add_name(f"spore-tiny-{family}")
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    theta = getattr(cfg, "rope_theta", None) or cfg.rope_parameters["rope_theta"]
    w.add_rope_freq_base(theta)
    w.add_vocab_size(cfg.vocab_size)
    w.add_file_type({None: gguf.LlamaFileType.ALL_F32, "F16": gguf.LlamaFileType.MOSTLY_F16,
                     "Q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}[qtype])
    if family == "llama":
        w.add_rope_dimension_count(head_dim)
    if family == "qwen3":
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
    if family == "minicpm3":
        w.add_q_lora_rank(cfg.q_lora_rank)
        w.add_kv_lora_rank(cfg.kv_lora_rank)
        w.add_key_length(head_dim)
        w.add_rope_dimension_count(cfg.qk_rope_head_dim)
    w.add_bos_token_id(cfg.bos_token_id)
    w.add_eos_token_id(cfg.eos_token_id)
    tensors = []
    for name, t in state.items():
        a = t.detach().to(torch.float32).numpy()
        if family == "llama" and name.endswith("self_attn.q_proj.weight"):
            a = permute_llama(a, cfg.num_attention_heads)
        if family == "llama" and name.endswith("self_attn.k_proj.weight"):
            a = permute_llama(a, cfg.num_key_value_heads)
        tensors.append((gguf_name(name), np.ascontiguousarray(a)))
    if family == "llama":
        tensors.insert(0, ("rope_freqs.weight", llama3_rope_factors(cfg)))
    if family == "minicpm3":
        rs = FAMILIES["minicpm3"][2]["rope_scaling"]
        tensors.insert(0, ("rope_factors_long.weight", np.array(rs["long_factor"], dtype=np.float32)))
        tensors.insert(0, ("rope_factors_short.weight", np.array(rs["short_factor"], dtype=np.float32)))
    for name, a in tensors:
        if qtype == "F16" and a.ndim == 2:
            w.add_tensor(name, a.astype(np.float16))
        elif qtype == "Q8_0" and a.ndim == 2:
            w.add_tensor(name, gguf.quants.quantize(a, gguf.GGMLQuantizationType.Q8_0),
                         raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            w.add_tensor(name, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# Which fixtures also get a GGUF with 2-D weights in a kernel format (matmul_q and the quantized
# embedding path), and the logits of the same model with its weights rounded to that format
# (transformers in float32 on the rounded weights): reference_<type>.safetensors. For Q8_0 the
# reference also rounds every linear layer's input the way the kernel does (NOTE [Quantized
# kernels]: q8 blocks of 32 along the row, d = amax / 127, q = round(x / d)), so the comparison
# stays tight instead of hiding errors under the activations' rounding.
QUANTIZED = {"qwen2": "F16", "llama": "Q8_0"}


def round_weight(a, qtype):
    if qtype == "F16":
        return a.astype(np.float16).astype(np.float32)
    return gguf.quants.dequantize(gguf.quants.quantize(a, gguf.GGMLQuantizationType.Q8_0),
                                  gguf.GGMLQuantizationType.Q8_0).astype(np.float32)


def write_quantized(out, family, cfg, model, state, qtype):
    write_gguf(out / f"model-{qtype.lower()}.gguf", family, cfg, state, qtype)
    rounded = {k: torch.from_numpy(round_weight(v.numpy(), qtype)) if v.ndim == 2 else v for k, v in state.items()}
    model.load_state_dict(rounded, strict=False)  # tied heads follow the rounded embedding
    plain = torch.nn.Linear.forward

    def q8_input(self, x):
        blocks = x.reshape(*x.shape[:-1], x.shape[-1] // 32, 32)
        d = blocks.abs().amax(dim=-1, keepdim=True) / 127
        q = torch.where(d > 0, torch.round(blocks / torch.where(d > 0, d, 1)), 0)
        return plain(self, (q * d).reshape(x.shape))

    if qtype == "Q8_0":
        torch.nn.Linear.forward = q8_input
    logits = {}
    try:
        for i, p in enumerate(PROMPTS):
            with torch.no_grad():
                logits[f"logits_{i}"] = model(torch.tensor([p])).logits[0].contiguous()
    finally:
        torch.nn.Linear.forward = plain
    save_file(logits, str(out / f"reference_{qtype.lower()}.safetensors"))


def make(family, seed):
    cfg_cls, model_cls, extra = FAMILIES[family]
    kwargs = dict(COMMON)
    kwargs.update(extra)
    cfg = cfg_cls(**kwargs)
    torch.manual_seed(seed)
    model = model_cls(cfg).to(torch.float32).eval()
    init_weights(model, seed)
    out = ROOT / family
    if out.exists():
        shutil.rmtree(out)
    (out / "hf").mkdir(parents=True)
    model.save_pretrained(out / "hf", safe_serialization=True)
    logits = {}
    for i, p in enumerate(PROMPTS):
        with torch.no_grad():
            logits[f"logits_{i}"] = model(torch.tensor([p])).logits[0].contiguous()
    cont, margin = greedy(model, PROMPTS[0])
    if getattr(cfg, "sliding_window", None):
        # The window must matter: the same weights without it give other logits.
        cfg.sliding_window = 1 << 20  # wider than any prompt (None breaks gemma2's cache)
        wide = model_cls(cfg).to(torch.float32).eval()
        wide.load_state_dict(model.state_dict())
        with torch.no_grad():
            d = float((wide(torch.tensor([PROMPTS[2]])).logits[0] - logits["logits_2"]).abs().max())
        assert d > 1e-2, f"{family}: the sliding window changes the logits by only {d}"
        cfg.sliding_window = kwargs["sliding_window"]
    if family == "gemma3":
        # The second rope base must matter too: the sliding layers on the full layers' base differ.
        one_base = dict(kwargs, rope_parameters={k: dict(kwargs["rope_parameters"]["full_attention"])
                                                 for k in kwargs["rope_parameters"]})
        same = model_cls(cfg_cls(**one_base)).to(torch.float32).eval()
        same.load_state_dict(model.state_dict())
        with torch.no_grad():
            d = float((same(torch.tensor([PROMPTS[2]])).logits[0] - logits["logits_2"]).abs().max())
        assert d > 1e-2, f"gemma3: the sliding layers' rope base changes the logits by only {d}"
    assert margin > 1e-3, f"{family}: greedy margin {margin} too small for a stable fixture"
    save_file(logits, str(out / "reference.safetensors"))
    extra_ref = {}
    if family in MOE:
        rmargin = router_margin(model, PROMPTS + [PROMPTS[0] + cont])
        # float32 router logits of 32 terms move by ~1e-6; a gap 100 times that keeps every choice.
        assert rmargin > 1e-4, f"{family}: router margin {rmargin} too small for stable expert choices"
        extra_ref["min_router_margin"] = rmargin
    ref = {"family": family, "transformers": transformers.__version__, "torch": torch.__version__,
           "seed": seed, "prompts": PROMPTS, "greedy_prompt": 0, "greedy": cont,
           "min_greedy_margin": margin, **extra_ref}
    (out / "reference.json").write_text(json.dumps(ref, indent=1) + "\n")
    state = {k: v for k, v in model.state_dict().items()}
    if cfg.tie_word_embeddings:
        state.pop("lm_head.weight", None)
    if family not in NO_GGUF:
        write_gguf(out / "model.gguf", family, cfg, state)
    if family in QUANTIZED:
        write_quantized(out, family, cfg, model, state, QUANTIZED[family])
    write_llama_cpp(family)
    sizes = {f.name: f.stat().st_size for f in sorted(out.rglob("*")) if f.is_file()}
    print(family, "greedy", cont, "margin %.4f" % margin, sizes)


def outputs(model):
    logits = {}
    for i, p in enumerate(PROMPTS):
        with torch.no_grad():
            logits[f"logits_{i}"] = model(torch.tensor([p])).logits[0].contiguous()
    return logits


def write_llama_cpp(family):
    """hf/tokenizer.model and model-llama-cpp.gguf from the committed hf/ (weights untouched), the
    reference under llama.cpp's reading where it differs, and llama.cpp's own logits on that file
    against the expected ones."""
    from llama_convert import add_tiny_sentencepiece, convert_with_llama_cpp
    out = ROOT / family
    add_tiny_sentencepiece(out / "hf", vocab_size=COMMON["vocab_size"], identity_normalizer=True)
    # olmo2's converter reads only a (hashed) BPE tokenizer.json: it gets the stand-in instead.
    gguf_path = convert_with_llama_cpp(out / "hf", out / "model-llama-cpp.gguf",
                                       sentencepiece_vocab=family in SENTENCEPIECE_VOCAB)
    ref = json.loads((out / "reference.json").read_text())
    ref.pop("greedy_llama_cpp", None)
    want = {k: v for k, v in __import__("safetensors.torch", fromlist=["load_file"]).load_file(
        str(out / "reference.safetensors")).items()}
    want_greedy = ref["greedy"]
    if family in LLAMA_CPP_READING:
        cfg_cls, model_cls, extra = FAMILIES[family]
        kwargs = dict(COMMON)
        kwargs.update(extra)
        kwargs.update(LLAMA_CPP_READING[family])
        model = model_cls.from_pretrained(out / "hf", config=cfg_cls(**kwargs), dtype=torch.float32).eval()
        want = outputs(model)
        want_greedy, _ = greedy(model, PROMPTS[0])
        assert max(float((want[k] - v).abs().max()) for k, v in
                   __import__("safetensors.torch", fromlist=["load_file"]).load_file(
                       str(out / "reference.safetensors")).items()) > 1e-3, f"{family}: llama.cpp's reading changes nothing"
        save_file(want, str(out / "reference_llama_cpp.safetensors"))
        ref["greedy_llama_cpp"] = want_greedy
    (out / "reference.json").write_text(json.dumps(ref, indent=1) + "\n")
    # ggml's own arithmetic (its GELU is a float16 table) leaves a few 1e-3; the readings differ by far more.
    if family in LLAMA_CPP_CONTEXT_READING:
        cfg_cls, model_cls, extra = FAMILIES[family]
        kwargs = dict(COMMON, **extra)
        kwargs.update(LLAMA_CPP_CONTEXT_READING[family])
        want = outputs(model_cls.from_pretrained(out / "hf", config=cfg_cls(**kwargs), dtype=torch.float32).eval())
    d = llama_cpp_logits_diff(gguf_path, want)
    print(family, "llama.cpp itself vs the expected logits: %.2e" % d)
    assert d < 2e-2, f"{family}: llama.cpp's logits on its own file differ from the expectation by {d}"
    if family in LLAMA_CPP_READING:
        other = llama_cpp_logits_diff(gguf_path, __import__("safetensors.torch", fromlist=["load_file"]).load_file(
            str(out / "reference.safetensors")))
        print(family, "llama.cpp itself vs transformers' own reading: %.2e" % other)
        assert other > 10 * d, f"{family}: llama.cpp is not closer to the reading it is said to have"


def llama_cpp_logits_diff(path, want):
    """Max |llama.cpp - want| over the prompts, llama.cpp (llama-cpp-python) with a float32 KV cache."""
    import llama_cpp
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=64, logits_all=True, verbose=False, n_threads=1,
                          type_k=0, type_v=0)
    worst = 0.0
    for i, p in enumerate(PROMPTS):
        llm.reset()
        llm.eval(p)
        got = torch.tensor(np.array(llm.scores[:len(p)]), dtype=torch.float32)
        worst = max(worst, float((got - want[f"logits_{i}"]).abs().max()))
    return worst


def write_bad_ggufs():
    """tests/fixtures/llm/bad/: tiny broken GGUFs (a few hundred bytes) for the error tests."""
    out = ROOT / "bad"
    out.mkdir(exist_ok=True)
    V, H, F = 8, 4, 8

    def header(path, skip_key=None):
        w = gguf.GGUFWriter(str(path), "llama")
        keys = {"context_length": 16, "embedding_length": H, "block_count": 1, "feed_forward_length": F,
                "head_count": 2, "head_count_kv": 1}
        for k, v in keys.items():
            if k != skip_key:
                getattr(w, "add_" + k)(v)
        w.add_layer_norm_rms_eps(1e-5)
        return w

    def finish(w, tensors):
        for name, a in tensors:
            w.add_tensor(name, a)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()

    z = lambda *shape: np.zeros(shape, dtype=np.float32)
    good = [("token_embd.weight", z(V, H)), ("output_norm.weight", z(H)), ("blk.0.attn_norm.weight", z(H)),
            ("blk.0.ffn_norm.weight", z(H)), ("blk.0.attn_q.weight", z(H, H)), ("blk.0.attn_k.weight", z(2, H)),
            ("blk.0.attn_v.weight", z(2, H)), ("blk.0.attn_output.weight", z(H, H)),
            ("blk.0.ffn_gate.weight", z(F, H)), ("blk.0.ffn_up.weight", z(F, H)), ("blk.0.ffn_down.weight", z(H, F))]
    finish(header(out / "missing_key.gguf", skip_key="block_count"), good)
    finish(header(out / "missing_tensor.gguf"), [t for t in good if t[0] != "blk.0.ffn_up.weight"])
    finish(header(out / "bad_shape.gguf"), [(n, z(F, H + 1) if n == "blk.0.ffn_gate.weight" else a) for n, a in good])
    finish(header(out / "ok.gguf"), good)


def write_bad_moe_ggufs():
    """tests/fixtures/llm/bad/moe_*.gguf: a one-layer qwen3moe of 4 experts (top 2) in a few KB,
    whole (moe_ok.gguf, also the gguf fuzz target's MoE seed) and with its stacked expert tensors'
    leading dimension 3 instead of expert_count 4 (moe_bad_experts.gguf)."""
    out = ROOT / "bad"
    out.mkdir(exist_ok=True)
    V, H, F, E = 8, 4, 4, 4
    g = np.random.default_rng(7)
    r = lambda *shape: g.standard_normal(shape).astype(np.float32)

    def write(path, experts_dim):
        w = gguf.GGUFWriter(str(path), "qwen3moe")
        for k, v in {"context_length": 16, "embedding_length": H, "block_count": 1, "feed_forward_length": 8,
                     "head_count": 2, "head_count_kv": 1, "key_length": 2, "value_length": 2, "expert_count": E,
                     "expert_used_count": 2, "expert_feed_forward_length": F}.items():
            getattr(w, "add_" + k)(v)
        w.add_layer_norm_rms_eps(1e-6)
        tensors = [("token_embd.weight", r(V, H)), ("output_norm.weight", r(H)), ("output.weight", r(V, H)),
                   ("blk.0.attn_norm.weight", r(H)), ("blk.0.attn_q.weight", r(H, H)), ("blk.0.attn_k.weight", r(2, H)),
                   ("blk.0.attn_v.weight", r(2, H)), ("blk.0.attn_output.weight", r(H, H)),
                   ("blk.0.attn_q_norm.weight", r(2)), ("blk.0.attn_k_norm.weight", r(2)), ("blk.0.ffn_norm.weight", r(H)),
                   ("blk.0.ffn_gate_inp.weight", r(E, H)), ("blk.0.ffn_gate_exps.weight", r(experts_dim, F, H)),
                   ("blk.0.ffn_up_exps.weight", r(experts_dim, F, H)), ("blk.0.ffn_down_exps.weight", r(experts_dim, H, F))]
        for name, a in tensors:
            w.add_tensor(name, a)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()

    write(out / "moe_ok.gguf", E)
    write(out / "moe_bad_experts.gguf", E - 1)


if __name__ == "__main__":
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    if sys.argv[1:2] == ["--llama-cpp"]:
        # Only model-llama-cpp.gguf (+ hf/tokenizer.model) for the named (default: all) families.
        for fam in sys.argv[2:] or list(FAMILIES):
            write_llama_cpp(fam)
        sys.exit(0)
    only = sys.argv[1:]
    for k, fam in enumerate(FAMILIES):
        if not only or fam in only:
            make(fam, SEEDS.get(fam, 1000 + k))
    if not only:
        write_bad_ggufs()
    if not only or "bad-moe" in only:
        write_bad_moe_ggufs()
