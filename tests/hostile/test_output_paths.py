"""Output paths a user gets wrong: one explained error (exit 1) before any work, and inputs
that are never overwritten unless --in-place says so."""

from __future__ import annotations

import os

import pytest

from rlxir.cli.output_files import atomic_output, write_text_output
from rlxir.errors import RlxError


def test_output_into_a_missing_directory(cli, mlp, tmp_path):
    code, _, err = cli("print", mlp, "-o", tmp_path / "nodir" / "x.rlx")
    assert code == 1 and "nodir does not exist" in err


def test_output_onto_a_directory(cli, mlp, tmp_path):
    code, _, err = cli("print", mlp, "-o", tmp_path)
    assert code == 1 and "is a directory" in err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_output_onto_a_full_device(cli, mlp):
    code, _, err = cli("print", mlp, "-o", "/dev/full")
    assert code == 1 and "cannot write /dev/full: No space left on device" in err
    assert os.path.exists("/dev/full") and not os.path.isfile("/dev/full")


def test_dump_dir_naming_a_file(cli, mlp, tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("keep")
    code, _, err = cli("opt", mlp, "-p", "dce", "--dump-dir", blocker)
    assert code == 1 and "--dump-dir" in err and "is a file, not a directory" in err
    assert blocker.read_text() == "keep"


def test_reproducer_dir_naming_a_file(cli, mlp, tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("")
    code, _, err = cli("opt", mlp, "-p", "dce", "--reproducer-dir", blocker)
    assert code == 1 and "--reproducer-dir" in err and "is a file, not a directory" in err


def test_offsets_into_a_missing_directory(cli, tmp_path):
    csv = tmp_path / "ok.csv"
    csv.write_text("id,lower,upper,size\nb0,0,10,8\n")
    code, _, err = cli("plan-csv", csv, "--offsets", tmp_path / "nodir" / "x")
    assert code == 1 and "--offsets" in err and "does not exist" in err


def test_offsets_onto_the_input_csv(cli, tmp_path):
    csv = tmp_path / "ok.csv"
    csv.write_text("id,lower,upper,size\nb0,0,10,8\n")
    code, _, err = cli("plan-csv", csv, "--offsets", csv)
    assert code == 1 and "is the input file" in err and "--in-place" not in err
    assert csv.read_text() == "id,lower,upper,size\nb0,0,10,8\n"


def test_plot_with_an_unknown_image_format(cli, mlp, tmp_path):
    pytest.importorskip("matplotlib")
    code, _, err = cli("plan", mlp, "--batch", "2", "--plot", tmp_path / "out.xyz")
    assert code == 1 and ".xyz is not an image format" in err and ".png" in err
    assert not (tmp_path / "out.xyz").exists()


def test_plot_written_whole(cli, mlp, tmp_path):
    pytest.importorskip("matplotlib")
    code, out, _ = cli("plan", mlp, "--batch", "2", "--plot", tmp_path / "plan.png")
    assert code == 0 and (tmp_path / "plan.png").read_bytes().startswith(b"\x89PNG")
    assert [path.name for path in tmp_path.iterdir() if path.name.endswith(".tmp")] == []


def test_run_output_dir_naming_a_file(cli, mlp, tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("")
    code, _, err = cli("run", mlp, "--batch", "2", "-o", blocker)
    assert code == 1 and "is a file, not a directory" in err


@pytest.mark.parametrize("command", [["print"], ["opt", "-p", "dce"], ["grad"]])
def test_output_naming_the_input_is_refused(cli, tmp_path, command):
    source = tmp_path / "loss.rlx"
    text = ("# a comment the canonical printer drops\ngraph loss(B) {\n  input %x : f32[B, 4]\n"
            "  param %w : f32[4]\n  %y = mul(%x, %w) : f32[B, 4]\n  %l = reduce_sum(%y) {axes = [0, 1]} : f32[]\n"
            "  output %l\n}\n")
    source.write_text(text)
    code, _, err = cli(command[0], source, *command[1:], "-o", source)
    assert code == 1 and "is the input file" in err and "--in-place" in err
    assert source.read_text() == text


def test_in_place_replaces_the_input_on_purpose(cli, mlp):
    code, _, _ = cli("print", mlp, "--batch", "4", "-o", mlp, "--in-place")
    assert code == 0 and "f32[4, 784]" in mlp.read_text()


def test_output_through_another_name_of_the_input_is_refused(cli, mlp, tmp_path):
    link = tmp_path / "alias.rlx"
    link.symlink_to(mlp)
    before = mlp.read_text()
    code, _, err = cli("print", mlp, "--batch", "4", "-o", link)
    assert code == 1 and "is the input file" in err and mlp.read_text() == before


def test_import_output_naming_the_model_is_refused(cli, tmp_path):
    model = tmp_path / "m.onnx"
    model.write_bytes(b"\x08\x07")
    code, _, err = cli("import", model, "-o", model)
    assert code == 1 and "is the input file" in err and model.read_bytes() == b"\x08\x07"


def test_a_failed_write_leaves_the_old_file_whole(tmp_path):
    target = tmp_path / "out.rlx"
    target.write_text("old contents\n")
    with pytest.raises(RuntimeError), atomic_output(target) as handle:
        handle.write("half of the new")
        raise RuntimeError("the writer failed midway")
    assert target.read_text() == "old contents\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out.rlx"]


def test_an_atomic_write_keeps_the_old_permissions(tmp_path):
    target = tmp_path / "out.rlx"
    target.write_text("old")
    target.chmod(0o640)
    write_text_output(target, "new")
    assert target.read_text() == "new" and (target.stat().st_mode & 0o777) == 0o640


def test_an_unwritable_directory_is_an_explained_error(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("running as a user who may write anywhere")
        with pytest.raises(RlxError, match="cannot write"):
            write_text_output(folder / "x.rlx", "text")
    finally:
        folder.chmod(0o700)


def test_writing_through_a_symlink_replaces_the_file_it_names(tmp_path):
    real = tmp_path / "real.rlx"
    real.write_text("old")
    link = tmp_path / "link.rlx"
    link.symlink_to(real)
    write_text_output(link, "new")
    assert link.is_symlink() and real.read_text() == "new"


@pytest.mark.skipif(not os.path.isfile("/proc/version"), reason="needs Linux procfs")
def test_a_directory_nobody_may_create_files_in(cli, mlp):
    code, _, err = cli("print", mlp, "-o", "/proc/version")
    assert code == 1 and "cannot write /proc/version" in err
