"""Hugging Face ``transformers`` language models ready for `import_torch`, from a config.

`causal_lm(family, **config)` builds a GPT-2, Llama or Mamba causal LM from a config only
(random weights, nothing downloaded) and wraps it so that ``forward(input_ids)`` returns
the logits. Call it inside ``torch._subclasses.fake_tensor.FakeTensorMode`` to build a
full-size model without allocating its weights.

Attention is exported as one ``scaled_dot_product_attention(..., is_causal=True)`` per
layer: the models get an attention implementation, ``rlx_causal``, that is transformers'
own SDPA path with a mask function that returns no mask. (Under ``torch.export``,
transformers otherwise materialises the causal mask with index arithmetic over the batch,
which the IR has no ops for; ``attention {causal = true}`` is the same computation for
unpadded batches, which is what a memory plan is about.)
"""

from __future__ import annotations

import torch

FAMILIES = ("gpt2", "llama", "mamba")
ATTENTION = "rlx_causal"


class LogitsOnly(torch.nn.Module):
    """``forward(input_ids) -> logits`` of a transformers causal LM (no cache)."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, use_cache=False).logits


def register_causal_attention() -> None:
    """Register the ``rlx_causal`` attention implementation (idempotent)."""
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    AttentionInterface.register(ATTENTION, sdpa_attention_forward)
    AttentionMaskInterface.register(ATTENTION, _no_mask)


def _no_mask(*args, **kwargs):
    return None


def causal_lm(family: str, **config) -> LogitsOnly:
    """A `family` causal LM built from `config` (transformers' config keywords), in eval mode."""
    import transformers

    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; one of {', '.join(FAMILIES)}")
    register_causal_attention()
    if family == "gpt2":
        config.setdefault("bos_token_id", 0)
        config.setdefault("eos_token_id", 0)
        model = transformers.GPT2LMHeadModel(transformers.GPT2Config(attn_implementation=ATTENTION, **config))
    elif family == "llama":
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(attn_implementation=ATTENTION, **config))
    else:
        model = transformers.MambaForCausalLM(transformers.MambaConfig(**config))
    return LogitsOnly(model.eval())
