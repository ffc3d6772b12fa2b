"""What torch.onnx.export (the TorchScript exporter, opset 17) writes for decoders and
attention — ConvTranspose, InstanceNormalization, Resize from F.interpolate, dilated and
ceil-mode pooling, Einsum, Trilu, TopK — imports and matches onnxruntime (where torch is
installed)."""

from __future__ import annotations

import io

import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
from onnx_models import compare_with_onnxruntime  # noqa: E402
from test_onnx_import_scatter import TARGETS  # noqa: E402

from rlxir.compiler.compile import compile  # noqa: E402
from rlxir.importers.onnx import import_onnx  # noqa: E402


class Decoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1)
        self.norm = torch.nn.InstanceNorm2d(3, affine=True)
        self.pool = torch.nn.MaxPool2d(3, stride=1, dilation=2, padding=1)
        self.average = torch.nn.AvgPool2d(3, stride=2, ceil_mode=True, count_include_pad=False)

    def forward(self, x):
        y = self.norm(self.up(x))
        nearest = torch.nn.functional.interpolate(y, scale_factor=2, mode="nearest")
        bilinear = torch.nn.functional.interpolate(y, scale_factor=2, mode="bilinear", align_corners=False)
        corners = torch.nn.functional.interpolate(y, size=(7, 9), mode="bilinear", align_corners=True)
        odd = torch.nn.functional.interpolate(y, size=(13, 5), mode="nearest")
        return self.pool(nearest), bilinear, self.average(corners), odd


class Attention(torch.nn.Module):
    def forward(self, q, k, v):
        scores = torch.einsum("bhid,bhjd->bhij", q, k).softmax(-1)
        mixed = torch.einsum("bhij,bhjd->bhid", scores, v)
        mask = torch.triu(torch.ones(q.shape[2], q.shape[2]), 1)
        best = torch.topk(scores, 2, dim=-1)
        return mixed, scores * mask, best.values, best.indices


@pytest.mark.parametrize("module, shapes", [(Decoder, [(2, 4, 5, 6)]), (Attention, [(2, 2, 6, 4)] * 3)],
                         ids=["decoder", "attention"])
def test_torchscript_export_imports_and_matches(module, shapes):
    torch.manual_seed(0)
    args = tuple(torch.randn(*shape) for shape in shapes)
    names = [f"in{index}" for index in range(len(args))]
    buffer = io.BytesIO()
    torch.onnx.export(module().eval(), args, buffer, opset_version=17, dynamo=False, input_names=names,
                      dynamic_axes={name: {0: "batch"} for name in names})
    model = onnx.load_from_string(buffer.getvalue())
    imported = import_onnx(model)
    compare_with_onnxruntime(model, imported, rtol=1e-3, atol=1e-4, bindings={"B": 2})
    for target in TARGETS:
        assert compile(imported.graph, target, {"B": 2}).arena_bytes > 0
