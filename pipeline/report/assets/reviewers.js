"use strict";
// reviewers.html: renders the assignment data (pipeline/report/reviewers.py, page_data) by
// paper or by reviewer, a page of entries at a time; text only through textContent.
(function () {
  const data = JSON.parse(document.getElementById("reviewers-data").textContent);
  const list = document.getElementById("list");
  const more = document.getElementById("more");
  const q = document.getElementById("q");
  const weakOnly = document.getElementById("weak-only");
  const count = document.getElementById("count");
  const buttons = {
    papers: document.getElementById("view-papers"),
    reviewers: document.getElementById("view-reviewers"),
  };
  const R = data.reviewers, P = data.papers, TAGS = data.tags, PAST = data.past;
  let view = location.hash === "#by-reviewer" ? "reviewers" : "papers";
  let matches = [], shown = 0;

  const byReviewer = R.map(() => []);
  P.forEach((p, i) => p[4].forEach((pair) => byReviewer[pair[0]].push([i, pair])));
  byReviewer.forEach((rows) => rows.sort((a, b) => b[1][1] - a[1][1]));

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function fmt(x) { return String(Number(x.toPrecision(6))); }
  function reviewerName(j) { return R[j][1] || R[j][0]; }
  function reason(pair) {
    const bits = [];
    if (pair[2].length) bits.push("shared tags: " + pair[2].map((t) => TAGS[t]).join(", "));
    if (pair[4] >= 0) bits.push('most similar past paper: "' + PAST[pair[4]] + '" (' + pair[5].toFixed(2) + ")");
    if (pair[3].length) bits.push("keywords: " + pair[3].join(", "));
    if (pair[8] !== null) bits.push("embedding similarity " + pair[8].toFixed(2));
    return bits.length ? bits.join("; ") : "no matching expertise";
  }
  function paperRef(p) {
    const code = el("code");
    if (p[1]) {
      const a = el("a", "", p[0]);
      a.href = p[1];
      a.rel = "noopener noreferrer";
      code.appendChild(a);
    } else code.textContent = p[0];
    return code;
  }
  function row(cells, cls) {
    const tr = el("tr", cls);
    cells.forEach(([c, text]) => {
      const td = el("td", c);
      if (text instanceof Node) td.appendChild(text); else td.textContent = text;
      tr.appendChild(td);
    });
    return tr;
  }
  function head(names) {
    const tr = el("tr", "head");
    names.forEach((n) => tr.appendChild(el("th", "", n)));
    return tr;
  }
  function weakCell(pair, text) {
    const span = el("span", "", text);
    if (pair[7]) span.appendChild(el("span", "badge", "weak"));
    return span;
  }

  function paperEntry(i) {
    const p = P[i];
    const s = el("section", "paper" + (p[3] ? " is-short" : ""));
    s.dataset.paper = p[0];
    const h = el("h2");
    h.appendChild(paperRef(p));
    h.appendChild(document.createTextNode(" " + p[2]));
    s.appendChild(h);
    const n = p[4].length;
    const status = p[3] ? "left short (" + n + " of " + data.per_paper + "): " + p[3]
      : n + " of " + data.per_paper + " reviewers";
    s.appendChild(el("p", "muted status", status));
    if (n) {
      const t = el("table");
      t.appendChild(head(["reviewer", "affinity_total", "why"]));
      p[4].forEach((pair) => {
        t.appendChild(row([
          ["", weakCell(pair, reviewerName(pair[0]) + " (" + R[pair[0]][0] + ")")],
          ["num", fmt(pair[1])],
          ["", reason(pair)],
        ], pair[7] ? "weak" : ""));
      });
      s.appendChild(t);
    }
    return s;
  }

  function reviewerEntry(j) {
    const r = R[j];
    const s = el("section", "reviewer");
    s.dataset.reviewer = r[0];
    const h = el("h2", "", reviewerName(j) + " ");
    h.appendChild(el("code", "", r[0]));
    s.appendChild(h);
    const cap = r[3] === null ? "" : " of at most " + r[3];
    const tags = r[5].map((t) => TAGS[t]).join(", ") || "-";
    s.appendChild(el("p", "muted load", "load " + r[2] + cap + "; " + r[4] + " past paper(s); tags: " + tags));
    const rows = byReviewer[j];
    if (!rows.length) {
      s.appendChild(el("p", "muted", "No papers assigned."));
      return s;
    }
    const t = el("table");
    t.appendChild(head(["paper", "title", "affinity_total", "why"]));
    rows.forEach(([i, pair]) => {
      t.appendChild(row([
        ["", paperRef(P[i])],
        ["", weakCell(pair, P[i][2])],
        ["num", fmt(pair[1])],
        ["", reason(pair)],
      ], pair[7] ? "weak" : ""));
    });
    s.appendChild(t);
    return s;
  }

  // Search texts, made on the first search of each view and kept.
  const texts = { papers: null, reviewers: null };
  function paperText(i) {
    const p = P[i];
    return [p[0], p[2], ...p[4].map((pair) => R[pair[0]][0] + " " + R[pair[0]][1])].join(" ").toLowerCase();
  }
  function reviewerText(j) {
    return [R[j][0], R[j][1], ...byReviewer[j].map(([i]) => P[i][0] + " " + P[i][2])].join(" ").toLowerCase();
  }
  function searchTexts() {
    if (!texts[view]) {
      texts[view] = view === "papers" ? P.map((_, i) => paperText(i)) : R.map((_, j) => reviewerText(j));
    }
    return texts[view];
  }

  function select() {
    const needle = q.value.trim().toLowerCase();
    const weak = weakOnly.checked;
    const n = view === "papers" ? P.length : R.length;
    const haystack = needle ? searchTexts() : null;
    matches = [];
    for (let i = 0; i < n; i++) {
      if (weak) {
        const pairs = view === "papers" ? P[i][4] : byReviewer[i].map((x) => x[1]);
        if (!pairs.some((pair) => pair[7])) continue;
      }
      if (needle && !haystack[i].includes(needle)) continue;
      matches.push(i);
    }
    list.replaceChildren();
    shown = 0;
    render();
  }

  function render() {
    const end = Math.min(matches.length, shown + data.page_size);
    const frag = document.createDocumentFragment();
    for (let k = shown; k < end; k++) {
      frag.appendChild(view === "papers" ? paperEntry(matches[k]) : reviewerEntry(matches[k]));
    }
    list.appendChild(frag);
    shown = end;
    more.hidden = shown >= matches.length;
    const what = view === "papers" ? "paper(s)" : "reviewer(s)";
    count.textContent = matches.length + " " + what + (shown < matches.length ? ", " + shown + " shown" : "");
  }

  function show(which) {
    view = which;
    for (const [name, b] of Object.entries(buttons)) b.setAttribute("aria-pressed", String(name === which));
    history.replaceState(null, "", which === "reviewers" ? "#by-reviewer" : "#by-paper");
    select();
  }

  buttons.papers.addEventListener("click", () => show("papers"));
  buttons.reviewers.addEventListener("click", () => show("reviewers"));
  more.addEventListener("click", render);
  q.addEventListener("input", select);
  weakOnly.addEventListener("change", select);
  show(view);
  document.body.dataset.ready = "1";
})();
