/* joblet console: the JSON API plus GET /v1/events (server-sent events), no framework.
 * Every page is drawn from `S` (the state loaded with the API and kept current by the events);
 * text from jobs and users goes into the page only as text nodes, never as HTML. */
"use strict";

const S = {
  me: null, gpus: [], jobs: new Map(), workflows: [], samples: new Map(),
  loaded: false, es: null, log: null,
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
const WAITING = new Set(["PENDING", "SCHEDULED", "QUEUED", "PREEMPTED"]);
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
function userName(uid) {
  if (S.me && uid === S.me.uid && S.me.user) return S.me.user;
  return uid === 0 ? "root" : "uid " + uid;
}

async function api(method, path, body) {
  const r = await fetch(path, {
    method, credentials: "same-origin",
    /* a change is application/json, body or not: rnx console refuses any other type */
    headers: method === "GET" ? {"X-Console-Key": KEY} : {"X-Console-Key": KEY, "Content-Type": "application/json"},
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await r.text();
  let j = null;
  try { j = text ? JSON.parse(text) : null; } catch (e) { j = null; }
  if (!r.ok) {
    const msg = j && j.error ? j.error.message : r.status + " " + r.statusText;
    throw new Error(msg);
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

const pending = {jobs: new Set(), workflows: false, gpus: false, timer: 0};
function later() {
  if (pending.timer) return;
  pending.timer = setTimeout(async () => {
    pending.timer = 0;
    const ids = [...pending.jobs];
    pending.jobs.clear();
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
      if (wf) S.workflows = (await api("GET", "/v1/workflows")).workflows || [];
      if (g) S.gpus = (await api("GET", "/v1/gpus")).gpus || [];
    } catch (e) { /* the next event tries again */ }
    render(false);
  }, 150);
}

function onJob(ev) {
  const j = S.jobs.get(ev.id) || {id: ev.id, owner_uid: ev.user, gpus: []};
  j.status = ev.status;
  j.name = ev.name;
  j.queue_position = ev.queue_position || null;
  if (ev.end_reason !== undefined) j.end_reason = ev.end_reason;
  S.jobs.set(ev.id, j);
  pending.jobs.add(ev.id);          /* the rest (times, placement, usage) from the API */
  if (ev.workflow) pending.workflows = true;
  later();
}

function onGpu(ev) {
  const g = S.gpus.find((x) => x.index === ev.index);
  if (g) { g.state = ev.state; g.takes_jobs = ev.takes_jobs; g.job = ev.job; }
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
  if (page().name === "gpus") render(false);
}

function connect() {
  const live = document.getElementById("live");
  const es = new EventSource("/v1/events?console_key=" + encodeURIComponent(KEY));
  S.es = es;
  const set = (st, text) => { live.dataset.live = st; live.textContent = text; };
  const reload = async () => {
    try { await loadAll(); render(false); set("live", "live"); } catch (e) { set("lost", "error: " + e.message); }
  };
  es.addEventListener("hello", reload);
  es.addEventListener("resync", reload);
  es.addEventListener("job", (m) => onJob(JSON.parse(m.data)));
  es.addEventListener("job_deleted", (m) => { S.jobs.delete(JSON.parse(m.data).id); render(false); });
  es.addEventListener("workflow", () => { pending.workflows = true; later(); });
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
        ? h("span", {class: "mono", title: "another user's job"}, short(j.id))
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
function jobRow(j) {
  return h("tr", {"data-id": j.id, "data-status": j.status},
    h("td", {}, h("a", {href: "#/jobs/" + j.id, class: "mono"}, short(j.id))),
    h("td", {}, j.name || ""), h("td", {}, userName(j.owner_uid)),
    h("td", {}, h("span", {class: "badge", "data-status": j.status}, j.status)),
    h("td", {}, (j.gpus || []).map((x) => x.index ?? x).join(",") || "–"),
    h("td", {class: "mono hide-narrow"}, [j.command, ...(j.args || [])].filter(Boolean).join(" ").slice(0, 60)),
    h("td", {class: "hide-narrow"}, when(j.created_at)));
}

function pageJobs() {
  const jobs = [...S.jobs.values()].filter((j) =>
    (!filters.status || j.status === filters.status) &&
    (!filters.user || String(j.owner_uid) === filters.user || userName(j.owner_uid) === filters.user) &&
    (!filters.gpu || (j.gpus || []).some((x) => String(x.index ?? x) === filters.gpu))).reverse();
  const sel = (name, opts) => h("select", {id: "filter-" + name, onchange: (e) => { filters[name] = e.target.value; render(false); }},
    opts.map(([v, t]) => h("option", {value: v, selected: filters[name] === v}, t)));
  const states = ["PENDING", "SCHEDULED", "QUEUED", "RUNNING", "STOPPING", "PREEMPTED", "STOPPED", "COMPLETED", "FAILED", "CANCELED"];
  return [h("h2", {}, "Jobs"),
    S.me && S.me.uid !== 0 ? h("p", {class: "note"}, "Your jobs (root sees everyone's).") : null,
    h("div", {class: "filters", role: "search"},
      h("label", {}, "State", sel("status", [["", "any"], ...states.map((x) => [x, x])])),
      h("label", {}, "User", h("input", {id: "filter-user", value: filters.user, size: 10, placeholder: "uid or name",
        onchange: (e) => { filters.user = e.target.value.trim(); render(false); }})),
      h("label", {}, "GPU", sel("gpu", [["", "any"], ...S.gpus.map((g) => [String(g.index), "GPU " + g.index])]))),
    h("div", {class: "scroll"}, h("table", {id: "jobs-table"},
      h("thead", {}, h("tr", {}, ["ID", "Name", "User", "State", "GPUs"].map((t) => h("th", {scope: "col"}, t)),
        h("th", {scope: "col", class: "hide-narrow"}, "Command"), h("th", {scope: "col", class: "hide-narrow"}, "Created"))),
      h("tbody", {}, jobs.slice(0, JOBS_SHOWN).map(jobRow)))),
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
    const r = await fetch(`/v1/jobs/${encodeURIComponent(id)}/logs?follow=1&format=ndjson`, {
      signal: ctl.signal, credentials: "same-origin", headers: {"X-Console-Key": KEY}});
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

function pageJob(id) {
  const j = S.jobs.get(id) || [...S.jobs.values()].find((x) => x.id.startsWith(id));
  if (!j) return [h("h2", {}, "Job " + id), h("p", {class: "note"}, "No such job among those you can see.")];
  const mine = S.me && (S.me.uid === j.owner_uid || S.me.admin);
  const lim = j.limits || {};
  const u = j.usage || {};
  const pre = S.log && S.log.id === j.id ? S.log.pre : h("pre", {class: "log", id: "job-log", "aria-live": "off", tabindex: 0});
  if (!S.log || S.log.id !== j.id) { stopLog(); followLog(j.id, pre); }
  return [h("h2", {}, "Job ", h("span", {class: "mono"}, short(j.id)), " ", j.name ? "(" + j.name + ") " : "",
      h("span", {class: "badge", id: "job-status", "data-status": j.status}, j.status)),
    mine && !ENDED.has(j.status) ? h("div", {class: "actions"},
      h("button", {id: "job-stop", onclick: () => jobAction(j.id, "stop")}, "Stop"),
      h("button", {id: "job-kill", class: "danger", onclick: () => jobAction(j.id, "kill")}, "Kill")) : null,
    h("h3", {}, "Request"),
    h("dl", {class: "kv"},
      h("dt", {}, "Command"), h("dd", {class: "mono"}, [j.command, ...(j.args || [])].join(" ")),
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
      h("dt", {}, "Ended"), h("dd", {}, when(j.ended_at) + (j.end_reason ? ` (${j.end_reason}${j.exit_code !== null && j.exit_code !== undefined ? ", exit code " + j.exit_code : ""})` : ""))),
    h("h3", {}, "Limits and usage"),
    h("dl", {class: "kv"},
      h("dt", {}, "Memory"), h("dd", {}, `limit ${mib(lim.max_memory_mb)}, peak ${mib(u.memory_peak_bytes ? Math.round(u.memory_peak_bytes / 1048576) : 0)}`),
      h("dt", {}, "CPU"), h("dd", {}, `limit ${lim.max_cpu ? lim.max_cpu + " %" : "none"}, used ${((u.cpu_ns || 0) / 1e9).toFixed(2)} s`),
      h("dt", {}, "Processes"), h("dd", {}, `limit ${dash(lim.pids_max)}, now ${dash(u.pids_current)}`)),
    h("h3", {}, "Log ", h("span", {class: "note"}, "(following)")), pre];
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

function chart(points, label, unit, bars) {
  const W = 600, H = 160, L = 5, B = 15;
  const svg = s("svg", {class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": label});
  if (!points.length) { svg.append(s("text", {x: 10, y: 20}, "nothing recorded yet")); return svg; }
  const t0 = points[0][0], t1 = points[points.length - 1][0];
  const top = Math.max(1, ...points.map((p) => p[1]));
  const x = (t) => L + (t1 > t0 ? (t - t0) / (t1 - t0) : 0.5) * (W - 2 * L - 12);
  const y = (v) => H - B - v / top * (H - B - 18);
  if (bars || points.length < 2)
    for (const [t, v] of points) svg.append(s("rect", {class: "barc", x: x(t), y: y(v), width: 10, height: H - B - y(v)}));
  else
    svg.append(s("polyline", {points: points.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(" ")}));
  svg.append(s("text", {x: L, y: 12}, `max ${Math.round(top * 10) / 10}${unit}`),
    s("text", {x: L, y: H - 3}, new Date(t0).toLocaleString()),
    s("text", {x: W - L, y: H - 3, "text-anchor": "end"}, new Date(t1).toLocaleString()));
  return svg;
}

async function pageHistory(main) {
  main.replaceChildren(h("h2", {}, "History"), h("p", {class: "note"}, "loading…"));
  let hist;
  try { hist = await api("GET", "/v1/history"); } catch (e) {
    main.replaceChildren(h("h2", {}, "History"), h("p", {class: "error"}, e.message));
    return;
  }
  const row = (cells) => h("tr", {}, cells.map((c) => h("td", {}, c)));
  const hrs = (s_) => (s_ / 3600).toFixed(3);
  main.replaceChildren(h("h2", {}, "History"),
    h("p", {class: "note"}, `Since ${when(hist.since)}: samples kept ${hist.keep_days} days, older ones averaged by the hour.`),
    h("section", {}, h("h3", {}, "GPU-hours per user"), h("table", {id: "hist-users"},
      h("thead", {}, h("tr", {}, h("th", {}, "User"), h("th", {}, "GPU-hours"), h("th", {}, "Jobs"))),
      h("tbody", {}, (hist.per_user || []).map((u) => row([userName(u.uid), hrs(u.gpu_seconds), String(u.jobs)]))))),
    h("section", {}, h("h3", {}, "GPU-hours per GPU"), h("table", {id: "hist-gpus"},
      h("thead", {}, h("tr", {}, h("th", {}, "GPU"), h("th", {}, "GPU-hours"))),
      h("tbody", {}, (hist.per_gpu || []).map((g) => row(["GPU " + g.index, hrs(g.gpu_seconds)]))))),
    h("section", {}, h("h3", {}, "Jobs per hour"), chart((hist.jobs_per_hour || []).map((p) => [p.t, p.jobs]), "jobs started per hour", "", true)),
    h("section", {}, h("h3", {}, "Queue wait (mean, per hour)"), chart((hist.queue_wait || []).map((p) => [p.t, p.mean_s]), "mean queue wait per hour", " s", true)),
    h("section", {}, h("h3", {}, "Utilization over time"),
      h("p", {class: "note"}, (hist.utilization || []).some((p) => p.of === "allocation")
        ? "Where the GPUs give no utilization samples (simulated ones), the share of GPUs held by jobs." : "Mean utilization of all GPUs."),
      chart((hist.utilization || []).map((p) => [p.t, p.pct]), "mean GPU utilization", " %")));
}

async function gpuAction(i, what) {
  if (!confirm(`${what} GPU ${i}?` + (what === "online" ? "" : " Jobs on it keep running; no new ones start there."))) return;
  try { await api("POST", `/v1/gpus/${i}/${what}`, {}); } catch (e) { alert(e.message); }
}

async function pageAdmin(main) {
  if (!S.me || !S.me.admin) {
    main.replaceChildren(h("h2", {}, "Admin"), h("p", {}, "This page is for admins (root, or members of server.admin_group)."));
    return;
  }
  const gpus = h("table", {id: "admin-gpus"}, h("thead", {}, h("tr", {}, ["GPU", "State", "Actions"].map((t) => h("th", {}, t)))),
    h("tbody", {}, S.gpus.map((g) => h("tr", {"data-index": g.index},
      h("td", {}, "GPU " + g.index), h("td", {}, h("span", {class: "badge", "data-state": g.state}, g.state)),
      h("td", {}, h("div", {class: "actions"}, ["drain", "offline", "online"].map((a) =>
        h("button", {"data-action": a, class: a === "offline" ? "danger" : null, onclick: () => gpuAction(g.index, a)}, a))))))));
  const audit = h("tbody", {});
  const f = {user: "", gpu: "", job: "", since: ""};
  const load = async () => {
    const q = new URLSearchParams({limit: "200"});
    for (const [k, v] of Object.entries(f)) if (v) q.set(k, v);
    try {
      const r = await api("GET", "/v1/audit?" + q);
      audit.replaceChildren(...(r.records || []).map((a) => h("tr", {},
        h("td", {}, when(a.time)), h("td", {}, a.action || ""), h("td", {}, a.gpu ?? "–"),
        h("td", {class: "mono"}, short(a.job || a.job_id || "")), h("td", {}, a.uid !== undefined && a.uid !== null ? userName(a.uid) : "–"),
        h("td", {}, a.detail || ""))));
    } catch (e) { audit.replaceChildren(h("tr", {}, h("td", {colspan: 6, class: "error"}, e.message))); }
  };
  const input = (k, ph) => h("label", {}, k, h("input", {value: f[k], placeholder: ph, size: 12, onchange: (e) => { f[k] = e.target.value.trim(); load(); }}));
  main.replaceChildren(h("h2", {}, "Admin"), h("section", {}, h("h3", {}, "GPUs"), h("div", {class: "scroll"}, gpus)),
    h("section", {}, h("h3", {}, "Audit trail"),
      h("div", {class: "filters"}, input("user", "uid or name"), input("gpu", "index"), input("job", "id prefix"), input("since", "2026-01-01T00:00:00Z")),
      h("div", {class: "scroll"}, h("table", {id: "audit"}, h("thead", {}, h("tr", {}, ["Time", "Event", "GPU", "Job", "By", "Detail"].map((t) => h("th", {}, t)))), audit))));
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
  const key = p.name + "/" + (p.arg || "");
  if (key !== lastPage) { if (p.name !== "jobs" || !p.arg) stopLog(); lastPage = key; navigated = true; }
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

function refreshAdmin() {
  for (const g of S.gpus) {
    const b = document.querySelector(`#admin-gpus tr[data-index="${g.index}"] .badge`);
    if (b) { b.dataset.state = g.state; b.textContent = g.state; }
  }
}

window.addEventListener("hashchange", () => render(true));
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
