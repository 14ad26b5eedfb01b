"""Language models in transformers' and MindNLP's spelling over Spore's LLM engine (NOTE [Python
NLP] in docs/design.md):

    from spore.nlp import AutoTokenizer, AutoModelForCausalLM
    tokenizer = AutoTokenizer.from_pretrained(path)          # a Hugging Face directory or a .gguf
    model = AutoModelForCausalLM.from_pretrained(path)
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="ms")
    out = model.generate(ids, max_new_tokens=32)
    print(tokenizer.decode(out[0][ids.shape[1]:], skip_special_tokens=True))

LoRA fine-tuning: spore.nlp.peft (LoraConfig, get_peft_model)."""
from ._native import native as _native  # noqa: F401  (raises when the build has no engine)
from .tokenization import AutoTokenizer, BatchEncoding, PreTrainedTokenizer
from .modeling import AutoModelForCausalLM, CausalLMOutput, PreTrainedModelForCausalLM
from .generation import GenerationConfig, TextStreamer, TextIteratorStreamer
from . import peft

__all__ = ["AutoTokenizer", "AutoModelForCausalLM", "BatchEncoding", "PreTrainedTokenizer", "CausalLMOutput",
           "PreTrainedModelForCausalLM", "GenerationConfig", "TextStreamer", "TextIteratorStreamer", "peft"]
