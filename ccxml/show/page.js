/* ccxml show: draws the timeline of one simulated MSCCL schedule from the JSON blob in the page.
   Plain JS and canvas, no library, no network. Every text from the data goes to the page
   through textContent or canvas fillText, never as HTML. */
(function () {
  "use strict";
  var t_load = performance.now();
  var D = JSON.parse(document.getElementById("ccxml-data").textContent);
  var COLORS = D.colors;               // one per kind of step (D.cats)
  var CRIT = "#d62728", SEL = "#000000", DEP = "#e040c0", PEER = "#00a5c8";
  var ROW_H = 14, BAR_Y = 2, BAR_H = 10, AXIS_H = 22, GUTTER = 140, RIGHT = 10, LINK_H = 12;

  var S = D.steps, N = S.a.length, R = D.rows, NR = R.length, END = Math.max(D.end, 1);
  var rowOf = new Int32Array(N);
  for (var r = 0; r < NR; r++) for (var k = R[r][5]; k < R[r][6]; k++) rowOf[k] = r;
  var sender = new Int32Array(N).fill(-1), receiver = new Int32Array(N).fill(-1);
  for (var i = 0; i < D.src.length; i += 2) { sender[D.src[i]] = D.src[i + 1]; receiver[D.src[i + 1]] = D.src[i]; }
  var deps = [], releases = [];
  for (i = 0; i < N; i++) { deps.push(null); releases.push(null); }
  for (i = 0; i < D.dep.length; i += 2) {
    var a = D.dep[i], b = D.dep[i + 1];
    (deps[a] || (deps[a] = [])).push(b);
    (releases[b] || (releases[b] = [])).push(a);
  }
  var critPos = new Int32Array(N).fill(-1);
  D.crit.forEach(function (s, n) { critPos[s] = n; });
  var depid = new Int32Array(N).fill(-1), depsV = new Int32Array(N).fill(-1), hasdep = new Int32Array(N);
  for (i = 0; i < D.xdep.length; i += 3) { depid[D.xdep[i]] = D.xdep[i + 1]; depsV[D.xdep[i]] = D.xdep[i + 2]; }
  for (i = 0; i < D.hasdep.length; i += 2) hasdep[D.hasdep[i]] = D.hasdep[i + 1];
  var catOf = new Uint8Array(N);
  for (i = 0; i < N; i++) catOf[i] = D.typecat[S.t[i]];

  var st = { t0: 0, t1: END, rows: [], rowIndex: new Int32Array(NR).fill(-1), sel: -1, hover: -1,
             crit: true, nlinks: 24, drag: null };
  var $ = function (id) { return document.getElementById(id); };
  var stepsScroll = $("steps-scroll"), stepsCanvas = $("steps"), stepsSpace = $("steps-space");
  var linksScroll = $("links-scroll"), linksCanvas = $("links"), linksSpace = $("links-space");
  var tip = $("tip"), details = $("details");

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }

  // ---- header, legend ----------------------------------------------------------------------
  $("title").textContent = "ccxml show: " + D.label + (D.title && D.title !== D.label ? " \u2014 " + D.title : "");
  D.facts.forEach(function (f) {
    var s = el("span", f[0] + " ");
    s.appendChild(el("b", f[1]));
    $("facts").appendChild(s);
  });
  D.notes.forEach(function (n) { $("notes").appendChild(el("li", n)); });
  D.cats.forEach(function (c, n) {
    var s = el("span"), sw = el("i");
    sw.style.background = COLORS[n];
    s.appendChild(sw);
    s.appendChild(document.createTextNode(c + " (" + D.cattypes[n].join(" ") + ")"));
    $("legend").appendChild(s);
  });
  [["critical path", CRIT], ["selected", SEL], ["dependency", DEP], ["peer", PEER]].forEach(function (x) {
    var s = el("span"), sw = el("i", null, "ring");
    sw.style.borderColor = x[1];
    s.appendChild(sw);
    s.appendChild(document.createTextNode(x[0]));
    $("legend").appendChild(s);
  });

  // ---- formatting --------------------------------------------------------------------------
  function fmtT(ticks) { return (ticks * D.tick * 1e6).toFixed(3) + " \u00b5s"; }
  function stepName(k) {
    var row = R[rowOf[k]];
    return "r" + row[0] + " tb" + row[1] + " step " + S.s[k] + " " + D.types[S.t[k]];
  }
  function pct(x) { return (Math.round(x * 1000) / 10) + "%"; }
  function bufText(buf, off) { return D.bufs[buf] + "[" + off + "]"; }

  // ---- rows and the rank filter ------------------------------------------------------------
  function parseRanks(text) {
    text = text.trim();
    if (!text) return null;
    var set = {}, ok = true;
    text.split(/[\s,]+/).forEach(function (part) {
      if (!part) return;
      var m = /^(\d+)(?:-(\d+))?$/.exec(part);
      if (!m) { ok = false; return; }
      var lo = +m[1], hi = m[2] === undefined ? lo : +m[2];
      if (hi < lo || hi - lo > 1e6) { ok = false; return; }
      for (var x = lo; x <= hi; x++) set[x] = true;
    });
    return ok ? set : undefined;
  }
  function setRows(set) {
    st.rows = [];
    st.rowIndex.fill(-1);
    for (var r = 0; r < NR; r++) {
      if (set && !set[R[r][0]]) continue;
      st.rowIndex[r] = st.rows.length;
      st.rows.push(r);
    }
    $("rowcount").textContent = st.rows.length + " of " + NR + " thread blocks";
    stepsCanvas.dataset.rows = String(st.rows.length);
  }

  // ---- geometry ----------------------------------------------------------------------------
  var W = 0, stepsH = 0, linksH = 0, dpr = 1;
  function plotW() { return Math.max(10, W - GUTTER - RIGHT); }
  function X(t) { return GUTTER + (t - st.t0) * plotW() / (st.t1 - st.t0); }
  function T(x) { return st.t0 + (x - GUTTER) * (st.t1 - st.t0) / plotW(); }
  function sizeCanvas(c, h) {
    c.style.width = W + "px";
    c.style.height = h + "px";
    c.width = Math.round(W * dpr);
    c.height = Math.round(h * dpr);
    var ctx = c.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    return ctx;
  }
  function nLinks() { return st.nlinks === "all" ? D.links.length : Math.min(st.nlinks, D.links.length); }
  function layout() {
    dpr = window.devicePixelRatio || 1;
    // heights first: they decide whether a scroll bar takes some of the width
    var full = AXIS_H + st.rows.length * ROW_H;
    stepsH = Math.max(AXIS_H + ROW_H, Math.min(full, Math.floor(window.innerHeight * 0.68)));
    stepsCanvas.style.height = stepsH + "px";
    stepsSpace.style.height = Math.max(0, full - stepsH) + "px";
    var lfull = AXIS_H + nLinks() * LINK_H;
    linksH = Math.max(AXIS_H + LINK_H, Math.min(lfull, Math.floor(window.innerHeight * 0.40)));
    linksCanvas.style.height = linksH + "px";
    linksSpace.style.height = Math.max(0, lfull - linksH) + "px";
    // one width for both panes, so that their time axes line up
    stepsCanvas.style.width = linksCanvas.style.width = "1px";
    W = Math.min(stepsScroll.clientWidth, linksScroll.clientWidth) || 800;
    $("links-note").textContent = D.links.length ? "(" + nLinks() + " of " + D.links.length +
      " links, busiest first: share of the bandwidth in use, averaged over " + D.bins + " slices of the run)" : "(no link carried data)";
  }

  // ---- drawing -----------------------------------------------------------------------------
  function niceStep(span) {
    var raw = span / Math.max(1, plotW() / 100), p = Math.pow(10, Math.floor(Math.log10(raw)));
    var m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
  }
  function drawAxis(ctx) {
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, W, AXIS_H);
    var secs = (st.t1 - st.t0) * D.tick, step = niceStep(secs);
    var unit = step >= 1e-3 ? [1e3, "ms"] : step >= 1e-6 ? [1e6, "\u00b5s"] : [1e9, "ns"];
    var digits = Math.max(0, -Math.floor(Math.log10(step * unit[0]) + 1e-9));
    ctx.strokeStyle = "#c8c8cc";
    ctx.fillStyle = "#444";
    ctx.font = "11px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    for (var s = Math.ceil(st.t0 * D.tick / step) * step; s <= st.t1 * D.tick; s += step) {
      var x = Math.round(X(s / D.tick)) + 0.5;
      ctx.beginPath(); ctx.moveTo(x, AXIS_H - 6); ctx.lineTo(x, AXIS_H); ctx.stroke();
      ctx.fillText((s * unit[0]).toFixed(digits) + " " + unit[1], x + 3, AXIS_H / 2 - 1);
    }
    ctx.beginPath(); ctx.moveTo(0, AXIS_H - 0.5); ctx.lineTo(W, AXIS_H - 0.5); ctx.stroke();
  }
  function gutter(ctx, h, px) {          // blank the label column below the axis, set the font
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, AXIS_H, GUTTER, h - AXIS_H);
    ctx.font = px + "px system-ui, sans-serif";
    ctx.textBaseline = "middle";
  }
  function firstEndingAfter(r, t) {       // first step of row r whose end >= t (ends are sorted)
    var lo = R[r][5], hi = R[r][6];
    while (lo < hi) { var mid = (lo + hi) >> 1; if (S.b[mid] < t) lo = mid + 1; else hi = mid; }
    return lo;
  }
  function stepBox(k) {                   // canvas coordinates of step k, or null when hidden
    var idx = st.rowIndex[rowOf[k]];
    if (idx < 0) return null;
    var x0 = X(S.a[k]), x1 = X(S.b[k]);
    if (x1 - x0 < 3) { var c = (x0 + x1) / 2; x0 = c - 1.5; x1 = c + 1.5; }
    return { x: x0, y: AXIS_H + idx * ROW_H - stepsScroll.scrollTop + BAR_Y, w: x1 - x0, h: BAR_H };
  }
  function ring(ctx, k, color, width) {
    var b = stepBox(k);
    if (!b) return;
    ctx.strokeStyle = color;
    ctx.lineWidth = width;
    ctx.strokeRect(b.x - width / 2, b.y - width / 2, b.w + width, b.h + width);
  }
  function arrow(ctx, from, to, color) {  // from the end of step `from` to the start of step `to`
    var a = stepBox(from), b = stepBox(to);
    if (!a || !b) return;
    var x0 = a.x + a.w, y0 = a.y + a.h / 2, x1 = b.x, y1 = b.y + b.h / 2;
    ctx.strokeStyle = color;
    ctx.fillStyle = color;
    ctx.lineWidth = 1.5;
    ctx.beginPath(); ctx.moveTo(x0, y0); ctx.lineTo(x1, y1); ctx.stroke();
    var ang = Math.atan2(y1 - y0, x1 - x0);
    ctx.beginPath();
    ctx.moveTo(x1, y1);
    ctx.lineTo(x1 - 7 * Math.cos(ang - 0.4), y1 - 7 * Math.sin(ang - 0.4));
    ctx.lineTo(x1 - 7 * Math.cos(ang + 0.4), y1 - 7 * Math.sin(ang + 0.4));
    ctx.fill();
  }
  function related(k) {                   // [dependencies, peers] of step k
    var peers = [];
    if (sender[k] >= 0) peers.push(sender[k]);
    if (receiver[k] >= 0) peers.push(receiver[k]);
    return [deps[k] || [], peers];
  }
  function drawSteps() {
    var ctx = sizeCanvas(stepsCanvas, stepsH), top = stepsScroll.scrollTop;
    ctx.clearRect(0, 0, W, stepsH);
    var first = Math.max(0, Math.floor(top / ROW_H)), last = Math.min(st.rows.length, Math.ceil((top + stepsH - AXIS_H) / ROW_H));
    var tl = T(GUTTER - 2), tr = T(W);
    ctx.save();
    ctx.beginPath(); ctx.rect(GUTTER, AXIS_H, W - GUTTER, stepsH - AXIS_H); ctx.clip();
    var crit = [];
    for (var i = first; i < last; i++) {
      var r = st.rows[i], y = AXIS_H + i * ROW_H - top;
      if (i > 0 && R[st.rows[i - 1]][0] !== R[r][0]) { ctx.fillStyle = "#c8c8cc"; ctx.fillRect(GUTTER, y, W, 1); }
      var lastX = -1e9, lastC = -1;
      for (var k = firstEndingAfter(r, tl); k < R[r][6] && S.a[k] <= tr; k++) {
        var x0 = X(S.a[k]), w = Math.max(1, X(S.b[k]) - x0), c = catOf[k];
        if (critPos[k] >= 0) crit.push(k);
        if (x0 + w <= lastX && c === lastC) continue;      // under a pixel already drawn
        ctx.fillStyle = COLORS[c];
        ctx.fillRect(x0, y + BAR_Y, w > 4 ? w - 1 : w, BAR_H);     // a gap between wide steps
        lastX = x0 + w; lastC = c;
      }
    }
    if (st.crit && D.crit.length) {
      ctx.strokeStyle = CRIT; ctx.lineWidth = 1; ctx.globalAlpha = 0.6;
      ctx.beginPath();
      var started = false;
      for (i = 0; i < D.crit.length; i++) {
        var bx = stepBox(D.crit[i]);
        if (!bx) { started = false; continue; }
        var yy = bx.y + bx.h / 2;
        if (started) ctx.lineTo(bx.x, yy); else ctx.moveTo(bx.x, yy);
        ctx.lineTo(bx.x + bx.w, yy);
        started = true;
      }
      ctx.stroke();
      ctx.globalAlpha = 1;
      crit.forEach(function (k) { ring(ctx, k, CRIT, 2); });
    }
    if (st.sel >= 0) {
      var rel = related(st.sel);
      rel[0].forEach(function (d) { arrow(ctx, d, st.sel, DEP); ring(ctx, d, DEP, 3); });
      rel[1].forEach(function (p) {
        if (p === sender[st.sel]) arrow(ctx, p, st.sel, PEER); else arrow(ctx, st.sel, p, PEER);
        ring(ctx, p, PEER, 3);
      });
      ring(ctx, st.sel, SEL, 3);
    } else if (st.hover >= 0) {
      ring(ctx, st.hover, SEL, 1);
    }
    ctx.restore();
    gutter(ctx, stepsH, 11);                // one label per thread block
    for (i = first; i < last; i++) {
      r = st.rows[i];
      var row = R[r], yl = AXIS_H + i * ROW_H - top + ROW_H / 2;
      if (yl < AXIS_H) continue;
      ctx.fillStyle = "#1d1d1f";
      ctx.fillText("r" + row[0] + " tb" + row[1], 4, yl);
      ctx.fillStyle = "#8a8a90";
      ctx.fillText((row[2] >= 0 ? "\u2192" + row[2] : "") + (row[3] >= 0 ? " \u2190" + row[3] : "") + " c" + row[4], 66, yl);
    }
    drawAxis(ctx);
  }
  var SHADES = [];
  for (i = 0; i <= 100; i++) {
    var f = i / 100;
    SHADES.push("rgb(" + Math.round(247 - 239 * f) + "," + Math.round(251 - 203 * f) + "," + Math.round(255 - 148 * f) + ")");
  }
  function drawLinks() {
    var ctx = sizeCanvas(linksCanvas, linksH), top = linksScroll.scrollTop, n = nLinks();
    ctx.clearRect(0, 0, W, linksH);
    var bw = END / D.bins, first = Math.max(0, Math.floor(top / LINK_H));
    var last = Math.min(n, Math.ceil((top + linksH - AXIS_H) / LINK_H));
    ctx.save();
    ctx.beginPath(); ctx.rect(GUTTER, AXIS_H, W - GUTTER, linksH - AXIS_H); ctx.clip();
    var b0 = Math.max(0, Math.floor(st.t0 / bw)), b1 = Math.min(D.bins, Math.ceil(st.t1 / bw));
    for (var i = first; i < last; i++) {
      var bins = D.links[i][6], y = AXIS_H + i * LINK_H - top;
      for (var b = b0; b < b1; b++) {
        var x0 = X(b * bw), x1 = X((b + 1) * bw);
        ctx.fillStyle = SHADES[bins[b]];
        ctx.fillRect(Math.floor(x0), y + 1, Math.max(1, Math.ceil(x1) - Math.floor(x0)), LINK_H - 2);
      }
    }
    ctx.restore();
    gutter(ctx, linksH, 10);                // one label per link
    for (i = first; i < last; i++) {
      var ln = D.links[i], yl = AXIS_H + i * LINK_H - top + LINK_H / 2;
      ctx.fillStyle = "#1d1d1f";
      var name = ln[0].length > 17 ? ln[0].slice(0, 16) + "\u2026" : ln[0];
      ctx.fillText(name, 4, yl);
      ctx.fillStyle = "#8a8a90";
      ctx.fillText(Math.round(ln[3] * 100) + "%", GUTTER - 30, yl);
    }
    drawAxis(ctx);
  }
  function drawAll() { drawSteps(); drawLinks(); }
  var pending = false;
  function redraw() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(function () { pending = false; drawAll(); });
  }

  // ---- details -----------------------------------------------------------------------------
  function refButton(k, why) {
    var bt = el("button", stepName(k) + (why ? " (" + why + ")" : ""), "ref");
    bt.type = "button";
    bt.addEventListener("click", function () { select(k, true); });
    return bt;
  }
  function showDetails(k) {
    details.textContent = "";
    if (k < 0) {
      details.appendChild(el("h3", "Step details"));
      details.appendChild(el("p", "Hover over a step, or click it to pin it with its dependencies and its peer.", "muted"));
      return;
    }
    var row = R[rowOf[k]];
    details.appendChild(el("h3", stepName(k) + " (" + D.cats[catOf[k]] + ")"));
    var tbl = el("table");
    function add(name, value) {
      var tr = el("tr");
      tr.appendChild(el("td", name));
      var td = el("td");
      if (value instanceof Node) td.appendChild(value); else td.textContent = String(value);
      tr.appendChild(td);
      tbl.appendChild(tr);
    }
    function list(ks, why) {
      var div = el("div");
      ks.forEach(function (x) { div.appendChild(refButton(x, why)); div.appendChild(el("br")); });
      return div;
    }
    add("rank", row[0]);
    add("thread block", row[1] + " (send " + row[2] + ", recv " + row[3] + ", chan " + row[4] + ")");
    add("type", D.types[S.t[k]]);
    add("source", bufText(S.sb[k], S.so[k]));
    add("destination", bufText(S.db[k], S.do[k]));
    add("cnt", S.n[k]);
    add("depid / deps", depid[k] + " / " + depsV[k]);
    add("hasdep", hasdep[k]);
    add("start", fmtT(S.a[k]));
    add("end", fmtT(S.b[k]));
    add("duration", fmtT(S.b[k] - S.a[k]));
    add("waits for", deps[k] ? list(deps[k]) : "-");
    add("data from", sender[k] >= 0 ? refButton(sender[k]) : "-");
    add("data to", receiver[k] >= 0 ? refButton(receiver[k]) : "-");
    add("releases", releases[k] ? list(releases[k]) : "-");
    add("critical path", critPos[k] >= 0 ? "step " + (critPos[k] + 1) + " of " + D.crit.length : "no");
    details.appendChild(tbl);
    if (st.rowIndex[rowOf[k]] < 0) details.appendChild(el("p", "(its rank is hidden by the filter)", "muted"));
  }
  function select(k, reveal) {
    st.sel = k;
    var rel = k >= 0 ? related(k) : [[], []];
    stepsCanvas.dataset.selected = String(k);
    stepsCanvas.dataset.deps = rel[0].join(" ");
    stepsCanvas.dataset.peers = rel[1].join(" ");
    showDetails(k);
    if (reveal && k >= 0) {
      var idx = st.rowIndex[rowOf[k]];
      if (idx >= 0) {
        var y = idx * ROW_H, top = stepsScroll.scrollTop;
        if (y < top || y + ROW_H > top + stepsH - AXIS_H) stepsScroll.scrollTop = Math.max(0, y - (stepsH - AXIS_H) / 2);
      }
      if (S.b[k] < st.t0 || S.a[k] > st.t1) {
        var span = st.t1 - st.t0, mid = (S.a[k] + S.b[k]) / 2;
        setView(mid - span / 2, mid + span / 2);
      }
    }
    drawAll();
  }

  // ---- view changes ------------------------------------------------------------------------
  function setView(t0, t1) {
    var span = Math.min(END, Math.max(END / 1e6, t1 - t0));
    t0 = Math.max(0, Math.min(END - span, t0));
    st.t0 = t0; st.t1 = t0 + span;
    redraw();
  }
  function zoomAt(t, factor) {
    var span = (st.t1 - st.t0) / factor;
    span = Math.min(END, Math.max(END / 1e6, span));
    var f = (t - st.t0) / (st.t1 - st.t0);
    setView(t - f * span, t - f * span + span);
  }
  function hit(x, y) {                    // the step under canvas point (x, y), or -1
    if (x < GUTTER || y < AXIS_H) return -1;
    var i = Math.floor((y - AXIS_H + stepsScroll.scrollTop) / ROW_H);
    if (i < 0 || i >= st.rows.length) return -1;
    var r = st.rows[i], t = T(x), tol = 3 * (st.t1 - st.t0) / plotW(), best = -1, bestD = Infinity;
    for (var k = firstEndingAfter(r, t - tol); k < R[r][6] && S.a[k] <= t + tol; k++) {
      var d = t < S.a[k] ? S.a[k] - t : t > S.b[k] ? t - S.b[k] : 0;
      if (d < bestD) { best = k; bestD = d; }
    }
    return best;
  }
  function canvasXY(ev, c) { var b = c.getBoundingClientRect(); return [ev.clientX - b.left, ev.clientY - b.top]; }
  function showTip(ev, lines) {
    if (!lines) { tip.style.display = "none"; return; }
    tip.textContent = lines;
    tip.style.display = "block";
    tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 4) + "px";
    tip.style.top = (ev.clientY + 14) + "px";
  }

  stepsCanvas.addEventListener("mousedown", function (ev) {
    var p = canvasXY(ev, stepsCanvas);
    st.drag = { x: p[0], t0: st.t0, t1: st.t1, moved: false };
  });
  window.addEventListener("mouseup", function (ev) {
    var d = st.drag;
    st.drag = null;
    stepsCanvas.classList.remove("dragging");
    if (d && !d.moved && ev.target === stepsCanvas) {
      var p = canvasXY(ev, stepsCanvas);
      select(hit(p[0], p[1]), false);
    }
  });
  window.addEventListener("mousemove", function (ev) {
    var d = st.drag;
    if (d) {
      var x = canvasXY(ev, stepsCanvas)[0];
      if (Math.abs(x - d.x) > 3) { d.moved = true; stepsCanvas.classList.add("dragging"); }
      if (d.moved) {
        var dt = (x - d.x) * (d.t1 - d.t0) / plotW();
        setView(d.t0 - dt, d.t1 - dt);
      }
    }
  });
  stepsCanvas.addEventListener("mousemove", function (ev) {
    if (st.drag && st.drag.moved) return;
    var p = canvasXY(ev, stepsCanvas), k = hit(p[0], p[1]);
    if (k !== st.hover) {
      st.hover = k;
      if (st.sel < 0) showDetails(k);
      redraw();
    }
    if (k < 0) { showTip(ev, null); return; }
    var lines = stepName(k) + " (" + D.cats[catOf[k]] + ")\n" + fmtT(S.a[k]) + " \u2192 " + fmtT(S.b[k]) +
      "  (" + fmtT(S.b[k] - S.a[k]) + ")\n" + bufText(S.sb[k], S.so[k]) + " \u2192 " + bufText(S.db[k], S.do[k]) +
      "  cnt " + S.n[k] + (critPos[k] >= 0 ? "\non the critical path" : "");
    showTip(ev, lines);
  });
  stepsCanvas.addEventListener("mouseleave", function () { st.hover = -1; showTip(null, null); redraw(); });
  linksCanvas.addEventListener("mousemove", function (ev) {
    var p = canvasXY(ev, linksCanvas);
    var i = Math.floor((p[1] - AXIS_H + linksScroll.scrollTop) / LINK_H);
    if (p[1] < AXIS_H || p[0] < 0 || i < 0 || i >= nLinks()) { showTip(ev, null); return; }
    var ln = D.links[i], t = T(p[0]), b = Math.floor(t / (END / D.bins));
    var here = p[0] >= GUTTER && b >= 0 && b < D.bins ? "\n" + ln[6][b] + "% in use around " + fmtT(t) : "";
    showTip(ev, ln[0] + " (" + ln[1] + (ln[2] === null ? "" : ", " + ln[2] + " GB/s") + "), " + ln[5] + " transfers\n" +
      "in use " + pct(ln[3]) + " of the run; data: " + pct(ln[4]) + " of bandwidth \u00d7 time" + here);
  });
  linksCanvas.addEventListener("mouseleave", function () { showTip(null, null); });
  function onWheel(ev, canvas) {
    if (ev.ctrlKey || ev.metaKey) {
      ev.preventDefault();
      zoomAt(T(canvasXY(ev, canvas)[0]), Math.exp(-ev.deltaY * 0.0025));
    } else if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) {
      ev.preventDefault();
      var dx = ev.shiftKey ? ev.deltaY : ev.deltaX, dt = dx * (st.t1 - st.t0) / plotW();
      setView(st.t0 + dt, st.t1 + dt);
    }
  }
  stepsScroll.addEventListener("wheel", function (ev) { onWheel(ev, stepsCanvas); }, { passive: false });
  linksScroll.addEventListener("wheel", function (ev) { onWheel(ev, linksCanvas); }, { passive: false });
  stepsScroll.addEventListener("scroll", redraw);
  linksScroll.addEventListener("scroll", redraw);
  window.addEventListener("resize", function () { layout(); redraw(); });
  $("zoom-in").addEventListener("click", function () { zoomAt((st.t0 + st.t1) / 2, 2); });
  $("zoom-out").addEventListener("click", function () { zoomAt((st.t0 + st.t1) / 2, 0.5); });
  $("zoom-fit").addEventListener("click", function () { setView(0, END); });
  $("show-critical").addEventListener("change", function (ev) { st.crit = ev.target.checked; redraw(); });
  $("links-count").addEventListener("change", function (ev) {
    st.nlinks = ev.target.value === "all" ? "all" : +ev.target.value;
    layout(); redraw();
  });
  $("ranks").addEventListener("input", function (ev) {
    var set = parseRanks(ev.target.value);
    ev.target.classList.toggle("bad", set === undefined);
    if (set === undefined) return;
    setRows(set);
    layout();
    drawAll();
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.target && ev.target.tagName === "INPUT") return;
    if (ev.key === "+" || ev.key === "=") zoomAt((st.t0 + st.t1) / 2, 2);
    else if (ev.key === "-") zoomAt((st.t0 + st.t1) / 2, 0.5);
    else if (ev.key === "0") setView(0, END);
    else if (ev.key === "Escape") select(-1, false);
  });

  setRows(null);
  layout();
  drawAll();
  // for tests and scripts: where a step is drawn (page coordinates), and selection by id
  window.ccxmlShow = {
    steps: N,
    stepAt: function (gpu, tb, s) {
      for (var r = 0; r < NR; r++) {
        if (R[r][0] !== gpu || R[r][1] !== tb) continue;
        for (var k = R[r][5]; k < R[r][6]; k++) if (S.s[k] === s) return k;
      }
      return -1;
    },
    box: function (k) {
      var b = stepBox(k), c = stepsCanvas.getBoundingClientRect();
      return b && { x: b.x + c.left, y: b.y + c.top, w: b.w, h: b.h };
    },
    select: function (k) { select(k, true); },
    loadMs: performance.now() - t_load
  };
  document.body.dataset.ready = "1";
})();
