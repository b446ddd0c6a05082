"use strict";
// The status page: the document of /api/status, then every journal record from /api/events.
// A token given as ?token= is passed on to both (a browser's EventSource sends no headers).
(function () {
  const token = new URLSearchParams(location.search).get("token");
  const q = token ? "?token=" + encodeURIComponent(token) : "";
  const $ = (id) => document.getElementById(id);
  const states = new Map();   // worker -> machine state name
  let fleet = false;
  let refreshTimer = null;
  // The step keys in lifecycle order, written in by the server from the machine's steps.
  const STEPS = [/*STEPS*/];
  // An object's entries by step, in the order the steps run (JSON objects have none).
  const byStep = (o) => Object.entries(o).sort((a, b) => rank(a[0]) - rank(b[0]));
  const rank = (step) => { const i = STEPS.indexOf(step); return i < 0 ? STEPS.length : i; };
  // The badge says "live" only while the event stream is open and a runner works on the
  // project: after the run ended the page shows its last state, not a live one.
  let connected = false;
  let running = false;
  function badge() {
    const [label, on] = !connected ? ["reconnecting…", false] : running ? ["live", true] : ["run ended", false];
    $("conn").textContent = label;
    $("conn").className = "pill " + (on ? "on" : "off");
  }

  function text(tag, content, cls) {
    const el = document.createElement(tag);
    el.textContent = content;
    if (cls) el.className = cls;
    return el;
  }

  function highlight() {
    document.querySelectorAll("#diagram .current").forEach((el) => el.classList.remove("current"));
    document.querySelectorAll("#diagram .badge").forEach((el) => el.remove());
    const at = new Map();
    for (const [worker, state] of states) {
      if (fleet && worker === "runner") continue;
      const el = document.getElementById("state-" + state);
      if (!el) continue;
      el.classList.add("current");
      const box = el.closest(".state");
      if (box) box.classList.add("current");
      const holder = box || el;
      if (!at.has(holder)) at.set(holder, []);
      at.get(holder).push(worker);
    }
    // On a narrow screen the diagram scrolls sideways: bring the first worker's state into view.
    const box = $("diagram");
    const first = at.keys().next().value;
    if (first && box.scrollWidth > box.clientWidth) {
      const r = first.getBoundingClientRect();
      const b = box.getBoundingClientRect();
      box.scrollLeft += r.left + r.width / 2 - (b.left + b.width / 2);
    }
    for (const [holder, workers] of at) {
      const rect = holder.querySelector("rect");
      const badge = document.createElementNS("http://www.w3.org/2000/svg", "text");
      badge.setAttribute("class", "badge");
      badge.setAttribute("x", Number(rect.getAttribute("x")) + Number(rect.getAttribute("width")) - 4);
      badge.setAttribute("y", Number(rect.getAttribute("y")) - 4);
      badge.setAttribute("text-anchor", "end");
      badge.textContent = workers.join(" ");
      holder.appendChild(badge);
      holder.setAttribute("data-workers", workers.join(" "));
    }
  }

  function bar(label, count, limit) {
    const round = (x) => (Number.isInteger(x) ? x : x.toFixed(2));
    const row = text("div", "", "bar");
    row.appendChild(text("span", label));
    const track = text("div", "", "track");
    const fill = text("div", "", "fill");
    const ratio = limit > 0 ? Math.min(1, count / limit) : 0;
    fill.style.width = (ratio * 100).toFixed(1) + "%";
    if (ratio >= 1) fill.classList.add("full"); else if (ratio >= 0.66) fill.classList.add("warn");
    track.appendChild(fill);
    row.appendChild(track);
    row.appendChild(text("span", limit > 0 ? round(count) + " / " + round(limit) : String(round(count)), "num"));
    return row;
  }

  // Each host the allowlist's proxy refused the agent in the last run, with the attempt
  // that first asked for it; the section is hidden while there is none.
  function refused(hosts) {
    $("refused").hidden = hosts.length === 0;
    $("refused-hosts").replaceChildren(...hosts.map((r) => text("li", r.host + " · " + r.step + " attempt " + r.attempt + " of #" + r.issue + " · " + r.at)));
  }

  // The merge train of run --workers: each PR's place (0: the head), the tree it is tested in
  // (main plus the PRs merged onto it, itself last), its tree's verdict and how long it has
  // waited; then the PRs settled and the CI runs so far. Hidden while there is no train.
  function train(t) {
    const cars = (t && t.cars) || [];
    $("train").hidden = !t;
    $("train-cars").replaceChildren(...cars.map((c) => {
      const tr = document.createElement("tr");
      const tree = ["main"].concat((c.tree || []).map((n) => "#" + n)).join(" + ");
      const waited = c.waitingSeconds != null ? clock(c.waitingSeconds) : "—";
      for (const cell of [c.position, "#" + c.issue, tree, c.verdict, waited]) tr.appendChild(text("td", String(cell)));
      tr.className = "verdict-" + c.verdict;
      return tr;
    }));
    const settled = ((t && t.settled) || []).map((n) => "#" + n).join(", ");
    $("train-summary").textContent = t ? (settled ? "settled, merging in order: " + settled + " · " : "") + t.runs + " CI run(s) so far" : "";
  }

  // GitHub's API as the runner has used it: requests answered (the 304s among them cost no
  // rate limit) and the budget GitHub's last answer named; hidden before the first request.
  function github(g) {
    $("github").hidden = !g;
    $("github").textContent = g ? "GitHub: " + g.requests + " requests (" + g.notModified + " answered 304, free of the rate limit)" + (g.rateLimitRemaining != null ? " · rate limit left " + g.rateLimitRemaining : "") : "";
  }

  // The test-weakening facts of the last failure (TESTS_WEAKENED), each file and line, and
  // what was decided; the section is hidden while there is none.
  function weakened(f) {
    const facts = (f && f.weakened) || [];
    $("weakened").hidden = facts.length === 0;
    $("weakened-decided").textContent = f && f.decided ? f.step + ": " + f.decided : "";
    $("weakened-facts").replaceChildren(...facts.map((w) => text("li", w)));
  }

  function render(st) {
    fleet = (st.workers || []).length > 0;
    const parts = [st.project, "runner " + st.runner];
    if (st.session) parts.push("session " + st.session + " (" + st.sessionStatus + ")");
    $("summary").textContent = parts.join(" · ");
    const halt = $("halt");
    const halted = st.stickyHalt || (st.workers || []).map((w) => w.stickyHalt).find(Boolean);
    halt.hidden = !halted;
    halt.textContent = halted ? "HALTED: " + halted + (st.lastFailure ? "\nlast failure: " + st.lastFailure.class + " in " + st.lastFailure.step + " (" + st.lastFailure.signature + ")" : "") : "";
    const rows = fleet
      ? st.workers.map((w) => ({ name: w.name, state: w.state, issue: w.currentIssue, issueRef: w.currentIssueRef, step: w.currentStep, attempt: w.currentAttempt, running: w.runningStep, wait: w.wait, runner: w.runner }))
      : [{ name: "runner", state: st.state, issue: st.currentIssue, issueRef: st.currentIssueRef, step: st.currentStep, attempt: st.currentAttempt, running: st.runningStep, wait: st.wait, runner: st.runner }];
    const body = $("workers").tBodies[0];
    body.replaceChildren();
    for (const r of rows) {
      if (r.state && !states.has(r.name)) states.set(r.name, r.state);
      const tr = document.createElement("tr");
      tr.className = "worker";
      tr.dataset.worker = r.name;
      for (const v of [r.name, states.get(r.name) || r.state || "—", r.issueRef || (r.issue ? "#" + r.issue : "—"), r.step ? r.step + (r.attempt ? " · attempt " + r.attempt : "") : "—"]) tr.appendChild(text("td", v));
      const now = text("td", "", "now");
      now.live = { running: r.running, wait: r.wait };
      tr.appendChild(now);
      tr.appendChild(text("td", r.runner));
      body.appendChild(tr);
    }
    const bars = $("bars");
    bars.replaceChildren();
    const c = st.counters;
    if (c) {
      for (const [step, n] of byStep(c.attempts)) bars.appendChild(bar("failed attempts · " + step, n, c.maxRetriesPerStep));
      bars.appendChild(bar("bounces", c.bounces, c.maxBounceRetries));
      bars.appendChild(bar("consecutive escalations", c.consecutiveEscalations, c.maxConsecutiveEscalations));
      for (const [step, v] of byStep(c.phaseFailures)) if (v.limit > 0) bars.appendChild(bar("failures in a row · " + step, v.count, v.limit));
      for (const [step, n] of byStep(c.sameSignatureStreak)) bars.appendChild(bar("same failure · " + step, n, c.maxConsecutiveSameFailure));
      bars.appendChild(bar("rate-limit waits in a row", c.rateLimitWaitStreak, c.maxRateLimitWaits));
      bars.appendChild(bar("network waits of steps in a row", c.stepNetworkWaitStreak, c.maxNetworkWaits));
    }
    const b = st.budgets;
    if (b) {
      if (b.perSessionUsd != null) bars.appendChild(bar("session spend (USD)", b.sessionUsd, b.perSessionUsd));
      if (b.perIssueUsd != null) bars.appendChild(bar("issue spend (USD)", b.issueUsd, b.perIssueUsd));
      if (b.perIssueMinutes != null) bars.appendChild(bar("issue time (min)", Math.round(b.issueMinutes), b.perIssueMinutes));
    }
    const d = st.day;
    if (d) bars.appendChild(bar("day spend, every session and worker (USD)" + (d.freesAt ? " · frees " + d.freesAt : ""), d.spentUsd, d.perDayUsd));
    const w = st.wastedSinceLastMerge;
    if (w) bars.appendChild(bar("since last merge: $" + w.sinceMerge.costUsd.toFixed(2) + ", merges", w.merges, 0));
    refused(st.refusedHosts || []);
    github(st.github);
    train(st.train);
    weakened(st.lastFailure);
    running = rows.some((r) => (r.runner || "").startsWith("running"));
    badge();
    highlight();
    tickNow();
  }

  // The running step's elapsed time and a wait's time left, counted from the times the runner
  // wrote (startedAt, until), so they move between two status documents.
  function clock(s) {
    s = Math.max(0, Math.floor(s));
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m" + String(s % 60).padStart(2, "0") + "s";
    return Math.floor(s / 3600) + "h" + String(Math.floor((s % 3600) / 60)).padStart(2, "0") + "m";
  }

  function tickNow() {
    for (const td of document.querySelectorAll("td.now")) {
      const l = td.live || {};
      if (l.running) {
        const r = l.running;
        const bits = [clock((Date.now() - Date.parse(r.startedAt)) / 1000), r.turns + (r.turns === 1 ? " turn" : " turns")];
        if (r.costUsd != null) bits.push("$" + r.costUsd.toFixed(2));
        if (r.lastTool) bits.push(r.lastTool);
        td.textContent = bits.join(" · ");
      } else if (l.wait) {
        td.textContent = l.wait.reason + " until " + l.wait.until.slice(11, 19) + " UTC (" + clock((Date.parse(l.wait.until) - Date.now()) / 1000) + " left)";
      } else {
        td.textContent = "—";
      }
    }
  }
  setInterval(tickNow, 1000);
  // Turns and the last tool are not journaled: the status is read again now and then.
  setInterval(() => refresh(), 5000);

  function refresh() {
    if (refreshTimer) return;
    refreshTimer = setTimeout(() => {
      refreshTimer = null;
      fetch("api/status" + q).then((r) => r.json()).then(render).catch(() => {});
    }, 400);
  }

  function describe(r) {
    const thing = r.event || r.effect || {};
    const name = thing.event || thing.effect || r.kind;
    const bits = [];
    for (const k of ["step", "issue", "attempt", "class", "seconds"]) if (thing[k] !== undefined) bits.push(k + " " + thing[k]);
    if (r.kind === "sessionEnd") bits.push(r.end.how + (r.end.headline ? ": " + r.end.headline : ""));
    if (r.kind === "failure") bits.push(r.detail.class + ": " + r.detail.summary);
    if (thing.effect === "halt" || (r.effect && r.effect.reason)) bits.push(r.effect.reason);
    return name + (bits.length ? " (" + bits.join(", ") + ")" : "") + (r.state ? " → " + r.state : "");
  }

  function onRecord(r) {
    const li = document.createElement("li");
    li.className = "event";
    li.appendChild(text("span", (r.time || "").slice(11, 19) + " ", "t"));
    li.appendChild(text("span", "[" + r.worker + "] ", "w"));
    const what = text("span", describe(r));
    if (r.kind === "sessionEnd" && r.end.how === "halt") what.classList.add("halt-ev");
    li.appendChild(what);
    const list = $("events");
    list.insertBefore(li, list.firstChild);
    while (list.children.length > 200) list.removeChild(list.lastChild);
    if (r.kind === "event" && r.state) {
      states.set(r.worker, r.state);
      highlight();
    }
    refresh();
  }

  fetch("api/status" + q).then((r) => r.json()).then(render).catch(() => {});
  const source = new EventSource("api/events" + q);
  source.onopen = () => { connected = true; badge(); };
  source.onerror = () => { connected = false; badge(); };
  source.onmessage = (m) => { try { onRecord(JSON.parse(m.data)); } catch (e) { /* a record this page does not know */ } };
})();
