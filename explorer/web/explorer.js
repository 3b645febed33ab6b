// The attention explorer's page: loads the WebAssembly core (`wasm_bindgen`, with its
// bytes in S2S_EXPLORER_WASM so that the page also works opened from disk), a model
// file (dropped, chosen, or the one `s2s explore` serves), and shows each decode.
//
// The page's elements and their data attributes are what tests/tests/explorer.rs reads
// (a row's token as it is in th.out's data-token, its text shown visibly); every decode
// sets #output's data-source last, once everything else is drawn.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { explorer: null, facts: null, trace: null, step: 0, timer: undefined };

// Viridis at nine stops (matplotlib's), interpolated: as the PNG heatmaps.
const VIRIDIS = [
  [0x44, 0x01, 0x54], [0x48, 0x28, 0x78], [0x3e, 0x49, 0x89], [0x31, 0x68, 0x8e],
  [0x26, 0x82, 0x8e], [0x1f, 0x9e, 0x89], [0x35, 0xb7, 0x79], [0x6e, 0xce, 0x58],
  [0xfd, 0xe7, 0x25],
];

function viridis(w) {
  const x = Math.min(1, Math.max(0, Number.isFinite(w) ? w : 0)) * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(x));
  const f = x - i;
  const c = VIRIDIS[i].map((a, k) => Math.round(a + (VIRIDIS[i + 1][k] - a) * f));
  return `rgb(${c[0]}, ${c[1]}, ${c[2]})`;
}

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

// Control characters shown visibly (the end token is often "\n").
function visible(token) {
  return token.replace(/\n/g, "\u23ce").replace(/\t/g, "\u21e5").replace(/ /g, "\u2423");
}

function setStatus(kind, text) {
  $("status").dataset.state = kind;
  $("status").textContent = text;
}

function errorText(err) {
  return String(err && err.message !== undefined ? err.message : err);
}

// A model's bytes, named `name`: on success it replaces the loaded one; on failure the
// error is shown and the loaded model, if any, stays.
function load(name, bytes) {
  let explorer;
  try {
    explorer = new wasm_bindgen.Explorer(name, bytes);
  } catch (err) {
    setStatus("error", errorText(err));
    return;
  }
  if (state.explorer) state.explorer.free();
  state.explorer = explorer;
  state.facts = JSON.parse(explorer.facts());
  $("model-name").textContent = name;
  drawFacts();
  setStatus("ready", `${name}: loaded and checked (${bytes.length} bytes).`);
  decode();
}

function loadFile(file) {
  if (!file) return;
  const refused = wasm_bindgen.refuse_size(file.name, file.size);
  if (refused !== undefined) {
    setStatus("error", refused);
    return;
  }
  file.arrayBuffer().then(
    (buf) => load(file.name, new Uint8Array(buf)),
    (err) => setStatus("error", `${file.name}: cannot be read: ${errorText(err)}`),
  );
}

function drawFacts() {
  const dl = $("model-desc");
  dl.replaceChildren();
  for (const [label, text] of state.facts.lines) {
    dl.append(el("dt", {}, label), el("dd", {}, text));
  }
  const select = $("board");
  const chosen = select.value;
  select.replaceChildren();
  for (const b of state.facts.boards) {
    select.append(el("option", { value: b.name }, b.name));
  }
  if (chosen) select.value = chosen;
  drawPlan();
}

const grouped = (n) => n.toLocaleString("en-US");

function drawPlan() {
  const b = state.facts && state.facts.boards.find((x) => x.name === $("board").value);
  const plan = $("plan");
  if (!b) {
    plan.textContent = "";
    plan.dataset.bytes = "0";
    return;
  }
  const lines = [`${b.summary}.`];
  if (b.positions === null) {
    lines.push(`The model's fixed source length is over what ${b.name} takes.`);
  } else {
    const fits = b.plan_bytes <= b.arena_bytes ? "fits" : "does not fit";
    lines.push(`Workspace (RAM) for ${b.positions} source positions: ` +
      `${grouped(b.plan_bytes)} bytes of its ${grouped(b.arena_bytes)}-byte arena (${fits}).`);
  }
  const flash = b.model_bytes <= b.region_bytes ? "fits" : "does not fit";
  lines.push(`Model file: ${grouped(b.model_bytes)} bytes of its ` +
    `${grouped(b.region_bytes)}-byte model region (${flash}).`);
  if (!b.precision_compiled) lines.push("Its default firmware does not compile this precision.");
  plan.textContent = lines.join(" ");
  plan.dataset.bytes = String(b.plan_bytes || 0);
}

function decode() {
  if (!state.explorer) return;
  stopReplay();
  const source = $("source").value;
  const beam = Math.max(1, parseInt($("beam").value, 10) || 1);
  const out = $("output");
  try {
    state.trace = JSON.parse(state.explorer.decode(source, beam));
    $("source-error").textContent = "";
    state.step = Math.max(0, state.trace.steps.length - 1);
    drawTrace();
    out.textContent = state.trace.output.text;
    out.dataset.ids = state.trace.output.ids.join(" ");
    out.dataset.state = "ok";
  } catch (err) {
    state.trace = null;
    drawTrace();
    out.textContent = "";
    out.dataset.ids = "";
    out.dataset.state = "error";
    $("source-error").textContent = errorText(err);
  }
  out.dataset.source = source;
}

function drawTrace() {
  const t = state.trace;
  const table = $("heatmap");
  table.replaceChildren();
  const steps = t ? t.steps : [];
  const attention = Boolean(state.facts && state.facts.attention);
  if (attention && t) {
    table.removeAttribute("data-none");
    const head = el("tr");
    head.append(el("th"));
    for (const s of t.source_tokens) head.append(el("th", { class: "src", dir: "auto" }, s));
    const thead = el("thead");
    thead.append(head);
    const tbody = el("tbody");
    steps.forEach((s, i) => {
      const row = el("tr", { "data-step": String(i) });
      row.append(el("th", { class: "out", dir: "auto", "data-token": s.token }, visible(s.token)));
      (s.weights || []).forEach((w, j) => {
        const cell = el("td", { "data-w": String(w), title: `${t.source_tokens[j]} ${w}` });
        cell.style.background = viridis(w);
        row.append(cell);
      });
      tbody.append(row);
    });
    table.append(thead, tbody);
  } else {
    table.dataset.none = "1";
    if (state.facts && !attention) {
      table.append(el("caption", {}, "This model has no attention: the decoder starts from the encoder's last state."));
    }
  }
  const bars = $("entropy");
  bars.replaceChildren();
  const most = Math.max(1e-6, ...steps.map((s) => s.entropy || 0));
  steps.forEach((s, i) => {
    if (s.entropy === null) return;
    const bar = el("div", {
      class: "bar", "data-step": String(i), "data-entropy": String(s.entropy),
      title: `step ${i + 1}: ${s.entropy.toFixed(3)} nats`,
    });
    bar.style.height = `${Math.max(2, (100 * s.entropy) / most)}%`;
    bars.append(bar);
  });
  const range = $("step");
  range.max = String(Math.max(0, steps.length - 1));
  range.value = String(state.step);
  drawStep();
}

// What depends on the selected step: the rows and bars before and after it, the next
// tokens, the beam.
function drawStep() {
  const t = state.trace;
  const n = t ? t.steps.length : 0;
  const s = Math.min(Math.max(0, state.step), Math.max(0, n - 1));
  state.step = s;
  $("step").value = String(s);
  $("step-label").textContent = `step ${n ? s + 1 : 0} of ${n}`;
  for (const row of document.querySelectorAll("#heatmap tbody tr, #entropy .bar")) {
    const i = Number(row.dataset.step);
    row.classList.toggle("future", i > s);
    row.classList.toggle("current", i === s);
  }
  const topk = $("topk");
  topk.replaceChildren();
  if (t && n) {
    for (const c of t.steps[s].top) {
      const li = el("li", { "data-id": String(c.id), "data-p": String(c.p) });
      const bar = el("span", { class: "p" });
      bar.style.width = `${Math.round(c.p * 8 * 10) / 10}em`;
      li.append(bar, el("span", { dir: "auto" }, visible(c.token)), el("span", { class: "score" }, ` ${(c.p * 100).toFixed(1)} %`));
      topk.append(li);
    }
  }
  drawBeam(s);
}

// The beam after step `s` (its last step if the search was shorter): each hypothesis
// that goes on, marked pruned when none of the next step's extends it.
function drawBeam(s) {
  const view = $("beam-view");
  view.replaceChildren();
  const b = state.trace && state.trace.beam;
  if (!b || b.steps.length === 0) {
    view.append(el("p", { class: "hint" }, "Choose a beam width over 1."));
    return;
  }
  const i = Math.min(s, b.steps.length - 1);
  const step = b.steps[i];
  const next = b.steps[i + 1];
  const extends_ = (h, g) => g.ids.length >= h.ids.length && h.ids.every((x, k) => g.ids[k] === x);
  view.append(el("p", { class: "hint" }, `Width ${b.width}, after step ${i + 1} of ${b.steps.length}:`));
  const show = (h, kind) => {
    const d = el("div", { class: `hyp ${kind}`, "data-tokens": h.text, dir: "auto" }, h.text || "\u2205");
    d.append(el("span", { class: "score" }, `${h.score.toFixed(3)} nats${h.ended ? ", ended" : ""}`));
    view.append(d);
  };
  for (const h of step.live) {
    let kind = "live";
    if (h.ended) kind = "finished";
    else if (next && !next.live.concat(next.finished).some((g) => extends_(h, g))) kind = "pruned";
    show(h, kind);
  }
  for (const h of step.finished) show(h, "finished");
}

function moveStep(by) {
  stopReplay();
  state.step += by;
  drawStep();
}

// The decode replayed: the heatmap fills row by row, a step every REPLAY_MS.
const REPLAY_MS = 250;

function replay() {
  stopReplay();
  if (!state.trace || state.trace.steps.length === 0) return;
  state.step = 0;
  drawStep();
  state.timer = setInterval(() => {
    if (state.step >= state.trace.steps.length - 1) {
      stopReplay();
      return;
    }
    state.step += 1;
    drawStep();
  }, REPLAY_MS);
}

function stopReplay() {
  if (state.timer !== undefined) clearInterval(state.timer);
  state.timer = undefined;
}

function start() {
  const wasm = Uint8Array.from(atob(S2S_EXPLORER_WASM), (c) => c.charCodeAt(0));
  wasm_bindgen.initSync({ module: wasm });
  $("source").addEventListener("input", decode);
  $("beam").addEventListener("input", decode);
  $("beam").addEventListener("change", decode);
  $("step").addEventListener("input", () => { stopReplay(); state.step = Number($("step").value); drawStep(); });
  $("step-back").addEventListener("click", () => moveStep(-1));
  $("step-forward").addEventListener("click", () => moveStep(1));
  $("play").addEventListener("click", replay);
  $("board").addEventListener("change", drawPlan);
  $("model-input").addEventListener("change", (e) => loadFile(e.target.files[0]));
  document.addEventListener("dragover", (e) => { e.preventDefault(); $("drop-zone").classList.add("over"); });
  document.addEventListener("dragleave", () => $("drop-zone").classList.remove("over"));
  document.addEventListener("drop", (e) => {
    e.preventDefault();
    $("drop-zone").classList.remove("over");
    loadFile(e.dataTransfer && e.dataTransfer.files[0]);
  });
  drawTrace();
  // A source (and beam width) given in the address: `index.html#source=sophea&beam=3`.
  const given = new URLSearchParams(location.hash.slice(1));
  if (given.get("source") !== null) $("source").value = given.get("source");
  if (given.get("beam") !== null) $("beam").value = given.get("beam");
  // Served by `s2s explore`: its model. Opened from disk: wait for one.
  if (location.protocol.startsWith("http")) {
    fetch("explore.json")
      .then((r) => (r.ok ? r.json() : Promise.reject(new Error(`explore.json: ${r.status}`))))
      .then((meta) => fetch("model.s2s").then((r) => (r.ok ? r.arrayBuffer() : Promise.reject(new Error(`${meta.name}: ${r.status}`))))
        .then((buf) => load(meta.name, new Uint8Array(buf))))
      .catch(() => setStatus("empty", "No model served: drop a .s2s file on the page."));
  } else {
    setStatus("empty", "No model loaded yet: drop a .s2s file on the page.");
  }
}

start();
