// The page of `sandboxer ui`: plain JavaScript over the JSON endpoints of internal/ui. Every
// value from the journal goes into the page as text (textContent), never as HTML.
"use strict";

const pageSize = 100;
const pollMs = 1000;
const timelineMax = 2000; // bars drawn: the most recent loaded calls

const state = {run: "", q: "", tool: "", status: "", calls: [], byId: new Map(), next: 0, more: false,
  selected: 0, gen: 0};

const $ = (sel) => document.querySelector(sel);

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : String(c));
  return e;
}

async function api(path, params) {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) if (v !== "" && v !== undefined) qs.set(k, v);
  const r = await fetch(path + (qs.size ? "?" + qs : ""), {credentials: "same-origin"});
  if (!r.ok) throw new Error(path + ": " + r.status + " " + (await r.text()));
  return r.json();
}

const pad = (n, w) => String(n).padStart(w || 2, "0");
function fmtTime(ms, withDate) {
  if (!ms) return "";
  const d = new Date(ms);
  const t = pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds()) + "." + pad(d.getMilliseconds(), 3);
  return withDate ? d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " + t : t;
}
// fmtDate is the short form of a run's times: month, day, hours, minutes, seconds.
function fmtDate(ms) {
  const d = new Date(ms);
  return pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " + pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds());
}
function fmtDuration(c) {
  if (c.status === "running" || !c.finishedAtMs) return "running";
  const ms = c.finishedAtMs - c.startedAtMs;
  return ms < 1000 ? ms + " ms" : (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s";
}
const taskName = (c) => c.nodeId + " #" + c.iteration + " a" + c.attempt;
const parse = (s) => { try { return JSON.parse(s); } catch { return s; } };

// Runs.

async function loadRuns() {
  const {runs} = await api("/api/runs");
  const body = $("#runs tbody");
  body.replaceChildren(el("tr", {class: state.run === "" ? "sel" : "", "data-run": "", onclick: () => selectRun("")},
    el("td", {colspan: 5}, "all runs")));
  for (const r of runs) {
    body.append(el("tr", {class: r.runId === state.run ? "sel" : "", "data-run": r.runId, onclick: () => selectRun(r.runId)},
      el("td", {class: "mono run-id", title: r.runId}, r.runId), el("td", {title: fmtTime(r.firstMs, true)}, fmtDate(r.firstMs)),
      el("td", {title: fmtTime(r.lastMs, true)}, fmtDate(r.lastMs)),
      el("td", {class: "num"}, r.calls), el("td", {class: "num" + (r.errors ? " err" : "")}, r.errors)));
  }
}

function selectRun(run) {
  state.run = run;
  for (const tr of document.querySelectorAll("#runs tbody tr")) tr.classList.toggle("sel", tr.dataset.run === run);
  $("#run-title").textContent = run ? "Run " + run : "All runs";
  reload();
}

// Tasks of the selected run.

async function loadTasks() {
  const box = $("#tasks");
  if (!state.run) { box.replaceChildren(); return; }
  const {tasks} = await api("/api/tasks", {run: state.run});
  box.replaceChildren(...tasks.map((t) => el("span", {class: "task" + (t.errors ? " err" : "") + (t.attempt > 1 ? " retry" : ""),
    title: t.calls + " calls, " + t.errors + " errors, " + fmtTime(t.firstMs) + " to " + fmtTime(t.lastMs)},
    taskName(t) + " · " + t.calls)));
}

// Calls.

function filters() {
  return {run: state.run, q: state.q, tool: state.tool, status: state.status};
}

async function reload() {
  const gen = ++state.gen;
  state.calls = []; state.byId.clear(); state.next = 0; state.more = false;
  $("#calls tbody").replaceChildren();
  await Promise.all([loadPage(gen), loadTasks()]);
}

// loadPage appends the calls after the cursor: the next page, or what was recorded since.
async function loadPage(gen) {
  const page = await api("/api/calls", {...filters(), after: state.next, limit: pageSize});
  if (gen !== state.gen) return 0; // the filters changed meanwhile
  for (const c of page.calls) addCall(c);
  state.next = page.next;
  state.more = page.more;
  $("#more").hidden = !page.more;
  if (page.calls.length) drawTimeline();
  return page.calls.length;
}

function addCall(c) {
  state.calls.push(c);
  state.byId.set(c.id, c);
  $("#calls tbody").append(callRow(c));
}

function callRow(c) {
  return el("tr", {"data-id": c.id, class: "call " + c.status + (c.id === state.selected ? " sel" : ""), onclick: () => showCall(c.id)},
    el("td", {class: "num"}, c.id), el("td", {}, fmtTime(c.startedAtMs)), el("td", {class: "mono"}, taskName(c)),
    el("td", {class: "num"}, c.seq), el("td", {class: "mono"}, c.toolName), el("td", {class: "status"}, c.status),
    el("td", {class: "num"}, fmtDuration(c)), el("td", {class: "mono preview"}, c.inputPreview));
}

function updateCall(c) {
  const old = state.byId.get(c.id);
  if (!old) return;
  Object.assign(old, c);
  const tr = document.querySelector(`#calls tr[data-id="${c.id}"]`);
  if (tr) tr.replaceWith(callRow(old));
}

// The timeline: one lane per task attempt, a bar per call from its start to its finish.
function drawTimeline() {
  const calls = state.calls.slice(-timelineMax);
  const box = $("#timeline");
  if (!calls.length) { box.replaceChildren(); return; }
  const now = Date.now();
  const end = (c) => (c.status === "running" ? Math.max(now, c.startedAtMs) : Math.max(c.finishedAtMs, c.startedAtMs));
  const t0 = Math.min(...calls.map((c) => c.startedAtMs));
  const span = Math.max(1, Math.max(...calls.map(end)) - t0);
  const lanes = new Map();
  for (const c of calls) {
    const k = (state.run ? "" : c.runId + " ") + taskName(c);
    if (!lanes.has(k)) lanes.set(k, []);
    lanes.get(k).push(c);
  }
  const rows = [];
  for (const [k, cs] of lanes) {
    const track = el("div", {class: "track"});
    for (const c of cs) {
      const left = ((c.startedAtMs - t0) / span) * 100;
      const width = ((end(c) - c.startedAtMs) / span) * 100;
      const bar = el("div", {class: "bar " + c.status + (c.id === state.selected ? " sel" : ""), "data-id": c.id,
        title: `#${c.id} ${c.toolName} ${c.status} ${fmtDuration(c)}`, onclick: () => showCall(c.id)});
      // Through the CSSOM: the page's Content-Security-Policy refuses style attributes.
      bar.style.left = left + "%";
      bar.style.width = `max(3px, ${width}%)`;
      track.append(bar);
    }
    rows.push(el("div", {class: "lane"}, el("span", {class: "lane-name mono", title: k}, k), track));
  }
  rows.push(el("div", {class: "axis"}, el("span", {}, fmtTime(t0)), el("span", {}, "+" + (span / 1000).toFixed(2) + " s")));
  box.replaceChildren(...rows);
}

// The detail of one call.

function pre(v, cls) {
  return el("pre", {class: cls || ""}, typeof v === "string" ? v : JSON.stringify(v, null, 2));
}

function section(title, ...content) {
  return el("section", {class: "part", "data-part": title.toLowerCase()}, el("h3", {}, title), ...content);
}

function kvTable(obj) {
  return el("table", {class: "kv"}, ...Object.entries(obj).map(([k, v]) =>
    el("tr", {}, el("th", {}, k), el("td", {class: "mono"}, typeof v === "string" ? v : JSON.stringify(v)))));
}

// changedFiles finds the list of changed files in a receipt (or the output), whatever its name.
function changedFiles(out) {
  const r = out && typeof out === "object" ? out.receipt : null;
  for (const src of [r, out]) {
    if (!src || typeof src !== "object") continue;
    for (const k of ["paths", "files", "changed", "changedFiles"]) {
      if (Array.isArray(src[k])) return src[k];
      const p = src[k];
      if (p && typeof p === "object" && ["created", "changed", "deleted"].some((c) => Array.isArray(p[c]) || p.skipped)) {
        // A receipt's path diff: {created: [...], changed: [...], deleted: [...], skipped?}.
        if (p.skipped) return [{path: "(not listed: " + p.skipped + ")"}];
        return ["created", "changed", "deleted"].flatMap((c) => (p[c] || []).map((path) => ({path, change: c})));
      }
      if (src[k] && typeof src[k] === "object") return Object.entries(src[k]).map(([path, v]) => ({path, ...(typeof v === "object" ? v : {change: v})}));
    }
  }
  return null;
}

async function showCall(id) {
  state.selected = id;
  for (const e of document.querySelectorAll("#calls tr.sel, #timeline .bar.sel")) e.classList.remove("sel");
  for (const e of document.querySelectorAll(`[data-id="${id}"]`)) e.classList.add("sel");
  const c = await api("/api/calls/" + id);
  if (state.selected !== id) return;
  const out = parse(c.outputJson), err = parse(c.errorJson), input = parse(c.inputJson);
  const parts = [
    el("h2", {}, `#${c.id} ${c.toolName} `, el("span", {class: "status " + c.status}, c.status)),
    kvTable({run: c.runId, node: c.nodeId, iteration: c.iteration, attempt: c.attempt, seq: c.seq,
      started: fmtTime(c.startedAtMs, true), finished: c.status === "running" ? "" : fmtTime(c.finishedAtMs, true),
      duration: fmtDuration(c), "idempotency key": c.idempotencyKey, "side effect": c.sideEffect, idempotent: c.idempotent}),
  ];
  if (c.warning) parts.push(section("Retry warning", pre(c.warning, "warning")));
  parts.push(section("Input", pre(input)));
  if (err !== null) {
    const msg = err && typeof err === "object" && err.code ? el("p", {class: "err"}, err.code + ": " + (err.message || "")) : "";
    parts.push(section("Error", msg, pre(err)));
  }
  if (out !== null) {
    const text = out && typeof out === "object" && typeof out.output === "string" ? pre(out.output, "text") : "";
    parts.push(section("Output", text, text ? el("details", {}, el("summary", {}, "JSON"), pre(out)) : pre(out)));
  }
  if (out && Array.isArray(out.network) && out.network.length) {
    parts.push(section("Network", el("table", {class: "grid"},
      el("tr", {}, ...["host", "port", "decision", "bytes in", "bytes out", "reason"].map((h) => el("th", {}, h))),
      ...out.network.map((d) => el("tr", {class: d.allowed ? "" : "err"}, el("td", {class: "mono"}, d.host), el("td", {class: "num"}, d.port ?? ""),
        el("td", {}, d.allowed ? "allowed" : "refused"), el("td", {class: "num"}, d.bytesIn ?? ""), el("td", {class: "num"}, d.bytesOut ?? ""),
        el("td", {}, d.reason || ""))))));
  }
  // A failed bash call carries its receipt in the error's details.
  const withReceipt = out && typeof out === "object" && out.receipt ? out : (err && err.details && err.details.receipt ? err.details : null);
  if (withReceipt && typeof withReceipt.receipt === "object") {
    const {paths, ...costs} = withReceipt.receipt;
    parts.push(section("Receipt", kvTable(costs)));
  }
  const files = changedFiles(withReceipt || out);
  if (files && files.length) {
    parts.push(section("Changed files", el("ul", {class: "files mono"}, ...files.map((f) =>
      el("li", {}, typeof f === "string" ? f : (f.path || f.name || JSON.stringify(f)) +
        Object.entries(f).filter(([k]) => k !== "path" && k !== "name").map(([k, v]) => "  " + k + "=" + (typeof v === "string" ? v : JSON.stringify(v))).join(""))))));
  }
  const box = $("#detail");
  box.replaceChildren(el("button", {class: "close", onclick: () => { box.hidden = true; }}, "×"), ...parts);
  box.hidden = false;
}

// Live updates: poll for calls after the cursor once the list is at its end, and for the
// outcome of the calls still running.

async function poll() {
  const gen = state.gen;
  try {
    let changed = false;
    if (!state.more) changed = (await loadPage(gen)) > 0;
    const running = state.calls.filter((c) => c.status === "running").slice(-20);
    for (const r of running) {
      const c = await api("/api/calls/" + r.id);
      if (c.status !== "running") {
        updateCall({status: c.status, finishedAtMs: c.finishedAtMs, id: c.id});
        changed = true;
        if (state.selected === c.id) showCall(c.id);
      }
    }
    if (changed && gen === state.gen) {
      drawTimeline();
      await Promise.all([loadRuns(), loadTasks()]);
    }
    $("#live").className = "on";
  } catch (e) {
    $("#live").className = "off";
    $("#live").title = String(e);
  }
  setTimeout(poll, pollMs);
}

function init() {
  // The token is in the cookie now: keep it out of the address bar and the history.
  if (location.search.includes("token=")) history.replaceState(null, "", location.pathname);
  let timer = 0;
  const onFilter = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      state.q = $("#q").value; state.tool = $("#tool").value.trim(); state.status = $("#status").value;
      reload();
    }, 200);
  };
  for (const id of ["#q", "#tool", "#status"]) $(id).addEventListener("input", onFilter);
  $("#filters").addEventListener("submit", (e) => { e.preventDefault(); onFilter(); });
  $("#more").addEventListener("click", () => loadPage(state.gen));
  loadRuns().then(async () => {
    const first = document.querySelector("#runs tbody tr[data-run]:not([data-run=''])");
    await (first ? selectRun(first.dataset.run) : reload());
    document.body.dataset.ready = "1";
    setTimeout(poll, pollMs);
  });
}

init();
