"""Architectures outside the corpus, through both importers, each checked against its own
runtime: the ONNX route against onnxruntime on the same exported file, the PyTorch route
against eager PyTorch.

    python bench/unlisted_models.py                    # every model, a Markdown table
    python bench/unlisted_models.py --jobs 8           # in parallel, one process a model
    python bench/unlisted_models.py --models r3d_18 bloom --json out.json

None of these models is in examples/corpus, and none was chosen by looking at the importers:
they are the families a user brings that the corpus lacks (video, recurrent, segmentation,
relative-position encoders, parallel-attention and ALiBi decoders, state-space variants,
audio, and more CNNs and vision transformers). Each is built from its library's constructor
with a small config and random weights (examples/corpus/models.py: `refill`), exported with
``torch.onnx.export(dynamo=True)`` (today's default) for the ONNX route, and with
``torch.export`` by `import_torch` for the PyTorch route, batch 2. A route "matches" when
every output agrees within rtol 1e-3 and atol 1e-4 times the output's largest magnitude
(at least 1e-4); otherwise the row says "mismatch", or gives
the first line of the refusal ("refused"), or of the export's own failure ("no export",
counted apart: the exporter, not rlxir, stopped, or onnxruntime cannot run what it wrote).
Needs torch, torchvision, timm,
transformers, onnx and onnxruntime.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "corpus"))

import torch  # noqa: E402
from models import BATCH, CLASSES, SEQUENCE, VOCAB, Example, _generator, hugging_face, refill, tokens  # noqa: E402

RTOL, ATOL = 1e-3, 1e-4
SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)


def images(size: int = 64, channels: int = 3) -> torch.Tensor:
    return torch.randn(BATCH, channels, size, size, generator=_generator())


def classifier(module: torch.nn.Module, size: int = 64) -> Example:
    return Example(refill(module), (images(size),), ("pixel_values",), "logits")


class FirstOutput(torch.nn.Module):
    """The first tensor of a module whose output is a tuple or a dict."""

    def __init__(self, module: torch.nn.Module, key: str | None = None):
        super().__init__()
        self.module, self.key = module, key

    def forward(self, x):
        out = self.module(x)
        return out[self.key] if self.key is not None else out[0]


# --- video ---------------------------------------------------------------------------------
def video(constructor: str) -> Example:
    import torchvision

    module = getattr(torchvision.models.video, constructor)(num_classes=CLASSES)
    clip = torch.randn(BATCH, 3, 4, 32, 32, generator=_generator())
    return Example(refill(module), (clip,), ("video",), "logits")


def videomae() -> Example:
    import transformers

    config = transformers.VideoMAEConfig(image_size=32, patch_size=8, num_frames=4, tubelet_size=2, **SMALL,
                                         num_labels=CLASSES)
    frames = torch.randn(BATCH, 4, 3, 32, 32, generator=_generator())
    return hugging_face(transformers.VideoMAEForVideoClassification(config), (frames,), ("pixel_values",), "logits")


def timesformer() -> Example:
    import transformers

    config = transformers.TimesformerConfig(image_size=32, patch_size=8, num_frames=4, **SMALL, num_labels=CLASSES)
    frames = torch.randn(BATCH, 4, 3, 32, 32, generator=_generator())
    return hugging_face(transformers.TimesformerForVideoClassification(config), (frames,), ("pixel_values",),
                        "logits")


# --- recurrent -----------------------------------------------------------------------------
class SequenceClassifier(torch.nn.Module):
    """Embedding -> a torch.nn recurrent layer -> a linear head on the last step."""

    def __init__(self, kind: str, bidirectional: bool, layers: int):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, 32)
        self.rnn = getattr(torch.nn, kind)(32, 48, num_layers=layers, batch_first=True, bidirectional=bidirectional)
        self.head = torch.nn.Linear(48 * (2 if bidirectional else 1), CLASSES)

    def forward(self, ids):
        out = self.rnn(self.embed(ids))[0]
        return self.head(out[:, -1])


def recurrent(kind: str, bidirectional: bool = False, layers: int = 1) -> Example:
    return Example(refill(SequenceClassifier(kind, bidirectional, layers)), (tokens(),), ("input_ids",), "logits")


def rwkv() -> Example:
    import transformers

    config = transformers.RwkvConfig(vocab_size=VOCAB, context_length=SEQUENCE, hidden_size=64, num_hidden_layers=2,
                                     attention_hidden_size=64, intermediate_size=128)
    return hugging_face(transformers.RwkvForCausalLM(config), (tokens(),), ("input_ids",), "logits", use_cache=False)


# --- segmentation --------------------------------------------------------------------------
def tv_segmentation(constructor: str) -> Example:
    import torchvision

    module = getattr(torchvision.models.segmentation, constructor)(num_classes=CLASSES, weights=None,
                                                                   weights_backbone=None, aux_loss=False)
    return Example(refill(FirstOutput(module, "out")), (images(64),), ("pixel_values",), "masks")


def segformer() -> Example:
    import transformers

    config = transformers.SegformerConfig(num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[16, 32],
                                          patch_sizes=[7, 3], strides=[4, 2], num_attention_heads=[1, 2],
                                          mlp_ratios=[2, 2], decoder_hidden_size=32, num_labels=CLASSES)
    return hugging_face(transformers.SegformerForSemanticSegmentation(config), (images(64),), ("pixel_values",),
                        "logits")


# --- encoders with relative positions, and other encoders -----------------------------------
def encoder(config_name: str, model_name: str, **config) -> Example:
    import transformers

    settings = dict(vocab_size=VOCAB, max_position_embeddings=64, **SMALL)
    settings.update(config)
    model = getattr(transformers, model_name)(getattr(transformers, config_name)(**settings))
    return hugging_face(model, (tokens(),), ("input_ids",), "last_hidden_state")


def xlnet() -> Example:
    import transformers

    config = transformers.XLNetConfig(vocab_size=VOCAB, d_model=64, n_layer=2, n_head=4, d_inner=128)
    return hugging_face(transformers.XLNetModel(config), (tokens(),), ("input_ids",), "last_hidden_state",
                        use_mems=False)


def wav2vec2(model_name: str = "Wav2Vec2Model", config_name: str = "Wav2Vec2Config") -> Example:
    import transformers

    config = getattr(transformers, config_name)(**SMALL, conv_dim=(32, 32, 32), conv_stride=(5, 2, 2),
                                               conv_kernel=(10, 3, 3), num_conv_pos_embeddings=16,
                                               num_conv_pos_embedding_groups=4, do_stable_layer_norm=False)
    audio = torch.randn(BATCH, 800, generator=_generator())
    return hugging_face(getattr(transformers, model_name)(config), (audio,), ("input_values",), "last_hidden_state")


# --- decoders: parallel attention, ALiBi, other position schemes ----------------------------
def decoder(config_name: str, model_name: str, **config) -> Example:
    import transformers

    settings = dict(vocab_size=VOCAB)
    settings.update(config)
    model = getattr(transformers, model_name)(getattr(transformers, config_name)(**settings))
    return hugging_face(model, (tokens(),), ("input_ids",), "logits", use_cache=False)


LM = dict(**SMALL, max_position_embeddings=64)


# --- vision --------------------------------------------------------------------------------
def torchvision_classifier(constructor: str, size: int = 64, **kwargs) -> Example:
    import torchvision

    return classifier(getattr(torchvision.models, constructor)(num_classes=CLASSES, **kwargs), size)


def timm_classifier(name: str, size: int = 64, **kwargs) -> Example:
    import timm

    return classifier(timm.create_model(name, pretrained=False, num_classes=CLASSES, **kwargs), size)


def beit() -> Example:
    import transformers

    config = transformers.BeitConfig(image_size=32, patch_size=8, **SMALL, use_relative_position_bias=True,
                                     num_labels=CLASSES)
    return hugging_face(transformers.BeitForImageClassification(config), (images(32),), ("pixel_values",), "logits")


def swinv2() -> Example:
    import transformers

    config = transformers.Swinv2Config(image_size=32, patch_size=2, embed_dim=16, depths=[1, 1], num_heads=[1, 2],
                                       window_size=4, num_labels=CLASSES)
    return hugging_face(transformers.Swinv2ForImageClassification(config), (images(32),), ("pixel_values",), "logits")


MODELS = {
    # video
    "r3d_18": ("video", lambda: video("r3d_18")),
    "mc3_18": ("video", lambda: video("mc3_18")),
    "r2plus1d_18": ("video", lambda: video("r2plus1d_18")),
    "videomae": ("video", videomae),
    "timesformer": ("video", timesformer),
    # recurrent
    "lstm": ("recurrent", lambda: recurrent("LSTM")),
    "gru_bidirectional": ("recurrent", lambda: recurrent("GRU", bidirectional=True)),
    "rnn_two_layers": ("recurrent", lambda: recurrent("RNN", layers=2)),
    "rwkv": ("recurrent", rwkv),
    # segmentation
    "fcn_resnet50": ("segmentation", lambda: tv_segmentation("fcn_resnet50")),
    "deeplabv3_mobilenet": ("segmentation", lambda: tv_segmentation("deeplabv3_mobilenet_v3_large")),
    "lraspp_mobilenet": ("segmentation", lambda: tv_segmentation("lraspp_mobilenet_v3_large")),
    "segformer": ("segmentation", segformer),
    # encoders (relative positions first)
    "xlnet": ("relative-position encoder", xlnet),
    "deberta": ("relative-position encoder", lambda: encoder("DebertaConfig", "DebertaModel",
                                                             relative_attention=True, max_relative_positions=16,
                                                             pos_att_type=["c2p", "p2c"])),
    "deberta_v2": ("relative-position encoder", lambda: encoder("DebertaV2Config", "DebertaV2Model",
                                                                relative_attention=True, position_buckets=8,
                                                                pos_att_type=["c2p", "p2c"])),
    "mpnet": ("relative-position encoder", lambda: encoder("MPNetConfig", "MPNetModel")),
    "albert": ("encoder", lambda: encoder("AlbertConfig", "AlbertModel", embedding_size=32)),
    "electra": ("encoder", lambda: encoder("ElectraConfig", "ElectraModel", embedding_size=32)),
    "squeezebert": ("encoder", lambda: encoder("SqueezeBertConfig", "SqueezeBertModel", embedding_size=64)),
    "wav2vec2": ("audio", wav2vec2),
    "hubert": ("audio", lambda: wav2vec2("HubertModel", "HubertConfig")),
    # decoders
    "gptj": ("parallel-attention decoder", lambda: decoder("GPTJConfig", "GPTJForCausalLM", n_embd=64, n_layer=2,
                                                           n_head=4, rotary_dim=8, n_positions=64)),
    "gpt_neox": ("parallel-attention decoder", lambda: decoder("GPTNeoXConfig", "GPTNeoXForCausalLM", **LM,
                                                               use_parallel_residual=True)),
    "falcon": ("parallel-attention decoder", lambda: decoder("FalconConfig", "FalconForCausalLM", hidden_size=64,
                                                             num_hidden_layers=2, num_attention_heads=4,
                                                             parallel_attn=True, new_decoder_architecture=False)),
    "codegen": ("parallel-attention decoder", lambda: decoder("CodeGenConfig", "CodeGenForCausalLM", n_embd=64,
                                                              n_layer=2, n_head=4, rotary_dim=8, n_positions=64,
                                                              n_ctx=64)),
    "bloom": ("ALiBi decoder", lambda: decoder("BloomConfig", "BloomForCausalLM", hidden_size=64, n_layer=2, n_head=4)),
    "mpt": ("ALiBi decoder", lambda: decoder("MptConfig", "MptForCausalLM", d_model=64, n_heads=4, n_layers=2,
                                             max_seq_len=64)),
    "falcon_alibi": ("ALiBi decoder", lambda: decoder("FalconConfig", "FalconForCausalLM", hidden_size=64,
                                                      num_hidden_layers=2, num_attention_heads=4, alibi=True,
                                                      parallel_attn=False, new_decoder_architecture=False)),
    "opt": ("decoder", lambda: decoder("OPTConfig", "OPTForCausalLM", hidden_size=64, num_hidden_layers=2,
                                       num_attention_heads=4, ffn_dim=128, word_embed_proj_dim=64,
                                       max_position_embeddings=64)),
    "gpt_neo": ("decoder", lambda: decoder("GPTNeoConfig", "GPTNeoForCausalLM", hidden_size=64, num_layers=2,
                                           num_heads=4, attention_types=[[["global", "local"], 1]], window_size=8,
                                           max_position_embeddings=64)),
    "stablelm": ("decoder", lambda: decoder("StableLmConfig", "StableLmForCausalLM", **LM, num_key_value_heads=2)),
    "starcoder2": ("decoder", lambda: decoder("Starcoder2Config", "Starcoder2ForCausalLM", **LM,
                                              num_key_value_heads=2)),
    "phi3": ("decoder", lambda: decoder("Phi3Config", "Phi3ForCausalLM", **LM, num_key_value_heads=2,
                                        pad_token_id=0)),
    # state-space variants
    "mamba2": ("state-space", lambda: decoder("Mamba2Config", "Mamba2ForCausalLM", hidden_size=64, num_hidden_layers=2,
                                              state_size=16, expand=2, head_dim=16, num_heads=8, n_groups=1,
                                              chunk_size=8)),
    "falcon_mamba": ("state-space", lambda: decoder("FalconMambaConfig", "FalconMambaForCausalLM", hidden_size=64,
                                                    state_size=8, num_hidden_layers=2, expand=2, conv_kernel=4,
                                                    use_mambapy=False)),
    "recurrent_gemma": ("state-space", lambda: decoder("RecurrentGemmaConfig", "RecurrentGemmaForCausalLM",
                                                       hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                                       num_key_value_heads=1, intermediate_size=128,
                                                       lru_width=64, attention_window_size=8,
                                                       block_types=["recurrent", "attention"])),
    # vision
    "googlenet": ("CNN", lambda: torchvision_classifier("googlenet", aux_logits=False, init_weights=False)),
    "inception_v3": ("CNN", lambda: torchvision_classifier("inception_v3", size=96, aux_logits=False,
                                                           init_weights=False)),
    "alexnet": ("CNN", lambda: torchvision_classifier("alexnet", size=64)),
    "vgg11_bn": ("CNN", lambda: torchvision_classifier("vgg11_bn", size=32)),
    "efficientnet_v2_s": ("CNN", lambda: torchvision_classifier("efficientnet_v2_s")),
    "regnet_x_400mf": ("CNN", lambda: torchvision_classifier("regnet_x_400mf")),
    "ghostnet": ("CNN", lambda: timm_classifier("ghostnet_050")),
    "dla34": ("CNN", lambda: timm_classifier("dla34")),
    "repvgg": ("CNN", lambda: timm_classifier("repvgg_a0")),
    "cspresnet": ("CNN", lambda: timm_classifier("cspresnet50")),
    "hrnet": ("CNN", lambda: timm_classifier("hrnet_w18_small")),
    "maxvit": ("vision transformer", lambda: torchvision_classifier("maxvit_t", size=224)),
    "swin_v2_t": ("vision transformer", lambda: torchvision_classifier("swin_v2_t", size=64)),
    "beit": ("vision transformer", beit),
    "swinv2_hf": ("vision transformer", swinv2),
    "poolformer": ("vision transformer", lambda: timm_classifier("poolformer_s12")),
    "pit": ("vision transformer", lambda: timm_classifier("pit_ti_224", img_size=64)),
    "xcit": ("vision transformer", lambda: timm_classifier("xcit_nano_12_p16_224", img_size=64)),
    "cait": ("vision transformer", lambda: timm_classifier("cait_xxs24_224", img_size=64)),
    "coat": ("vision transformer", lambda: timm_classifier("coat_lite_tiny", img_size=64)),
    "twins": ("vision transformer", lambda: timm_classifier("twins_svt_small", img_size=64)),
    "efficientformer": ("vision transformer", lambda: timm_classifier("efficientformer_l1", size=224)),
    "fastvit": ("vision transformer", lambda: timm_classifier("fastvit_t8")),
    "resmlp": ("vision transformer", lambda: timm_classifier("resmlp_12_224", img_size=64)),
    "convmixer": ("CNN", lambda: timm_classifier("convmixer_768_32", img_size=64)),
}


def outputs_of(value) -> list[np.ndarray]:
    if isinstance(value, torch.Tensor):
        return [value.detach().numpy()]
    return [item.detach().numpy() for item in value]


def agree(have: list, want: list) -> str:
    for index, (got, expected) in enumerate(zip(have, want)):
        if got.shape != expected.shape:
            return f"output {index}: shape {list(got.shape)}, expected {list(expected.shape)}"
        # atol follows the output's own scale: random weights give some models logits in the
        # hundreds, where float32 sums in another order differ by more than 1e-4
        scale = float(np.max(np.abs(expected))) if expected.size else 0.0
        if not np.allclose(got, expected, rtol=RTOL, atol=ATOL * max(1.0, scale), equal_nan=True):
            worst = float(np.max(np.abs(got.astype(np.float64) - expected)))
            return f"output {index}: max abs error {worst:.3g}"
    return ""


def first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return (text[0] if text else type(error).__name__)[:200]


def onnx_route(example: Example, folder: Path) -> dict:
    import onnx
    import onnxruntime

    from rlxir.errors import RlxError
    from rlxir.importers.onnx import import_onnx
    from rlxir.interpreter import interpret

    path = folder / "model.onnx"
    dynamic = {name: {0: "B"} for name in example.input_names}
    try:
        torch.onnx.export(example.module, example.inputs, str(path), input_names=list(example.input_names),
                          dynamic_shapes=tuple(dynamic.values()), dynamo=True)
    except Exception as error:  # noqa: BLE001 - the exporter's failure, counted apart
        return {"status": "no export", "detail": first_line(error)}
    model = onnx.load(str(path))
    feeds = {info.name: tensor.numpy() for info, tensor in zip(model.graph.input, example.inputs)}
    try:
        session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        expected = session.run(None, feeds)
    except Exception as error:  # noqa: BLE001 - onnxruntime cannot run the file: no reference to check
        return {"status": "no export", "detail": "onnxruntime: " + first_line(error)}
    start = time.perf_counter()
    try:
        imported = import_onnx(model)
    except RlxError as error:
        return {"status": "refused", "detail": first_line(error)}
    seconds = time.perf_counter() - start
    inputs = {imported.inputs[name]: array for name, array in feeds.items() if name in imported.inputs}
    got = interpret(imported.graph, inputs, dict(imported.params), batch_binding(imported.graph))
    have = [got[value] for value in imported.outputs.values()]
    problem = agree(have, expected)
    return {"status": "mismatch" if problem else "match", "detail": problem, "seconds": seconds,
            "nodes": len(imported.graph.ops())}


def batch_binding(graph) -> dict:
    """The batch symbol bound to the example batch (both exporters leave it dynamic)."""
    return {"B": BATCH} if "B" in graph.symbols else {}


def torch_route(example: Example, expected: list) -> dict:
    from rlxir.errors import RlxError
    from rlxir.importers.torch import import_torch
    from rlxir.interpreter import interpret

    start = time.perf_counter()
    try:
        imported = import_torch(example.module, example.inputs)
    except RlxError as error:
        status = "no export" if "torch.export" in str(error) and "failed" in str(error) else "refused"
        return {"status": status, "detail": first_line(error)}
    seconds = time.perf_counter() - start
    inputs = {value: tensor.numpy() for value, tensor in zip(imported.inputs.values(), example.inputs)}
    got = interpret(imported.graph, inputs, dict(imported.params), batch_binding(imported.graph))
    have = [got[value] for value in imported.outputs.values()]
    problem = agree(have, expected)
    return {"status": "mismatch" if problem else "match", "detail": problem, "seconds": seconds,
            "nodes": len(imported.graph.ops())}


def run_model(name: str) -> dict:
    family, builder = MODELS[name]
    row = {"model": name, "family": family}
    torch.manual_seed(0)
    try:
        example = builder()
        with torch.no_grad():
            expected = outputs_of(example.module(*example.inputs))
    except Exception as error:  # noqa: BLE001 - a constructor or config this library version lacks
        row["onnx"] = row["torch"] = {"status": "not built", "detail": first_line(error)}
        return row
    for route in ("onnx", "torch"):
        try:
            with tempfile.TemporaryDirectory() as folder:
                row[route] = onnx_route(example, Path(folder)) if route == "onnx" else torch_route(example, expected)
        except Exception as error:  # noqa: BLE001 - an internal error is a finding, reported
            frame = traceback.extract_tb(error.__traceback__)[-1]
            row[route] = {"status": "internal",
                          "detail": f"{type(error).__name__}: {first_line(error)} at {Path(frame.filename).name}:"
                                    f"{frame.lineno}"}
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="*", default=list(MODELS), help="names from the table (default: all)")
    parser.add_argument("--jobs", type=int, default=1, help="models run in parallel, one process each")
    parser.add_argument("--json", help="write the rows to this file")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.models) - set(MODELS))
    if unknown:
        parser.error(f"unknown models: {', '.join(unknown)}")
    torch.set_num_threads(1 if args.jobs > 1 else torch.get_num_threads())
    if args.jobs > 1:
        with multiprocessing.get_context("spawn").Pool(args.jobs, maxtasksperchild=1) as pool:
            rows = pool.map(run_model, args.models, chunksize=1)
    else:
        rows = [run_model(name) for name in args.models]
    print("| model | family | ONNX route | PyTorch route |")
    print("|---|---|---|---|")
    for row in rows:
        cells = []
        for route in ("onnx", "torch"):
            result = row[route]
            cells.append(result["status"] + (f": {result['detail']}" if result.get("detail") else ""))
        print(f"| {row['model']} | {row['family']} | {cells[0]} | {cells[1]} |")
    print()
    for route in ("onnx", "torch"):
        counts = Counter(row[route]["status"] for row in rows)
        tried = sum(count for status, count in counts.items() if status not in ("no export", "not built"))
        print(f"{route}: {counts['match']} of {tried} that export match ({dict(counts)})")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
