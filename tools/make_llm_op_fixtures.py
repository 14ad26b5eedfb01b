#!/usr/bin/env python3
"""Writes tests/fixtures/llm/llm_ops.json: PyTorch references for the rope and attention ops.

Run with Debian's PyTorch: /usr/bin/python3 tools/make_llm_op_fixtures.py
rope (half-split) follows Hugging Face's LlamaRotaryEmbedding + apply_rotary_pos_emb in float32
(rotate_half); rope (interleaved) follows Meta's reference (pairs as complex numbers, multiplied
by polar(1, angle)); attention is grouped-query causal attention written with torch ops
(repeat_interleave of the kv heads, a masked softmax) in float64 over a cache with a past offset.
"""
import json
import pathlib

import torch

torch.manual_seed(0)
out = {}

# ---- rope, Hugging Face half-split, float32 -----------------------------------------------------
B, H, S, D = 1, 3, 5, 16
theta = 10000.0
positions = torch.tensor([[0, 1, 2, 37, 1000]])
inv_freq = 1.0 / (theta ** (torch.arange(0, D, 2, dtype=torch.int64).float() / D))
x = torch.randn(B, H, S, D, dtype=torch.float32)
freqs = (inv_freq[None, :, None].float() @ positions[:, None, :].float()).transpose(1, 2)
emb = torch.cat((freqs, freqs), dim=-1)
cos, sin = emb.cos()[:, None], emb.sin()[:, None]


def rotate_half(t):
    a, b = t[..., : t.shape[-1] // 2], t[..., t.shape[-1] // 2 :]
    return torch.cat((-b, a), dim=-1)


y = x * cos + rotate_half(x) * sin
out["rope_half"] = {
    "shape": [B, H, S, D], "positions": positions[0].tolist(), "inv_freq": inv_freq.tolist(),
    "x": x.flatten().tolist(), "y": y.flatten().tolist(),
}

# ---- rope, interleaved pairs (Meta / GGUF llama), [B, S, H, D], float64 --------------------------
B, S, H, D = 2, 4, 2, 8
positions = torch.tensor([3, 4, 5, 6])
inv_freq = 1.0 / (500000.0 ** (torch.arange(0, D, 2).float() / D))
x = torch.randn(B, S, H, D, dtype=torch.float64)
angles = (positions.float()[:, None] * inv_freq[None, :]).double()  # float32 product, as the op
rot = torch.polar(torch.ones_like(angles), angles)  # [S, D/2]
xc = torch.view_as_complex(x.reshape(B, S, H, D // 2, 2).contiguous())
y = torch.view_as_real(xc * rot[None, :, None, :]).reshape(B, S, H, D)
out["rope_interleaved"] = {
    "shape": [B, S, H, D], "positions": positions.tolist(), "inv_freq": inv_freq.tolist(),
    "x": x.flatten().tolist(), "y": y.flatten().tolist(),
}

# ---- attention, grouped-query, causal with a past offset, float64 -------------------------------
B, Hq, Hkv, S, T, Dh, past = 2, 6, 2, 3, 9, 8, 4
q = torch.randn(B, Hq, S, Dh, dtype=torch.float64)
k = torch.randn(B, Hkv, T, Dh, dtype=torch.float64)
v = torch.randn(B, Hkv, T, Dh, dtype=torch.float64)
kx, vx = k.repeat_interleave(Hq // Hkv, dim=1), v.repeat_interleave(Hq // Hkv, dim=1)
scores = q @ kx.transpose(-1, -2) / Dh ** 0.5
query_pos = torch.arange(S)[:, None] + past
mask = torch.arange(T)[None, :] > query_pos
probs = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
y = probs @ vx
out["attention"] = {
    "B": B, "Hq": Hq, "Hkv": Hkv, "S": S, "T": T, "D": Dh, "past": past,
    "q": q.flatten().tolist(), "k": k.flatten().tolist(), "v": v.flatten().tolist(), "y": y.flatten().tolist(),
}

path = pathlib.Path(__file__).resolve().parent.parent / "tests/fixtures/llm/llm_ops.json"
path.write_text(json.dumps(out) + "\n")
print(f"wrote {path} (torch {torch.__version__})")
