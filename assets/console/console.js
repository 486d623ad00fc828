/* joblet console: the JSON API plus GET /v1/events (server-sent events), no framework.
 * Every page is drawn from `S` (the state loaded with the API and kept current by the events);
 * text from jobs and users goes into the page only as text nodes, never as HTML. */
"use strict";

const S = {
  me: null, gpus: [], jobs: new Map(), workflows: [], samples: new Map(),
  tasks: new Map(),                 /* array id -> its tasks as GET /v1/jobs/ID_[SPEC] gives them, while expanded */
  loaded: false, es: null, log: null,
  hist: null,                       /* the shown job's history: {id, box} (historyPart) */
};
/* The page's own key (docs/console.md, "Who may use the port"): rnx console hands it over once,
 * in the fragment of its sign-in redirect ("/#key=..."), which a browser never sends to a server;
 * the tab keeps it in sessionStorage (per origin: another port of 127.0.0.1 cannot read it) and
 * sends it with every API request (X-Console-Key; the event stream, which cannot send headers,
 * in its URL, which rnx console takes off before joblet sees it). The session cookie alone is
 * no session: browsers send it to every port of the host. */
const KEY = (() => {
  const m = /^#key=([0-9a-f]{64})$/.exec(location.hash);
  let key = m ? m[1] : "";
  try {
    if (m) sessionStorage.setItem("joblet_console_key", key);
    else key = sessionStorage.getItem("joblet_console_key") || "";
  } catch (e) { /* no storage: the key lives as long as the page */ }
  if (m) history.replaceState(null, "", location.pathname + location.search);
  return key;
})();
const SAMPLES_KEEP = 600;
const JOBS_SHOWN = 500;            /* rows of the Jobs table drawn at once */          /* per GPU: 10 minutes at one a second */
const WAITING = new Set(["PENDING", "SCHEDULED", "QUEUED", "PREEMPTED", "HELD"]);
const ENDED = new Set(["STOPPED", "COMPLETED", "FAILED", "CANCELED"]);

/* ---- small helpers ------------------------------------------------------------------------ */
function h(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "width%") e.style.width = v + "%";   /* CSSOM: the CSP refuses style attributes */
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined && k !== false)
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}
const SVG = "http://www.w3.org/2000/svg";
function s(tag, attrs, ...kids) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  for (const k of kids.flat()) if (k !== null && k !== undefined)
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}
const short = (id) => (id || "").slice(0, 8);
const mib = (v) => v === null || v === undefined ? "–" : v >= 1024 ? (v / 1024).toFixed(1) + " GiB" : v + " MiB";
const when = (t) => t ? new Date(t).toLocaleString() : "–";
const dash = (v, unit) => v === null || v === undefined ? "–" : v + (unit || "");
/* A word as a shell needs it typed: as it is where the shell takes it so, else in single quotes
 * (rnx's shell_join, src/cli/print.c: the same characters count as plain). */
const SHELL_PLAIN = /^[A-Za-z0-9_\-+=./:,@%^\u0080-\uffff]+$/;
const shellWord = (w) => SHELL_PLAIN.test(w) ? w : "'" + w.replace(/'/g, "'\\''") + "'";
const shellJoin = (command, args) => [command || "", ...(args || [])].map((w) => shellWord(String(w))).join(" ");
/* "4.2s", "3m07s", "2h05m", "1d03h" as rnx prints a duration (fmt_elapsed_ms) */
function elapsed(ms) {
  const t = Math.max(0, Math.floor(ms / 1000)), p2 = (n) => String(n).padStart(2, "0");
  if (t < 60) return `${t}.${Math.floor(Math.max(0, ms) % 1000 / 100)}s`;
  if (t < 3600) return `${Math.floor(t / 60)}m${p2(t % 60)}s`;
  if (t < 86400) return `${Math.floor(t / 3600)}h${p2(Math.floor(t % 3600 / 60))}m`;
  return `${Math.floor(t / 86400)}d${p2(Math.floor(t % 86400 / 3600))}h`;
}
const jobElapsed = (j) => j.started_at ? elapsed((j.ended_at ? Date.parse(j.ended_at) : Date.now()) - Date.parse(j.started_at)) : "–";
/* "0,1" for the GPUs a job holds or held, "4 wanted" while it waits for them (rnx job list) */
function gpusCell(j) {
  const got = (j.gpus || []).map((x) => x.index ?? x);
  if (got.length) return got.join(",");
  const r = j.gpu_request;
  if (!r || j.ended_at || r.degraded) return "–";
  if (r.mig) return "MIG wanted";
  if (r.all) return "all wanted";
  return r.count > 0 ? r.count + " wanted" : "–";
}
function userName(uid) {
  if (S.me && uid === S.me.uid && S.me.user) return S.me.user;
  return uid === 0 ? "root" : "uid " + uid;
}

/* A 503 with Retry-After is joblet's "not now, nothing was done: ask again" (a backup holding its
 * database, an account being looked up): asked again after the pause it says (1-10 s), for up to
 * a minute, as rnx does, the live mark saying so meanwhile. */
const BUSY_RETRY_S = 60;
const busy = {waiting: 0, was: null};   /* the calls pausing now; the live mark they replaced */
async function api(method, path, body) {
  let r, waited = 0;
  for (;;) {
    r = await fetch(path, {
      method, credentials: "same-origin",
      /* a change is application/json, body or not: rnx console refuses any other type */
      headers: method === "GET" ? {"X-Console-Key": KEY} : {"X-Console-Key": KEY, "Content-Type": "application/json"},
      body: body ? JSON.stringify(body) : undefined,
    });
    const after = r.status === 503 ? r.headers.get("Retry-After") : null;
    if (after === null || waited >= BUSY_RETRY_S) break;
    const pause = Math.min(10, Math.max(1, parseInt(after, 10) || 1));
    await r.text();
    const live = document.getElementById("live");
    if (live && !busy.waiting++) {
      busy.was = [live.dataset.live, live.textContent];
      live.dataset.live = "busy";
      live.textContent = "joblet is busy: asking again";
    }
    await new Promise((go) => setTimeout(go, pause * 1000));
    /* the last call to stop pausing puts the mark back, unless the event stream changed it */
    if (live && !--busy.waiting && live.dataset.live === "busy") {
      live.dataset.live = busy.was[0];
      live.textContent = busy.was[1];
    }
    waited += pause;
  }
  const text = await r.text();
  let j = null;
  try { j = text ? JSON.parse(text) : null; } catch (e) { j = null; }
  if (!r.ok) {
    const err = new Error(j && j.error ? j.error.message : r.status + " " + r.statusText);
    err.status = r.status;
    throw err;
  }
  return j;
}

/* ---- state: loaded, then kept current by the events ------------------------------------- */
async function loadAll() {
  const [me, gpus, jobs, wfs] = await Promise.all([
    api("GET", "/v1/whoami"), api("GET", "/v1/gpus"), api("GET", "/v1/jobs"), api("GET", "/v1/workflows"),
  ]);
  S.me = me;
  S.gpus = gpus.gpus || [];
  S.gpuInfo = gpus;
  S.jobs = new Map((jobs.jobs || []).map((j) => [j.id, j]));
  S.workflows = wfs.workflows || [];
  S.loaded = true;
  document.getElementById("who").textContent = (me.user || "uid " + me.uid) + (me.admin ? " (admin)" : "");
  document.getElementById("nav-admin").hidden = !me.admin;
}

/* The page drawn again once a frame for everything that came meanwhile, not once an event:
 * 8 GPUs sampled every 200 ms were 40 whole redraws a second, and a browser slower than that
 * (a loaded machine, software rendering) fell behind for good: its stream's events piled up
 * unhandled (a CI run: the renderer at 100 % for 30 minutes, 4.5 GB). A hidden tab draws when it
 * is shown again. */
let redrawFrame = 0;
function redraw() {
  if (redrawFrame) return;
  redrawFrame = requestAnimationFrame(() => { redrawFrame = 0; render(false); });
}

const pending = {jobs: new Set(), arrays: new Set(), workflows: false, gpus: false, timer: 0};
function later() {
  if (pending.timer) return;
  pending.timer = setTimeout(async () => {
    pending.timer = 0;
    const ids = [...pending.jobs], arrays = [...pending.arrays];
    pending.jobs.clear();
    pending.arrays.clear();
    const wf = pending.workflows, g = pending.gpus;
    pending.workflows = pending.gpus = false;
    try {
      if (ids.length > 16) {            /* a burst: the list at once */
        S.jobs = new Map(((await api("GET", "/v1/jobs")).jobs || []).map((j) => [j.id, j]));
      } else {
        for (const id of ids) {
          try { S.jobs.set(id, await api("GET", "/v1/jobs/" + id)); } catch (e) { /* deleted meanwhile */ }
        }
      }
      if (shownJob && ids.includes(shownJob)) loadHistory(shownJob);   /* (its history grew: historyPart) */
      for (const id of arrays) if (S.tasks.has(id)) await loadTasks(id);
      if (wf) S.workflows = (await api("GET", "/v1/workflows")).workflows || [];
      if (g) S.gpus = (await api("GET", "/v1/gpus")).gpus || [];
    } catch (e) { /* the next event tries again */ }
    render(false);
  }, 150);
}

function onJob(ev) {
  const j = S.jobs.get(ev.id) || {id: ev.id, owner_uid: ev.user, gpus: []};
  /* a task's event names its array: the task is drawn under it, not as a row of its own */
  if (ev.array && !j.array) j.array = {id: ev.array, task: ev.task};
  if (ev.kind) j.kind = ev.kind;
  j.status = ev.status;
  j.name = ev.name;
  j.queue_position = ev.queue_position || null;
  if (ev.end_reason !== undefined) j.end_reason = ev.end_reason;
  S.jobs.set(ev.id, j);
  /* the rest (times, placement, usage) from the API; a task's only while its array is expanded
   * (its list, below) or its page is open: a 100,000-task array would ask for each */
  if (!ev.array || ev.id === shownJob) pending.jobs.add(ev.id);
  if (ev.workflow) pending.workflows = true;
  if (S.tasks.has(ev.id)) tasksLater(ev.id);          /* an expanded array's tasks, made or not */
  if (ev.array && S.tasks.has(ev.array)) tasksLater(ev.array);   /* one of them changed */
  later();
}

/* An expanded array's tasks again, at most every 2 s: each task's start and end is an event, and
 * the list is up to 1,000 tasks. */
const TASKS_EVERY = 2000;
const tasksAt = new Map();          /* array id -> when its list was last asked for, or a timer */
function tasksLater(id) {
  const last = tasksAt.get(id);
  if (last && last.timer) return;   /* (one is coming) */
  const wait = last ? Math.max(0, TASKS_EVERY - (Date.now() - last.at)) : 0;
  if (!wait) {
    tasksAt.set(id, {at: Date.now()});
    pending.arrays.add(id);
    return;
  }
  tasksAt.set(id, {at: last.at, timer: setTimeout(() => {
    tasksAt.set(id, {at: Date.now()});
    pending.arrays.add(id);
    later();
  }, wait)});
}

function onGpu(ev) {
  const g = S.gpus.find((x) => x.index === ev.index);
  if (g) { g.state = ev.state; g.takes_jobs = ev.takes_jobs; g.job = ev.job; g.another_users_job = ev.another_users_job; }
  pending.gpus = true;              /* reasons, shares */
  later();
}

function onSample(ev) {
  let list = S.samples.get(ev.index);
  if (!list) S.samples.set(ev.index, list = []);
  list.push(ev);
  if (list.length > SAMPLES_KEEP) list.splice(0, list.length - SAMPLES_KEEP);
  const g = S.gpus.find((x) => x.index === ev.index);
  if (g) {
    for (const k of ["temperature_c", "utilization_pct", "memory_used_mb", "power_w"])
      if (ev[k] !== null) g[k] = ev[k];
  }
  if (page().name === "gpus") redraw();
}

function connect() {
  const live = document.getElementById("live");
  const es = new EventSource("/v1/events?console_key=" + encodeURIComponent(KEY));
  S.es = es;
  const set = (st, text) => { live.dataset.live = st; live.textContent = text; };
  /* Everything again (on hello and resync). One failed request (joblet restarting, the console
   * carrying all it may at once) must not leave the page empty until the next resync: tried
   * again after 1, 2, 4... 30 s, saying so; a hello or resync meanwhile tries at once. */
  let tries = 0, again = 0;
  const reload = async () => {
    clearTimeout(again);
    again = 0;
    try {
      await loadAll();
      tries = 0;
      render(false);
      set("live", "live");
    } catch (e) {
      const secs = Math.min(30, 2 ** tries++);
      set("lost", `error: ${e.message}; trying again in ${secs} s`);
      clearTimeout(again);          /* (a reload that failed meanwhile set one too) */
      again = setTimeout(reload, secs * 1000);
    }
  };
  es.addEventListener("hello", reload);
  es.addEventListener("resync", reload);
  es.addEventListener("job", (m) => onJob(JSON.parse(m.data)));
  es.addEventListener("job_deleted", (m) => { const id = JSON.parse(m.data).id; S.jobs.delete(id); S.tasks.delete(id); redraw(); });
  es.addEventListener("workflow", () => { pending.workflows = true; later(); });
  es.addEventListener("workflow_deleted", (m) => { const id = JSON.parse(m.data).id; S.workflows = S.workflows.filter((w) => w.id !== id); redraw(); });
  es.addEventListener("gpu", (m) => onGpu(JSON.parse(m.data)));
  es.addEventListener("gpu_sample", (m) => onSample(JSON.parse(m.data)));
  es.addEventListener("error", () => set("lost", "reconnecting"));
  es.addEventListener("open", () => set("live", "live"));
}

/* ---- pages ------------------------------------------------------------------------------- */
function page() {
  const parts = (location.hash || "#/gpus").slice(2).split("/");
  return {name: parts[0] || "gpus", arg: parts[1] ? decodeURIComponent(parts[1]) : null};
}

function spark(values, max, label) {
  const w = 90, hgt = 20;
  const pts = values.filter((v) => v !== null && v !== undefined);
  const svg = s("svg", {class: "spark", viewBox: `0 0 ${w} ${hgt}`, role: "img", "aria-label": label});
  if (pts.length < 2) return svg;
  const top = max || Math.max(...pts, 1);
  const step = w / (pts.length - 1);
  svg.append(s("polyline", {points: pts.map((v, i) => `${(i * step).toFixed(1)},${(hgt - 1 - (v / top) * (hgt - 2)).toFixed(1)}`).join(" ")}));
  return svg;
}

function holders(g) {
  const out = [];
  for (const j of S.jobs.values())
    if (!ENDED.has(j.status) && !WAITING.has(j.status) && (j.gpus || []).some((x) => (x.index ?? x) === g.index))
      out.push(j);
  if (g.job && !out.some((j) => j.id === g.job)) out.push({id: g.job, status: "RUNNING", hidden: true});
  /* another user's job: the daemon says that one holds it, not which (docs/gpu.md) */
  if (g.another_users_job) out.push({id: null, status: "RUNNING", hidden: true});
  return out;
}

function gpuCard(g) {
  const state = g.state || "available";
  const samples = S.samples.get(g.index) || [];
  const used = g.memory_used_mb, total = g.memory_total_mb;
  const pct = total ? Math.min(100, Math.round(100 * (used || 0) / total)) : 0;
  const xids = g.health && g.health.recent_xids ? g.health.recent_xids.slice(-3) : [];
  const js = holders(g);
  return h("article", {class: "card gpu", "data-state": state, "data-index": g.index, "aria-label": "GPU " + g.index},
    h("h3", {}, h("span", {}, "GPU " + g.index), h("span", {class: "badge", "data-state": state}, state)),
    h("div", {class: "note"}, g.name || "", g.simulated ? " (simulated)" : ""),
    h("dl", {},
      h("dt", {}, "Memory"),
      h("dd", {}, h("span", {class: "bar", role: "img", "aria-label": `memory ${pct}% used`}, h("span", {"width%": pct})),
        h("span", {class: "mono"}, `${mib(used)} / ${mib(total)}`)),
      h("dt", {}, "Temp"), h("dd", {}, h("span", {class: "mono"}, dash(g.temperature_c, " °C")),
        spark(samples.map((x) => x.temperature_c), 100, "temperature, last minutes")),
      h("dt", {}, "Util"), h("dd", {}, h("span", {class: "mono"}, dash(g.utilization_pct, " %")),
        spark(samples.map((x) => x.utilization_pct), 100, "utilization, last minutes")),
      h("dt", {}, "Power"), h("dd", {}, h("span", {class: "mono"}, dash(g.power_w, " W")),
        spark(samples.map((x) => x.power_w), null, "power, last minutes")),
      h("dt", {}, "Jobs"), h("dd", {class: "holders"}, js.length ? js.map((j) => j.hidden
        ? h("span", {class: j.id ? "mono" : "", title: "another user's job"}, j.id ? short(j.id) : "another user's job")
        : h("a", {href: "#/jobs/" + j.id, class: "mono"}, short(j.id))) : "none"),
      g.state_reason ? [h("dt", {}, "Why"), h("dd", {}, g.state_reason)] : null,
      xids.length ? [h("dt", {}, "XIDs"), h("dd", {}, xids.map((x) => "XID " + (x.xid ?? x.code ?? x)).join(", "))] : null,
    ));
}

function topology() {
  const gs = S.gpus;
  if (!gs.length || !gs[0].pcie_levels) return null;
  const head = h("tr", {}, h("th", {scope: "col"}, ""), gs.map((g) => h("th", {scope: "col"}, "GPU" + g.index)),
    h("th", {scope: "col"}, "NUMA"));
  const rows = gs.map((g, i) => h("tr", {}, h("th", {scope: "row"}, "GPU" + g.index), gs.map((_, k) => {
    const nv = (g.nvlink_peers || [])[k] || 0, pci = (g.pcie_levels || [])[k] || "";
    const text = i === k ? "X" : nv ? "NV" + nv : pci;
    return h("td", {"data-link": i === k ? "self" : nv ? "nv" : pci === "PIX" || pci === "PXB" ? "pix" : "sys"}, text);
  }), h("td", {}, dash(g.numa_node))));
  return h("section", {"aria-labelledby": "topo-h"}, h("h3", {id: "topo-h"}, "Topology"),
    h("p", {class: "note"}, "NVn: n NVLinks between the two; PIX/PXB: one PCIe switch; NODE: the same NUMA node; SYS: across NUMA nodes."),
    h("div", {class: "scroll"}, h("table", {class: "matrix"}, h("thead", {}, head), h("tbody", {}, rows))));
}

function pageGpus() {
  if (!S.gpus.length)
    return [h("h2", {}, "GPUs"), h("p", {class: "note"}, "joblet found no GPUs on this machine.")];
  const info = S.gpuInfo || {};
  return [h("h2", {}, "GPUs"),
    h("p", {class: "note"}, `${S.gpus.length} GPUs · ${info.backend || ""}${info.simulated ? " (simulated)" : ""} · driver ${info.driver_version || "–"}`),
    h("div", {class: "grid", id: "gpu-cards"}, S.gpus.map(gpuCard)), topology()];
}

const filters = {status: "", user: "", gpu: ""};
const CMD_SHOWN = 60;               /* characters of a command in the Jobs table; all of it on the job's page */
/* A job array's tasks by state: "950 COMPLETED, 50 RUNNING" (docs/batch.md). */
function arrayCounts(j) {
  return Object.entries((j.array && j.array.counts) || {}).map(([s, n]) => `${n} ${s}`).join(", ");
}

/* A task of an array is a job of its own once made (kind "task", made false before). */
const isTask = (j) => j.kind !== "array" && !!j.array;

/* The array's tasks (GET /v1/jobs/ID_[SPEC], the first 1,000), drawn under its row while it is
 * expanded; fetched again when the array changes. */
async function loadTasks(id) {
  const a = S.jobs.get(id);
  if (!a || !a.array) return;
  try {
    const r = await api("GET", `/v1/jobs/${encodeURIComponent(id)}_[${a.array.spec.split("%")[0]}]`);
    if (S.tasks.has(id)) S.tasks.set(id, {tasks: r.tasks || [], truncated: r.truncated});
  } catch (e) {
    if (S.tasks.has(id)) S.tasks.set(id, {tasks: [], error: e.message});
  }
}

async function toggleTasks(id) {
  if (S.tasks.has(id)) { S.tasks.delete(id); render(false); return; }
  S.tasks.set(id, {tasks: [], loading: true});
  render(false);
  await loadTasks(id);
  render(false);
}

function jobRow(j) {
  const cmd = shellJoin(j.command, j.args);
  const code = j.exit_code === null || j.exit_code === undefined ? "–" : String(j.exit_code);
  const arr = j.kind === "array", task = isTask(j), open = arr && S.tasks.has(j.id);
  return h("tr", {"data-id": j.id, "data-status": j.status, "data-task": task ? j.array.task : null, class: task ? "task" : null},
    h("td", {class: arr ? "nowrap" : null}, arr ? h("button", {id: "expand-" + j.id, class: "expand", "aria-expanded": open ? "true" : "false",
        "aria-label": `tasks of array ${j.array.ref}`, onclick: () => toggleTasks(j.id)}, open ? "▾" : "▸") : null,
      h("a", {href: "#/jobs/" + j.id, class: "mono", title: arr ? arrayCounts(j) : null},
        (arr || task) && j.array.ref ? j.array.ref : short(j.id))),
    h("td", {class: "num", "data-col": "number"}, dash(j.number)),
    h("td", {}, j.name || ""), h("td", {}, userName(j.owner_uid)),
    h("td", {}, h("span", {class: "badge", "data-status": j.status}, j.status)),
    h("td", {class: "num", "data-col": "exit"}, code),
    h("td", {"data-col": "gpus"}, gpusCell(j)),
    h("td", {class: "num", "data-col": "duration", "data-start": j.started_at && !j.ended_at ? j.started_at : null}, jobElapsed(j)),
    h("td", {class: "mono hide-narrow", "data-col": "command", title: cmd.length > CMD_SHOWN ? cmd : null},
      cmd.length > CMD_SHOWN ? cmd.slice(0, CMD_SHOWN - 1) + "…" : cmd),
    h("td", {class: "hide-narrow"}, when(j.created_at)));
}

/* An expanded array's rows: each made task as the job it is (the newest the events brought),
 * a task not made yet as its reference and state, with no number: it gets one when it is made. */
function taskRows(a) {
  const t = S.tasks.get(a.id), cols = 10;
  const note = (text, cls) => h("tr", {class: "task", "data-array": a.id}, h("td", {colspan: cols, class: cls || "note"}, text));
  if (t.loading) return [note("loading tasks…")];
  if (t.error) return [note(t.error, "error")];
  return [...t.tasks.map((x) => x.made === false
    ? h("tr", {"data-id": x.id, "data-status": x.status, "data-task": x.array.task, class: "task"},
      h("td", {class: "mono"}, x.array.ref), h("td", {class: "num", "data-col": "number"}, "–"),
      h("td", {}, a.name || ""), h("td", {}, userName(a.owner_uid)),
      h("td", {}, h("span", {class: "badge", "data-status": x.status}, x.status)),
      h("td", {colspan: cols - 5, class: "note"}, "not made yet"))
    : jobRow(S.jobs.get(x.id) || x)),
  t.truncated ? note(`The first ${t.tasks.length} tasks; rnx job list --expand lists all.`) : null];
}

function pageJobs() {
  const jobs = [...S.jobs.values()].filter((j) =>
    (!filters.status || j.status === filters.status) &&
    (!filters.user || String(j.owner_uid) === filters.user || userName(j.owner_uid) === filters.user) &&
    (!filters.gpu || (j.gpus || []).some((x) => String(x.index ?? x) === filters.gpu)) &&
    !isTask(j)).reverse();
  const sel = (name, opts) => h("select", {id: "filter-" + name, onchange: (e) => { filters[name] = e.target.value; render(false); }},
    opts.map(([v, t]) => h("option", {value: v, selected: filters[name] === v}, t)));
  const states = ["PENDING", "SCHEDULED", "QUEUED", "RUNNING", "STOPPING", "PREEMPTED", "HELD", "SUSPENDED", "STOPPED", "COMPLETED", "FAILED", "CANCELED"];
  return [h("h2", {}, "Jobs"),
    S.me && S.me.uid !== 0 ? h("p", {class: "note"}, "Your jobs (root sees everyone's).") : null,
    h("div", {class: "filters", role: "search"},
      h("label", {}, "State", sel("status", [["", "any"], ...states.map((x) => [x, x])])),
      h("label", {}, "User", h("input", {id: "filter-user", value: filters.user, size: 10, placeholder: "uid or name",
        onchange: (e) => { filters.user = e.target.value.trim(); render(false); }})),
      h("label", {}, "GPU", sel("gpu", [["", "any"], ...S.gpus.map((g) => [String(g.index), "GPU " + g.index])]))),
    h("div", {class: "scroll"}, h("table", {id: "jobs-table"},
      h("thead", {}, h("tr", {}, h("th", {scope: "col"}, "ID"),
        h("th", {scope: "col"}, h("abbr", {title: "job number: the job's SLURM_JOB_ID (an array's: its tasks' SLURM_ARRAY_JOB_ID)"}, "NUM")),
        ["Name", "User", "State", "Exit", "GPUs", "Duration"].map((t) => h("th", {scope: "col"}, t)),
        h("th", {scope: "col", class: "hide-narrow"}, "Command"), h("th", {scope: "col", class: "hide-narrow"}, "Created"))),
      h("tbody", {}, jobs.slice(0, JOBS_SHOWN).flatMap((j) => S.tasks.has(j.id) ? [jobRow(j), ...taskRows(j)] : [jobRow(j)])))),
    jobs.length > JOBS_SHOWN ? h("p", {class: "note"}, `The newest ${JOBS_SHOWN} of ${jobs.length}; filter to see others.`) : null,
    jobs.length ? null : h("p", {class: "note"}, "No jobs match.")];
}

function stopLog() {
  if (S.log) { S.log.ctl.abort(); S.log = null; }
}

async function followLog(id, pre) {
  const ctl = new AbortController();
  S.log = {id, ctl, pre};
  try {
    /* priority "low": a stream that stays open while the job runs is background work, as the
     * events' EventSource is; the page's own requests go first, and a tool that waits for the
     * page to be loaded (Lighthouse: no request of high priority in flight) does not wait on it */
    const r = await fetch(`/v1/jobs/${encodeURIComponent(id)}/logs?follow=1&format=ndjson`, {
      signal: ctl.signal, credentials: "same-origin", priority: "low", headers: {"X-Console-Key": KEY}});
    const rd = r.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const {value, done} = await rd.read();
      if (done) break;
      buf += dec.decode(value, {stream: true});
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (!line) continue;
        const rec = JSON.parse(line);
        if (rec.end) { pre.append(h("span", {class: "note"}, `— ${rec.status}${rec.exit_code !== null ? ", exit code " + rec.exit_code : ""}\n`)); continue; }
        const text = rec.data !== undefined ? rec.data : atob(rec.data_b64 || "");
        const stick = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
        pre.append(rec.stream === "stderr" ? h("span", {class: "stderr"}, text) : document.createTextNode(text));
        if (stick) pre.scrollTop = pre.scrollHeight;
      }
    }
  } catch (e) {
    if (e.name !== "AbortError") pre.append(h("span", {class: "error"}, "\n(log: " + e.message + ")\n"));
  }
}

async function jobAction(id, what) {
  const words = {stop: "Stop", kill: "Kill (SIGKILL to every process)"};
  if (!confirm(`${words[what]} job ${short(id)}?`)) return;
  try { await api("POST", `/v1/jobs/${encodeURIComponent(id)}/${what}`); } catch (e) { alert(e.message); }
}

const asked = new Set();            /* jobs not in the list (an array's tasks) asked for once */
/* The job a page's address names, as joblet reads a reference: its id, its number (Slurm's job
 * id) before an id's prefix. */
function jobOf(ref) {
  if (!ref) return undefined;
  return S.jobs.get(ref) || (/^[1-9][0-9]{0,18}$/.test(ref) ? [...S.jobs.values()].find((x) => String(x.number) === ref)
                                                             : [...S.jobs.values()].find((x) => x.id.startsWith(ref)));
}

let shownJob = null;                /* the id of the job whose page is drawn (a task's too: onJob) */
function pageJob(id) {
  const j = jobOf(id);
  shownJob = j ? j.id : null;
  if (!j && !asked.has(id)) {
    asked.add(id);
    api("GET", "/v1/jobs/" + encodeURIComponent(id)).then((x) => {
      if (x && x.id && x.kind !== "task") S.jobs.set(x.id, x);
      render(false);
    }, () => render(false));
    return [h("h2", {}, "Job " + id), h("p", {class: "note"}, "loading…")];
  }
  if (!j) return [h("h2", {}, "Job " + id), h("p", {class: "note"}, "No such job among those you can see.")];
  const mine = S.me && (S.me.uid === j.owner_uid || S.me.admin);
  const lim = j.limits || {};
  const u = j.usage || {};
  if (j.kind === "array") return pageArray(j, mine);
  const pre = S.log && S.log.id === j.id ? S.log.pre : h("pre", {class: "log", id: "job-log", "aria-live": "off", tabindex: 0});
  if (!S.log || S.log.id !== j.id) { stopLog(); followLog(j.id, pre); }
  return [h("h2", {}, "Job ", h("span", {class: "mono"}, short(j.id)), " ", j.name ? "(" + j.name + ") " : "",
      h("span", {class: "badge", id: "job-status", "data-status": j.status}, j.status)),
    mine && !ENDED.has(j.status) ? h("div", {class: "actions"},
      j.tty && S.me.uid === j.owner_uid ? h("a", {id: "job-terminal", class: "button", href: "#/terminal/" + encodeURIComponent(j.id)}, "Terminal") : null,
      h("button", {id: "job-stop", onclick: () => jobAction(j.id, "stop")}, "Stop"),
      h("button", {id: "job-kill", class: "danger", onclick: () => jobAction(j.id, "kill")}, "Kill")) : null,
    h("h3", {}, "Request"),
    h("dl", {class: "kv"},
      h("dt", {}, "Job number"), h("dd", {}, h("span", {class: "mono", id: "job-number"}, dash(j.number)),
        h("span", {class: "note"}, " (SLURM_JOB_ID)")),
      isTask(j) ? [h("dt", {}, "Array"), h("dd", {}, h("a", {class: "mono", href: "#/jobs/" + encodeURIComponent(j.array.id)}, short(j.array.id)),
        `, task ${j.array.task} (SLURM_ARRAY_TASK_ID)`),
      h("dt", {}, "Array's number"), h("dd", {}, h("span", {class: "mono", id: "job-array-number"}, dash(j.array.number)),
        h("span", {class: "note"}, " (SLURM_ARRAY_JOB_ID)"))] : null,
      h("dt", {}, "Command"), h("dd", {class: "mono", id: "job-command"}, shellJoin(j.command, j.args)),
      h("dt", {}, "User"), h("dd", {}, userName(j.owner_uid) + ` (runs as uid ${j.uid})`),
      h("dt", {}, "GPUs asked"), h("dd", {}, j.gpu_request ? String(j.gpu_request.count ?? 0) + (j.gpu_request.memory_mb ? `, ≥ ${mib(j.gpu_request.memory_mb)} each` : "") : "0"),
      h("dt", {}, "Runtime"), h("dd", {}, j.runtime || "host"),
      h("dt", {}, "Priority"), h("dd", {}, String(j.priority ?? 0) + (j.preemptible ? ", preemptible" : ""))),
    h("h3", {}, "Placement"),
    h("dl", {class: "kv"},
      h("dt", {}, "GPUs"), h("dd", {}, (j.gpus || []).map((g) => `GPU ${g.index ?? g} ${g.uuid ? "(" + g.uuid.slice(0, 12) + "…)" : ""}`).join(", ") || "none"),
      h("dt", {}, "NUMA"), h("dd", {}, j.gpu_locality ? (j.gpu_locality.numa_nodes || []).join(",") || "–" : "–"),
      j.wait_reason ? [h("dt", {}, "Waiting"), h("dd", {}, j.wait_reason)] : null,
      h("dt", {}, "Created"), h("dd", {}, when(j.created_at)),
      h("dt", {}, "Started"), h("dd", {}, when(j.started_at)),
      h("dt", {}, "Duration"), h("dd", {}, jobElapsed(j)),
      h("dt", {}, "Ended"), h("dd", {}, when(j.ended_at) + (j.end_reason ? ` (${j.end_reason}${j.exit_code !== null && j.exit_code !== undefined ? ", exit code " + j.exit_code : ""})` : ""))),
    h("h3", {}, "Limits and usage"),
    h("dl", {class: "kv"},
      h("dt", {}, "Memory"), h("dd", {}, `limit ${mib(lim.max_memory_mb)}, peak ${mib(u.memory_peak_bytes ? Math.round(u.memory_peak_bytes / 1048576) : 0)}`),
      h("dt", {}, "CPU"), h("dd", {}, `limit ${lim.max_cpu ? lim.max_cpu + " %" : "none"}, used ${((u.cpu_ns || 0) / 1e9).toFixed(2)} s`),
      h("dt", {}, "Processes"), h("dd", {}, `limit ${dash(lim.pids_max)}, now ${dash(u.pids_current)}`)),
    historyPart(j),
    h("h3", {}, "Log ", h("span", {class: "note"}, "(following)")), pre];
}

/* A job's history: its events as rnx job status --detail prints them (GET /v1/jobs/{id}?detail=1,
 * docs/api.md "Job detail"): who submitted, stopped, signaled or held it, why it waited, the GPUs
 * it was granted, how it ended. Asked when its page is drawn, and again whenever an event about
 * it comes while the page is shown (later(): joblet publishes a job whose history grew). Its box
 * is kept across the page's redraws, as the log's is, and filled in place: the rest of the page
 * is not drawn again for it. */
function historyPart(j) {
  if (!S.hist || S.hist.id !== j.id) {
    S.hist = {id: j.id, box: h("div", {id: "job-history-box"}, h("p", {class: "note"}, "loading…"))};
    loadHistory(j.id);
  }
  return [h("h3", {}, "History"), S.hist.box];
}

async function loadHistory(id) {
  const hs = S.hist;
  if (!hs || hs.id !== id) return;
  const seq = hs.seq = (hs.seq || 0) + 1;   /* (an older answer that comes last is not drawn) */
  let d;
  try { d = (await api("GET", `/v1/jobs/${encodeURIComponent(id)}?detail=1`)).detail; } catch (e) {
    if (hs.seq === seq) hs.box.replaceChildren(h("p", {class: "error"}, "history: " + e.message));
    return;
  }
  if (hs.seq !== seq) return;
  if (!d) { hs.box.replaceChildren(h("p", {class: "note"}, "Not shown to you.")); return; }
  hs.box.replaceChildren(...[h("div", {class: "scroll"}, h("table", {id: "job-history"},
      h("thead", {}, h("tr", {}, ["Time", "Event", "Detail"].map((t) => h("th", {scope: "col"}, t)))),
      h("tbody", {}, (d.events || []).map((e) => h("tr", {"data-event": e.event},
        h("td", {class: "nowrap"}, when(e.time)), h("td", {}, e.event), h("td", {}, e.detail || "")))))),
    d.events_dropped ? h("p", {class: "note"}, `${d.events_dropped} older events were not kept (joblet keeps a job's last 64).`) : null]
    .filter(Boolean));
}

/* A job array: its tasks by state (each started task is a job of its own, in the Jobs table with
 * rnx job list --expand; here the array as one). */
function pageArray(j, mine) {
  stopLog();
  const a = j.array || {};
  return [h("h2", {}, "Array ", h("span", {class: "mono"}, a.ref || short(j.id)), " ", j.name ? "(" + j.name + ") " : "",
      h("span", {class: "badge", id: "job-status", "data-status": j.status}, j.status)),
    mine && !ENDED.has(j.status) ? h("div", {class: "actions"},
      h("button", {id: "job-stop", onclick: () => jobAction(j.id, "stop")}, "Stop all")) : null,
    h("dl", {class: "kv"},
      h("dt", {}, "Array's number"), h("dd", {}, h("span", {class: "mono", id: "job-number"}, dash(j.number)),
        h("span", {class: "note"}, " (its tasks' SLURM_ARRAY_JOB_ID; each task has its own SLURM_JOB_ID)")),
      h("dt", {}, "Command"), h("dd", {class: "mono", id: "job-command"}, shellJoin(j.command, j.args)),
      h("dt", {}, "Tasks"), h("dd", {id: "array-counts"}, `${a.tasks} (${a.spec}): ${arrayCounts(j) || "–"}`),
      a.wait ? [h("dt", {}, "Waiting"), h("dd", {}, a.wait)] : null,
      h("dt", {}, "User"), h("dd", {}, userName(j.owner_uid)),
      h("dt", {}, "Created"), h("dd", {}, when(j.created_at))),
    historyPart(j)];
}

/* ---- a job's terminal (docs/console.md, "Terminal") -------------------------------------------
 * xterm.js over a WebSocket to GET /v1/jobs/{id}/attach: each binary message one channel frame
 * (docs/api.md, "Interactive streams"): 0 stdin, 1 stdout, 2 stderr, 3 resize (rows, cols),
 * 4 exit (the code), 5 close. A browser cannot send the console's key on a WebSocket: the page
 * asks rnx console for a ticket (good once, for 30 s) and puts it in the URL. Leaving the page
 * or closing the tab closes the WebSocket: a detach, the job goes on. */
const TERM = {ws: null, term: null, onresize: null, unstyle: null};
/* xterm.js 5's DOM renderer writes its rules (row height, the palette's colours) into <style>
 * elements of its own, which the CSP refuses (style-src 'self': no inline style). The same
 * rules go into a constructed style sheet, which the CSP does not govern, whenever they change.
 * Its undoing. */
function adoptXtermStyles(box) {
  const sheet = new CSSStyleSheet();
  document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
  const sync = () => sheet.replaceSync([...box.querySelectorAll("style")].map((e) => e.textContent).join("\n"));
  const mo = new MutationObserver(sync);
  mo.observe(box, {subtree: true, childList: true, characterData: true});
  sync();
  return () => { mo.disconnect(); document.adoptedStyleSheets = document.adoptedStyleSheets.filter((x) => x !== sheet); };
}
/* integrity: the file's SHA-384, which the build fills in (scripts/embed_assets.py), so that no
 * copy a browser cached for this host and port before the console held it runs here */
function loadScript(src, integrity) {
  return new Promise((ok, fail) => {
    if (document.querySelector(`script[src="${src}"]`)) return ok();
    const el = h("script", {src, integrity});
    el.addEventListener("load", ok);
    el.addEventListener("error", () => fail(new Error("cannot load " + src)));
    document.head.append(el);
  });
}
function chFrame(ch, payload) {
  const f = new Uint8Array(5 + payload.length);
  new DataView(f.buffer).setUint8(0, ch);
  new DataView(f.buffer).setUint32(1, payload.length);
  f.set(payload, 5);
  return f;
}
function stopTerminal() {
  if (TERM.ws) { TERM.ws.onclose = null; TERM.ws.close(1000); }
  if (TERM.term) TERM.term.dispose();
  if (TERM.onresize) window.removeEventListener("resize", TERM.onresize);
  if (TERM.unstyle) TERM.unstyle();
  TERM.ws = TERM.term = TERM.onresize = TERM.unstyle = null;
}
async function pageTerminal(main, id) {
  stopTerminal();
  const j = jobOf(id);
  const say = h("p", {id: "term-status", class: "note", role: "status"}, "connecting…");
  const box = h("div", {id: "term", class: "term"});
  main.replaceChildren(h("h2", {}, "Terminal of job ", h("a", {class: "mono", href: "#/jobs/" + encodeURIComponent(id)}, short(id)),
    j ? " " + shellJoin(j.command, j.args) : ""), say, box);
  document.title = "joblet · terminal " + short(id);
  try {
    await loadScript("/console/xterm.js", "sha384-@xterm.js@");
    await loadScript("/console/xterm-addon-fit.js", "sha384-@xterm-addon-fit.js@");
    const r = await fetch("/v1/console/ticket", {method: "POST", credentials: "same-origin",
      headers: {"X-Console-Key": KEY, "Content-Type": "application/json"}});
    const ticket = (await r.text()).trim();
    if (!r.ok) throw new Error(ticket);
    if (!box.isConnected) return;    /* left meanwhile */
    const term = new Terminal({convertEol: false, cursorBlink: true, scrollback: 5000});
    const fit = new FitAddon.FitAddon();
    term.loadAddon(fit);
    TERM.unstyle = adoptXtermStyles(box);
    term.open(box);
    fit.fit();
    const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/v1/jobs/${encodeURIComponent(id)}/attach?ticket=${ticket}`);
    ws.binaryType = "arraybuffer";
    Object.assign(TERM, {ws, term});
    const enc = new TextEncoder();
    const send = (ch, payload) => { if (ws.readyState === WebSocket.OPEN) ws.send(chFrame(ch, payload)); };
    const resize = () => {
      const b = new Uint8Array(4);
      new DataView(b.buffer).setUint16(0, term.rows);
      new DataView(b.buffer).setUint16(2, term.cols);
      send(3, b);
    };
    let ended = false;
    ws.onopen = () => { say.textContent = "attached: closing this page detaches, the job goes on"; resize(); term.focus(); };
    ws.onmessage = (ev) => {
      const f = new Uint8Array(ev.data);
      if (f.length < 5) return;
      const ch = f[0], body = f.subarray(5);
      if (ch === 1 || ch === 2) term.write(body);
      else if (ch === 4 && body.length === 4) {
        ended = true;
        say.textContent = `the job ended: exit code ${new DataView(body.buffer, body.byteOffset).getInt32(0)}`;
        say.dataset.exit = String(new DataView(body.buffer, body.byteOffset).getInt32(0));
      }
    };
    ws.onclose = (ev) => { if (!ended) say.textContent = `disconnected (${ev.code}${ev.reason ? ": " + ev.reason : ""})`; };
    term.onData((d) => send(0, enc.encode(d)));
    term.onBinary((d) => send(0, Uint8Array.from(d, (c) => c.charCodeAt(0) & 255)));
    term.onResize(resize);
    TERM.onresize = () => fit.fit();
    window.addEventListener("resize", TERM.onresize);
  } catch (e) {
    say.textContent = "no terminal: " + e.message;
  }
}

function pageQueue() {
  const waiting = [...S.jobs.values()].filter((j) => WAITING.has(j.status))
    .sort((a, b) => (a.queue_position || 1e9) - (b.queue_position || 1e9) || (a.created_at < b.created_at ? -1 : 1));
  return [h("h2", {}, "Queue"),
    waiting.length ? h("div", {class: "scroll"}, h("table", {id: "queue-table"},
      h("thead", {}, h("tr", {}, ["#", "Job", "User", "State", "GPUs asked", "Priority", "Why it waits"].map((t) => h("th", {scope: "col"}, t)))),
      h("tbody", {}, waiting.map((j) => h("tr", {"data-id": j.id, "data-status": j.status},
        h("td", {}, dash(j.queue_position)), h("td", {}, h("a", {href: "#/jobs/" + j.id, class: "mono"}, short(j.id)), j.name ? " " + j.name : ""),
        h("td", {}, userName(j.owner_uid)), h("td", {}, h("span", {class: "badge", "data-status": j.status}, j.status)),
        h("td", {}, String(j.gpu_request ? j.gpu_request.count ?? 0 : 0)), h("td", {}, String(j.priority ?? 0)),
        h("td", {}, j.wait_reason || (j.status === "SCHEDULED" ? "starts at " + when(j.scheduled_at) : "–")))))))
      : h("p", {class: "note"}, "Nothing waits.")];
}

function dag(wf) {
  const jobs = wf.jobs || [];
  const depth = new Map();
  const byName = new Map(jobs.map((j) => [j.name, j]));
  const d = (name, seen = new Set()) => {
    if (depth.has(name)) return depth.get(name);
    if (seen.has(name)) return 0;
    seen.add(name);
    const j = byName.get(name);
    const v = j && j.requires && j.requires.length ? 1 + Math.max(...j.requires.map((r) => d(r.job || r.name || r, seen))) : 0;
    depth.set(name, v);
    return v;
  };
  jobs.forEach((j) => d(j.name));
  const cols = new Map();
  jobs.forEach((j) => { const k = depth.get(j.name); if (!cols.has(k)) cols.set(k, []); cols.get(k).push(j); });
  const W = 150, H = 44, GX = 50, GY = 16;
  const pos = new Map();
  let maxRows = 1;
  for (const [k, list] of cols) { list.forEach((j, i) => pos.set(j.name, {x: 10 + k * (W + GX), y: 10 + i * (H + GY)})); maxRows = Math.max(maxRows, list.length); }
  const width = 20 + cols.size * (W + GX), height = 20 + maxRows * (H + GY);
  const svg = s("svg", {class: "dag", viewBox: `0 0 ${width} ${height}`, width, role: "img", "aria-label": `workflow ${wf.name || wf.id} dependency graph`});
  for (const j of jobs) for (const r of j.requires || []) {
    const from = pos.get(r.job || r.name || r), to = pos.get(j.name);
    if (from && to) svg.append(s("line", {x1: from.x + W, y1: from.y + H / 2, x2: to.x, y2: to.y + H / 2}));
  }
  for (const j of jobs) {
    const p = pos.get(j.name);
    const g = s("g", {"data-status": j.status, "data-job": j.name});
    g.append(s("rect", {x: p.x, y: p.y, width: W, height: H, rx: 6}),
      s("text", {x: p.x + 8, y: p.y + 18}, j.name.slice(0, 20)),
      s("text", {x: p.x + 8, y: p.y + 35}, j.status));
    svg.append(g);
  }
  return svg;
}

function pageWorkflows() {
  const wfs = [...S.workflows].reverse();
  return [h("h2", {}, "Workflows"),
    wfs.length ? wfs.map((wf) => h("section", {class: "card", "data-state": "", "aria-label": "workflow " + (wf.name || wf.id)},
      h("h3", {}, h("span", {}, (wf.name || "workflow") + " ", h("span", {class: "mono note"}, short(wf.id))),
        h("span", {class: "badge", "data-status": wf.state}, wf.state)),
      h("div", {class: "scroll"}, dag(wf)))) : h("p", {class: "note"}, "No workflows.")];
}

/* ---- History's charts: SVG drawn here, a time axis and a value axis with its unit ---------- */
const MIN = 60e3, HOUR = 3600e3, DAY = 86400e3;
const TIME_STEPS = [10 * MIN, 15 * MIN, 30 * MIN, HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY, 2 * DAY, 7 * DAY, 14 * DAY];
/* Local-time ticks from t0 to t1, at most about 8: on whole steps counted from local midnight. */
function timeTicks(t0, t1) {
  const step = TIME_STEPS.find((st) => (t1 - t0) / st <= 8) || 30 * DAY;
  const d = new Date(t0);
  d.setHours(0, 0, 0, 0);
  let t = d.getTime();
  if (step >= DAY) { while (t < t0) t += DAY; }          /* days: every step-th midnight */
  else while (t < t0) t += step;
  const out = [];
  for (; t <= t1; ) {
    out.push(t);
    if (step >= DAY) { const n = new Date(t); n.setDate(n.getDate() + step / DAY); t = n.getTime(); }
    else { const n = new Date(t + step); t = n.getTime(); }
  }
  return {step, ticks: out};
}
const hhmm = (t) => new Date(t).toLocaleTimeString([], {hour: "2-digit", minute: "2-digit", hour12: false});
const mday = (t) => new Date(t).toLocaleDateString([], {month: "short", day: "numeric"});
/* A tick's label, one or two lines: the time, and the date where the day changes (or steps of days). */
function timeLabel(t, prev, step) {
  if (step >= DAY) return [mday(t)];
  const newDay = prev === null || new Date(prev).toDateString() !== new Date(t).toDateString();
  return newDay || step >= 6 * HOUR ? [hhmm(t), mday(t)] : [hhmm(t)];
}
/* 0 to a round top with 4 or 5 steps of 1, 2 or 5 × 10^k (whole steps for counts). */
function valueTicks(max, whole) {
  if (!(max > 0)) max = whole ? 4 : 1;
  let step = Math.pow(10, Math.floor(Math.log10(max / 4)));
  for (const m of [1, 2, 2.5, 5, 10]) if (max / (step * m) <= 5) { step *= m; break; }
  if (whole) step = Math.max(1, Math.ceil(step));
  const n = Math.ceil(max / step - 1e-9), out = [];
  for (let i = 0; i <= n; i++) out.push(+(i * step).toPrecision(12));
  return out;
}
const fmtValue = (v) => Math.abs(v) >= 1000 ? Math.round(v).toLocaleString() : String(+v.toPrecision(3));
/* A tick's label: as many decimals as the step has (0.005 steps: 0.005, 0.010, ...), so no two are alike. */
const tickLabel = (v, step) => v >= 1000 && Number.isInteger(step) ? v.toLocaleString()
  : v.toFixed(Math.min(6, (String(step).split(".")[1] || "").length));

/* points [[t ms, value]], one per bucket of bucket ms. o: {label, yTitle, whole, max (fixed top),
 * bars, t0, t1 (the window)}. */
function chart(points, o) {
  const W = 720, H = 240, L = 64, R = 16, T = 14, B = 54;
  const svg = s("svg", {class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": o.label, "data-chart": o.id});
  svg.append(s("title", {}, o.label));
  const t0 = o.t0, t1 = o.t1, pw = W - L - R, ph = H - T - B;
  const x = (t) => L + (t - t0) / (t1 - t0) * pw;
  const vmax = o.max || Math.max(0, ...points.map((p) => p[1]));
  const yt = o.max ? valueTicks(o.max, false).filter((v) => v <= o.max) : valueTicks(vmax, o.whole);
  const top = yt[yt.length - 1];
  const y = (v) => T + ph - v / top * ph;
  const ax = s("g", {class: "axis y"});
  for (const v of yt) {
    ax.append(s("line", {class: v === 0 ? "base" : "grid", x1: L, x2: W - R, y1: y(v), y2: y(v)}),
      s("text", {x: L - 6, y: y(v) + 4, "text-anchor": "end"}, tickLabel(v, yt[1])));
  }
  ax.append(s("text", {class: "title", transform: `translate(14 ${T + ph / 2}) rotate(-90)`, "text-anchor": "middle"}, o.yTitle));
  const tx = s("g", {class: "axis x"});
  const {step, ticks} = timeTicks(t0, t1);
  let prev = null;
  for (const t of ticks) {
    const lines = timeLabel(t, prev, step);
    prev = t;
    tx.append(s("line", {class: "tick", x1: x(t), x2: x(t), y1: T + ph, y2: T + ph + 5}));
    const text = s("text", {x: x(t), y: T + ph + 18, "text-anchor": "middle"});
    lines.forEach((l, i) => text.append(s("tspan", {x: x(t), dy: i ? 13 : 0}, l)));
    tx.append(text);
  }
  tx.append(s("line", {class: "base", x1: L, x2: L, y1: T, y2: T + ph}));
  svg.append(ax, tx);
  const inside = points.filter((p) => p[0] >= t0 && p[0] < t1);
  if (!inside.length) {
    svg.append(s("text", {class: "empty", x: L + pw / 2, y: T + ph / 2, "text-anchor": "middle"}, "nothing recorded in this window"));
    return svg;
  }
  const data = s("g", {class: "data"});
  if (o.bars || inside.length < 2) {
    for (const [t, v] of inside) {
      const x0 = x(t), x1 = Math.min(x(t + o.bucket), W - R);
      data.append(s("rect", {class: "barc", x: x0 + 0.5, y: y(v), width: Math.max(1.5, x1 - x0 - 1), height: Math.max(0, T + ph - y(v))},
        s("title", {}, `${new Date(t).toLocaleString()}: ${fmtValue(v)} ${o.unit}`)));
    }
  } else {
    /* a line through each bucket's middle, broken where buckets are missing */
    let run = [];
    const flush = () => { if (run.length > 1) data.append(s("polyline", {points: run.join(" ")})); else if (run.length) {
      const [px, py] = run[0].split(",");
      data.append(s("circle", {cx: px, cy: py, r: 2}));
    } run = []; };
    inside.forEach(([t, v], i) => {
      if (i && t - inside[i - 1][0] > 1.5 * o.bucket) flush();
      run.push(`${x(t + o.bucket / 2).toFixed(1)},${y(v).toFixed(1)}`);
    });
    flush();
  }
  svg.append(data);
  return svg;
}

const HISTORY_HOURS = [[24, "24 hours"], [168, "7 days"], [720, "30 days"]];
let historyHours = 24;
async function pageHistory(main) {
  main.replaceChildren(h("h2", {}, "History"), h("p", {class: "note"}, "loading…"));
  let hist;
  try { hist = await api("GET", "/v1/history?hours=" + historyHours); } catch (e) {
    main.replaceChildren(h("h2", {}, "History"), h("p", {class: "error"}, e.message));
    return;
  }
  const row = (cells) => h("tr", {}, cells.map((c, i) => h("td", {class: i ? "num" : null}, c)));
  const hrs = (s_) => (s_ / 3600).toFixed(3);
  /* the window asked for, ending now: buckets of 10 minutes up to 48 hours, else of an hour (api.md) */
  const t1 = Date.now(), t0 = t1 - historyHours * HOUR;
  const fine = historyHours <= 48 ? 10 * MIN : HOUR;
  const win = {t0, t1};
  const allocation = (hist.utilization || []).some((p) => p.of === "allocation");
  const range = h("label", {}, "Window ", h("select", {id: "history-hours", onchange: async (e) => {
    historyHours = +e.target.value;
    await pageHistory(main);
    const sel = document.getElementById("history-hours");
    if (sel) sel.focus();
  }},
    HISTORY_HOURS.map(([v, t]) => h("option", {value: v, selected: v === historyHours}, t))));
  main.replaceChildren(h("h2", {}, "History"),
    h("div", {class: "filters"}, range),
    h("p", {class: "note"}, `Since ${when(hist.since)}: samples kept ${hist.keep_days} days, older ones averaged by the hour.`),
    h("section", {"aria-labelledby": "hu-h"}, h("h3", {id: "hu-h"}, "GPU-hours per user"), h("table", {id: "hist-users"},
      h("thead", {}, h("tr", {}, h("th", {scope: "col"}, "User"), h("th", {scope: "col"}, "GPU-hours"), h("th", {scope: "col"}, "Jobs"))),
      /* (deleted jobs count too: their sums are kept, docs/api.md) */
      h("tbody", {}, (hist.per_user || []).map((u) => row([userName(u.uid), hrs(u.gpu_seconds),
        String(u.jobs) + (u.deleted_jobs ? ` (${u.deleted_jobs} deleted)` : "")]))))),
    h("section", {"aria-labelledby": "hg-h"}, h("h3", {id: "hg-h"}, "GPU-hours per GPU"), h("table", {id: "hist-gpus"},
      h("thead", {}, h("tr", {}, h("th", {scope: "col"}, "GPU"), h("th", {scope: "col"}, "GPU-hours"))),
      h("tbody", {}, (hist.per_gpu || []).map((g) => row(["GPU " + g.index, hrs(g.gpu_seconds)]))))),
    h("section", {"aria-labelledby": "hj-h"}, h("h3", {id: "hj-h"}, "Jobs started per hour"),
      chart((hist.jobs_per_hour || []).map((p) => [p.t, p.jobs]),
        {...win, id: "jobs", label: "jobs started per hour", yTitle: "jobs / hour", unit: "jobs", whole: true, bars: true, bucket: HOUR})),
    h("section", {"aria-labelledby": "hw-h"}, h("h3", {id: "hw-h"}, "Queue wait (mean, per hour)"),
      chart((hist.queue_wait || []).map((p) => [p.t, p.mean_s]),
        {...win, id: "wait", label: "mean queue wait of the jobs started each hour, in seconds", yTitle: "mean wait (s)", unit: "s", bars: true, bucket: HOUR})),
    h("section", {"aria-labelledby": "ht-h"}, h("h3", {id: "ht-h"}, "Utilization over time"),
      h("p", {class: "note"}, allocation
        ? "Where the GPUs give no utilization samples (simulated ones), the share of GPUs held by jobs." : "Mean utilization of all GPUs."),
      chart((hist.utilization || []).map((p) => [p.t, p.pct]),
        {...win, id: "util", label: allocation ? "share of GPUs held by jobs, percent" : "mean GPU utilization, percent",
          yTitle: allocation ? "GPUs held (%)" : "utilization (%)", unit: "%", max: 100, bucket: fine})));
}

/* ---- Admin: GPU actions offered by the GPU's state, and the audit trail a page at a time ---- */
/* What each action does, as docs/health.md says; a confirmation quotes it before anything is sent. */
function jobsOn(g) {
  const ids = holders(g).map((j) => j.id ? short(j.id) : "another user's job");
  return ids.length ? ids : g.shared && g.shared.jobs ? [`${g.shared.jobs} shared`] : [];
}
const ACTIONS = {
  drain: {label: "Drain", ask: (g, jobs) => `Drain GPU ${g.index}? No new job starts on it; ` +
    (jobs.length ? `the jobs running on it (${jobs.join(", ")}) go on until they end. ` : "") +
    "It stays out of service until an admin brings it online."},
  stopjobs: {label: "Stop its jobs", action: "drain", force: true, danger: true,
    ask: (g, jobs) => `Stop the jobs on GPU ${g.index} now (${jobs.join(", ") || "none left"})? ` +
      "Preemptible ones go back to the queue; the others end FAILED (end reason gpu_error). " +
      "The GPU stays drained, out of service."},
  offline: {label: "Offline", danger: true, ask: (g, jobs) => `Take GPU ${g.index} offline? It goes out of service ` +
    "until an admin brings it online, and a job that names it is refused. " +
    (jobs.length ? `Jobs run on it (${jobs.join(", ")}): joblet refuses while they do, and nothing changes; ` +
      "you can then force it, which stops them." : "No job runs on it.")},
  online: {label: "Online", ask: (g) => `Bring GPU ${g.index} back into service? New jobs may start on it at once.`},
};
/* The second step where joblet refused (409) and forcing is what the CLI's --force does. */
const FORCED = {
  offline: {label: "Force offline: stop its jobs", ask: (g, jobs) => `Force GPU ${g.index} offline? ` +
    `Its running jobs${jobs.length ? " (" + jobs.join(", ") + ")" : ""} are stopped now: preemptible ones go back to the ` +
    "queue, the others end FAILED (end reason gpu_error). The GPU then stays out of service until an admin brings it online."},
  online: {label: "Force online: skip the reset", ask: (g) => `Bring GPU ${g.index} online without its reset? ` +
    "The reset and the check after it are skipped, and jobs may start on a GPU that failed."},
};
/* Which actions apply to a GPU in its state (docs/health.md, "GPU states"). */
function actionsFor(g) {
  const busy = jobsOn(g).length > 0;
  switch (g.state) {
    case "available": case "allocated": case "shared": case "scrubbing": return ["drain", "offline"];
    case "draining": return busy ? ["stopjobs", "offline", "online"] : ["offline", "online"];
    case "degraded": case "resetting": return ["offline", "online"];
    case "offline": return ["online"];
    default: return [];        /* unusable: discovery found a problem; a restart that finds it well */
  }
}

const admin = {msg: null, audit: null};
function adminSay(kind, text, ...more) {
  if (admin.msg) admin.msg.replaceChildren(h("p", {class: kind}, text), ...more);
}

async function gpuAction(g, name) {
  const a = ACTIONS[name], what = a.action || name, jobs = jobsOn(g);
  if (!confirm(a.ask(g, jobs))) return;
  await sendGpuAction(g, what, !!a.force);
}

async function sendGpuAction(g, what, force) {
  try {
    const r = await api("POST", `/v1/gpus/${g.index}/${what}`, force ? {force: true} : {});
    adminSay("note", `GPU ${g.index}: ${r.state}; ${r.note || ""}` +
      (r.jobs_affected && r.jobs_affected.length ? ` (${r.jobs_affected.map(short).join(", ")})` : ""));
    const i = S.gpus.findIndex((x) => x.index === g.index);
    if (i >= 0) S.gpus[i] = r;
    refreshAdmin();
    if (admin.audit) admin.audit();
  } catch (e) {
    const f = !force && e.status === 409 ? FORCED[what] : null;
    if (!f) { adminSay("error", `joblet refused: ${e.message}`); return; }
    adminSay("error", `joblet refused to ${what === "offline" ? "take" : "bring"} GPU ${g.index} ${what}: ${e.message}`,
      h("button", {id: "admin-force", class: "danger", "data-action": what, onclick: async () => {
        const now = S.gpus.find((x) => x.index === g.index) || g;
        if (confirm(f.ask(now, jobsOn(now)))) await sendGpuAction(now, what, true);
      }}, f.label));
    document.getElementById("admin-force").focus();
  }
}

function adminRow(g) {
  const jobs = jobsOn(g);
  return h("tr", {"data-index": g.index, "data-state": g.state},
    h("th", {scope: "row"}, "GPU " + g.index),
    h("td", {}, h("span", {class: "badge", "data-state": g.state}, g.state), g.state_reason ? h("div", {class: "note"}, g.state_reason) : null),
    h("td", {class: "mono"}, jobs.join(", ") || "none"),
    h("td", {}, h("div", {class: "actions"}, actionsFor(g).map((a) =>
      h("button", {"data-action": a, id: `gpu-${g.index}-${a}`, class: ACTIONS[a].danger ? "danger" : null,
        onclick: () => gpuAction(S.gpus.find((x) => x.index === g.index) || g, a)}, ACTIONS[a].label)))));
}

const AUDIT_PAGE = 50;
async function pageAdmin(main) {
  if (!S.me || !S.me.admin) {
    main.replaceChildren(h("h2", {}, "Admin"), h("p", {}, "This page is for admins (root, or members of server.admin_group)."));
    return;
  }
  const gpus = h("table", {id: "admin-gpus"}, h("thead", {}, h("tr", {}, ["GPU", "State", "Jobs on it", "Actions"].map((t) => h("th", {scope: "col"}, t)))),
    h("tbody", {}, S.gpus.map(adminRow)));
  admin.msg = h("div", {id: "admin-msg", role: "status"});
  const audit = h("tbody", {});
  const f = {user: "", gpu: "", job: "", since: ""};
  const cur = {before: null, after: null};
  const older = h("button", {id: "audit-older", disabled: true, onclick: () => { cur.before = older.dataset.cursor; cur.after = null; load(); }}, "Older");
  const newer = h("button", {id: "audit-newer", disabled: true, onclick: () => { cur.after = newer.dataset.cursor; cur.before = null; load(); }}, "Newer");
  const newest = h("button", {id: "audit-newest", disabled: true, onclick: () => { cur.before = cur.after = null; load(); }}, "Newest");
  const where = h("span", {id: "audit-where", class: "note", "aria-live": "polite"}, "");
  const load = async () => {
    const q = new URLSearchParams({limit: String(AUDIT_PAGE)});
    for (const [k, v] of Object.entries(f)) if (v) q.set(k, v);
    if (cur.before) q.set("before", cur.before);
    if (cur.after) q.set("after", cur.after);
    try {
      const r = await api("GET", "/v1/audit?" + q);
      const recs = r.records || [];
      audit.replaceChildren(...recs.map((a) => h("tr", {"data-id": a.id},
        h("td", {}, when(a.time)), h("td", {}, a.action || ""), h("td", {}, a.gpu ?? "–"),
        h("td", {class: "mono"}, short(a.job || a.job_id || "")), h("td", {}, a.uid !== undefined && a.uid !== null ? userName(a.uid) : "–"),
        h("td", {}, a.detail || ""))));
      if (!recs.length) audit.replaceChildren(h("tr", {}, h("td", {colspan: 6, class: "note"}, "No records match.")));
      older.disabled = !r.older; newer.disabled = !r.newer; newest.disabled = !r.newer;
      if (recs.length) { older.dataset.cursor = recs[recs.length - 1].id; newer.dataset.cursor = recs[0].id; }
      where.textContent = recs.length ? `${recs.length} records, ${when(recs[recs.length - 1].time)} to ${when(recs[0].time)}` +
        (r.newer ? "; newer ones on the pages before" : ", the newest") + (r.older ? "; older ones on the pages after" : "") : "";
    } catch (e) { audit.replaceChildren(h("tr", {}, h("td", {colspan: 6, class: "error"}, e.message))); }
  };
  /* after an action: the newest page again, where its records are */
  admin.audit = () => { if (!cur.before && !cur.after) load(); };
  const input = (k, ph) => h("label", {}, k, h("input", {id: "audit-" + k, value: f[k], placeholder: ph, size: 12,
    onchange: (e) => { f[k] = e.target.value.trim(); cur.before = cur.after = null; load(); }}));
  main.replaceChildren(h("h2", {}, "Admin"),
    h("section", {"aria-labelledby": "admin-gpus-h"}, h("h3", {id: "admin-gpus-h"}, "GPUs"),
      h("p", {class: "note"}, "Each GPU offers the actions that apply to its state; each asks before it acts."),
      admin.msg, h("div", {class: "scroll"}, gpus)),
    h("section", {"aria-labelledby": "audit-h"}, h("h3", {id: "audit-h"}, "Audit trail"),
      h("div", {class: "filters"}, input("user", "uid or name"), input("gpu", "index"), input("job", "id prefix"), input("since", "2026-01-01T00:00:00Z")),
      h("div", {class: "scroll"}, h("table", {id: "audit"}, h("thead", {}, h("tr", {}, ["Time", "Event", "GPU", "Job", "By", "Detail"].map((t) => h("th", {scope: "col"}, t)))), audit)),
      h("div", {class: "actions pager"}, newest, newer, older, where)));
  load();
}

/* ---- drawing ----------------------------------------------------------------------------- */
let lastPage = "";
function render(navigated) {
  const main = document.getElementById("main");
  const p = page();
  for (const a of document.querySelectorAll("nav a[data-page]"))
    a.toggleAttribute("aria-current", a.dataset.page === p.name) && a.setAttribute("aria-current", "page");
  if (!S.loaded) return;
  shownJob = null;                  /* (pageJob sets it again while a job's page is drawn) */
  const key = p.name + "/" + (p.arg || "");
  if (key !== lastPage) {
    if (p.name !== "jobs" || !p.arg) stopLog();
    S.hist = null;                  /* (a job's page opened again asks for its history afresh) */
    if (p.name !== "terminal") stopTerminal();
    lastPage = key;
    navigated = true;
  }
  if (p.name === "terminal") { if (navigated) pageTerminal(main, p.arg); return; }
  if (p.name === "history") { if (navigated) pageHistory(main); return; }
  if (p.name === "admin") { if (navigated) pageAdmin(main); else refreshAdmin(); return; }
  const focus = document.activeElement && document.activeElement.id;
  const scroll = window.scrollY;
  const parts = p.name === "jobs" && p.arg ? pageJob(p.arg)
    : p.name === "jobs" ? pageJobs() : p.name === "queue" ? pageQueue()
    : p.name === "workflows" ? pageWorkflows() : pageGpus();
  main.replaceChildren(...parts.flat().filter(Boolean));
  if (focus && document.getElementById(focus)) document.getElementById(focus).focus();
  if (!navigated) window.scrollTo(0, scroll);
  document.title = `joblet · ${p.name}`;
}

/* The GPU rows again (their actions follow the state); the audit and the message stay. */
function refreshAdmin() {
  const body = document.querySelector("#admin-gpus tbody");
  if (!body) return;
  const focus = document.activeElement && document.activeElement.id;
  body.replaceChildren(...S.gpus.map(adminRow));
  if (focus && focus.startsWith("gpu-") && document.getElementById(focus)) document.getElementById(focus).focus();
}

/* A running job's duration, each second, on the Jobs page */
setInterval(() => {
  for (const td of document.querySelectorAll("#jobs-table td[data-start]"))
    td.textContent = elapsed(Date.now() - Date.parse(td.dataset.start));
}, 1000);

window.addEventListener("hashchange", () => render(true));
/* A page the browser keeps to come back to (its back/forward cache) keeps the connections it
 * holds open unless it closes them: its event stream, a job's log, a terminal each held one of
 * the six a browser allows a host, and the console opened again in that browser waited for them
 * (30-40 s on each of Lighthouse's pages after a running job's, which its back/forward check
 * leaves so). Closed as the page is hidden so; opened again, and the page drawn anew, when it
 * comes back. */
window.addEventListener("pagehide", () => {
  stopLog();
  stopTerminal();
  if (S.es) { S.es.close(); S.es = null; }
});
window.addEventListener("pageshow", (e) => {
  if (!e.persisted || !KEY) return;
  lastPage = "";                    /* (drawn anew at the hello's reload: the log followed again) */
  connect();
});
document.addEventListener("DOMContentLoaded", () => {
  if (!KEY) {
    const live = document.getElementById("live");
    live.dataset.live = "lost";
    live.textContent = "signed out";
    document.getElementById("main").replaceChildren(h("p", {class: "note"},
      "This tab holds no console key. Open the link that 'rnx console' printed (run it again for a new one); " +
      "the console lives in the tab that opened it."));
    return;
  }
  render(true);
  connect();
});
