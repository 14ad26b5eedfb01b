"""PEFT's LoRA in its own spelling (LoraConfig, get_peft_model, PeftModel.save_pretrained /
from_pretrained, print_trainable_parameters) over Spore's C++ LoRA training path (spore_finetune,
NOTE [LoRA training]; NOTE [Python NLP]):

    model = get_peft_model(AutoModelForCausalLM.from_pretrained(path), LoraConfig(r=8, lora_alpha=16))
    grad_fn = spore.value_and_grad(lambda ids, labels: model(input_ids=ids, labels=labels).loss,
                                   None, model.trainable_params())

The adapters are Parameters of the C++ model: the loss is its differentiable nll_sum, the
framework's optimizers update them in place, and save_pretrained is its PEFT writer."""
import json
import os
import tempfile

from .. import context, ops
from .._spore import SporeValueError, UnsupportedError
from . import modeling
from ._native import native


class TaskType:
    CAUSAL_LM = "CAUSAL_LM"


# PEFT's default target_modules for the families the training forward runs.
_DEFAULT_TARGETS = ["q_proj", "v_proj"]


class LoraConfig:
    """PEFT's LoraConfig: r, lora_alpha, lora_dropout, target_modules (a list, a comma-separated
    string, "all-linear"; None: q_proj and v_proj as PEFT's default for these families). Options
    the engine does not train raise UnsupportedError naming them."""

    def __init__(self, r=8, lora_alpha=8, lora_dropout=0.0, target_modules=None, task_type=TaskType.CAUSAL_LM,
                 bias="none", fan_in_fan_out=False, use_rslora=False, use_dora=False, modules_to_save=None,
                 init_lora_weights=True, layers_to_transform=None, inference_mode=False, **kwargs):
        unsupported = {"bias": bias != "none", "fan_in_fan_out": bool(fan_in_fan_out), "use_rslora": bool(use_rslora),
                       "use_dora": bool(use_dora), "modules_to_save": bool(modules_to_save),
                       "init_lora_weights": init_lora_weights is not True,
                       "layers_to_transform": layers_to_transform is not None}
        bad = [k for k, v in unsupported.items() if v] + sorted(kwargs)
        if bad:
            raise UnsupportedError(f"LoraConfig: {', '.join(bad)} not supported by Spore's LoRA training (it trains "
                                   f"A and B of plain LoRA on q/k/v/o/gate/up/down projections, PEFT's defaults)")
        if task_type not in (None, TaskType.CAUSAL_LM):
            raise UnsupportedError(f"LoraConfig: task_type {task_type!r}; only CAUSAL_LM")
        if target_modules is None:
            targets = list(_DEFAULT_TARGETS)
        else:
            text = target_modules if isinstance(target_modules, str) else ",".join(target_modules)
            try:
                targets = native.parse_lora_targets(text)
            except SporeValueError as e:  # the C++ parser speaks of the CLI's flag
                raise SporeValueError(f"LoraConfig: target_modules={target_modules!r}: {e}") from None
        if not isinstance(r, int) or r < 1:
            raise ValueError(f"LoraConfig: r must be a positive int, got {r!r}")
        self.r, self.lora_alpha, self.lora_dropout = r, float(lora_alpha), float(lora_dropout)
        self.target_modules = targets
        self.task_type = task_type
        self.inference_mode = inference_mode
        self.peft_type = "LORA"

    def to_dict(self):
        return {"peft_type": self.peft_type, "task_type": self.task_type, "r": self.r, "lora_alpha": self.lora_alpha,
                "lora_dropout": self.lora_dropout, "target_modules": list(self.target_modules)}


class PeftModel(modeling.PreTrainedModelForCausalLM):
    """The base model with LoRA adapters: trainable (get_peft_model) or loaded for inference
    (PeftModel.from_pretrained)."""

    def __init__(self, base, config, lora=None, adapter=None):
        super().__init__(base._loaded, base.name_or_path)
        self.base_model = base
        self.peft_config = {"default": config}
        self.training = base.training
        self._lora = lora          # native.LoraModel: the C++ training model (trainable)
        self._adapter = adapter    # native.LoraAdapter: a loaded adapter file (inference)
        self._params = lora.parameters() if lora is not None else []
        self._steps = 0
        self._seed = context.get_seed()

    def trainable_params(self):
        return list(self._params)

    def get_nb_trainable_parameters(self):
        trainable = sum(int(p.size) for p in self._params)
        return trainable, self.base_model.num_parameters() + trainable

    def print_trainable_parameters(self):
        trainable, total = self.get_nb_trainable_parameters()
        print(f"trainable params: {trainable:,d} || all params: {total:,d} || trainable%: {100 * trainable / total:.4f}")

    def _engine_adapters(self):
        if self._lora is not None:  # the adapters' current values, through the engine's loader
            return [(self._lora.engine_adapter(self._loaded), 1.0)]
        return [(self._adapter, 1.0)]

    def __call__(self, input_ids=None, attention_mask=None, labels=None, **kwargs):
        if self._lora is None:
            return super().__call__(input_ids, attention_mask, labels, **kwargs)
        for ignored in ("use_cache", "return_dict", "output_attentions", "output_hidden_states"):
            kwargs.pop(ignored, None)
        if kwargs:
            raise TypeError(f"PeftModel(): unsupported arguments {sorted(kwargs)}")
        full, segments = modeling.batch(input_ids, attention_mask, labels)
        loss = None
        if labels is not None:
            # Dropout masks differ at each training call (a key per call) and are off in eval mode.
            key = 0
            if self.training and self.peft_config["default"].lora_dropout > 0:
                self._steps += 1
                key = (self._seed * 1000003 + self._steps) & 0xFFFFFFFFFFFF or 1
            total, count = None, 0
            for ids, flags in segments:
                n = sum(flags)
                if n == 0:
                    continue
                nll = self._lora.nll_sum(ids, flags, key)
                total = nll if total is None else total + nll
                count += n
            if count == 0:
                raise ValueError("labels: every label is -100 (nothing to compute a loss over)")
            loss = total * (1.0 / count)
        lora = self._lora
        return modeling.CausalLMOutput(loss, lambda: ops.stack([lora.logits(r) for r in full], 0))

    forward = __call__
    construct = __call__

    def save_pretrained(self, save_directory, **kwargs):
        """adapter_config.json + adapter_model.safetensors under save_directory (created), PEFT's
        names and layout, written atomically; loads in PEFT, `spore generate --lora` and
        PeftModel.from_pretrained."""
        if self._lora is None:
            raise UnsupportedError("save_pretrained: this PeftModel was loaded from an adapter file; it is saved already")
        os.makedirs(save_directory, exist_ok=True)
        self._lora.save_peft(os.fspath(save_directory), self.name_or_path)

    def save_gguf(self, path):
        """The adapter as llama.cpp's GGUF LoRA (`spore serve --lora`, llama.cpp's --lora)."""
        self._lora.save_gguf(os.fspath(path))

    def gradient_checkpointing_enable(self, **kwargs):
        raise UnsupportedError("gradient_checkpointing_enable: the Python path differentiates one tape over the whole "
                               "forward; per-layer checkpointing is `spore finetune --gradient-checkpointing`")

    def enable_input_require_grads(self):
        """A no-op: the tape watches the adapters themselves, never needs the inputs' gradients."""

    def merge_and_unload(self, progressbar=False, safe_merge=False, adapter_names=None):
        """The base with the adapters baked in (W + alpha/r B A), as a plain model: `spore merge`
        (NOTE [LoRA merge]) writes the merged copy to a temporary folder in the base's own types
        (a quantised matrix is requantised: merge into an F16/F32 base for the exact update), the
        engine loads it, and the folder goes (the loaded model keeps what it mapped)."""
        if adapter_names not in (None, ["default"]):
            raise UnsupportedError("merge_and_unload: one adapter ('default') per PeftModel")
        base = self._loaded.path  # the file or directory the engine loaded (a GGUF inside a folder resolved)
        with tempfile.TemporaryDirectory(prefix="spore-merge-") as work:
            if self._lora is not None:
                adapter = os.path.join(work, "adapter")
                os.makedirs(adapter)
                self._lora.save_peft(adapter, self.name_or_path)
            else:
                adapter = self._adapter.path
            out = os.path.join(work, "merged.gguf" if self._loaded.format == "gguf" else "merged")
            native.merge_lora(base, [(adapter, 1.0)], out)
            merged = modeling.AutoModelForCausalLM.from_pretrained(out, numerics=self._loaded.numerics)
        merged.name_or_path = self.name_or_path
        return merged

    @classmethod
    def from_pretrained(cls, model, model_id, is_trainable=False, **kwargs):
        """An adapter directory (PEFT) or GGUF LoRA file on `model`: for inference, or with
        is_trainable=True to train on from its values. Its errors (shapes that do not fit the base,
        another architecture, ...) are the engine loader's."""
        path = os.fspath(model_id)
        adapter = model._loaded.load_lora(path)  # the engine's checks: shapes, architecture, format
        targets, rank, alpha = native.LoraModel.adapter_layout(adapter)
        dropout = 0.0
        cfg_file = os.path.join(path, "adapter_config.json") if os.path.isdir(path) else None
        if cfg_file and os.path.exists(cfg_file):
            with open(cfg_file, encoding="utf-8") as f:
                dropout = float(json.load(f).get("lora_dropout") or 0.0)
        config = LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=dropout, target_modules=targets,
                            inference_mode=not is_trainable)
        if not is_trainable:
            return cls(model, config, adapter=adapter)
        # Training goes on from the file's values: the engine's adapter holds them in the base's
        # row order, which is the training model's too (GGUF q/k rows included).
        lora = native.LoraModel(model.name_or_path, rank, alpha, dropout, targets, context.get_seed())
        lora.set_from_adapter(adapter)
        return cls(model, config, lora=lora)


def get_peft_model(model, peft_config, adapter_name="default"):
    """`model` with LoRA adapters on peft_config's projections of every layer: A Kaiming-uniform
    (seeded by spore.set_seed), B zeros, as PEFT initialises them."""
    if not isinstance(model, modeling.PreTrainedModelForCausalLM) or isinstance(model, PeftModel):
        raise TypeError("get_peft_model: pass the model AutoModelForCausalLM.from_pretrained returned")
    c = peft_config
    lora = native.LoraModel(model.name_or_path, c.r, c.lora_alpha, c.lora_dropout, c.target_modules,
                            context.get_seed())
    return PeftModel(model, c, lora=lora)


__all__ = ["LoraConfig", "TaskType", "PeftModel", "get_peft_model"]
