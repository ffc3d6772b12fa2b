"""The corpus's models: small configs of today's architectures, built from the constructors
of torchvision, timm and transformers, with random weights (nothing is downloaded).

`MODELS` maps a model's name to its `CorpusModel` (family, package, which ONNX exporter the
corpus uses for it, and its builder); `build(name)` returns an `Example`:

- ``module``: the ``nn.Module`` in eval mode, returning one tensor (transformers' models
  are wrapped so that ``module(*inputs)`` is the logits or the last hidden state);
- ``inputs``: example inputs, a tuple of tensors with batch 2 (the same every call);
- ``input_names``: one name per input (``pixel_values``, ``input_ids``, ...);
- ``output_name``: the name of the one output;
- ``batch_axis``: the dynamic batch axis of every input and of the output (always 0).

Every parameter is zeroed, then refilled from a fixed seed with small random values
(`refill`): a zero-initialised head or layer scale would otherwise make any importer match
trivially. Batch-norm running statistics are refilled too (variances stay positive).

Configs are small (two layers, widths of 16 to 128, images of 32x32 or 64x64, vocabularies
of 256) so that each ONNX file is at most a few MB and runs in the NumPy interpreter in
about a second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import Callable

import torch

SEED = 0
BATCH = 2
IMAGE = 64
SMALL_IMAGE = 32
SEQUENCE = 16
VOCAB = 256
CLASSES = 10


@dataclass(frozen=True)
class Example:
    """A built corpus model and the inputs it is exported and checked with."""

    module: torch.nn.Module
    inputs: tuple
    input_names: tuple
    output_name: str
    batch_axis: int = 0


@dataclass(frozen=True)
class CorpusModel:
    """One corpus entry: what it is, and how to build it."""

    name: str
    family: str
    package: str
    exporter: str  # "torchscript" (torch.onnx.export dynamo=False) or "dynamo"
    builder: Callable[[], Example]


def build(name: str) -> Example:
    """The model `name` with its refilled weights and its example inputs."""
    if name not in MODELS:
        raise KeyError(f"no corpus model {name!r}; one of {', '.join(MODELS)}")
    return MODELS[name].builder()


# --- weights and inputs ------------------------------------------------------------------


def refill(module: torch.nn.Module, seed: int = SEED) -> torch.nn.Module:
    """Zero every parameter, then fill it with small random values from `seed`; refill
    batch-norm running statistics. Returns `module` in eval mode."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in module.named_parameters():
            parameter.zero_()
            parameter.copy_(_random_parameter(name, parameter, generator))
        for name, buffer in module.named_buffers():
            if name.endswith("running_var"):
                buffer.copy_(0.5 + torch.rand(buffer.shape, generator=generator))
            elif name.endswith("running_mean"):
                buffer.copy_(0.1 * torch.randn(buffer.shape, generator=generator))
    return module.eval()


def _random_parameter(name: str, parameter: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    noise = torch.randn(parameter.shape, generator=generator, dtype=parameter.dtype)
    if parameter.dim() >= 2:
        # Kaiming-like scale keeps activations near unit size through a few layers.
        fan_in = parameter.numel() // parameter.shape[0]
        return noise / math.sqrt(max(fan_in, 1))
    leaf = name.rsplit(".", 1)[-1]
    if leaf in ("weight", "gamma", "scale", "g") or leaf.endswith("scale"):
        return 1.0 + 0.1 * noise  # norm scales and layer scales: near one, not exactly
    return 0.1 * noise


def _generator(offset: int = 1) -> torch.Generator:
    return torch.Generator().manual_seed(SEED + offset)


def images(size: int = IMAGE, channels: int = 3) -> torch.Tensor:
    return torch.randn(BATCH, channels, size, size, generator=_generator())


def tokens(vocab: int = VOCAB, length: int = SEQUENCE) -> torch.Tensor:
    # Ids from 2 on: id 0 and 1 are padding in some of the configs.
    return torch.randint(2, vocab, (BATCH, length), generator=_generator())


def vision(module: torch.nn.Module, size: int = IMAGE, output: str = "logits") -> Example:
    return Example(refill(module), (images(size),), ("pixel_values",), output)


# --- Hugging Face models return one tensor --------------------------------------------------


class SelectOutput(torch.nn.Module):
    """``forward(*inputs)`` calls a transformers model with its inputs by name and returns
    one field of its output (``logits``, ``last_hidden_state``)."""

    def __init__(self, model: torch.nn.Module, input_names: tuple, field: str, **fixed):
        super().__init__()
        self.model = model
        self.input_names = input_names
        self.field = field
        self.fixed = fixed

    def forward(self, first, second=None):
        # Named positional arguments (not *inputs): torch.export matches dims to them one by one.
        inputs = (first,) if second is None else (first, second)
        return getattr(self.model(**dict(zip(self.input_names, inputs)), **self.fixed), self.field)


def hugging_face(model: torch.nn.Module, inputs: tuple, input_names: tuple, field: str, **fixed) -> Example:
    refill(model)
    return Example(SelectOutput(model, input_names, field, **fixed).eval(), inputs, input_names, field)


def text_encoder(model: torch.nn.Module, with_mask: bool = False) -> Example:
    ids = tokens()
    if not with_mask:
        return hugging_face(model, (ids,), ("input_ids",), "last_hidden_state")
    mask = torch.ones_like(ids)
    mask[1, SEQUENCE - 4:] = 0  # the second sequence is padded
    return hugging_face(model, (ids, mask), ("input_ids", "attention_mask"), "last_hidden_state")


def causal_lm(model: torch.nn.Module) -> Example:
    return hugging_face(model, (tokens(),), ("input_ids",), "logits", use_cache=False)


# Shared by the small text configs: 2 layers, hidden 64, 4 heads, feed-forward 128.
TEXT = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
            max_position_embeddings=64)


# --- CNNs --------------------------------------------------------------------------------


def resnet() -> Example:
    from timm.models.resnet import BasicBlock, ResNet

    return vision(ResNet(BasicBlock, [1, 1, 1, 1], num_classes=CLASSES, channels=(16, 32, 64, 128), stem_width=16))


def resnext() -> Example:
    from timm.models.resnet import Bottleneck, ResNet

    return vision(ResNet(Bottleneck, [1, 1, 1, 1], num_classes=CLASSES, channels=(16, 32, 64, 128), stem_width=16,
                         cardinality=4, base_width=8, stem_type="deep", avg_down=True))


def mobilenet_v2() -> Example:
    from torchvision.models import mobilenet_v2 as constructor

    return vision(constructor(width_mult=0.25, num_classes=CLASSES))


def mobilenet_v3_small() -> Example:
    from torchvision.models.mobilenetv3 import MobileNetV3, _mobilenet_v3_conf

    settings, _ = _mobilenet_v3_conf("mobilenet_v3_small", width_mult=0.5)
    return vision(MobileNetV3(settings, last_channel=128, num_classes=CLASSES))


def mobilenet_v3_large() -> Example:
    from torchvision.models.mobilenetv3 import MobileNetV3, _mobilenet_v3_conf

    settings, _ = _mobilenet_v3_conf("mobilenet_v3_large", width_mult=0.25, reduced_tail=True)
    return vision(MobileNetV3(settings, last_channel=128, num_classes=CLASSES))


def efficientnet() -> Example:
    from torchvision.models.efficientnet import EfficientNet, MBConvConfig

    config = partial(MBConvConfig, width_mult=0.25, depth_mult=0.5)
    settings = [config(1, 3, 1, 32, 16, 1), config(6, 3, 2, 16, 24, 2), config(6, 5, 2, 24, 40, 2),
                config(6, 3, 2, 40, 80, 3), config(6, 5, 1, 80, 112, 3)]
    return vision(EfficientNet(settings, dropout=0.0, num_classes=CLASSES, last_channel=128))


def efficientnet_timm() -> Example:
    import timm

    return vision(timm.create_model("test_efficientnet", pretrained=False, num_classes=CLASSES))


def regnet() -> Example:
    from torchvision.models.regnet import BlockParams, RegNet

    params = BlockParams.from_init_params(depth=6, w_0=16, w_a=8.0, w_m=2.0, group_width=8, se_ratio=0.25)
    return vision(RegNet(params, num_classes=CLASSES, stem_width=16))


def convnext() -> Example:
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt

    stages = [CNBlockConfig(16, 32, 1), CNBlockConfig(32, 64, 1), CNBlockConfig(64, 128, 1), CNBlockConfig(128, None, 1)]
    return vision(ConvNeXt(stages, num_classes=CLASSES))


def densenet() -> Example:
    from torchvision.models.densenet import DenseNet

    return vision(DenseNet(growth_rate=8, block_config=(2, 2, 2, 2), num_init_features=16, num_classes=CLASSES))


def shufflenet() -> Example:
    from torchvision.models.shufflenetv2 import ShuffleNetV2

    return vision(ShuffleNetV2([2, 2, 2], [8, 16, 32, 64, 128], num_classes=CLASSES))


def squeezenet() -> Example:
    from torchvision.models import squeezenet1_1

    return vision(squeezenet1_1(num_classes=CLASSES))


def mnasnet() -> Example:
    from torchvision.models.mnasnet import MNASNet

    return vision(MNASNet(0.25, num_classes=CLASSES))


# --- vision transformers -----------------------------------------------------------------


def vit() -> Example:
    from torchvision.models.vision_transformer import VisionTransformer

    return vision(VisionTransformer(image_size=SMALL_IMAGE, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64,
                                    mlp_dim=128, num_classes=CLASSES), SMALL_IMAGE)


def vit_timm() -> Example:
    from timm.models.vision_transformer import VisionTransformer

    return vision(VisionTransformer(img_size=SMALL_IMAGE, patch_size=8, embed_dim=64, depth=2, num_heads=4,
                                    mlp_ratio=2.0, num_classes=CLASSES, init_values=1e-5, reg_tokens=2), SMALL_IMAGE)


def deit() -> Example:
    from timm.models.deit import VisionTransformerDistilled

    return vision(VisionTransformerDistilled(img_size=SMALL_IMAGE, patch_size=8, embed_dim=64, depth=2, num_heads=4,
                                             mlp_ratio=2.0, num_classes=CLASSES), SMALL_IMAGE)


def swin() -> Example:
    from torchvision.models.swin_transformer import SwinTransformer

    return vision(SwinTransformer(patch_size=[2, 2], embed_dim=16, depths=[2, 2], num_heads=[2, 4], window_size=[4, 4],
                                  stochastic_depth_prob=0.0, num_classes=CLASSES), SMALL_IMAGE)


def swin_timm() -> Example:
    from timm.models.swin_transformer import SwinTransformer

    return vision(SwinTransformer(img_size=SMALL_IMAGE, patch_size=2, window_size=4, embed_dim=16, depths=(2, 2),
                                  num_heads=(2, 4), drop_path_rate=0.0, num_classes=CLASSES), SMALL_IMAGE)


def mlp_mixer() -> Example:
    from timm.models.mlp_mixer import MlpMixer

    return vision(MlpMixer(num_classes=CLASSES, img_size=SMALL_IMAGE, patch_size=8, num_blocks=2, embed_dim=64),
                  SMALL_IMAGE)


def mobilevit() -> Example:
    import transformers

    config = transformers.MobileViTConfig(image_size=IMAGE, patch_size=2, hidden_sizes=[32, 48, 64],
                                          neck_hidden_sizes=[8, 16, 24, 24, 32, 40, 64], num_attention_heads=2,
                                          num_labels=CLASSES)
    model = transformers.MobileViTForImageClassification(config)
    return hugging_face(model, (images(),), ("pixel_values",), "logits")


def levit() -> Example:
    from timm.models.levit import Levit

    return vision(Levit(img_size=IMAGE, num_classes=CLASSES, embed_dim=(32, 48, 64), key_dim=8, depth=(1, 1, 1),
                        num_heads=(2, 3, 4)))


# --- encoders ----------------------------------------------------------------------------


def bert() -> Example:
    import transformers

    return text_encoder(transformers.BertModel(transformers.BertConfig(**TEXT), add_pooling_layer=False),
                        with_mask=True)


def roberta() -> Example:
    import transformers

    return text_encoder(transformers.RobertaModel(transformers.RobertaConfig(**TEXT), add_pooling_layer=False))


def distilbert() -> Example:
    import transformers

    config = transformers.DistilBertConfig(vocab_size=VOCAB, dim=64, n_layers=2, n_heads=4, hidden_dim=128,
                                           max_position_embeddings=64)
    return text_encoder(transformers.DistilBertModel(config))


def t5_encoder() -> Example:
    import transformers

    config = transformers.T5Config(vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4)
    return text_encoder(transformers.T5EncoderModel(config))


def whisper_encoder() -> Example:
    import transformers
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    config = transformers.WhisperConfig(vocab_size=VOCAB, num_mel_bins=16, d_model=64, encoder_layers=2,
                                        encoder_attention_heads=4, encoder_ffn_dim=128, max_source_positions=16,
                                        pad_token_id=0, bos_token_id=0, eos_token_id=0, decoder_start_token_id=0)
    features = torch.randn(BATCH, 16, 32, generator=_generator())
    return hugging_face(WhisperEncoder(config), (features,), ("input_features",), "last_hidden_state")


def clip_vision() -> Example:
    import transformers

    config = transformers.CLIPVisionConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                           num_attention_heads=4, image_size=SMALL_IMAGE, patch_size=8)
    model = transformers.CLIPVisionModel(config)
    return hugging_face(model, (images(SMALL_IMAGE),), ("pixel_values",), "last_hidden_state")


# --- decoder-only LLMs and state-space ---------------------------------------------------


def gpt2() -> Example:
    import transformers

    config = transformers.GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=64, n_layer=2, n_head=4,
                                     bos_token_id=0, eos_token_id=0)
    return causal_lm(transformers.GPT2LMHeadModel(config))


def llama() -> Example:
    import transformers

    return causal_lm(transformers.LlamaForCausalLM(transformers.LlamaConfig(**TEXT, num_key_value_heads=2)))


def mistral() -> Example:
    import transformers

    config = transformers.MistralConfig(**TEXT, num_key_value_heads=2, sliding_window=8)
    return causal_lm(transformers.MistralForCausalLM(config))


def qwen2() -> Example:
    import transformers

    return causal_lm(transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**TEXT, num_key_value_heads=2)))


def phi() -> Example:
    import transformers

    config = transformers.PhiConfig(**TEXT, partial_rotary_factor=0.5)
    return causal_lm(transformers.PhiForCausalLM(config))


def gemma() -> Example:
    import transformers

    config = transformers.GemmaConfig(**TEXT, num_key_value_heads=1, head_dim=16)
    return causal_lm(transformers.GemmaForCausalLM(config))


def mamba() -> Example:
    import transformers

    config = transformers.MambaConfig(vocab_size=VOCAB, hidden_size=64, state_size=8, num_hidden_layers=2,
                                      expand=2, conv_kernel=4, use_mambapy=False)
    return causal_lm(transformers.MambaForCausalLM(config))


# name: (family, package, exporter, builder)
_TABLE = {
    "resnet": ("cnn", "timm", "dynamo", resnet),
    "resnext": ("cnn", "timm", "torchscript", resnext),
    "mobilenet_v2": ("cnn", "torchvision", "torchscript", mobilenet_v2),
    "mobilenet_v3_small": ("cnn", "torchvision", "torchscript", mobilenet_v3_small),
    "mobilenet_v3_large": ("cnn", "torchvision", "dynamo", mobilenet_v3_large),
    "efficientnet": ("cnn", "torchvision", "torchscript", efficientnet),
    "efficientnet_timm": ("cnn", "timm", "torchscript", efficientnet_timm),
    "regnet": ("cnn", "torchvision", "torchscript", regnet),
    "convnext": ("cnn", "torchvision", "torchscript", convnext),
    "densenet": ("cnn", "torchvision", "torchscript", densenet),
    "shufflenet": ("cnn", "torchvision", "torchscript", shufflenet),
    "squeezenet": ("cnn", "torchvision", "torchscript", squeezenet),
    "mnasnet": ("cnn", "torchvision", "torchscript", mnasnet),
    "vit": ("vision-transformer", "torchvision", "dynamo", vit),
    "vit_timm": ("vision-transformer", "timm", "torchscript", vit_timm),
    "deit": ("vision-transformer", "timm", "torchscript", deit),
    "swin": ("vision-transformer", "torchvision", "torchscript", swin),
    "swin_timm": ("vision-transformer", "timm", "torchscript", swin_timm),
    "mlp_mixer": ("vision-transformer", "timm", "torchscript", mlp_mixer),
    "mobilevit": ("vision-transformer", "transformers", "torchscript", mobilevit),
    "levit": ("vision-transformer", "timm", "torchscript", levit),
    "bert": ("encoder", "transformers", "torchscript", bert),
    "roberta": ("encoder", "transformers", "torchscript", roberta),
    "distilbert": ("encoder", "transformers", "dynamo", distilbert),
    "t5_encoder": ("encoder", "transformers", "torchscript", t5_encoder),
    "whisper_encoder": ("encoder", "transformers", "torchscript", whisper_encoder),
    "clip_vision": ("encoder", "transformers", "torchscript", clip_vision),
    "gpt2": ("decoder-llm", "transformers", "dynamo", gpt2),
    "llama": ("decoder-llm", "transformers", "dynamo", llama),
    "mistral": ("decoder-llm", "transformers", "dynamo", mistral),
    "qwen2": ("decoder-llm", "transformers", "dynamo", qwen2),
    "phi": ("decoder-llm", "transformers", "dynamo", phi),
    "gemma": ("decoder-llm", "transformers", "dynamo", gemma),
    "mamba": ("state-space", "transformers", "dynamo", mamba),
}

MODELS: dict[str, CorpusModel] = {name: CorpusModel(name, *row) for name, row in _TABLE.items()}
FAMILIES = ("cnn", "vision-transformer", "encoder", "decoder-llm", "state-space")
