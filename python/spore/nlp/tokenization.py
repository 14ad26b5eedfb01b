"""AutoTokenizer in transformers' spelling over Spore's tokenizers and chat templates (C++:
spore/nlp/tokenizer.h, chat_template.h; NOTE [Python NLP]). Encoding, decoding and templates are
the engine's (identical to Hugging Face tokenizers and apply_chat_template); this file adds the
batch API: padding, attention masks, return_tensors."""
import json
import os

import numpy as np

from .._spore import SporeError
from . import _inputs
from ._native import native


class BatchEncoding(dict):
    """A dict of input_ids / attention_mask that also reads as attributes (transformers')."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def _as(rows, return_tensors, what):
    if return_tensors is None:
        return rows
    if return_tensors in ("ms", "pt", "spore"):
        return _inputs.tensor(rows)
    if return_tensors == "np":
        return np.asarray(rows, dtype=np.int64)
    raise ValueError(f"{what}: return_tensors must be None, 'ms' (or 'pt') or 'np', got {return_tensors!r}")


class PreTrainedTokenizer:
    """What AutoTokenizer.from_pretrained returns."""

    def __init__(self, tokenizer, chat_template, name_or_path):
        self._tok = tokenizer
        self._template = chat_template
        self._template_error = None
        self.name_or_path = name_or_path
        self.padding_side = "right"
        self.truncation_side = "right"
        self.model_max_length = 1 << 30
        specials = chat_template.special_tokens() if chat_template is not None else {}
        self._special = {}
        # tokenizer_config.json's names first (what transformers reads), then the tokenizer's own.
        for key, tid in (("bos_token", tokenizer.bos_id), ("eos_token", tokenizer.eos_id), ("pad_token", tokenizer.pad_id)):
            if specials.get(key) and tokenizer.token_to_id(specials[key]) is not None:
                self._special[key] = specials[key]
            elif tid is not None:
                self._special[key] = tokenizer.id_to_token(tid)

    # ---- special tokens ----
    def _token(self, key):
        return self._special.get(key)

    def _set_token(self, key, value):
        if value is not None and self._tok.token_to_id(value) is None:
            raise ValueError(f"{key}: {value!r} is not a token of this vocabulary")
        self._special[key] = value

    bos_token = property(lambda s: s._token("bos_token"), lambda s, v: s._set_token("bos_token", v))
    eos_token = property(lambda s: s._token("eos_token"), lambda s, v: s._set_token("eos_token", v))
    pad_token = property(lambda s: s._token("pad_token"), lambda s, v: s._set_token("pad_token", v))

    def _id(self, key):
        t = self._special.get(key)
        return None if t is None else self._tok.token_to_id(t)

    bos_token_id = property(lambda s: s._id("bos_token"))
    eos_token_id = property(lambda s: s._id("eos_token"))

    @property
    def pad_token_id(self):
        return self._id("pad_token")

    @pad_token_id.setter
    def pad_token_id(self, value):
        self.pad_token = None if value is None else self._tok.id_to_token(int(value))

    @property
    def vocab_size(self):
        return self._tok.vocab_size

    def __len__(self):
        return self._tok.vocab_size

    @property
    def chat_template(self):
        return self._template

    # ---- encoding ----
    def encode(self, text, add_special_tokens=True, truncation=False, max_length=None, return_tensors=None):
        ids = self._tok.encode(text, add_special_tokens)
        if truncation and max_length is not None:
            ids = ids[:max_length] if self.truncation_side == "right" else ids[len(ids) - max_length:]
        return _as([ids], return_tensors, "encode") if return_tensors else ids

    def __call__(self, text, add_special_tokens=True, padding=False, truncation=False, max_length=None,
                 return_tensors=None, return_attention_mask=True, **kwargs):
        if kwargs:
            raise TypeError(f"tokenizer(): unsupported arguments {sorted(kwargs)}")
        single = isinstance(text, str)
        texts = [text] if single else list(text)
        if not all(isinstance(t, str) for t in texts):
            raise TypeError("tokenizer(): text must be a str or a list of str")
        ids = [self.encode(t, add_special_tokens, truncation, max_length) for t in texts]
        masks = [[1] * len(r) for r in ids]
        if padding:
            target = max(len(r) for r in ids) if padding in (True, "longest") else None
            if padding == "max_length":
                if max_length is None:
                    raise ValueError("tokenizer(): padding='max_length' needs max_length")
                target = max_length
            if target is None:
                raise ValueError(f"tokenizer(): padding must be True, 'longest' or 'max_length', got {padding!r}")
            pad = self.pad_token_id
            if pad is None:
                raise ValueError("tokenizer(): padding needs a pad token; set tokenizer.pad_token = tokenizer.eos_token")
            for r, m in zip(ids, masks):
                n = target - len(r)
                if n > 0:
                    if self.padding_side == "left":
                        r[:0], m[:0] = [pad] * n, [0] * n
                    else:
                        r.extend([pad] * n)
                        m.extend([0] * n)
        elif return_tensors is not None and len({len(r) for r in ids}) > 1:
            raise ValueError("tokenizer(): texts of different lengths need padding=True for return_tensors")
        if single and return_tensors is None:
            ids, masks = ids[0], masks[0]
        out = BatchEncoding(input_ids=_as(ids, return_tensors, "tokenizer()"))
        if return_attention_mask:
            out["attention_mask"] = _as(masks, return_tensors, "tokenizer()")
        return out

    # ---- decoding ----
    def decode(self, token_ids, skip_special_tokens=False, **kwargs):
        rows = _inputs.rows(token_ids, "decode")
        if len(rows) != 1:
            raise ValueError("decode: one sequence at a time (batch_decode takes several)")
        return self._tok.decode(rows[0], skip_special_tokens)

    def batch_decode(self, sequences, skip_special_tokens=False, **kwargs):
        return [self._tok.decode(r, skip_special_tokens) for r in _inputs.rows(sequences, "batch_decode")]

    def convert_ids_to_tokens(self, ids):
        if isinstance(ids, (int, np.integer)):
            return self._tok.id_to_token(int(ids))
        return [self._tok.id_to_token(i) for i in _inputs.rows(ids, "convert_ids_to_tokens")[0]]

    def convert_tokens_to_ids(self, tokens):
        if isinstance(tokens, str):
            return self._tok.token_to_id(tokens)
        return [self._tok.token_to_id(t) for t in tokens]

    def _stream_decoder(self, skip_special_tokens=False):
        return native.StreamDecoder(self._tok, skip_special_tokens)

    # ---- chat ----
    def apply_chat_template(self, conversation, tokenize=True, add_generation_prompt=False, return_tensors=None,
                            return_dict=False, chat_template=None, **kwargs):
        """The model's chat template rendered as transformers renders it (tokenize=False: the text;
        else its ids, encoded without adding special tokens, as transformers does)."""
        template = self._template
        if chat_template is not None:
            template = native.ChatTemplate.from_text(chat_template, self._template.special_tokens() if self._template else {})
        if template is None:
            raise ValueError(f"apply_chat_template: {self.name_or_path} carries no usable chat template "
                             f"(tokenizer_config.json chat_template, chat_template.jinja or GGUF "
                             f"tokenizer.chat_template): {self._template_error}")
        text = template.render(json.dumps(list(conversation)), add_generation_prompt, json.dumps(kwargs))
        if not tokenize:
            return text
        ids = self._tok.encode(text, False)
        if return_dict:
            return BatchEncoding(input_ids=_as([ids], return_tensors, "apply_chat_template") if return_tensors else ids,
                                 attention_mask=_as([[1] * len(ids)], return_tensors, "apply_chat_template")
                                 if return_tensors else [1] * len(ids))
        return _as([ids], return_tensors, "apply_chat_template") if return_tensors else ids


def _load_template(path):
    """(template, None), or (None, why): a tokenizer without a chat template is a tokenizer still;
    apply_chat_template raises with the loader's message."""
    try:
        return native.ChatTemplate.load(path), None
    except SporeError as e:
        return None, str(e)


def _single_gguf(path):
    """A directory holding no tokenizer.json but exactly one .gguf (as the embedded model's) names
    that file, which carries the tokenizer and the chat template."""
    if os.path.isdir(path) and not os.path.exists(os.path.join(path, "tokenizer.json")):
        ggufs = [f for f in os.listdir(path) if f.endswith(".gguf")]
        if len(ggufs) == 1:
            return os.path.join(path, ggufs[0])
    return path


class AutoTokenizer:
    @staticmethod
    def from_pretrained(pretrained_model_name_or_path, **kwargs):
        """A Hugging Face directory (tokenizer.json, tokenizer_config.json) or a GGUF file."""
        path = _single_gguf(os.fspath(pretrained_model_name_or_path))
        template, why = _load_template(path)
        tok = PreTrainedTokenizer(native.Tokenizer.from_file(path), template, path)
        tok._template_error = why
        return tok
