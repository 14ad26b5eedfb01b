"""model.generate in transformers' spelling over the engine's batched generation loop (C++:
spore/nlp/generate.h; NOTE [Python NLP]), and the streamers transformers users pass to it."""
import queue

from . import _inputs


class GenerationConfig:
    """The sampling settings generate reads; None: the model's generation_config.json, else the
    engine's default."""

    def __init__(self, **kwargs):
        self.max_new_tokens = kwargs.pop("max_new_tokens", None)
        self.max_length = kwargs.pop("max_length", None)
        self.do_sample = kwargs.pop("do_sample", False)
        for k in ("temperature", "top_k", "top_p", "min_p", "repetition_penalty", "eos_token_id",
                  "pad_token_id", "bos_token_id"):
            setattr(self, k, kwargs.pop(k, None))
        self.extra = kwargs

    def __repr__(self):
        return f"GenerationConfig({ {k: v for k, v in vars(self).items() if v is not None and k != 'extra'} })"


# transformers' names -> the engine's (GenerateOptions / SamplingOptions).
_ENGINE_NAMES = {"temperature": "temperature", "top_k": "top_k", "top_p": "top_p", "min_p": "min_p",
                 "repetition_penalty": "repetition_penalty", "presence_penalty": "presence_penalty",
                 "frequency_penalty": "frequency_penalty", "penalty_last_n": "penalty_last_n", "seed": "seed",
                 "ignore_eos": "ignore_eos"}


def engine_options(config, kwargs, prompt_len):
    """(engine option dict, max_new_tokens) from generate's keyword arguments."""
    opts = {}
    max_new = kwargs.pop("max_new_tokens", config.max_new_tokens)
    max_length = kwargs.pop("max_length", config.max_length)
    if max_new is None:
        max_new = max(1, max_length - prompt_len) if max_length is not None else 20  # transformers' default length 20
    if not isinstance(max_new, int) or max_new < 1:
        raise ValueError(f"generate: max_new_tokens must be a positive int, got {max_new!r}")
    opts["max_tokens"] = max_new
    do_sample = kwargs.pop("do_sample", config.do_sample)
    for name, engine_name in _ENGINE_NAMES.items():
        value = kwargs.pop(name, getattr(config, name, None))
        if value is not None:
            opts[engine_name] = value
    if not do_sample:
        opts["temperature"] = 0.0  # greedy, as transformers with do_sample=False
    stop = kwargs.pop("stop_strings", None)
    stop = kwargs.pop("stop", stop)
    if stop is not None:
        opts["stop"] = [stop] if isinstance(stop, str) else list(stop)
    eos = kwargs.pop("eos_token_id", config.eos_token_id)
    if eos is not None:
        opts["eos_ids"] = [eos] if isinstance(eos, int) else list(eos)
    for ignored in ("use_cache", "num_beams", "output_scores", "return_dict_in_generate", "synced_gpus"):
        value = kwargs.pop(ignored, None)
        if ignored == "num_beams" and value not in (None, 1):
            raise ValueError("generate: beam search is not supported (num_beams must be 1)")
        if ignored in ("output_scores", "return_dict_in_generate") and value:
            raise ValueError(f"generate: {ignored} is not supported")
    if kwargs:
        raise TypeError(f"generate: unsupported arguments {sorted(kwargs)}")
    return opts, max_new


def events(loaded, adapters, prompts, opts):
    """Runs every prompt on one engine (a slot each, one batched forward per step), yielding
    (prompt index, token or None, newly final text) as the steps produce them. The text is the
    engine's: complete UTF-8, held back while a stop string may still match."""
    from ._native import native
    cfg_max = loaded.config["max_position_embeddings"] or (1 << 30)
    context = min(max(len(p) for p in prompts) + opts["max_tokens"], cfg_max)
    engine = native.Engine(loaded, len(prompts), context)
    seq = {engine.add(p, opts, adapters): i for i, p in enumerate(prompts)}
    while not engine.idle():
        for s, token, _eos, text, finish, error in engine.step():
            if finish == "error":
                raise RuntimeError(f"generate: sequence {seq[s]} failed: {error}")
            if token is not None or text:
                yield seq[s], token, text


def run(loaded, adapters, prompts, opts, on_token=None):
    """The generated ids per prompt (an EOS token included, as transformers returns it);
    on_token(i, token) as they come."""
    out = [[] for _ in prompts]
    for i, token, _text in events(loaded, adapters, prompts, opts):
        if token is not None:
            out[i].append(token)
            if on_token is not None:
                on_token(i, token)
    return out


class BaseStreamer:
    """transformers' streamer protocol: put(ids) with the prompt first, then each new token; end()."""

    def put(self, value):
        raise NotImplementedError

    def end(self):
        raise NotImplementedError


class TextStreamer(BaseStreamer):
    """Prints the generated text as it comes (transformers' TextStreamer)."""

    def __init__(self, tokenizer, skip_prompt=False, skip_special_tokens=False, **decode_kwargs):
        self.tokenizer = tokenizer
        self.skip_prompt = skip_prompt
        self.skip_special_tokens = skip_special_tokens or decode_kwargs.get("skip_special_tokens", False)
        self._decoder = tokenizer._stream_decoder(self.skip_special_tokens)
        self._next_is_prompt = True

    def put(self, value):
        ids = _inputs.rows(value, "streamer.put")
        if len(ids) != 1:
            raise ValueError("TextStreamer only supports batch size 1")
        if self._next_is_prompt and self.skip_prompt:
            self._next_is_prompt = False
            return
        self._next_is_prompt = False
        text = "".join(self._decoder.push(i) for i in ids[0])
        if text:
            self.on_finalized_text(text)

    def end(self):
        self.on_finalized_text(self._decoder.finish(), stream_end=True)
        self._next_is_prompt = True

    def on_finalized_text(self, text, stream_end=False):
        print(text, flush=True, end="" if not stream_end else None)


class TextIteratorStreamer(TextStreamer):
    """Iterates over the text pieces while generate runs on another thread (transformers'):
        streamer = TextIteratorStreamer(tokenizer, skip_prompt=True)
        Thread(target=model.generate, kwargs=dict(**inputs, streamer=streamer)).start()
        for piece in streamer: ...
    The engine releases the GIL while it computes, so the loop runs alongside."""

    def __init__(self, tokenizer, skip_prompt=False, timeout=None, **decode_kwargs):
        super().__init__(tokenizer, skip_prompt, **decode_kwargs)
        self.text_queue = queue.Queue()
        self.timeout = timeout
        self._stop = object()

    def on_finalized_text(self, text, stream_end=False):
        if text:
            self.text_queue.put(text, timeout=self.timeout)
        if stream_end:
            self.text_queue.put(self._stop, timeout=self.timeout)

    def __iter__(self):
        return self

    def __next__(self):
        value = self.text_queue.get(timeout=self.timeout)
        if value is self._stop:
            raise StopIteration()
        return value
