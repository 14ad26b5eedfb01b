"""examples/nlp/lora_finetune.py (a MindNLP + PEFT training loop with the imports changed) runs
end to end on a tiny random chat Llama: its loss falls, and the adapter it saves loads in the C++
engine (`spore generate --lora`), which generates what Python generates with it."""
import json
import os
import subprocess
import sys

import numpy as np

from spore.nlp import AutoModelForCausalLM, AutoTokenizer
from spore.nlp.peft import PeftModel

from nlp_fixtures import ROOT, cli_generate, make_tiny_chat_llama, read_safetensors


def test_the_lora_example_trains_and_its_adapter_loads_in_the_cli(tmp_path):
    model_dir = make_tiny_chat_llama(tmp_path / "model")
    out = tmp_path / "adapter"
    r = subprocess.run([sys.executable, str(ROOT / "examples/nlp/lora_finetune.py"), "--model", str(model_dir),
                        "--out", str(out), "--epochs", "5", "--lr", "1e-2"],
                       capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    assert "trainable params: " in r.stdout
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    losses = summary["losses"]
    assert len(losses) == 15  # 5 epochs x 3 batches of 2 records
    epochs = [np.mean(losses[i:i + 3]) for i in range(0, 15, 3)]
    assert all(b < a for a, b in zip(epochs, epochs[1:])), epochs
    assert epochs[-1] < epochs[0] - 1.0, epochs

    adapter = read_safetensors(out / "adapter_model.safetensors")
    assert len(adapter) == 2 * 4 * 2  # A and B of q/k/v/o in 2 layers
    assert any(np.abs(v).max() > 0 for k, v in adapter.items() if "lora_B" in k)  # B left zero: nothing trained

    tok = AutoTokenizer.from_pretrained(model_dir)
    prompt = tok.apply_chat_template([{"role": "user", "content": "What is the capital of Germany?"}],
                                     add_generation_prompt=True)
    tuned = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(model_dir), out)
    py = tuned.generate([prompt], max_new_tokens=12).asnumpy()[0, len(prompt):].tolist()
    cli = cli_generate(model_dir, prompt, 12, lora=out)
    assert py[:len(cli["ids"])] == cli["ids"] and py[len(cli["ids"]):] in ([], [2], [0])
    assert tok.decode(py, skip_special_tokens=True) == summary["after"]
