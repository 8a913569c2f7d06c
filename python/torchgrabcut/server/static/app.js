// torchgrabcut serve: the page. Plain JavaScript, no build step, no network beyond this server.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const canvas = $("view");
  const ctx = canvas.getContext("2d");
  const statusLine = $("status");

  // Everything the page knows; `window.tgcPage` exposes a read-only view for tests.
  const page = {
    width: 0,
    height: 0,
    labels: null, // Uint8Array, row-major OpenCV labels 0..3, or null before the first box
    box: null, // [x0, y0, x1, y1] the mask started from
    image: new Image(),
    overlay: document.createElement("canvas"),
    mode: "box",
    drag: null, // {kind: "box"|"fg"|"bg", points: [[x, y], ...]} in image pixels
    busy: false,
    results: 0, // responses that updated the mask or the image
    errors: 0,
    lastError: "",
    last: null, // the last JSON answer
  };
  window.tgcPage = {
    get width() { return page.width; },
    get height() { return page.height; },
    get labels() { return page.labels; },
    get busy() { return page.busy; },
    get results() { return page.results; },
    get errors() { return page.errors; },
    get lastError() { return page.lastError; },
    get last() { return page.last; },
    foregroundCount() {
      if (!page.labels) return -1;
      let n = 0;
      for (let i = 0; i < page.labels.length; i++) n += page.labels[i] & 1;
      return n;
    },
  };

  function setStatus(text, isError) {
    statusLine.textContent = text;
    statusLine.classList.toggle("error", Boolean(isError));
  }

  function setBusy(busy) {
    page.busy = busy;
    document.body.classList.toggle("busy", busy);
  }

  // The server writes a random token into the page; every request that changes something
  // carries it, so other sites (which cannot read the page) cannot post to the server.
  const tokenMeta = document.querySelector('meta[name="torchgrabcut-token"]');
  const TOKEN = tokenMeta ? tokenMeta.content : "";

  async function api(path, options) {
    const opts = Object.assign({ credentials: "same-origin" }, options || {});
    if (opts.method && opts.method !== "GET") {
      opts.headers = Object.assign({}, opts.headers || {}, { "X-Torchgrabcut-Token": TOKEN });
    }
    const resp = await fetch(path, opts);
    let data = null;
    try {
      data = await resp.json();
    } catch (e) {
      data = null;
    }
    if (!resp.ok) {
      const message = data && data.error ? data.error : "HTTP " + resp.status + " " + resp.statusText;
      throw new Error(message);
    }
    return data;
  }

  function postJSON(path, body) {
    return api(path, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
  }

  // Runs one request at a time; shows errors in the status line and keeps the page usable.
  async function run(label, fn) {
    if (page.busy) return;
    setBusy(true);
    try {
      await fn();
    } catch (err) {
      page.errors += 1;
      page.lastError = String(err.message || err);
      setStatus(label + ": " + page.lastError, true);
    } finally {
      setBusy(false);
    }
  }

  function decodeMask(mask, n) {
    const labels = new Uint8Array(n);
    let at = 0;
    for (let i = 0; i < mask.values.length; i++) {
      const count = mask.counts[i];
      labels.fill(mask.values[i], at, at + count);
      at += count;
    }
    if (at !== n) throw new Error("mask: expected " + n + " pixels, got " + at);
    return labels;
  }

  // Background darkened (hard background darker), foreground tinted, painted
  // foreground stronger, and the foreground's boundary outlined.
  function buildOverlay() {
    const w = page.width;
    const h = page.height;
    page.overlay.width = w;
    page.overlay.height = h;
    const octx = page.overlay.getContext("2d");
    octx.clearRect(0, 0, w, h);
    if (!page.labels) return;
    const lab = page.labels;
    const box = page.box || [0, 0, 0, 0];
    const img = octx.createImageData(w, h);
    const px = img.data;
    for (let y = 0; y < h; y++) {
      const inRows = y >= box[1] && y < box[3];
      for (let x = 0; x < w; x++) {
        const i = y * w + x;
        const v = lab[i];
        const o = 4 * i;
        if ((v & 1) === 0) {
          // Inside the box, hard background can only come from a background stroke: red.
          if (v === 0 && inRows && x >= box[0] && x < box[2]) {
            px[o] = 255; px[o + 1] = 50; px[o + 2] = 50; px[o + 3] = 140;
          } else {
            px[o + 3] = v === 0 ? 150 : 115; // black, partly transparent
          }
          continue;
        }
        const edge =
          (x > 0 && (lab[i - 1] & 1) === 0) ||
          (x < w - 1 && (lab[i + 1] & 1) === 0) ||
          (y > 0 && (lab[i - w] & 1) === 0) ||
          (y < h - 1 && (lab[i + w] & 1) === 0);
        if (edge) {
          px[o] = 255; px[o + 1] = 212; px[o + 2] = 0; px[o + 3] = 255;
        } else if (v === 1) {
          px[o] = 40; px[o + 1] = 120; px[o + 2] = 255; px[o + 3] = 120;
        } else {
          px[o] = 80; px[o + 1] = 220; px[o + 2] = 255; px[o + 3] = 45;
        }
      }
    }
    octx.putImageData(img, 0, 0);
  }

  function render() {
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    if (!page.width) return;
    ctx.drawImage(page.image, 0, 0);
    if (page.labels) ctx.drawImage(page.overlay, 0, 0);
    const d = page.drag;
    if (!d) return;
    const scale = page.width / canvas.getBoundingClientRect().width; // image pixels per CSS pixel
    if (d.kind === "box") {
      const [a, b] = [d.points[0], d.points[d.points.length - 1]];
      ctx.save();
      ctx.lineWidth = Math.max(1, 2 * scale);
      ctx.setLineDash([6 * scale, 4 * scale]);
      ctx.strokeStyle = "#ffd400";
      ctx.strokeRect(Math.min(a[0], b[0]), Math.min(a[1], b[1]), Math.abs(b[0] - a[0]), Math.abs(b[1] - a[1]));
      ctx.restore();
    } else {
      ctx.save();
      ctx.lineCap = "round";
      ctx.lineJoin = "round";
      ctx.lineWidth = 2 * radius() + 1;
      ctx.strokeStyle = d.kind === "fg" ? "rgba(40, 120, 255, 0.85)" : "rgba(255, 60, 60, 0.85)";
      ctx.beginPath();
      d.points.forEach((p, i) => (i ? ctx.lineTo(p[0], p[1]) : ctx.moveTo(p[0], p[1])));
      if (d.points.length === 1) ctx.lineTo(d.points[0][0] + 0.01, d.points[0][1]);
      ctx.stroke();
      ctx.restore();
    }
  }

  function radius() {
    return Number($("radius").value);
  }

  function showState(data, what) {
    page.last = data;
    page.labels = data.mask ? decodeMask(data.mask, data.width * data.height) : null;
    page.box = data.box || null;
    buildOverlay();
    render();
    $("undo").disabled = !data.can_undo;
    for (const id of ["download", "download-binary"]) $(id).classList.toggle("disabled", !page.labels);
    page.results += 1;
    let text = data.name + " (" + data.width + "x" + data.height + ")";
    if (what) {
      text = what + ": ";
      if (data.grabcut_ms !== undefined) {
        text +=
          "GrabCut " + data.grabcut_ms.toFixed(1) + " ms (" + data.iterations + " iteration" +
          (data.iterations === 1 ? "" : "s") + " on " + data.device + "), server " + data.server_ms.toFixed(1) + " ms; ";
      }
      text += data.foreground === null ? "no mask" : (100 * data.foreground).toFixed(1) + "% foreground";
    } else {
      text += ": drag a box around the object";
    }
    setStatus(text, false);
  }

  async function loadImage(data) {
    const url = "/api/image.png?t=" + Date.now();
    page.image = new Image();
    page.image.src = url;
    await page.image.decode();
    page.width = data.width;
    page.height = data.height;
    canvas.width = data.width;
    canvas.height = data.height;
    fit();
    page.drag = null;
    showState(data, "");
  }

  // Shows the image as large as the window allows (up to 2x), keeping its aspect ratio;
  // the canvas keeps the image's own pixels, so pointer positions are scaled in toImage.
  function fit() {
    if (!page.width) return;
    const stage = $("stage");
    const style = getComputedStyle(stage);
    const availW = stage.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const availH = Math.max(200, window.innerHeight - canvas.offsetTop - 80);
    const s = Math.min(availW / page.width, availH / page.height, 2);
    canvas.style.width = Math.max(1, Math.floor(page.width * s)) + "px";
  }
  window.addEventListener("resize", () => {
    fit();
    render();
  });

  function toImage(ev) {
    const rect = canvas.getBoundingClientRect();
    const x = ((ev.clientX - rect.left) * page.width) / rect.width;
    const y = ((ev.clientY - rect.top) * page.height) / rect.height;
    return [x, y];
  }

  canvas.addEventListener("pointerdown", (ev) => {
    if (page.busy || !page.width || ev.button !== 0) return;
    if (page.mode !== "box" && !page.labels) {
      setStatus("Drag a box around the object first, then paint strokes.", true);
      return;
    }
    canvas.setPointerCapture(ev.pointerId);
    page.drag = { kind: page.mode, points: [toImage(ev)] };
    render();
    ev.preventDefault();
  });

  canvas.addEventListener("pointermove", (ev) => {
    if (!page.drag) return;
    const p = toImage(ev);
    if (page.drag.kind === "box") page.drag.points[1] = p;
    else page.drag.points.push(p);
    render();
  });

  function finishDrag(ev) {
    const d = page.drag;
    if (!d) return;
    page.drag = null;
    if (ev.type === "pointerup") {
      const p = toImage(ev);
      if (d.kind === "box") d.points[1] = p;
      else d.points.push(p);
    }
    render();
    if (ev.type !== "pointerup") return;
    if (d.kind === "box") submitBox(d.points[0], d.points[d.points.length - 1]);
    else submitStroke(d.kind, d.points);
  }
  canvas.addEventListener("pointerup", finishDrag);
  canvas.addEventListener("pointercancel", finishDrag);

  function clamp(v, lo, hi) {
    return Math.min(hi, Math.max(lo, v));
  }

  function submitBox(a, b) {
    const x0 = clamp(Math.floor(Math.min(a[0], b[0])), 0, page.width);
    const y0 = clamp(Math.floor(Math.min(a[1], b[1])), 0, page.height);
    const x1 = clamp(Math.ceil(Math.max(a[0], b[0])), 0, page.width);
    const y1 = clamp(Math.ceil(Math.max(a[1], b[1])), 0, page.height);
    if (x1 - x0 < 2 || y1 - y0 < 2) {
      setStatus("That box is too small: drag from one corner of the object to the opposite one.", true);
      return;
    }
    run("box", async () => showState(await postJSON("/api/box", { x0, y0, x1, y1 }), "box"));
  }

  function submitStroke(kind, points) {
    const rounded = points.map((p) => [Math.round(p[0] * 10) / 10, Math.round(p[1] * 10) / 10]);
    const body = { strokes: [{ label: kind, radius: radius(), points: rounded }] };
    run("stroke", async () =>
      showState(await postJSON("/api/strokes", body), kind === "fg" ? "foreground stroke" : "background stroke"));
  }

  function setMode(mode) {
    page.mode = mode;
    $("mode-" + mode).checked = true;
  }
  for (const el of document.querySelectorAll("input[name=mode]")) {
    el.addEventListener("change", () => setMode(el.value));
  }
  $("radius").addEventListener("input", () => ($("radius-value").textContent = $("radius").value));

  function undo() {
    run("undo", async () => showState(await postJSON("/api/undo", {}), "undo"));
  }
  $("undo").addEventListener("click", undo);

  document.addEventListener("keydown", (ev) => {
    if (ev.target instanceof HTMLInputElement && ev.target.type !== "radio") return;
    if ((ev.ctrlKey || ev.metaKey) && ev.key === "z") {
      ev.preventDefault();
      if (!$("undo").disabled) undo();
    } else if (!ev.ctrlKey && !ev.metaKey && !ev.altKey) {
      const mode = { b: "box", f: "fg", g: "bg" }[ev.key];
      if (mode) setMode(mode);
    }
  });

  function openListed(index) {
    run("open", async () => loadImage(await postJSON("/api/open", { index })));
  }
  $("open").addEventListener("click", () => {
    if ($("images").value !== "") openListed(Number($("images").value));
  });

  $("upload").addEventListener("change", () => {
    const file = $("upload").files[0];
    if (!file) return;
    const form = new FormData();
    form.append("image", file, file.name);
    run("upload", async () => loadImage(await api("/api/image", { method: "POST", body: form })));
    $("upload").value = "";
  });

  async function start() {
    try {
      const data = await api("/api/images");
      const select = $("images");
      for (const im of data.images) {
        const opt = document.createElement("option");
        opt.value = String(im.index);
        opt.textContent = im.name;
        select.appendChild(opt);
      }
      $("open").disabled = data.images.length === 0;
      if (data.images.length > 0) openListed(0);
      else setStatus("Upload an image to start.", false);
    } catch (err) {
      setStatus("cannot reach the server: " + err.message, true);
    }
  }
  start();
})();
