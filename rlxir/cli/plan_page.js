// The plan page's drawing and interaction (rlxir/cli/plan_page.py inlines it into plan_page.html).
"use strict";
(function () {
  const KIND_COLOURS = {
    input: "#4c72b0", param: "#8172b2", const: "#937860", activation: "#55a868",
    output: "#c44e52", workspace: "#dd8452",
  };
  const MARGIN = { left: 100, right: 16, top: 14, bottom: 40 };
  const DATA = JSON.parse(document.getElementById("plan-data").textContent);
  const canvas = document.getElementById("plot");
  const context = canvas.getContext("2d");
  const tooltip = document.getElementById("tooltip");
  const pinned = document.getElementById("pinned");
  const selector = document.getElementById("target");

  // The plan on show, its buffers as objects drawn largest first (small ones end on top),
  // the live bytes per step, the view (data ranges) and each block's last drawn rectangle.
  const state = { plan: null, buffers: [], live: [], view: null, rects: null, drawn: 0,
                  hovered: -1, pinned: -1, drag: null, frame: 0 };

  function formatBytes(bytes) {
    const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let value = bytes, unit = 0;
    while (Math.abs(value) >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
    return unit === 0 ? value + " B" : value.toFixed(2) + " " + units[unit];
  }

  function exactBytes(bytes) {
    return bytes < 1024 ? bytes + " B" : bytes + " B (" + formatBytes(bytes) + ")";
  }

  function bufferObjects(plan) {
    const column = {};
    plan.columns.forEach(function (name, index) { column[name] = index; });
    const made = plan.buffers.map(function (row) {
      const buffer = {};
      plan.columns.forEach(function (name) { buffer[name] = row[column[name]]; });
      return buffer;
    });
    made.sort(function (a, b) { return b.bytes - a.bytes || a.offset - b.offset; });
    return made;
  }

  function liveBytes(plan, buffers) {
    const steps = Math.max(plan.steps, 1);
    const change = new Float64Array(steps + 1);
    buffers.forEach(function (buffer) {
      change[buffer.first] += buffer.bytes;
      change[Math.min(buffer.last + 1, steps)] -= buffer.bytes;
    });
    const live = new Float64Array(steps);
    let running = 0;
    for (let step = 0; step < steps; step += 1) { running += change[step]; live[step] = running; }
    return live;
  }

  function homeView(plan) {
    return { x0: 0, x1: Math.max(plan.steps, 1), y0: 0, y1: Math.max(plan.arena_bytes, 1) * 1.05 };
  }

  function plotBox() {
    return { left: MARGIN.left, top: MARGIN.top, width: canvas.clientWidth - MARGIN.left - MARGIN.right,
             height: canvas.clientHeight - MARGIN.top - MARGIN.bottom };
  }

  function toX(step, box) { return box.left + (step - state.view.x0) / (state.view.x1 - state.view.x0) * box.width; }
  function toY(bytes, box) {
    return box.top + box.height - (bytes - state.view.y0) / (state.view.y1 - state.view.y0) * box.height;
  }

  function niceTicks(low, high, count) {
    const span = high - low;
    if (!(span > 0)) { return [low]; }
    const raw = span / count;
    const power = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map(function (f) { return f * power; }).find(function (s) { return s >= raw; });
    const ticks = [];
    for (let tick = Math.ceil(low / step) * step; tick <= high; tick += step) { ticks.push(tick); }
    return ticks;
  }

  function byteTicks(low, high, count) {
    // Ticks at round numbers of the unit the range is read in (KiB, MiB, ...).
    let unit = 1;
    while ((high - low) / unit >= 4096 && unit < Math.pow(1024, 6)) { unit *= 1024; }
    return niceTicks(low / unit, high / unit, count).map(function (tick) { return tick * unit; });
  }

  function resize() {
    const ratio = window.devicePixelRatio || 1;
    canvas.width = Math.max(Math.round(canvas.clientWidth * ratio), 1);
    canvas.height = Math.max(Math.round(canvas.clientHeight * ratio), 1);
    context.setTransform(ratio, 0, 0, ratio, 0, 0);
    draw();
  }

  function drawBlocks(box) {
    // One path per kind, filled once: tens of thousands of blocks redraw within a frame or two.
    const count = state.buffers.length;
    const rects = new Float64Array(count * 4);
    const byKind = {};
    const outlined = [];
    let drawn = 0;
    for (let index = 0; index < count; index += 1) {
      const buffer = state.buffers[index];
      const left = toX(buffer.first, box), right = toX(buffer.last + 1, box);
      const top = toY(buffer.offset + buffer.bytes, box), bottom = toY(buffer.offset, box);
      const width = Math.max(right - left, 1), height = Math.max(bottom - top, 1);
      const base = index * 4;
      rects[base] = left; rects[base + 1] = bottom - height; rects[base + 2] = width; rects[base + 3] = height;
      if (left > box.left + box.width || left + width < box.left) { continue; }
      if (bottom - height > box.top + box.height || bottom < box.top) { continue; }
      (byKind[buffer.kind] = byKind[buffer.kind] || []).push(index);
      if (width > 4 && height > 4) { outlined.push(index); }
      drawn += 1;
    }
    Object.keys(byKind).forEach(function (kind) {
      context.fillStyle = KIND_COLOURS[kind] || "#999999";
      context.beginPath();
      byKind[kind].forEach(function (index) {
        const base = index * 4;
        context.rect(rects[base], rects[base + 1], rects[base + 2], rects[base + 3]);
      });
      context.fill();
    });
    context.beginPath();
    outlined.forEach(function (index) {
      const base = index * 4;
      context.rect(rects[base] + 0.5, rects[base + 1] + 0.5, rects[base + 2] - 1, rects[base + 3] - 1);
    });
    context.stroke();
    state.rects = rects;
    state.drawn = drawn;
  }

  function outline(index, colour, box) {
    if (index < 0) { return; }
    const r = state.rects;
    context.save();
    context.strokeStyle = colour;
    context.lineWidth = 2.5;
    context.strokeRect(r[index * 4] - 1, r[index * 4 + 1] - 1, r[index * 4 + 2] + 2, r[index * 4 + 3] + 2);
    context.restore();
  }

  function drawLiveLine(box) {
    const live = state.live;
    context.save();
    context.strokeStyle = "rgba(29, 35, 48, 0.75)";
    context.lineWidth = 1.2;
    context.beginPath();
    for (let step = 0; step < live.length; step += 1) {
      const y = toY(live[step], box);
      if (step === 0) { context.moveTo(toX(0, box), y); } else { context.lineTo(toX(step, box), y); }
      context.lineTo(toX(step + 1, box), y);
    }
    context.stroke();
    context.restore();
  }

  function drawMarks(box) {
    const plan = state.plan;
    const peakLeft = toX(plan.peak_step, box), peakRight = toX(plan.peak_step + 1, box);
    context.fillStyle = "rgba(214, 39, 40, 0.10)";
    context.fillRect(peakLeft, box.top, Math.max(peakRight - peakLeft, 2), box.height);
    horizontal(plan.arena_bytes, "#000000", [], "arena " + formatBytes(plan.arena_bytes), "left", -4, box);
    horizontal(plan.lower_bound_bytes, "#d62728", [6, 4], "lower bound " + formatBytes(plan.lower_bound_bytes),
               "right", 12, box);
    context.save();
    context.strokeStyle = "#d62728";
    context.setLineDash([2, 3]);
    const middle = (peakLeft + peakRight) / 2;
    context.beginPath(); context.moveTo(middle, box.top); context.lineTo(middle, box.top + box.height); context.stroke();
    context.restore();
    context.fillStyle = "#d62728";
    if (middle < box.left || middle > box.left + box.width) { return; }
    const label = "peak step " + plan.peak_step;
    const room = middle + 4 + context.measureText(label).width < box.left + box.width;
    context.textAlign = room ? "left" : "right";
    context.fillText(label, room ? middle + 4 : middle - 4, box.top + box.height - 8);
    context.textAlign = "left";
  }

  function horizontal(bytes, colour, dash, label, side, below, box) {
    const y = toY(bytes, box);
    if (y < box.top || y > box.top + box.height) { return; }
    context.save();
    context.strokeStyle = colour;
    context.lineWidth = 1.5;
    context.setLineDash(dash);
    context.beginPath(); context.moveTo(box.left, y); context.lineTo(box.left + box.width, y); context.stroke();
    context.fillStyle = colour;
    context.textAlign = side;
    context.fillText(label, side === "left" ? box.left + 4 : box.left + box.width - 4, y + below);
    context.restore();
  }

  function drawAxes(box) {
    context.save();
    context.strokeStyle = "#d7dbe3";
    context.fillStyle = "#5b6475";
    context.lineWidth = 1;
    context.textAlign = "right";
    context.textBaseline = "middle";
    byteTicks(state.view.y0, state.view.y1, 6).forEach(function (tick) {
      const y = toY(tick, box);
      context.beginPath(); context.moveTo(box.left - 4, y); context.lineTo(box.left + box.width, y); context.stroke();
      context.fillText(formatBytes(tick).replace(/\.0+ /, " "), box.left - 6, y);
    });
    context.textAlign = "center";
    context.textBaseline = "top";
    niceTicks(state.view.x0, state.view.x1, 10).filter(Number.isInteger).forEach(function (tick) {
      const x = toX(tick, box);
      context.beginPath(); context.moveTo(x, box.top + box.height); context.lineTo(x, box.top + box.height + 4);
      context.stroke();
      context.fillText(String(tick), x, box.top + box.height + 6);
    });
    context.fillText("schedule step", box.left + box.width / 2, box.top + box.height + 22);
    context.save();
    context.translate(12, box.top + box.height / 2);
    context.rotate(-Math.PI / 2);
    context.fillText("arena offset", 0, 0);
    context.restore();
    context.strokeStyle = "#5b6475";
    context.strokeRect(box.left, box.top, box.width, box.height);
    context.restore();
  }

  function draw() {
    if (!state.plan) { return; }
    const box = plotBox();
    context.clearRect(0, 0, canvas.clientWidth, canvas.clientHeight);
    context.font = "11px system-ui, sans-serif";
    drawAxes(box);
    context.save();
    context.beginPath(); context.rect(box.left, box.top, box.width, box.height); context.clip();
    context.strokeStyle = "rgba(0, 0, 0, 0.35)";
    context.lineWidth = 1;
    drawBlocks(box);
    drawLiveLine(box);
    drawMarks(box);
    outline(state.pinned, "#111111", box);
    outline(state.hovered, "#ffbf00", box);
    context.restore();
  }

  function drawSoon() {
    // Pointer moves and wheel turns come faster than frames: redraw once per frame.
    if (state.frame) { return; }
    state.frame = window.requestAnimationFrame(function () { state.frame = 0; draw(); });
  }

  function bufferAt(x, y) {
    // Blocks are drawn largest first, so the last one containing the point is on top.
    const r = state.rects;
    if (!r) { return -1; }
    for (let index = state.buffers.length - 1; index >= 0; index -= 1) {
      const left = r[index * 4], top = r[index * 4 + 1];
      if (x >= left && x <= left + r[index * 4 + 2] && y >= top && y <= top + r[index * 4 + 3]) { return index; }
    }
    return -1;
  }

  function describe(buffer) {
    const lines = ["%" + buffer.name + (buffer.name === buffer.value ? "" : "  (of %" + buffer.value + ")")];
    lines.push("op        " + buffer.op);
    lines.push("kind      " + buffer.kind);
    lines.push("dtype     " + buffer.dtype + "   shape " + (buffer.shape || "[]"));
    lines.push("bytes     " + exactBytes(buffer.bytes));
    lines.push("lifetime  steps [" + buffer.first + ", " + buffer.last + "]");
    lines.push("offset    " + exactBytes(buffer.offset) + " .. " + (buffer.offset + buffer.bytes) + " B");
    return lines.join("\n");
  }

  function showTooltip(index, x, y) {
    if (index < 0) { tooltip.hidden = true; return; }
    tooltip.textContent = describe(state.buffers[index]);
    tooltip.hidden = false;
    const stage = canvas.parentElement;
    const left = x + 14 + tooltip.offsetWidth > stage.clientWidth ? x - 14 - tooltip.offsetWidth : x + 14;
    const top = y + 14 + tooltip.offsetHeight > stage.clientHeight ? y - 14 - tooltip.offsetHeight : y + 14;
    tooltip.style.left = Math.max(left, 0) + "px";
    tooltip.style.top = Math.max(top, 0) + "px";
  }

  function pointer(event) {
    const bounds = canvas.getBoundingClientRect();
    return { x: event.clientX - bounds.left, y: event.clientY - bounds.top };
  }

  function onMove(event) {
    const at = pointer(event);
    if (state.drag) {
      const box = plotBox();
      const dx = (at.x - state.drag.x) / box.width * (state.drag.view.x1 - state.drag.view.x0);
      const dy = (at.y - state.drag.y) / box.height * (state.drag.view.y1 - state.drag.view.y0);
      state.drag.moved = state.drag.moved || Math.abs(at.x - state.drag.x) + Math.abs(at.y - state.drag.y) > 3;
      state.view = { x0: state.drag.view.x0 - dx, x1: state.drag.view.x1 - dx,
                     y0: state.drag.view.y0 + dy, y1: state.drag.view.y1 + dy };
      drawSoon();
      return;
    }
    const index = bufferAt(at.x, at.y);
    if (index !== state.hovered) { state.hovered = index; drawSoon(); }
    showTooltip(index, at.x, at.y);
  }

  function onWheel(event) {
    event.preventDefault();
    const at = pointer(event), box = plotBox(), view = state.view;
    const factor = Math.exp(Math.max(Math.min(event.deltaY, 400), -400) * 0.002);
    const step = view.x0 + (at.x - box.left) / box.width * (view.x1 - view.x0);
    const bytes = view.y0 + (box.top + box.height - at.y) / box.height * (view.y1 - view.y0);
    const zoomX = !event.altKey, zoomY = !event.shiftKey;
    state.view = {
      x0: zoomX ? step - (step - view.x0) * factor : view.x0, x1: zoomX ? step + (view.x1 - step) * factor : view.x1,
      y0: zoomY ? bytes - (bytes - view.y0) * factor : view.y0, y1: zoomY ? bytes + (view.y1 - bytes) * factor : view.y1,
    };
    drawSoon();
  }

  function onDown(event) {
    const at = pointer(event);
    state.drag = { x: at.x, y: at.y, view: Object.assign({}, state.view), moved: false };
    canvas.classList.add("dragging");
    tooltip.hidden = true;
  }

  function onUp(event) {
    const drag = state.drag;
    state.drag = null;
    canvas.classList.remove("dragging");
    if (!drag || drag.moved) { return; }
    const at = pointer(event);
    pin(bufferAt(at.x, at.y));
  }

  function pin(index) {
    state.pinned = index;
    pinned.textContent = index < 0 ? "click a block to pin its details here" : describe(state.buffers[index]);
    draw();
  }

  function resetView() {
    state.view = homeView(state.plan);
    draw();
  }

  function showSummary(plan) {
    const side = Object.keys(plan.side_buffers);
    const items = [
      ["target", plan.target], ["planner", plan.planner + ", alignment " + plan.alignment + ", sizing " + plan.sizing],
      ["arena", exactBytes(plan.arena_bytes)], ["lower bound", exactBytes(plan.lower_bound_bytes)],
      ["efficiency", (plan.efficiency * 100).toFixed(1) + " %"],
      ["peak step", plan.peak_step + " of " + plan.steps + " (" + formatBytes(plan.peak_bytes) + " live)"],
      ["buffers", String(plan.buffers.length)],
    ];
    if (side.length) {
      items.push(["outside the arena", side.map(function (name) {
        return name + " " + formatBytes(plan.side_buffers[name]);
      }).join(", ")]);
    }
    const summary = document.getElementById("summary");
    summary.textContent = "";
    items.forEach(function (item) {
      const span = document.createElement("span");
      const value = document.createElement("b");
      span.textContent = item[0] + " ";
      value.textContent = item[1];
      span.appendChild(value);
      summary.appendChild(span);
    });
  }

  function showLegend(plan) {
    const legend = document.getElementById("legend");
    legend.textContent = "";
    const kinds = Array.from(new Set(plan.buffers.map(function (row) { return row[plan.columns.indexOf("kind")]; })));
    kinds.sort().forEach(function (kind) {
      const item = document.createElement("span");
      const swatch = document.createElement("span");
      swatch.className = "swatch";
      swatch.style.background = KIND_COLOURS[kind] || "#999999";
      item.appendChild(swatch);
      item.appendChild(document.createTextNode(kind));
      legend.appendChild(item);
    });
    [["#000000", "solid", "arena"], ["#d62728", "dashed", "lower bound (most bytes live at once)"],
     ["rgba(29, 35, 48, 0.75)", "solid", "bytes live at each step"]].forEach(function (mark) {
      const item = document.createElement("span");
      const rule = document.createElement("span");
      rule.className = "rule";
      rule.style.borderTopColor = mark[0];
      rule.style.borderTopStyle = mark[1];
      item.appendChild(rule);
      item.appendChild(document.createTextNode(mark[2]));
      legend.appendChild(item);
    });
  }

  function choose(index) {
    const plan = DATA.plans[index];
    state.plan = plan;
    state.buffers = bufferObjects(plan);
    state.live = liveBytes(plan, state.buffers);
    state.view = homeView(plan);
    state.hovered = -1;
    tooltip.hidden = true;
    showSummary(plan);
    showLegend(plan);
    pin(-1);
  }

  function setUp() {
    if (DATA.plans.length > 1) {
      DATA.plans.forEach(function (plan, index) {
        const option = document.createElement("option");
        option.value = String(index);
        option.textContent = plan.target + " (arena " + formatBytes(plan.arena_bytes) + ")";
        selector.appendChild(option);
      });
      document.getElementById("target-choice").hidden = false;
      selector.addEventListener("change", function () { choose(Number(selector.value)); });
    }
    canvas.addEventListener("mousemove", onMove);
    canvas.addEventListener("mouseleave", function () {
      tooltip.hidden = true;
      if (state.hovered >= 0) { state.hovered = -1; draw(); }
    });
    canvas.addEventListener("wheel", onWheel, { passive: false });
    canvas.addEventListener("mousedown", onDown);
    window.addEventListener("mouseup", onUp);
    canvas.addEventListener("dblclick", resetView);
    document.getElementById("reset").addEventListener("click", resetView);
    window.addEventListener("keydown", function (event) { if (event.key === "0") { resetView(); } });
    window.addEventListener("resize", resize);
    choose(0);
    resize();
  }

  function hoverCheck(wanted) {
    // A real mouse event at the centre of the block, read back from the tooltip.
    const index = wanted === null ? 0 : state.buffers.findIndex(function (b) { return b.name === wanted; });
    if (index < 0) { return { name: wanted, found: false }; }
    const r = state.rects, bounds = canvas.getBoundingClientRect();
    const x = bounds.left + r[index * 4] + r[index * 4 + 2] / 2, y = bounds.top + r[index * 4 + 1] + r[index * 4 + 3] / 2;
    canvas.dispatchEvent(new MouseEvent("mousemove", { clientX: x, clientY: y, bubbles: true }));
    const result = { name: state.buffers[index].name, found: true, visible: !tooltip.hidden, text: tooltip.textContent };
    canvas.dispatchEvent(new MouseEvent("mouseleave", { bubbles: true }));
    canvas.dispatchEvent(new MouseEvent("mousedown", { clientX: x, clientY: y, bubbles: true }));
    window.dispatchEvent(new MouseEvent("mouseup", { clientX: x, clientY: y, bubbles: true }));
    result.pinned = pinned.textContent;
    pin(-1);
    return result;
  }

  function zoomCheck() {
    const bounds = canvas.getBoundingClientRect(), box = plotBox();
    const before = state.view.x1 - state.view.x0;
    canvas.dispatchEvent(new WheelEvent("wheel", { deltaY: -240, clientX: bounds.left + box.left + box.width / 2,
                                                   clientY: bounds.top + box.top + box.height / 2,
                                                   bubbles: true, cancelable: true }));
    const zoomed = state.view.x1 - state.view.x0;
    document.getElementById("reset").click();
    return { zoomed_in: zoomed < before, reset: state.view.x1 - state.view.x0 === before };
  }

  function selfTest(wanted) {
    const report = { plans: [] };
    DATA.plans.forEach(function (plan, index) {
      if (DATA.plans.length > 1) {
        selector.value = String(index);
        selector.dispatchEvent(new Event("change"));
      }
      const started = performance.now();
      draw();
      const drawMs = performance.now() - started;
      report.plans.push({ target: plan.target, buffers: plan.buffers.length, blocks: state.drawn,
                          draw_ms: Math.round(drawMs * 10) / 10,
                          selector: DATA.plans.length > 1 ? selector.options.length : 0,
                          hover: hoverCheck(wanted), zoom: zoomCheck() });
    });
    report.errors = window.planPageErrors.slice();
    const out = document.getElementById("selftest");
    out.textContent = JSON.stringify(report);
    out.dataset.done = "yes";
  }

  setUp();
  const hash = window.location.hash;
  if (hash === "#selftest" || hash.indexOf("#selftest=") === 0) {
    selfTest(hash === "#selftest" ? null : decodeURIComponent(hash.slice("#selftest=".length)));
  }
})();
