// report.html's only script. It renders `ReportData` (pipeline/report/protocol.py) and
// filters it; it never sorts, searches differently or picks a facet's papers on its own:
// sort orders, facets, search texts (or the parts around an abstract it may join in, see
// protocol.py) and the export values come from Python (triage.search_text, triage.sort_key,
// triage.paper_keys, triage.paper_row), so the page agrees with `digest triage`.
// The DOM is built with textContent only, never from HTML strings.
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("digest-data").textContent);
  var P = D.papers, TAGS = D.tags, PAGE = 50, FACET_TOP = 8, OPEN = {};
  var FACETS = D.facets.map(function (f) { return f[0]; });
  var SORTS = Object.keys(D.order);
  var DEFAULT_SORT = SORTS.indexOf("claims") >= 0 ? "claims" : SORTS[0];
  var S = { tags: [], any: false, q: "", quant: false, failed: false, metric: "", dataset: "",
    paper: "", sort: DEFAULT_SORT, dir: "asc", page: 1 };
  var CUR = -1, SHOWN = [], PAGES = 1;
  var $ = function (id) { return document.getElementById(id); };

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function label(t) { return TAGS[t] ? TAGS[t][0] : t; }
  function facetNo(t) { var i = TAGS[t] ? FACETS.indexOf(TAGS[t][1]) : -1; return i < 0 ? 7 : i % 8; }
  function norm(s) { return String(s || "").trim().split(/\s+/).filter(Boolean).join(" ").toLowerCase(); }

  // protocol.SEARCH_FIELDS
  function searchField(p, code) {
    switch (code) {
      case 0: return p.id;
      case 1: return p.title;
      case 2: return p.tldr;
      case 3: return p.abstract;
      case 4: return p.keywords.join(" ");
      case 5: return p.authors.join(" ");
      case 6: return p.tags.join(" ");
      default: return p.claims.map(function (c) { return c.statement; }).join(" ");
    }
  }

  // rank[key][paper index] = position of the paper in the ascending order of `key`
  var RANK = {};
  SORTS.forEach(function (key) {
    var r = new Array(P.length);
    D.order[key].forEach(function (paperIndex, pos) { r[paperIndex] = pos; });
    RANK[key] = r;
  });
  P.forEach(function (p, i) {
    p.i = i; p.bad = Object.keys(p.failed).length > 0;
    // the search text's parts: texts, or card fields Python knows norm() gets exactly
    // (protocol.search_field)
    if (typeof p.search !== "string") {
      p.search = p.search.map(function (x) { return typeof x === "number" ? norm(searchField(p, x)) : x; })
        .filter(Boolean).join(" ");
    }
  });
  var total = {};
  P.forEach(function (p) { p.tags.forEach(function (t) { total[t] = (total[t] || 0) + 1; }); });

  // ---- URL state (hash, so it works from file://); pipeline/report/protocol.py lists the keys
  function readHash() {
    var q = new URLSearchParams(location.hash.replace(/^#/, ""));
    S.tags = q.getAll("tag").filter(function (t, i, a) { return a.indexOf(t) === i; });
    S.any = q.get("mode") === "any";
    S.q = q.get("q") || "";
    S.quant = q.get("quant") === "1";
    S.failed = q.get("failed") === "1";
    S.metric = q.get("metric") || "";
    S.dataset = q.get("dataset") || "";
    S.paper = q.get("paper") || "";
    S.sort = SORTS.indexOf(q.get("sort")) >= 0 ? q.get("sort") : DEFAULT_SORT;
    S.dir = q.get("dir") === "desc" ? "desc" : "asc";
    S.page = Math.max(1, parseInt(q.get("page"), 10) || 1);
  }
  var lastHash = null;
  function writeHash() {
    var q = new URLSearchParams();
    if (S.paper) q.set("paper", S.paper);
    S.tags.forEach(function (t) { q.append("tag", t); });
    if (S.any) q.set("mode", "any");
    if (S.q) q.set("q", S.q);
    if (S.quant) q.set("quant", "1");
    if (S.failed) q.set("failed", "1");
    if (S.metric) q.set("metric", S.metric);
    if (S.dataset) q.set("dataset", S.dataset);
    if (S.sort !== DEFAULT_SORT) q.set("sort", S.sort);
    if (S.dir !== "asc") q.set("dir", S.dir);
    if (S.page > 1) q.set("page", String(S.page));
    var h = q.toString();
    lastHash = h;
    try { history.replaceState(null, "", h ? "#" + h : location.pathname + location.search); }
    catch (e) { location.hash = h; }
  }
  window.addEventListener("hashchange", function () {
    if (location.hash.replace(/^#/, "") === lastHash) return;
    readHash(); syncControls(); CUR = -1; render(false);
    if (S.paper) window.scrollTo(0, 0);
  });

  // ---- filtering (the same rules as pipeline/triage.py: matches, search_terms)
  function searchTerms(text) {
    var out = [], re = /"([^"]*)"|(\S+)/g, m;
    while ((m = re.exec(text || "")) !== null) {
      var term = norm(m[1] !== undefined ? m[1] : m[2]);
      if (term) out.push(term);
    }
    return out;
  }
  function anyContains(values, needle) {
    for (var i = 0; i < values.length; i++) if (values[i].indexOf(needle) >= 0) return true;
    return false;
  }
  function matches(p, terms, metric, dataset, paper) {
    if (paper && p.keys.indexOf(paper) < 0) return false;
    if (S.tags.length) {
      var hits = 0;
      for (var i = 0; i < S.tags.length; i++) if (p.tags.indexOf(S.tags[i]) >= 0) hits++;
      if (S.any ? hits === 0 : hits < S.tags.length) return false;
    }
    if (S.quant && !p.n_quantitative) return false;
    if (S.failed && !p.bad) return false;
    if (metric && !anyContains(p.metrics, metric)) return false;
    if (dataset && !anyContains(p.datasets, dataset)) return false;
    for (var j = 0; j < terms.length; j++) if (p.search.indexOf(terms[j]) < 0) return false;
    return true;
  }
  function compare(a, b) {
    var r = RANK[S.sort][a.i] - RANK[S.sort][b.i];
    return S.dir === "desc" ? -r : r;
  }
  function selected() {
    var terms = searchTerms(S.q), metric = norm(S.metric), dataset = norm(S.dataset);
    var paper = S.paper.trim().toLowerCase();
    return P.filter(function (p) { return matches(p, terms, metric, dataset, paper); }).sort(compare);
  }
  function filtering() {
    return !!(S.tags.length || S.q || S.quant || S.failed || S.metric || S.dataset || S.paper);
  }

  // ---- rendering
  function chip(t, on) {
    var b = el("button", "chip f" + facetNo(t) + (on ? " on" : ""), label(t));
    b.type = "button"; b.dataset.tag = t; b.title = on ? "Remove this tag filter" : "Filter by this tag";
    return b;
  }
  function claimItem(c, n) {
    var q = c.kind === "quantitative";
    var li = el("li", "claim"); li.dataset.c = String(n);
    li.appendChild(el("span", "kind " + (q ? "q" : "l"), c.kind));
    li.appendChild(el("span", "stmt", c.statement));
    var value = c.value ? c.value + (c.unit ? (/^(%|x|\u00d7)$/.test(c.unit) ? "" : " ") + c.unit : "") : null;
    var kv = [["metric", c.metric], ["value", value], ["dataset", c.dataset], ["vs", c.comparison]];
    var box = el("span", "kv");
    kv.forEach(function (x) {
      if (!x[1]) return;
      var s = el("span", "k-" + x[0]); s.appendChild(el("i", null, x[0])); s.appendChild(document.createTextNode(" " + x[1]));
      box.appendChild(s);
    });
    if (box.childNodes.length) li.appendChild(box);
    if (c.evidence) li.appendChild(el("q", "ev", c.evidence));
    return li;
  }
  function stageNote(p, st) {
    if (p.failed[st]) {
      var d = el("div", "failed");
      d.appendChild(el("b", null, st + " failed"));
      d.appendChild(el("span", "kindtag", p.failed[st].kind));
      if (p.failed[st].message) d.appendChild(el("span", "msg", p.failed[st].message));
      return d;
    }
    if (!p.status[st]) return el("div", "notrun", st + ": not run");
    return null;
  }
  // The abstract's [text, claim_no, ...] pieces: sent as such (protocol.highlight_segments),
  // or cut here the same way from the abstract and the claims' valid spans
  function segments(p) {
    if (typeof p.abstract !== "string") return p.abstract;
    var text = p.abstract, found = [], cuts = [0, text.length];
    p.claims.forEach(function (c, i) {
      if (c.span) { found.push([c.span[0], c.span[1], i + 1]); cuts.push(c.span[0], c.span[1]); }
    });
    if (!found.length) return text ? [[text]] : [];
    cuts = cuts.filter(function (x, i, a) { return a.indexOf(x) === i; }).sort(function (a, b) { return a - b; });
    var out = [], last = null;
    for (var k = 0; k + 1 < cuts.length; k++) {
      var a = cuts[k], b = cuts[k + 1], piece = text.slice(a, b);
      if (!piece) continue;
      var cov = found.filter(function (f) { return f[0] <= a && b <= f[1]; }).map(function (f) { return f[2]; });
      if (out.length && last.join(",") === cov.join(",")) out[out.length - 1][0] += piece;
      else { out.push([piece].concat(cov)); last = cov; }
    }
    return out;
  }
  function card(p) {
    var a = el("article", "card"); a.dataset.id = p.id; a.dataset.ref = p.ref;
    var h = el("h2", p.title ? "title" : "title derived");
    if (p.title) h.textContent = p.title;
    else if (p.headline) { h.appendChild(el("span", "lead", "TL;DR")); h.appendChild(document.createTextNode(p.headline)); h.title = "No title in the input: its TL;DR"; }
    else { h.textContent = "Untitled paper " + p.ref; h.title = "No title in the input and no TL;DR"; }
    a.appendChild(h);
    var meta = el("div", "meta");
    var ref;
    if (p.url) { ref = el("a", "ref", p.ref); ref.href = p.url; ref.rel = "noopener noreferrer"; ref.target = "_blank"; ref.title = "Open the paper's forum"; }
    else ref = el("code", "ref", p.ref);
    meta.appendChild(ref);
    if (p.number && p.ref !== "#" + p.number) meta.appendChild(el("span", "num", "#" + p.number));
    if (p.ref !== p.id) { var hc = el("code", "hash", p.id); hc.title = "content hash (the stable key)"; meta.appendChild(hc); }
    if (p.venue) meta.appendChild(el("span", "venue", p.venue));
    if (p.sources.length) meta.appendChild(el("span", null, p.sources.join(", ")));
    if (p.status.claims === "ok") meta.appendChild(el("span", "nc", p.claims.length + (p.claims.length === 1 ? " claim" : " claims") + (p.n_quantitative ? " \u00b7 " + p.n_quantitative + " quantitative" : "")));
    var link = el("a", "plink", "permalink"); link.href = "#paper=" + encodeURIComponent(p.ref); link.title = "A link to this paper alone";
    meta.appendChild(link);
    a.appendChild(meta);
    if (p.authors.length) a.appendChild(el("div", "authors", p.authors.join(", ")));
    if (p.tldr && p.title) { var t = el("p", "tldr"); t.appendChild(el("b", null, "TL;DR ")); t.appendChild(document.createTextNode(p.tldr)); a.appendChild(t); }
    var chips = el("div", "chips");
    p.tags.forEach(function (t) { chips.appendChild(chip(t, S.tags.indexOf(t) >= 0)); });
    p.keywords.forEach(function (k) { chips.appendChild(el("span", "kw", k)); });
    if (chips.childNodes.length) a.appendChild(chips);
    D.stages.forEach(function (st) { var n = stageNote(p, st); if (n) a.appendChild(n); });
    if (p.claims.length) {
      var ol = el("ol", "claims");
      p.claims.forEach(function (c, i) { ol.appendChild(claimItem(c, i + 1)); });
      a.appendChild(ol);
    }
    var det = el("details", "abs");
    det.appendChild(el("summary", null, "Abstract"));
    var body = el("p");
    segments(p).forEach(function (s) {
      if (s.length === 1) { body.appendChild(document.createTextNode(s[0])); return; }
      var m = el("mark", null, s[0]); m.dataset.c = s.slice(1).join(" ");
      m.title = s.slice(1).map(function (n) { return "claim " + n + ": " + p.claims[n - 1].statement; }).join("\n");
      body.appendChild(m);
      body.appendChild(el("sup", null, s.slice(1).join(",")));
    });
    det.appendChild(body);
    a.appendChild(det);
    return a;
  }

  function pager(box, pages) {
    box.textContent = "";
    if (pages <= 1) return;
    var prev = el("button", "pg", "\u2039 Prev"); prev.type = "button"; prev.dataset.page = String(S.page - 1); prev.disabled = S.page <= 1;
    var next = el("button", "pg", "Next \u203a"); next.type = "button"; next.dataset.page = String(S.page + 1); next.disabled = S.page >= pages;
    box.appendChild(prev); box.appendChild(el("span", "pgno", "page " + S.page + " of " + pages)); box.appendChild(next);
  }

  function facets(rows) {
    var cur = {};
    rows.forEach(function (p) { p.tags.forEach(function (t) { cur[t] = (cur[t] || 0) + 1; }); });
    var box = $("facets"); box.textContent = "";
    D.facets.forEach(function (f) {
      var ids = Object.keys(TAGS).filter(function (t) { return TAGS[t][1] === f[0] && total[t]; });
      if (!ids.length) return;
      ids.sort(function (a, b) {
        return (cur[b] || 0) - (cur[a] || 0) || total[b] - total[a] || (label(a) < label(b) ? -1 : 1);
      });
      var sec = el("section", "facet"); sec.appendChild(el("h3", null, f[1]));
      var open = OPEN[f[0]] || ids.length <= FACET_TOP + 2;
      ids.forEach(function (t, i) {
        if (!open && i >= FACET_TOP && S.tags.indexOf(t) < 0) return;
        var lab = el("label", "ft" + (cur[t] ? "" : " zero"));
        var cb = el("input"); cb.type = "checkbox"; cb.dataset.tag = t; cb.checked = S.tags.indexOf(t) >= 0;
        lab.appendChild(cb); lab.appendChild(el("span", "dot f" + facetNo(t)));
        lab.appendChild(el("span", "fl", label(t)));
        var n = el("span", "n", cur[t] || 0); n.title = (cur[t] || 0) + " shown of " + total[t] + " in the run";
        lab.appendChild(n);
        sec.appendChild(lab);
      });
      if (ids.length > FACET_TOP + 2) {
        var more = el("button", "more", open ? "show fewer" : "+ " + (ids.length - FACET_TOP) + " more");
        more.type = "button"; more.dataset.facet = f[0];
        sec.appendChild(more);
      }
      box.appendChild(sec);
    });
    return cur;
  }

  // Metric and dataset facets: each value's papers come from Python (the papers that
  // `digest triage --metric VALUE` selects); a click puts the value in the filter field.
  function claimFacets(rows) {
    var inRows = new Uint8Array(P.length);
    rows.forEach(function (p) { inRows[p.i] = 1; });
    var box = $("claimfacets"); box.textContent = "";
    [["metric", "Metric", D.metric_facets], ["dataset", "Dataset", D.dataset_facets]].forEach(function (g) {
      if (!g[2].length) return;
      var sec = el("section", "facet"); sec.dataset.claimfacet = g[0];
      sec.appendChild(el("h3", null, g[1]));
      var chosen = norm(S[g[0]]);
      g[2].forEach(function (f) {
        var n = 0;
        f[2].forEach(function (i) { n += inRows[i]; });
        var b = el("button", "ft" + (n ? "" : " zero") + (chosen === f[0] ? " on" : ""));
        b.type = "button"; b.dataset.field = g[0]; b.dataset.value = f[0];
        b.title = chosen === f[0] ? "Remove this filter" : g[1] + " contains \u201c" + f[1] + "\u201d";
        b.appendChild(el("span", "fl", f[1]));
        b.appendChild(el("span", "n", n));
        sec.appendChild(b);
      });
      box.appendChild(sec);
    });
  }

  function chart(cur) {
    var ids = Object.keys(total).sort(function (a, b) { return total[b] - total[a] || (label(a) < label(b) ? -1 : 1); }).slice(0, 12);
    var box = $("chart"); box.textContent = "";
    if (!ids.length) { box.hidden = true; return; }
    box.hidden = false;
    var max = total[ids[0]];
    box.appendChild(el("h3", null, "Most frequent tags"));
    ids.forEach(function (t) {
      var row = el("button", "bar" + (S.tags.indexOf(t) >= 0 ? " on" : "")); row.type = "button"; row.dataset.tag = t;
      row.title = (cur[t] || 0) + " of " + total[t] + " papers with this tag match the current filters";
      row.appendChild(el("span", "bl", label(t)));
      var track = el("span", "track");
      var all = el("span", "all"); all.style.width = (100 * total[t] / max) + "%";
      var now = el("span", "now f" + facetNo(t)); now.style.width = (100 * (cur[t] || 0) / max) + "%";
      track.appendChild(all); track.appendChild(now); row.appendChild(track);
      row.appendChild(el("span", "bn", (cur[t] || 0) === total[t] ? String(total[t]) : (cur[t] || 0) + "/" + total[t]));
      box.appendChild(row);
    });
  }

  var ROWS = [];
  function render(scroll) {
    var rows = ROWS = selected();
    var pages = PAGES = Math.max(1, Math.ceil(rows.length / PAGE));
    if (S.page > pages) S.page = pages;
    var cur = facets(rows);
    claimFacets(rows);
    chart(cur);
    var shown = SHOWN = rows.slice((S.page - 1) * PAGE, S.page * PAGE);
    $("count").textContent = rows.length === P.length
      ? "All " + P.length + " papers"
      : rows.length + " of " + P.length + " papers match";
    var act = $("active"); act.textContent = "";
    S.tags.forEach(function (t) { act.appendChild(chip(t, true)); });
    if (S.tags.length > 1) act.appendChild(el("span", "mode", S.any ? "any of these tags" : "all of these tags"));
    if (S.paper) act.appendChild(el("span", "mode", "paper " + S.paper));
    $("clear").hidden = !filtering();
    var nf = S.tags.length + [S.q, S.quant, S.failed, S.metric, S.dataset, S.paper].filter(Boolean).length;
    $("filters-btn").textContent = nf ? "Filters (" + nf + ")" : "Filters";
    var list = $("papers"); list.textContent = "";
    if (!rows.length) list.appendChild(el("p", "empty", "No paper matches these filters."));
    shown.forEach(function (p) { list.appendChild(card(p)); });
    if (CUR >= shown.length) CUR = shown.length - 1;
    markCurrent(false);
    pager($("pager-top"), pages); pager($("pager-bottom"), pages);
    writeHash();
    if (scroll) window.scrollTo(0, 0);
  }

  function syncControls() {
    $("q").value = S.q; $("quant").checked = S.quant; $("failed").checked = S.failed;
    $("metric").value = S.metric; $("dataset").value = S.dataset;
    $("sort").value = S.sort; $("dir").value = S.dir; $("any").checked = S.any;
  }
  function toggleTag(t) {
    var i = S.tags.indexOf(t);
    if (i >= 0) S.tags.splice(i, 1); else S.tags.push(t);
    S.page = 1; render(false);
  }

  // ---- keyboard: j / k move between papers (across pages), o opens the current one
  function markCurrent(scroll) {
    var cards = $("papers").querySelectorAll("article.card");
    cards.forEach(function (c, i) { c.classList.toggle("cur", i === CUR); });
    if (scroll && cards[CUR]) cards[CUR].scrollIntoView({ block: "nearest" });
  }
  function move(step) {
    var n = SHOWN.length;
    if (!n) return;
    var next = CUR + step;
    if (next >= n && S.page < PAGES) { S.page++; CUR = 0; render(false); markCurrent(true); return; }
    if (next < 0 && CUR >= 0 && S.page > 1) { S.page--; CUR = PAGE - 1; render(false); markCurrent(true); return; }
    CUR = Math.max(0, Math.min(n - 1, next));
    markCurrent(true);
  }
  function typing(target) {
    return target && (target.tagName === "INPUT" || target.tagName === "SELECT" || target.tagName === "TEXTAREA");
  }
  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.key === "/" && document.activeElement !== $("q")) {
      ev.preventDefault(); document.body.classList.add("filters-open"); $("q").focus(); return;
    }
    if (typing(ev.target)) return;
    if (ev.key === "j") { ev.preventDefault(); move(1); }
    else if (ev.key === "k") { ev.preventDefault(); move(-1); }
    else if (ev.key === "o" && CUR >= 0) {
      var c = $("papers").querySelectorAll("article.card")[CUR];
      if (c) { var d = c.querySelector("details.abs"); d.open = !d.open; c.scrollIntoView({ block: "nearest" }); }
    }
  });

  // ---- export of the current selection (client-side: a Blob behind a download link)
  function download(name, type, text) {
    var url = URL.createObjectURL(new Blob([text], { type: type }));
    var a = $("download");
    a.href = url; a.download = name;
    a.click();
    setTimeout(function () { URL.revokeObjectURL(url); }, 10000);
  }
  // A paper's triage.paper_row values in D.row_fields order (protocol.export_row): `x`
  // holds the values the card does not (0 = the card's own value).
  function rowValues(p) {
    var x = p.x;
    return [x[0], p.number, x[1] === 0 ? p.title : x[1], p.id, p.url, x[2] === 0 ? p.tldr : x[2],
      p.tags, p.tags.map(label), x[3] === 0 ? p.keywords : x[3], p.claims.length, p.n_quantitative,
      x[4], x[5], Object.keys(p.failed).sort(), p.authors, p.venue, p.sources];
  }
  // csvfile.csv_cell + the csv module's minimal quoting; `p.f` lists the formula-like cells
  // Python's float() accepts (left bare)
  function csvCell(p, v, k) {
    if (typeof v === "number") return String(v);
    var text = v === null || v === undefined ? "" : Array.isArray(v) ? v.map(String).join("; ") : String(v);
    if (/^[=+\-@\t\r]/.test(text) && !(p.f && p.f.indexOf(k) >= 0)) text = "'" + text;
    return /[",\r\n]/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text;
  }
  function csvLine(p) {
    return rowValues(p).map(function (v, k) { return csvCell(p, v, k); }).join(",") + "\r\n";
  }
  function rowObject(p) {
    var o = {}, v = rowValues(p);
    D.row_fields.forEach(function (f, k) { o[f] = v[k]; });
    return o;
  }
  $("export-csv").addEventListener("click", function () {
    download("papers.csv", "text/csv;charset=utf-8", D.csv_header + ROWS.map(csvLine).join(""));
  });
  $("export-json").addEventListener("click", function () {
    download("papers.json", "application/json", JSON.stringify(ROWS.map(rowObject), null, 1) + "\n");
  });

  // ---- summary and events
  var nq = P.filter(function (p) { return p.n_quantitative; }).length, nb = P.filter(function (p) { return p.bad; }).length;
  $("summary").textContent = P.length + " papers \u00b7 " + nq + " with quantitative results \u00b7 " +
    nb + " with a failed stage \u00b7 " + (D.info ? D.info + " \u00b7 " : "") + "report generated " + D.generated;
  if (D.incomplete) { $("incomplete").hidden = false; $("incomplete").textContent = D.incomplete; }

  document.addEventListener("click", function (ev) {
    var t = ev.target.closest ? ev.target.closest("[data-tag],[data-page],[data-facet],[data-field],li.claim") : null;
    if (!t) return;
    if (t.dataset.facet) { OPEN[t.dataset.facet] = !OPEN[t.dataset.facet]; render(false); return; }
    if (t.matches("input[data-tag]")) return;
    if (t.dataset.tag) { toggleTag(t.dataset.tag); return; }
    if (t.dataset.field) {
      var f = t.dataset.field;
      S[f] = norm(S[f]) === t.dataset.value ? "" : t.dataset.value;
      $(f).value = S[f]; S.page = 1; render(false); return;
    }
    if (t.dataset.page) { S.page = parseInt(t.dataset.page, 10); CUR = -1; render(true); return; }
    if (t.matches("li.claim")) {
      var c = t.closest(".card"), n = t.dataset.c;
      c.querySelector("details.abs").open = true;
      c.querySelectorAll("mark").forEach(function (m) {
        m.classList.toggle("hot", m.dataset.c.split(" ").indexOf(n) >= 0);
      });
    }
  });
  $("facets").addEventListener("change", function (ev) { if (ev.target.dataset.tag) toggleTag(ev.target.dataset.tag); });
  function debounced(id, key) {
    var timer = null;
    $(id).addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () { S[key] = $(id).value.trim(); S.page = 1; render(false); }, 120);
    });
  }
  debounced("q", "q"); debounced("metric", "metric"); debounced("dataset", "dataset");
  $("quant").addEventListener("change", function () { S.quant = this.checked; S.page = 1; render(false); });
  $("failed").addEventListener("change", function () { S.failed = this.checked; S.page = 1; render(false); });
  $("any").addEventListener("change", function () { S.any = this.checked; S.page = 1; render(false); });
  $("sort").addEventListener("change", function () { S.sort = this.value; S.page = 1; render(false); });
  $("dir").addEventListener("change", function () { S.dir = this.value; S.page = 1; render(false); });
  $("clear").addEventListener("click", function () {
    S.tags = []; S.q = ""; S.quant = false; S.failed = false; S.metric = ""; S.dataset = ""; S.paper = ""; S.page = 1;
    syncControls(); render(false);
  });
  $("filters-btn").addEventListener("click", function () {
    var open = document.body.classList.toggle("filters-open");
    this.setAttribute("aria-expanded", open ? "true" : "false");
  });

  readHash(); syncControls(); render(false);
  document.body.dataset.ready = "1";
})();
