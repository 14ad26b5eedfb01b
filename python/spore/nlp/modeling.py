"""AutoModelForCausalLM in transformers' / MindNLP's spelling over Spore's LLM engine (C++:
spore/nlp/model.h, generate.h; NOTE [Python NLP]): from_pretrained loads a Hugging Face
directory or a GGUF file as the CLI does, generate runs the engine's batched loop, and calling
the model returns an output with .loss and .logits (inference here; spore.nlp.peft's model
is the differentiable one)."""
import os

import numpy as np

from .._spore import Tensor
from . import _inputs, generation
from ._native import native


class ModelConfig:
    """The model's config as attributes (hidden_size, num_hidden_layers, ...), read-only."""

    def __init__(self, values):
        self.__dict__.update(values)

    def to_dict(self):
        return dict(self.__dict__)

    def __repr__(self):
        return f"ModelConfig({self.__dict__})"


class CausalLMOutput:
    """transformers' CausalLMOutputWithPast: .loss (None without labels) and .logits [B, S, vocab].
    The logits are computed when first read (training reads only the loss)."""

    def __init__(self, loss, logits_fn):
        self.loss = loss
        self._logits_fn = logits_fn
        self._logits = None

    @property
    def logits(self):
        if self._logits is None:
            self._logits = self._logits_fn()
        return self._logits

    def __getitem__(self, key):
        if isinstance(key, str):
            return getattr(self, key)
        return ((self.loss, self.logits) if self.loss is not None else (self.logits,))[key]

    def keys(self):
        return (["loss"] if self.loss is not None else []) + ["logits"]


def batch(input_ids, attention_mask, labels):
    """Rows of the sequences' ids (padding removed by the mask) and per row the flags of tokens
    counted by the loss (transformers' shift: label i is predicted from position i - 1; -100 is
    ignored; labels must equal the ids they sit on, which is what causal LM fine-tuning passes)."""
    ids = _inputs.rows(input_ids, "input_ids")
    if ids is None:
        raise ValueError("the model needs input_ids")
    mask = _inputs.rows(attention_mask, "attention_mask")
    lab = _inputs.rows(labels, "labels")
    _inputs.check_like(ids, mask, "input_ids", "attention_mask")
    _inputs.check_like(ids, lab, "input_ids", "labels")
    out = []
    for i, row in enumerate(ids):
        start, end = _inputs.span(mask[i], i) if mask is not None else (0, len(row))
        flags = None
        if lab is not None:
            flags = [0] * (end - start)
            for j in range(start + 1, end):
                label = lab[i][j]
                if label == -100:
                    continue
                if label != row[j]:
                    raise ValueError(f"labels[{i}][{j}] is {label} but input_ids[{i}][{j}] is {row[j]}: causal LM "
                                     f"labels are the input ids (shifted inside the model), -100 where ignored")
                flags[j - start] = 1
        out.append((row[start:end], flags))
    return ids, out


def _mean_nll(logits_rows, segments):
    """Mean negative log-likelihood of the flagged tokens (float64 on the host: inference)."""
    total, count = 0.0, 0
    for lg, (ids, flags) in zip(logits_rows, segments):
        lg = lg.astype(np.float64)
        for j, f in enumerate(flags):
            if f:
                row = lg[j - 1]
                m = row.max()
                total += m + np.log(np.exp(row - m).sum()) - row[ids[j]]
                count += 1
    if count == 0:
        raise ValueError("labels: every label is -100 (nothing to compute a loss over)")
    return Tensor(np.asarray(total / count, dtype=np.float32))


class PreTrainedModelForCausalLM:
    """What AutoModelForCausalLM.from_pretrained returns: the engine's model, frozen."""

    def __init__(self, loaded, name_or_path):
        self._loaded = loaded
        self.name_or_path = name_or_path
        self.config = ModelConfig(loaded.config)
        defaults = loaded.generation_defaults
        eos = self.config.eos_token_id
        self.generation_config = generation.GenerationConfig(
            **defaults, eos_token_id=(eos[0] if len(eos) == 1 else eos) if eos else None,
            bos_token_id=self.config.bos_token_id)
        self.training = False

    # ---- modes (torch's and MindSpore's spellings) ----
    def train(self, mode=True):
        self.training = bool(mode)
        return self

    def eval(self):
        return self.train(False)

    def set_train(self, mode=True):
        return self.train(mode)

    def trainable_params(self):
        return []

    def parameters(self):
        return self.trainable_params()

    def num_parameters(self, only_trainable=False):
        return 0 if only_trainable else int(self._loaded.num_parameters())

    # ---- hooks the PEFT model overrides ----
    def _engine_adapters(self):
        return []

    def _row_logits(self, ids):
        return self._loaded.logits(ids, self._engine_adapters())

    # ---- forward ----
    def __call__(self, input_ids=None, attention_mask=None, labels=None, **kwargs):
        for ignored in ("use_cache", "return_dict", "output_attentions", "output_hidden_states"):
            kwargs.pop(ignored, None)
        if kwargs:
            raise TypeError(f"{type(self).__name__}(): unsupported arguments {sorted(kwargs)}")
        full, segments = batch(input_ids, attention_mask, labels)
        loss = None
        if labels is not None:
            loss = _mean_nll([self._row_logits(ids).asnumpy() for ids, _ in segments], segments)
        # Every row's logits over its whole width (padding too, as transformers computes them).
        return CausalLMOutput(loss, lambda: Tensor(np.stack([self._row_logits(r).asnumpy() for r in full])))

    forward = __call__
    construct = __call__

    # ---- generation ----
    def _prompts(self, input_ids, attention_mask):
        ids = _inputs.rows(input_ids, "generate: input_ids")
        if ids is None:
            raise ValueError("generate: give input_ids (tokenizer(text, return_tensors='ms').input_ids)")
        mask = _inputs.rows(attention_mask, "generate: attention_mask")
        _inputs.check_like(ids, mask, "input_ids", "attention_mask")
        prompts = []
        for i, row in enumerate(ids):
            start, end = _inputs.span(mask[i], i) if mask is not None else (0, len(row))
            prompts.append(row[start:end])
        return ids, prompts

    def generate(self, input_ids=None, attention_mask=None, generation_config=None, streamer=None, inputs=None,
                 **kwargs):
        """input_ids [B, S] (or a list) -> Tensor [B, S + new]: each row's prompt (as given, with its
        padding) followed by its generated ids (an EOS included), shorter rows padded with
        pad_token_id (else the EOS). Sampling: do_sample, temperature, top_k, top_p, min_p,
        repetition_penalty, presence_penalty, frequency_penalty, seed; max_new_tokens or
        max_length; stop_strings (or stop); eos_token_id; ignore_eos. streamer: transformers'
        put/end protocol (TextStreamer, TextIteratorStreamer), batch size 1."""
        if inputs is not None and input_ids is None:
            input_ids = inputs
        config = generation_config or self.generation_config
        pad = kwargs.pop("pad_token_id", config.pad_token_id)
        ids, prompts = self._prompts(input_ids, attention_mask)
        opts, _ = generation.engine_options(config, kwargs, max(len(p) for p in prompts))
        on_token = None
        if streamer is not None:
            if len(prompts) != 1:
                raise ValueError("generate: a streamer needs batch size 1")
            streamer.put(_inputs.tensor(prompts))
            on_token = lambda _i, token: streamer.put(_inputs.tensor([token]))  # noqa: E731
        try:
            new = generation.run(self._loaded, self._engine_adapters(), prompts, opts, on_token)
        finally:
            if streamer is not None:
                streamer.end()
        if pad is None:
            eos = opts.get("eos_ids") or self.config.eos_token_id or [0]
            pad = eos[0]
        width = max(len(r) + len(n) for r, n in zip(ids, new))
        return _inputs.tensor([r + n + [pad] * (width - len(r) - len(n)) for r, n in zip(ids, new)])

    def stream_generate(self, input_ids=None, attention_mask=None, generation_config=None, **kwargs):
        """The text of the first row's continuation, piece by piece as the engine makes it (complete
        UTF-8, stop strings held back and never yielded); other rows run in the same batch."""
        ids, prompts = self._prompts(input_ids, attention_mask)
        opts, _ = generation.engine_options(generation_config or self.generation_config, kwargs,
                                            max(len(p) for p in prompts))
        for i, _token, text in generation.events(self._loaded, self._engine_adapters(), prompts, opts):
            if i == 0 and text:
                yield text


class AutoModelForCausalLM:
    @staticmethod
    def from_pretrained(pretrained_model_name_or_path, allow_unverified=False, numerics="auto", **kwargs):
        """A Hugging Face directory (config.json + safetensors) or a GGUF file, weights frozen in
        their stored type (ms_dtype / torch_dtype are accepted and have no effect: the engine
        computes in float32 over F32/F16/BF16/quantized weights). numerics: "auto", "reference"
        (float32 transformers) or "ggml" (llama.cpp's CPU rounding; the default for GGUF)."""
        for ignored in ("ms_dtype", "torch_dtype", "dtype", "low_cpu_mem_usage", "device_map", "trust_remote_code"):
            kwargs.pop(ignored, None)
        if kwargs:
            raise TypeError(f"from_pretrained: unsupported arguments {sorted(kwargs)}")
        path = os.fspath(pretrained_model_name_or_path)
        return PreTrainedModelForCausalLM(native.LoadedModel.load(path, allow_unverified, numerics), path)
