"""Every command reads a model as the user has it: ONNX, a torch.export program (.pt2) or a
transformers config.json, decided by content, imported once and cached; bad models are one
located error each (exit 1)."""

from __future__ import annotations

import json
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

from rlxir.cli import import_cache, model_inputs

from in_process_cli import run

ROOT = Path(__file__).resolve().parents[2]
BERT = ROOT / "examples" / "corpus" / "bert.onnx"
TINY_LLAMA = ROOT / "examples" / "tiny_llama" / "config.json"


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("import-cache")


@pytest.fixture(autouse=True)
def cache_directory(shared_cache, monkeypatch):
    """One cache for the module's tests, never the user's own."""
    monkeypatch.setenv(import_cache.CACHE_ENV, str(shared_cache))
    return shared_cache


def json_report(argv, capsys) -> dict:
    code, out, err = run(argv, capsys)
    assert code == 0, err
    return json.loads(out)


def test_compile_takes_an_onnx_model_and_plans_what_import_writes(tmp_path, capsys):
    imported = tmp_path / "bert.rlx"
    assert run(["import", BERT, "-o", imported], capsys)[0] == 0
    direct = json_report(["compile", BERT, "--target", "cpu", "--batch", "2", "--json"], capsys)
    through_text = json_report(["compile", imported, "--target", "cpu", "--batch", "2", "--json"], capsys)
    assert direct["bindings"]["B"] == 2
    assert direct["arena_bytes"] == through_text["arena_bytes"] > 0
    assert direct["nodes"] == through_text["nodes"]


def test_the_kind_is_decided_by_content_not_the_name(tmp_path, capsys):
    renamed = tmp_path / "model.bin"
    shutil.copy(BERT, renamed)
    config = tmp_path / "settings.txt"
    shutil.copy(TINY_LLAMA, config)
    assert model_inputs.model_kind(str(renamed), renamed.read_bytes()) == model_inputs.ONNX
    assert model_inputs.model_kind(str(config), config.read_bytes()) == model_inputs.CONFIG
    rlx = ROOT / "examples" / "mlp.rlx"
    assert model_inputs.model_kind(str(rlx), rlx.read_bytes()) == model_inputs.RLX
    by_name = json_report(["compile", BERT, "--target", "cpu", "--batch", "2", "--json"], capsys)
    by_content = json_report(["compile", renamed, "--target", "cpu", "--batch", "2", "--json"], capsys)
    assert by_content["arena_bytes"] == by_name["arena_bytes"]


@pytest.fixture(scope="module")
def program_file(tmp_path_factory):
    torch = pytest.importorskip("torch")

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.up = torch.nn.Linear(8, 16)
            self.down = torch.nn.Linear(16, 8)

        def forward(self, x):
            return self.down(torch.relu(self.up(x)))

    dims = ({0: torch.export.Dim("batch"), 1: torch.export.Dim("seq")},)
    program = torch.export.export(Block(), (torch.randn(2, 3, 8),), dynamic_shapes=dims)
    path = tmp_path_factory.mktemp("pt2") / "block.pt2"
    torch.export.save(program, str(path))
    return path


def test_a_torch_export_program_compiles_with_batch_and_sequence_symbols(program_file, capsys):
    code, out, err = run(["check", program_file], capsys)
    assert code == 0, err
    assert "graph block(B, S)" in out
    report = json_report(["compile", program_file, "--target", "cpu", "--batch", "4", "-D", "S=7", "--json"], capsys)
    assert report["bindings"] == {"B": 4, "S": 7}
    # the activations grow with the batch: [B, S, 16] f32 is at least 4*7*16*4 bytes
    assert report["arena_bytes"] >= 4 * 7 * 16 * 4


def test_a_config_json_fits_with_the_sequence_bound_and_the_batch_searched(capsys):
    code, out, err = run(["check", TINY_LLAMA], capsys)
    assert code == 0, err
    assert "graph LlamaForCausalLM(B, S)" in out
    small = json_report(["compile", TINY_LLAMA, "--target", "cpu", "--batch", "1", "-D", "S=32", "--json"], capsys)
    larger = json_report(["compile", TINY_LLAMA, "--target", "cpu", "--batch", "8", "-D", "S=32", "--json"], capsys)
    assert larger["arena_bytes"] > small["arena_bytes"]
    budget = (small["arena_bytes"] + larger["arena_bytes"]) // 2
    fit = json_report(["fit", TINY_LLAMA, "--target", "cpu", "--vram", str(budget), "--headroom", "1",
                       "-D", "S=32", "--max-batch", "8", "--jobs", "1", "--json"], capsys)
    assert 1 <= fit["batch"] < 8


def test_a_config_json_trains_on_its_token_loss(capsys):
    report = json_report(["compile", TINY_LLAMA, "--training", "--target", "cpu", "--batch", "2", "-D", "S=16",
                          "--json"], capsys)
    assert report["training"] is True and report["arena_bytes"] > 0


def test_the_second_command_reads_the_cache(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(import_cache.CACHE_ENV, str(tmp_path / "fresh"))
    calls = []
    real_import = model_inputs._import
    monkeypatch.setattr(model_inputs, "_import", lambda *args: calls.append(args) or real_import(*args))
    first = json_report(["compile", BERT, "--target", "cpu", "--batch", "2", "--json"], capsys)
    second = json_report(["compile", BERT, "--target", "gpu", "--batch", "2", "--json"], capsys)
    assert len(calls) == 1 and second["arena_bytes"] > 0 and first["arena_bytes"] > 0
    assert len(list((tmp_path / "fresh").glob("*.rlx"))) == 1
    assert run(["check", BERT, "--batch-dim", "N"], capsys)[0] == 0  # other options: another entry
    assert len(calls) == 2


def write(path: Path, data: bytes | str) -> Path:
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def test_a_config_of_an_unknown_architecture_is_located_at_its_model_type(tmp_path, capsys):
    config = write(tmp_path / "config.json", '{\n  "architectures": ["Nope"],\n  "model_type": "no_such_model"\n}\n')
    code, out, err = run(["compile", config, "--target", "cpu"], capsys)
    assert code == 1 and out == ""
    assert err.startswith(f"{config}:3:3: error:") and "Traceback" not in err
    assert "no_such_model" in err and "^" in err


def test_a_config_the_route_cannot_import_is_one_error_naming_the_file(tmp_path, capsys):
    config = write(tmp_path / "config.json", json.dumps({"model_type": "vit", "hidden_size": 32, "num_hidden_layers": 1,
                                                         "num_attention_heads": 2, "intermediate_size": 64}))
    code, out, err = run(["fit", config, "--target", "cpu", "--max-batch", "4"], capsys)
    assert code == 1 and out == ""
    assert str(config) in err and "Traceback" not in err and len(err.strip().splitlines()) <= 4


def test_a_corrupt_program_archive_names_the_file(tmp_path, capsys):
    archive = tmp_path / "broken.pt2"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("broken/archive_format", "pt2")
        handle.writestr("broken/models/model.json", "{not json")
    code, out, err = run(["plan", archive], capsys)
    assert code == 1 and out == ""
    assert str(archive) in err and "cannot load" in err and "Traceback" not in err


def test_a_corrupt_onnx_model_names_the_file(tmp_path, capsys):
    model = write(tmp_path / "broken.onnx", b"\x08\x07\x12\xff\xff garbage that is no protobuf")
    code, out, err = run(["compile", model, "--target", "cpu"], capsys)
    assert code == 1 and out == ""
    assert str(model) in err and "Traceback" not in err


def test_an_empty_onnx_file_is_no_model(tmp_path, capsys):
    code, _, err = run(["check", write(tmp_path / "empty.onnx", b"")], capsys)
    assert code == 1 and "empty (0 bytes), not an ONNX model" in err


def empty_program_archive(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as handle:
        handle.writestr("model/archive_format", "pt2")
    return path


@pytest.mark.parametrize(("module", "make", "install"), [
    ("onnx", lambda tmp: shutil.copy(BERT, tmp / "m.onnx"), "pip install 'rlxir[onnx]'"),
    ("transformers", lambda tmp: shutil.copy(TINY_LLAMA, tmp / "config.json"), "pip install 'rlxir[torch,models]'"),
    ("torch", lambda tmp: empty_program_archive(tmp / "model.pt2"), "pip install 'rlxir[torch]'"),
])
def test_a_missing_extra_is_one_error_naming_the_install_command(tmp_path, capsys, monkeypatch, module, make, install):
    monkeypatch.setenv(import_cache.CACHE_ENV, str(tmp_path / "empty-cache"))
    path = make(tmp_path)
    monkeypatch.setitem(sys.modules, module, None)
    code, out, err = run(["compile", path, "--target", "cpu"], capsys)
    assert code == 1 and out == ""
    assert install in err and module in err and len(err.strip().splitlines()) == 2


@pytest.mark.parametrize("command", [
    ["compile", "--target", "cpu", "--batch", "2", "-D", "S=3"],
    ["fit", "--target", "cpu", "--vram", "1GiB", "--max-batch", "4", "-D", "S=3", "--jobs", "1"],
    ["compare", "--targets", "cpu,gpu", "--batch", "2", "-D", "S=3", "--jobs", "1"],
    ["plan", "--batch", "2", "-D", "S=3"],
    ["run", "--batch", "2", "-D", "S=3"],
    ["check", "--batch", "2", "-D", "S=3"],
], ids=lambda command: command[0])
def test_every_command_takes_a_program_file(program_file, capsys, command):
    code, out, err = run([command[0], program_file, *command[1:]], capsys)
    assert code == 0, err
    assert out.strip()


def test_the_import_options_name_the_graph_and_its_batch_symbol(capsys):
    code, out, err = run(["check", BERT, "--name", "encoder", "--batch-dim", "N"], capsys)
    assert code == 0, err
    assert "graph encoder(N" in out
    code, _, err = run(["check", BERT, "--name", "f32"], capsys)
    assert code == 1 and "--name 'f32' is a dtype name" in err


def test_json_that_is_no_config_says_so(tmp_path, capsys):
    other = write(tmp_path / "config.json", '{"hidden_size": 64}')
    code, out, err = run(["check", other], capsys)
    assert code == 1 and out == ""
    assert err.startswith(f"{other}:1:1: error:") and "not a transformers config" in err


def test_run_computes_with_the_model_s_own_weights(tmp_path, capsys):
    import numpy as np

    reference = np.load(ROOT / "examples" / "corpus" / "bert.npz")
    np.save(tmp_path / "ids.npy", reference["input.input_ids"])
    np.save(tmp_path / "mask.npy", reference["input.attention_mask"])
    code, _, err = run(["run", BERT, "--batch", "2", "-i", f"input_ids={tmp_path / 'ids.npy'}",
                        "-i", f"attention_mask={tmp_path / 'mask.npy'}", "-o", tmp_path / "out"], capsys)
    assert code == 0, err
    hidden = np.load(tmp_path / "out" / "last_hidden_state.npy")
    np.testing.assert_allclose(hidden, reference["output.last_hidden_state"], atol=1e-4)


def test_a_config_transformers_refuses_to_build_is_exit_1_with_its_reason(tmp_path, capsys):
    # phi3's default pad token 32000 lies outside this vocabulary: transformers asserts while building
    config = write(tmp_path / "config.json", json.dumps({"model_type": "phi3", "hidden_size": 32, "vocab_size": 64,
                                                         "num_hidden_layers": 1, "num_attention_heads": 2,
                                                         "intermediate_size": 64}))
    code, out, err = run(["compile", config, "--target", "cpu"], capsys)
    assert code == 1 and out == ""
    assert err.startswith(f"{config}:1:2: error: transformers cannot build Phi3ForCausalLM")
    assert len(err.strip().splitlines()) == 4  # the diagnostic, its line, the caret, expected: nothing else


def test_a_truncated_config_is_refused_where_its_json_breaks(tmp_path, capsys):
    broken = write(tmp_path / "config.json", '{"model_type": "llama", "hidden_size": ')
    code, out, err = run(["fit", broken, "--target", "cpu"], capsys)
    assert code == 1 and out == ""
    assert err.startswith(f"{broken}:1:40: error:") and "not valid JSON" in err


def test_a_config_transformers_validates_away_is_one_located_error(tmp_path, capsys):
    """transformers' own validators raise their own exception classes: still the config's fault."""
    pytest.importorskip("transformers")
    negative = write(tmp_path / "config.json", '{"model_type": "llama", "hidden_size": -1}')
    code, out, err = run(["compile", negative, "--target", "cpu"], capsys)
    assert code == 1 and out == ""
    assert err.startswith(f"{negative}:1:2: error:") and "cannot read this config" in err
