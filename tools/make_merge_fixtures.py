"""`spore merge` references (NOTE [LoRA merge] in docs/design.md): PEFT's own merge of two adapters
into the tiny llama fixture, one after the other, as a user bakes several adapters into one model.

    /work/main/.venv-peers/bin/python tools/make_merge_fixtures.py
    /work/main/.venv-peers/bin/python tools/make_merge_fixtures.py --llama-cpp MERGED.gguf REF_KEY

The first writes tests/fixtures/lora/merge_reference.safetensors:
  logits_a_b_half  float32 [len(IDS), vocab]: transformers on the model PEFT's merge_and_unload()
                   gives for adapter a (scale 1), then adapter b at scale 0.5 (set_scale), both the
                   committed fixtures of tools/make_lora_fixtures.py
(the single-adapter references, logits_a and logits_a_half, are make_lora_fixtures.py's.)

The second is the hand check with llama.cpp that the suite does not run: llama-cpp-python (the
pinned sources) loads a merged GGUF Spore wrote, with no adapter, and its logits of the fixture's
ids are compared with a reference of tests/fixtures/lora/ (logits_a, logits_a_b_half, ...).

Needs the peers environment (scripts/install-py-peers.sh nlp torch llm: transformers, torch, peft,
safetensors; llama-cpp-python for the check)."""
import json
import pathlib
import sys

import torch
from safetensors.torch import load_file, save_file

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from make_lora_fixtures import IDS, OUT, base_model, logits  # noqa: E402


def merged(adapter, base, scale=1.0):
    from peft import PeftModel
    peft = PeftModel.from_pretrained(base, str(OUT / adapter))
    if scale != 1.0:
        for module in peft.modules():
            if hasattr(module, "set_scale") and hasattr(module, "lora_A"):
                module.set_scale("default", scale)
    return peft.merge_and_unload().eval()


def references():
    with_a = merged("a", base_model())
    refs = {"logits_a_b_half": logits(merged("b", with_a, 0.5))}
    old = load_file(str(OUT / "reference.safetensors"))
    # a alone through this path is make_lora_fixtures.py's reference: the two scripts agree.
    d_a = (logits(merged("a", base_model())) - old["logits_a"]).abs().max().item()
    far = (refs["logits_a_b_half"] - old["logits_a"]).abs().max().item()
    print(f"max |a merged here - logits_a| = {d_a:.2e}; a+b/2 from a alone: {far:.4f}")
    assert d_a < 1e-5 and far > 0.05, (d_a, far)
    save_file(refs, str(OUT / "merge_reference.safetensors"))


def check_llama_cpp(path, key):
    import llama_cpp
    import numpy as np
    refs = {**load_file(str(OUT / "reference.safetensors")), **load_file(str(OUT / "merge_reference.safetensors"))}
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=64, logits_all=True, verbose=False, n_threads=1,
                          type_k=0, type_v=0)
    llm.eval(IDS)
    got = torch.tensor(np.array(llm.scores[:len(IDS)]), dtype=torch.float32)
    d, far = (got - refs[key]).abs().max().item(), (got - refs["logits_base"]).abs().max().item()
    print(json.dumps({"merged": str(path), "reference": key, "max_abs_diff": d, "from_base": far,
                      "llama_cpp_python": llama_cpp.__version__}))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--llama-cpp":
        check_llama_cpp(sys.argv[2], sys.argv[3])
    else:
        references()
