// Spacewar! AI in the browser: the renderer, the replay player and the served pages.
// The game runs in Python (web.py); this file only draws the states it is sent.
"use strict";

const SW = (() => {
  // Outlines in ship units (x forward, y right), after the 1962 needle and wedge (rendering.py).
  const NEEDLE = [[14, 0], [4, 3], [-10, 3], [-13, 5], [-13, -5], [-10, -3], [4, -3]];
  const WEDGE = [[13, 0], [-9, 8], [-5, 0], [-9, -8]];
  const PALETTES = {
    // The P7 tube of the PDP-1's Type 30 display: green-white phosphor on black.
    "1962": {ships: ["#b4ffc8", "#7cf29a"], star: "#e6ffe6", torpedo: "#f0fff0",
             flame: "#b4ffc8", hud: ["#b4ffc8", "#7cf29a", "#8fcf9f"], dead: "#3c6446"},
    // The pygame window's colours.
    colour: {ships: ["rgb(120,220,255)", "rgb(255,190,90)"], star: "rgb(255,255,220)",
             torpedo: "#ffffff", flame: "rgb(255,120,40)",
             hud: ["rgb(120,220,255)", "rgb(255,190,90)", "rgb(170,200,170)"],
             dead: "rgb(90,90,90)"},
  };
  // Browser key codes -> the key names the game reads (pygame's names; human_play.py).
  const KEYS = {ArrowLeft: "left", ArrowRight: "right", ArrowUp: "up", ArrowDown: "down",
                Space: "space", KeyA: "a", KeyD: "d", KeyW: "w", KeyS: "s",
                ControlRight: "right ctrl", Enter: "return", ShiftLeft: "left shift",
                KeyP: "p", KeyR: "r", KeyH: "h", F1: "f1", Escape: "escape"};

  // What the tests and the latency benchmark read: frames drawn, when, and ship 0's heading.
  const stats = {drawn: 0, t: 0, heading0: null, frame: null};
  window.SW_STATS = stats;

  function starfield(size) {
    let x = 1962;  // a fixed sequence: the same starfield every time
    const rand = () => { x = (x * 1103515245 + 12345) % 2147483648; return x / 2147483648; };
    return Array.from({length: 120}, () => [rand() * size, rand() * size, 60 + rand() * 140]);
  }

  class Renderer {
    constructor(canvas, cfg) {
      this.canvas = canvas;
      this.ctx = canvas.getContext("2d");
      this.cfg = cfg;
      this.palette = PALETTES["1962"];
      this.phosphor = true;
      this.fit();
      window.addEventListener("resize", () => this.fit());
    }

    setLook(name) {
      this.palette = PALETTES[name === "1962" ? "1962" : "colour"];
      this.phosphor = name === "1962";
    }

    fit() {
      // Square, as large as the window allows below the controls.
      const top = this.canvas.getBoundingClientRect().top + window.scrollY;
      const css = Math.max(240, Math.min(window.innerWidth - 24, window.innerHeight - top - 16));
      const ratio = window.devicePixelRatio || 1;
      this.canvas.style.width = this.canvas.style.height = `${css}px`;
      this.canvas.width = this.canvas.height = Math.round(css * ratio);
      this.size = this.canvas.width;
      this.scale = this.size / Math.max(this.cfg.width, this.cfg.height);
      this.stars = starfield(this.size);
      if (this.last) this.draw(...this.last);
    }

    shape(points, x, y, ang) {
      const c = Math.cos(ang), s = Math.sin(ang), k = 1.2;
      return points.map(([px, py]) => [(x + (px * c - py * s) * k) * this.scale,
                                       (y + (px * s + py * c) * k) * this.scale]);
    }

    // `fresh`: clear the screen even in phosphor mode (a jump in time leaves no trail).
    draw(state, hud = [], banner = [], fresh = false) {
      this.last = [state, hud, banner, true];
      const ctx = this.ctx, size = this.size, cfg = this.cfg, pal = this.palette;
      const px = size / 640;  // line widths and text scale with the canvas
      ctx.fillStyle = this.phosphor && !fresh ? "rgba(0,0,0,0.43)" : "#000";
      ctx.fillRect(0, 0, size, size);
      for (const [x, y, b] of this.stars) {
        ctx.fillStyle = `rgb(${b},${b},${b})`;
        ctx.fillRect(x, y, Math.max(1, px), Math.max(1, px));
      }
      ctx.lineWidth = Math.max(1, px);
      if (!cfg.no_star) {
        const cx = cfg.width / 2 * this.scale, cy = cfg.height / 2 * this.scale;
        const r = Math.max(2, cfg.star_radius * this.scale * 0.6);
        ctx.fillStyle = ctx.strokeStyle = pal.star;
        ctx.beginPath(); ctx.arc(cx, cy, r, 0, 2 * Math.PI); ctx.fill();
        ctx.beginPath();
        for (let k = 0; k < 6; k++) {
          const a = k * Math.PI / 3 + state.f * 0.05;
          ctx.moveTo(cx, cy);
          ctx.lineTo(cx + 1.8 * r * Math.cos(a), cy + 1.8 * r * Math.sin(a));
        }
        ctx.stroke();
      }
      state.s.forEach(([x, y, ang, alive, thrusting, hidden], s) => {
        if (hidden) return;
        ctx.strokeStyle = alive ? pal.ships[s] : pal.dead;
        const pts = this.shape(s === 0 ? NEEDLE : WEDGE, x, y, ang);
        ctx.beginPath();
        pts.forEach(([u, v], i) => (i ? ctx.lineTo(u, v) : ctx.moveTo(u, v)));
        ctx.closePath(); ctx.stroke();
        if (thrusting) {
          const [a, b] = this.shape([[-13, 0], [-22 - 4 * (state.f % 3), 0]], x, y, ang);
          ctx.strokeStyle = pal.flame; ctx.lineWidth = 2 * px;
          ctx.beginPath(); ctx.moveTo(...a); ctx.lineTo(...b); ctx.stroke();
          ctx.lineWidth = Math.max(1, px);
        }
      });
      ctx.fillStyle = pal.torpedo;
      for (const [x, y] of state.t) {
        ctx.beginPath(); ctx.arc(x * this.scale, y * this.scale, 2 * px, 0, 2 * Math.PI);
        ctx.fill();
      }
      const font = Math.max(11, Math.round(12 * px));
      ctx.font = `${font}px monospace`;
      ctx.textBaseline = "top";
      const lines = [...state.s.map(([, , , , , , fuel, ammo], s) =>
        `P${s + 1} fuel ${String(Math.round(fuel * 100)).padStart(3)}%  torpedoes ${String(ammo).padStart(2)}`), ...hud];
      // Text is not phosphor: its band is cleared so figures never smear into each other.
      ctx.fillStyle = "#000";
      ctx.fillRect(0, 0, size, 6 * px + lines.length * (font + 3));
      lines.forEach((text, i) => {
        ctx.fillStyle = pal.hud[Math.min(i, 2)];
        ctx.fillText(text, 6 * px, 4 * px + i * (font + 3));
      });
      if (banner.length) this.overlay(banner, font);
      stats.drawn += 1;
      stats.t = performance.now();
      stats.heading0 = state.s[0][2];
      stats.frame = state.f;
    }

    overlay(lines, font) {
      const ctx = this.ctx, big = Math.round(font * 1.5);
      ctx.font = `${big}px monospace`;
      const width = Math.max(...lines.map((t) => ctx.measureText(t).width)) + 28;
      const height = lines.length * (big + 6) + 14;
      const left = (this.size - width) / 2, top = (this.size - height) / 2;
      ctx.fillStyle = "rgba(20,28,40,0.8)";
      ctx.fillRect(left, top, width, height);
      ctx.fillStyle = "#ebebeb";
      ctx.textAlign = "center";
      lines.forEach((t, i) => ctx.fillText(t, this.size / 2, top + 10 + i * (big + 6)));
      ctx.textAlign = "left";
    }
  }

  // --- the replay player: play, pause, step, scrub -----------------------------------------
  class ReplayPlayer {
    constructor(root, data) {
      this.root = root;
      this.data = data;
      this.k = 0;
      this.playing = false;
      root.innerHTML = `
        <div class="controls">
          <button data-act="play">play</button>
          <button data-act="back" title="one step back">&#9664;</button>
          <button data-act="next" title="one step on">&#9654;</button>
          <button data-act="end" title="last frame">end</button>
          <input type="range" class="scrub" min="0" value="0">
          <select class="speed"><option value="1">x1</option><option value="2">x2</option>
            <option value="4">x4</option><option value="0.25">x1/4</option></select>
          <label><input type="checkbox" class="look" checked> 1962 phosphor</label>
        </div>
        <div class="status replay-status"></div>
        <canvas class="screen"></canvas>`;
      this.slider = root.querySelector(".scrub");
      this.slider.max = data.frames.length - 1;
      this.status = root.querySelector(".replay-status");
      this.renderer = new Renderer(root.querySelector(".screen"), data.config);
      root.querySelector(".look").onchange = (e) => {
        this.renderer.setLook(e.target.checked ? "1962" : "colour"); this.show();
      };
      root.querySelectorAll("button").forEach((b) => (b.onclick = () => this[b.dataset.act]()));
      this.slider.oninput = () => { this.pause(); this.seek(+this.slider.value); };
      this.speed = root.querySelector(".speed");
      this.show();
    }

    seek(k, fresh = true) {
      this.k = Math.max(0, Math.min(this.data.frames.length - 1, k));
      this.show(fresh);
    }

    show(fresh = true) {
      const frames = this.data.frames, state = frames[this.k];
      const [a, b] = this.data.players;
      this.renderer.draw(state, [`replay: ${a} vs ${b}`], [], fresh);
      this.slider.value = this.k;
      const last = this.k === frames.length - 1;
      this.status.dataset.frame = this.k;
      this.status.dataset.frames = frames.length;
      this.status.dataset.finalState = last ? state.hash : "";
      this.status.textContent = `step ${this.k} / ${frames.length - 1}, frame ${state.f}` +
        (last ? `; final state ${state.hash}` : "");
    }

    play() {
      if (this.playing) return this.pause();
      if (this.k === this.data.frames.length - 1) this.k = 0;
      this.playing = true;
      this.root.querySelector('[data-act="play"]').textContent = "pause";
      // Each recorded step is frame_skip frames of the game at its fps.
      let due = performance.now();
      const tick = (now) => {
        if (!this.playing) return;
        const step = 1000 * this.data.config.frame_skip / this.data.config.fps / +this.speed.value;
        if (now >= due) {
          due += step;
          if (now - due > 250) due = now;
          this.seek(this.k + 1, false);
          if (this.k === this.data.frames.length - 1) return this.pause();
        }
        requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
    }

    pause() {
      this.playing = false;
      this.root.querySelector('[data-act="play"]').textContent = "play";
    }
    back() { this.pause(); this.seek(this.k - 1); }
    next() { this.pause(); this.seek(this.k + 1); }
    end() { this.pause(); this.seek(this.data.frames.length - 1); }
  }

  // --- the served pages --------------------------------------------------------------------
  const $ = (sel) => document.querySelector(sel);
  const esc = (t) => String(t).replace(/[&<>"]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]));

  // A Markdown table (the tournament's crosstable.md) as an HTML table.
  function markdownTable(text, cls) {
    const rows = text.split("\n").filter((l) => l.startsWith("|") && !/^\|[-| ]+\|$/.test(l))
      .map((l) => l.slice(1, -1).split("|").map((c) => c.trim()));
    if (!rows.length) return "";
    const [head, ...body] = rows;
    return `<table class="${cls}"><tr>${head.map((c) => `<th>${esc(c)}</th>`).join("")}</tr>` +
      body.map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join("")}</tr>`).join("") + "</table>";
  }

  function showError(text) {
    const box = $("#error");
    box.textContent = text || "";
    box.hidden = !text;
  }

  // A busy server (503) refused before doing any work and said when to come back: the page waits
  // as told and asks again a few times before it shows the refusal.
  const BUSY_TRIES = 4;
  const BUSY_WAIT_MOST = 30;

  async function getJSON(url, options) {
    for (let tries = 1; ; tries++) {
      const response = await fetch(url, options);
      if (response.status === 503 && tries < BUSY_TRIES) {
        const wait = Math.min(Math.max(+response.headers.get("retry-after") || 5, 1), BUSY_WAIT_MOST);
        showError(`the server is busy; asking again in ${wait} s`);
        await new Promise((done) => setTimeout(done, wait * 1000));
        showError("");
        continue;
      }
      const data = await response.json();
      if (data.error) throw new Error(data.error);
      return data;
    }
  }

  async function fillPilots() {
    const data = await getJSON("/api/pilots");
    $("#pilots").innerHTML = data.pilots.map((p) => `<option value="${esc(p)}">`).join("");
    return data;
  }

  // A live game (play or watch): frames arrive over the WebSocket and are drawn as they come.
  function live(start, onStart) {
    showError("");
    const proto = location.protocol === "https:" ? "wss" : "ws";
    const ws = new WebSocket(`${proto}://${location.host}/ws/live`);
    let renderer = null, latest = null;
    ws.onopen = () => ws.send(JSON.stringify(start));
    ws.onmessage = (event) => {
      const msg = JSON.parse(event.data);
      if (msg.type === "error") { showError(msg.message); return; }
      if (msg.type === "start") {
        renderer = new Renderer($("#screen"), msg.config);
        renderer.setLook($("#look").checked ? "1962" : "colour");
        $("#screen").dataset.game = msg.id;
        $("#names").textContent = `${msg.names[0]} vs ${msg.names[1]}`;
        $("#help").textContent = (msg.help || []).join("\n");
        onStart && onStart(msg);
      } else if (msg.type === "frame") {
        latest = msg;
      } else if (msg.type === "replay") {
        const link = document.createElement("a");
        link.href = `/replays?path=${encodeURIComponent(msg.path)}`;
        link.textContent = `round ${msg.result.round} saved: ${msg.path}`;
        $("#saved").append(link, document.createElement("br"));
      }
    };
    ws.onclose = () => { if ($("#screen").dataset.game) $("#status").textContent = "game over"; };
    const draw = () => {
      if (latest && renderer) {
        renderer.draw(latest.state, latest.hud, latest.banner);
        $("#status").textContent = `round ${latest.round}, score ${latest.score.join(" : ")}`;
        $("#standing").textContent = latest.standing || "";
        latest = null;
      }
      if (ws.readyState <= 1) requestAnimationFrame(draw);
    };
    requestAnimationFrame(draw);
    $("#look").onchange = () => renderer && renderer.setLook($("#look").checked ? "1962" : "colour");
    return ws;
  }

  const pages = {
    async play() {
      const data = await fillPilots();
      $("#difficulty").innerHTML = data.difficulties.map(
        (d) => `<option value="${esc(d.value)}">${esc(d.label)}</option>`).join("");
      // A name of one's own is kept in this browser; a new visitor gets a guest's name.
      let name = localStorage.getItem("player");
      if (!name) {
        name = `guest-${Math.floor(1000 + Math.random() * 9000)}`;
        localStorage.setItem("player", name);
      }
      $("#player").value = name;
      $("#player").onchange = () => localStorage.setItem("player", $("#player").value.trim());
      // Two people are both rated when the wedge's pilot gives a name too.
      $("#two").onchange = () => { $("#second").hidden = !$("#two").checked; };
      let ws = null;
      $("#start").onclick = () => {
        if (ws) ws.close();
        ws = live({mode: "play", opponent: $("#opponent").value.trim(),
                   difficulty: $("#difficulty").value, two_player: $("#two").checked,
                   player: $("#player").value.trim(), player2: $("#player2").value.trim()});
      };
      const send = (event, down) => {
        const key = KEYS[event.code];
        if (!key || !ws || ws.readyState !== 1 || event.target.tagName === "INPUT") return;
        event.preventDefault();
        if (down && event.repeat) return;
        ws.send(JSON.stringify({type: "key", key, down}));
      };
      window.addEventListener("keydown", (e) => send(e, true));
      window.addEventListener("keyup", (e) => send(e, false));
    },

    async watch() {
      const data = await fillPilots();
      $("#speed").innerHTML = data.speeds.map((s) => `<option value="${s}">x${s}</option>`).join("");
      let ws = null;
      $("#start").onclick = () => {
        if (ws) ws.close();
        ws = live({mode: "watch", a: $("#a").value.trim(), b: $("#b").value.trim(),
                   speed: +$("#speed").value});
      };
      $("#speed").onchange = () => ws && ws.readyState === 1 &&
        ws.send(JSON.stringify({type: "speed", speed: +$("#speed").value}));
    },

    async replays() {
      const list = (await getJSON("/api/replays")).replays;
      $("#replay-list").innerHTML = `<option value="">choose a saved game (${list.length})</option>` +
        list.map((r) => `<option value="${esc(r.path)}">${esc(r.path)}</option>`).join("");
      const open = async (url, options) => {
        showError("");
        try {
          const data = await getJSON(url, options);
          new ReplayPlayer($("#player"), data);
        } catch (err) { showError(err.message); }
      };
      $("#replay-list").onchange = () => $("#replay-list").value &&
        open(`/api/replay?path=${encodeURIComponent($("#replay-list").value)}`);
      $("#upload").onchange = async () => {
        const file = $("#upload").files[0];
        if (file) open(`/api/replay?name=${encodeURIComponent(file.name)}`,
                       {method: "POST", body: await file.arrayBuffer()});
      };
      const asked = new URLSearchParams(location.search).get("path");
      if (asked) { $("#replay-list").value = asked; open(`/api/replay?path=${encodeURIComponent(asked)}`); }
    },

    async tournaments() {
      const data = await getJSON("/api/tournaments");
      const r = data.ratings;
      const fmt = (x, d = 0) => (x === null || x === undefined ? "-" : Number(x).toFixed(d));
      let html = `<h2>Ratings</h2><p>${esc(r.file)}${r.error ? ": " + esc(r.error) : ""}</p>`;
      html += `<table class="ratings"><tr><th>#</th><th>player</th><th>rating (95% CI)</th><th>games</th></tr>` +
        r.players.map((p, i) => `<tr><td>${i + 1}</td><td>${esc(p.name)}</td><td>${fmt(p.rating)} &plusmn; ${fmt(p.ci95)}</td><td>${fmt(p.games)}</td></tr>`).join("") +
        `</table>`;
      html += `<h2>Tournaments</h2>`;
      if (!data.tournaments.length) html += "<p>none yet: spacewar-ai --tournament --players ...</p>";
      const when = (name) => name.replace(/^(\d{4})(\d\d)(\d\d)-(\d\d)(\d\d)(\d\d)/, "$1-$2-$3 $4:$5:$6");
      const label = (path) => path.split("/").pop().replace(/^\d{8}-\d{6}-/, "").replace(/\.json$/, "");
      for (const t of data.tournaments) {
        html += `<details class="tournament" open><summary>${esc(when(t.name))}</summary>` +
          `<table class="standings"><tr><th>#</th><th>player</th><th>rating (95% CI)</th><th>Elo</th><th>score</th><th>accuracy</th></tr>` +
          t.standings.map((p, i) => `<tr><td>${i + 1}</td><td>${esc(p.name)}</td><td>${fmt(p.rating)} &plusmn; ${fmt(p.ci95)}</td><td>${fmt(p.elo)}</td><td>${fmt(p.score, 1)}/${fmt(p.games)}</td><td>${fmt(100 * p.accuracy, 1)}%</td></tr>`).join("") +
          `</table><h3>crosstable</h3>${markdownTable(t.crosstable.split("\n\n")[0], "crosstable")}` +
          (t.replays.length ? `<p>saved games: ` + t.replays.map((p) =>
            `<a href="/replays?path=${encodeURIComponent(p)}">${esc(label(p))}</a>`).join(", ") +
            (t.saved > t.replays.length ? ` and ${t.saved - t.replays.length} more (the Replays page lists the newest)` : "") +
            `</p>` : "") +
          `</details>`;
      }
      $("#tables").innerHTML = html;
    },

    async arena() {
      const fmt = (x, d = 0) => (x === null || x === undefined ? "-" : Number(x).toFixed(d));
      const show = async () => {
        const data = await getJSON("/api/arena");
        let html = `<p>${data.games_per_pairing} games a pairing; ${data.queued} waiting for their first games, ${data.pairings_left} pairings to play.</p>` +
          `<table class="ratings"><tr><th>#</th><th>pilot</th><th>kind</th><th>rating (95% CI)</th><th>games</th><th>status</th><th>games to watch</th></tr>`;
        data.players.forEach((p, i) => {
          html += `<tr><td>${i + 1}</td><td>${esc(p.name)}</td><td>${esc(p.kind)}</td>` +
            `<td>${fmt(p.rating)} &plusmn; ${fmt(p.ci95)}</td><td>${p.games}</td>` +
            `<td>${esc(p.status)}${p.note ? ": " + esc(p.note) : ""}</td><td>` +
            p.replays.map((r, k) => `<a href="/replays?path=${encodeURIComponent(r)}">${k + 1}</a>`).join(" ") +
            `</td></tr>`;
        });
        $("#board").innerHTML = html + "</table>";
      };
      $("#submit").onclick = async () => {
        showError("");
        const file = $("#entry-file").files[0];
        if (!file) { showError("choose a file to submit"); return; }
        try {
          const q = `name=${encodeURIComponent($("#entry-name").value.trim())}&file=${encodeURIComponent(file.name)}`;
          const data = await getJSON(`/api/arena/submit?${q}`, {method: "POST", body: await file.arrayBuffer()});
          const wait = data.expected_wait_seconds;
          $("#submitted").textContent = `${data.submitted.name}: queued, ${data.pairings_ahead} pairings to play` +
            (wait === null ? "" : `, about ${Math.max(1, Math.round(wait / 60))} min`);
          await show();
        } catch (err) { showError(err.message); }
      };
      await show();
      // The next look is taken once this one is answered, so a busy server's waits never pile up.
      const poll = () => show().catch((err) => showError(err.message)).finally(() => setTimeout(poll, 5000));
      setTimeout(poll, 5000);
    },
  };

  async function boot() {
    const name = location.pathname.replace(/^\//, "") || "play";
    document.querySelectorAll("section.page").forEach((s) => (s.hidden = s.id !== name));
    document.querySelectorAll("nav a").forEach((a) => a.classList.toggle("here", a.getAttribute("href") === `/${name}`));
    try { await pages[name](); } catch (err) { showError(err.message); }
    document.body.dataset.ready = "1";
  }

  return {Renderer, ReplayPlayer, boot, stats};
})();
