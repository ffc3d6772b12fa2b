"""`rlxir plan --html` and `rlxir compare --html`: one self-contained page, checked in a real browser.

The browser tests open the page in headless Chromium with the ``#selftest`` fragment: the
page then drives itself (a real mouse event at a block's centre, a wheel event, the reset
button) and writes what it saw into ``<pre id="selftest">``, which ``--dump-dom`` reads back.
Without Chromium they skip, saying how to get it; with ``RLXIR_REQUIRE_BROWSER=1`` (what
`.ci/run` sets once it has installed Chromium) a missing browser fails them instead.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from in_process_cli import run

from rlxir.ir.graph import Graph
from rlxir.compiler.memory_plan import plan_graph
from rlxir.cli.plan_page import plan_page_entry, render_plan_page

ROOT = Path(__file__).resolve().parents[2]
GPT2_BLOCK = ROOT / "examples" / "gpt2_block.rlx"
SMALL = ["--batch", "2", "-D", "S=16"]
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
SELFTEST = re.compile(r'<pre id="selftest"[^>]*data-done="yes"[^>]*>(.*?)</pre>', re.S)
EMBEDDED = re.compile(r'<script type="application/json" id="plan-data">(.*?)</script>', re.S)


def browser() -> str:
    """The headless browser's path; skips (or fails where CI requires it) when there is none."""
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    message = "no headless Chromium on this machine (apt-get install chromium; .ci/run installs it)"
    if os.environ.get("RLXIR_REQUIRE_BROWSER") == "1":
        pytest.fail(message)
    pytest.skip(message)


def self_test(page: Path, profile: Path, buffer: str | None = None) -> dict:
    """Open `page` in headless Chromium with #selftest and return the report it wrote."""
    fragment = "#selftest" if buffer is None else f"#selftest={buffer}"
    command = [browser(), "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
               "--window-size=1280,900", "--dump-dom", page.resolve().as_uri() + fragment]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    found = SELFTEST.search(done.stdout)
    assert found, f"the page wrote no self-test report (exit {done.returncode}): {done.stderr[-2000:]}"
    return json.loads(html.unescape(found.group(1)))


def plan_json(capsys, *extra) -> dict:
    code, out, _ = run(["plan", GPT2_BLOCK, *SMALL, "--json", *extra], capsys)
    assert code == 0
    return json.loads(out)


def largest_activation(plan: dict) -> dict:
    return max((buffer for buffer in plan["buffers"] if buffer["kind"] == "activation"),
               key=lambda buffer: (buffer["size"], buffer["name"]))


def embedded_plans(page: Path) -> list[dict]:
    found = EMBEDDED.search(page.read_text())
    assert found, "the page holds no plan data"
    return json.loads(found.group(1))["plans"]


def test_plan_html_embeds_every_buffer_and_needs_nothing_from_outside(tmp_path, capsys):
    page = tmp_path / "plan.html"
    code, out, _ = run(["plan", GPT2_BLOCK, *SMALL, "--target", "rocm", "--html", page], capsys)
    assert code == 0 and f"page written to {page}" in out
    text = page.read_text()
    assert not re.search(r"<link\b|<img\b|<iframe\b|\bsrc\s*=|@import|url\(", text, re.I)
    assert not re.search(r"https?://", text)
    assert "{{" not in text  # every part of the template filled in
    [embedded] = embedded_plans(page)
    expected = plan_json(capsys, "--target", "rocm")
    assert embedded["target"] == "rocm"
    assert embedded["arena_bytes"] == expected["arena_bytes"]
    assert embedded["lower_bound_bytes"] == expected["lower_bound_bytes"]
    rows = {row[0]: dict(zip(embedded["columns"], row)) for row in embedded["buffers"]}
    assert len(rows) == len(expected["buffers"])
    for buffer in expected["buffers"]:
        row = rows[buffer["name"]]
        assert (row["offset"], row["bytes"], row["first"], row["last"]) == (
            buffer["offset"], buffer["size"], buffer["start"], buffer["end"] - 1)


def test_the_peak_step_holds_the_lower_bound(tmp_path, capsys):
    page = tmp_path / "plan.html"
    assert run(["plan", GPT2_BLOCK, *SMALL, "--html", page], capsys)[0] == 0
    [embedded] = embedded_plans(page)
    at_peak = sum(row[6] for row in embedded["buffers"] if row[7] <= embedded["peak_step"] <= row[8])
    assert at_peak == embedded["peak_bytes"] == embedded["lower_bound_bytes"]


def test_names_cannot_break_out_of_the_page_script():
    graph = Graph("g")
    plan = plan_graph(graph, "liveness", 16, "dtype")
    text = render_plan_page([plan_page_entry(plan, graph, "cpu", title="a</script><script>alert(1)</script>")])
    assert "</script><script>alert(1)" not in text
    assert "a&lt;/script&gt;" in text


def test_plan_html_refuses_a_directory_before_any_work(tmp_path, capsys):
    code, _, err = run(["plan", GPT2_BLOCK, *SMALL, "--html", tmp_path], capsys)
    assert code == 1 and "--html" in err and "is a directory" in err


def test_plan_html_refuses_to_overwrite_its_input(tmp_path, capsys):
    graph = tmp_path / "block.rlx"
    graph.write_text(GPT2_BLOCK.read_text())
    code, _, err = run(["plan", graph, *SMALL, "--html", graph], capsys)
    assert code == 1 and "is the input file" in err
    assert graph.read_text() == GPT2_BLOCK.read_text()


def test_compare_html_with_training_draws_each_targets_training_step(tmp_path, capsys):
    page = tmp_path / "p.html"
    argv = ["compare", ROOT / "examples" / "mamba_lm.rlx", "--training", "--batch", "2", "-D", "S=4",
            "--targets", "cpu,rocm", "--html", page]
    code, out, _ = run(argv, capsys)
    assert code == 0 and "page written to" in out
    cpu, rocm = embedded_plans(page)
    assert (cpu["target"], rocm["target"]) == ("cpu", "rocm") and "training step" in cpu["title"]
    code, out, _ = run([*argv[:-2], "--json"], capsys)
    arenas = {row["target"]: row["arena_bytes"] for row in json.loads(out)}
    assert (cpu["arena_bytes"], rocm["arena_bytes"]) == (arenas["cpu"], arenas["rocm"])
    names = {row[1] for row in cpu["buffers"]}
    assert any(name.startswith("opt.m.") for name in names) and any(name.startswith("next.") for name in names)


def test_the_page_draws_every_buffer_and_hover_names_it(tmp_path, capsys):
    page = tmp_path / "plan.html"
    assert run(["plan", GPT2_BLOCK, *SMALL, "--html", page], capsys)[0] == 0
    expected = plan_json(capsys)
    known = largest_activation(expected)
    report = self_test(page, tmp_path / "profile", known["name"])
    assert report["errors"] == []
    [shown] = report["plans"]
    assert shown["buffers"] == shown["blocks"] == len(expected["buffers"])
    hover = shown["hover"]
    assert hover["found"] and hover["visible"]
    lines = hover["text"].splitlines()
    assert lines[0].split()[0] == f"%{known['name']}"
    assert f"bytes     {known['size']} B" in hover["text"]
    assert f"offset    {known['offset']} B" in hover["text"]
    assert f"lifetime  steps [{known['start']}, {known['end'] - 1}]" in hover["text"]
    assert hover["pinned"] == hover["text"]  # a click pins the same details
    assert shown["zoom"] == {"zoomed_in": True, "reset": True}


def test_compare_html_has_a_selector_over_the_targets(tmp_path, capsys):
    page = tmp_path / "compare.html"
    code, out, _ = run(["compare", GPT2_BLOCK, *SMALL, "--targets", "cpu,rocm", "--jobs", "1", "--html", page],
                       capsys)
    assert code == 0 and "rocm" in out and f"page written to {page}" in out
    report = self_test(page, tmp_path / "profile")
    assert report["errors"] == []
    assert [plan["target"] for plan in report["plans"]] == ["cpu", "rocm"]
    for target, shown in zip(("cpu", "rocm"), report["plans"]):
        expected = plan_json(capsys, "--target", target)
        assert shown["selector"] == 2
        assert shown["buffers"] == shown["blocks"] == len(expected["buffers"])
        assert shown["hover"]["visible"] and shown["hover"]["text"].startswith(f"%{shown['hover']['name']}")


def test_a_broken_page_reports_its_script_error(tmp_path, capsys):
    page = tmp_path / "plan.html"
    assert run(["plan", GPT2_BLOCK, *SMALL, "--html", page], capsys)[0] == 0
    page.write_text(page.read_text().replace("function draw() {", "function draw() { undefinedName();", 1))
    report = self_test(page, tmp_path / "profile")
    assert report["plans"] == []
    assert any("undefinedName" in error for error in report["errors"])
