// Benchwright dashboard: the run page's live heatmap and a task page's live transcript.
// Hand-written, no build step, shipped inside the Python package. The heatmap is one
// canvas drawn from the run's outcome vector (one character per task), so a
// 10,000-task run is one element, not 10,000; over server-sent events only the cells
// that changed arrive. A transcript's stream sends each changed element (a turn, an
// attempt's header or ending) drawn and escaped by the server's own template.

const COLOURS = {
  ".": "#d0d7de", // not started
  r: "#54aeff", // running
  p: "#2da44e", // pass
  f: "#d4a72c", // fail
  e: "#cf222e", // error
  x: "#8250df", // platform (infra) error
};
const SETTLED = new Set(["p", "f", "e", "x"]);

function cellSize(count) {
  if (count <= 200) return 16;
  if (count <= 1000) return 10;
  if (count <= 5000) return 6;
  return 4;
}

class Heatmap {
  constructor(canvas) {
    this.canvas = canvas;
    this.runId = canvas.dataset.run;
    this.version = canvas.dataset.version;
    this.cells = Array.from(canvas.dataset.vector || "");
    this.layout();
    this.drawAll();
    canvas.addEventListener("mousemove", (event) => this.hover(event));
    canvas.addEventListener("click", (event) => this.open(event));
  }

  layout() {
    const width = this.canvas.parentElement.clientWidth || 960;
    this.size = cellSize(this.cells.length);
    this.columns = Math.max(1, Math.floor(width / this.size));
    const rows = Math.max(1, Math.ceil(this.cells.length / this.columns));
    const ratio = window.devicePixelRatio || 1;
    this.canvas.width = this.columns * this.size * ratio;
    this.canvas.height = rows * this.size * ratio;
    this.canvas.style.width = `${this.columns * this.size}px`;
    this.canvas.style.height = `${rows * this.size}px`;
    this.context = this.canvas.getContext("2d");
    this.context.setTransform(ratio, 0, 0, ratio, 0, 0);
  }

  drawCell(index) {
    const gap = this.size > 4 ? 1 : 0;
    const x = (index % this.columns) * this.size;
    const y = Math.floor(index / this.columns) * this.size;
    this.context.fillStyle = COLOURS[this.cells[index]] || COLOURS["."];
    this.context.fillRect(x, y, this.size - gap, this.size - gap);
  }

  drawAll() {
    this.context.clearRect(0, 0, this.canvas.width, this.canvas.height);
    for (let i = 0; i < this.cells.length; i++) this.drawCell(i);
    this.publish();
  }

  replace(vector) {
    const resized = vector.length !== this.cells.length;
    this.cells = Array.from(vector);
    if (resized) this.layout();
    this.drawAll();
  }

  apply(changes) {
    let grew = false;
    for (const [index, code] of changes) {
      if (index >= this.cells.length) grew = true;
      this.cells[index] = code;
    }
    for (let i = 0; i < this.cells.length; i++) if (this.cells[i] === undefined) this.cells[i] = ".";
    if (grew) {
      this.layout();
      this.drawAll();
      return;
    }
    for (const [index] of changes) this.drawCell(index);
    this.publish();
  }

  counts() {
    const found = { passed: 0, failed: 0, errored: 0, running: 0 };
    for (const code of this.cells) {
      if (code === "p") found.passed++;
      else if (code === "f") found.failed++;
      else if (code === "e" || code === "x") found.errored++;
      else found.running++;
    }
    return found;
  }

  // The counts beside the heatmap and the pass-rate tile follow the cells.
  publish() {
    const counts = this.counts();
    const settled = this.cells.filter((code) => SETTLED.has(code)).length;
    this.canvas.dataset.settled = String(settled);
    // In flight: begun by the sweep (it says so as each task starts), not settled yet.
    this.canvas.dataset.inflight = String(this.cells.filter((code) => code === "r").length);
    for (const [name, value] of Object.entries(counts)) {
      const element = document.querySelector(`[data-count="${name}"]`);
      if (element) element.textContent = String(value);
    }
    const judged = counts.passed + counts.failed;
    const rate = document.getElementById("pass-rate");
    if (rate && judged) rate.textContent = `${((100 * counts.passed) / judged).toFixed(1)}%`;
  }

  indexAt(event) {
    const box = this.canvas.getBoundingClientRect();
    const column = Math.floor((event.clientX - box.left) / this.size);
    const row = Math.floor((event.clientY - box.top) / this.size);
    const index = row * this.columns + column;
    return column < this.columns && index < this.cells.length ? index : -1;
  }

  hover(event) {
    const index = this.indexAt(event);
    const names = { ".": "not started", r: "running", p: "pass", f: "fail", e: "error", x: "platform error" };
    this.canvas.title = index < 0 ? "" : `task #${index}: ${names[this.cells[index]] || "?"}`;
  }

  open(event) {
    const index = this.indexAt(event);
    if (index >= 0 && this.cells[index] !== ".") {
      window.location.assign(`/runs/${encodeURIComponent(this.runId)}/tasks/t${this.version}_${index}`);
    }
  }
}

function showState(state) {
  const status = document.getElementById("run-status");
  if (status) {
    status.textContent = state.display_status;
    status.className = `status s-${state.display_status}`;
  }
  const phase = document.getElementById("run-phase");
  if (phase) phase.textContent = state.phase || "";
}

function follow(heatmap) {
  const source = new EventSource(`/runs/${encodeURIComponent(heatmap.runId)}/live`);
  source.addEventListener("vector", (event) => heatmap.replace(event.data));
  source.addEventListener("cells", (event) => heatmap.apply(JSON.parse(event.data)));
  source.addEventListener("state", (event) => showState(JSON.parse(event.data)));
  source.addEventListener("end", () => {
    source.close();
    // The finished run's summary, cost and task table are drawn by the server.
    window.setTimeout(() => window.location.reload(), 800);
  });
}

// Put one element the server drew in place: replace its old self, or add it.
function place(part) {
  const holder = document.createElement("template");
  holder.innerHTML = part.html; // a template's content is inert: nothing in it runs
  const element = holder.content.firstElementChild;
  if (!element) return;
  const existing = document.getElementById(part.id);
  if (existing) existing.replaceWith(element);
  else document.getElementById(part.parent)?.append(element);
}

function followTranscript(box) {
  const source = new EventSource(box.dataset.src);
  source.addEventListener("part", (event) => {
    place(JSON.parse(event.data));
    document.getElementById("transcript-empty")?.remove();
    box.dataset.turns = String(box.querySelectorAll(".turn").length);
  });
  source.addEventListener("end", () => {
    source.close();
    box.dataset.live = "no";
    // The task's outcome and score are drawn by the server once the run is done.
    window.setTimeout(() => window.location.reload(), 800);
  });
}

function start() {
  const transcript = document.getElementById("transcript");
  if (transcript) {
    transcript.dataset.turns = String(transcript.querySelectorAll(".turn").length);
    if (transcript.dataset.live === "yes") followTranscript(transcript);
  }
  const canvas = document.getElementById("heatmap");
  if (!canvas) return;
  const heatmap = new Heatmap(canvas);
  if (canvas.dataset.live === "yes") follow(heatmap);
  window.addEventListener("resize", () => {
    heatmap.layout();
    heatmap.drawAll();
  });
}

start();
