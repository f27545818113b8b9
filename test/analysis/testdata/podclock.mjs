// Preloaded (node --import) into each verification Job the harness runs: the pod's clock, which the harness
// controls (jobs.go). Time on it passes only while the pod waits on nothing but its timers, then jumps to
// the next timer's due time after 1/`speed` of it in real time: a look at Pulumi Cloud, writing the
// reason, starting node take no time on it however busy this machine is, and a 45-minute verification
// takes seconds while the script's intervals and timeout stay as emitted. The Job's activeDeadlineSeconds
// (`deadline`, in ms) runs on the same clock: when it comes the pod says so on fd 3 and stops, and the
// harness kills it. Each request's timeout (AbortSignal.timeout) runs on it too; the stand-in answers a request
// it holds with `x-stand-in-hold` (pulumicloud.go), which this clock makes a request that never answers,
// so the pod waits on its timers alone and the request's timeout comes as it would. Undici's own connect
// and keep-alive timers (Node's fetch) stay on real time.
import { writeSync } from "node:fs";

const params = new URL(import.meta.url).searchParams;
const speed = Number(params.get("speed") ?? "1000");
const deadline = params.has("deadline") ? Number(params.get("deadline")) : Infinity;
const real = {
  setTimeout: globalThis.setTimeout,
  clearTimeout: globalThis.clearTimeout,
  setInterval: globalThis.setInterval,
  fetch: globalThis.fetch,
  now: Date.now,
};
const report = (line) => {
  try {
    writeSync(3, `${line}\n`);
  } catch {
    // not run by the harness
  }
};

const origin = real.now();
let now = 0;
let seq = 0;
/** Pending timers, by due time then arming order. */
const queue = [];
let tick;

const isUndici = () => (new Error().stack ?? "").includes("node:internal/deps/undici/");

/**
 * Whether the pod waits on nothing but timers: no socket, file read or immediate in flight (Node's
 * getActiveResourcesInfo; its stdio pipes stay listed, and idle keep-alive sockets are not).
 */
const waiting = new Set(["Timeout", "PipeWrap", "TTYWrap"]);
const idle = () => process.getActiveResourcesInfo().every((r) => waiting.has(r));

function schedule() {
  if (tick) real.clearTimeout(tick);
  tick = undefined;
  if (!queue.length) return;
  const head = queue[0];
  tick = real.setTimeout(fire, Math.max(0, head.due - now) / speed);
  if (!queue.some((t) => t.ref)) tick.unref();
}

function fire() {
  tick = undefined;
  if (!idle()) {
    // Busy: the clock stands still until the pod waits on its timers alone.
    tick = real.setTimeout(fire, 1);
    if (!queue.some((t) => t.ref)) tick.unref();
    return;
  }
  const t = queue.shift();
  now = Math.max(now, t.due);
  if (t.interval !== undefined) insert({ ...t, due: now + t.interval, seq: seq++ });
  schedule();
  t.fn(...t.args);
}

function insert(t) {
  let i = queue.findIndex((x) => x.due > t.due);
  if (i < 0) i = queue.length;
  queue.splice(i, 0, t);
  return t;
}

class Timer {
  constructor(entry) {
    this.entry = entry;
  }
  unref() {
    this.entry.ref = false;
    schedule();
    return this;
  }
  ref() {
    this.entry.ref = true;
    schedule();
    return this;
  }
  hasRef() {
    return this.entry.ref;
  }
  [Symbol.toPrimitive]() {
    return this.entry.seq;
  }
}

const arm = (fn, ms, args, interval) => {
  const delay = Math.max(0, Number(ms) || 0);
  const entry = insert({ fn, due: now + delay, args, seq: seq++, ref: true, interval });
  schedule();
  return new Timer(entry);
};

const clear = (timer) => {
  const entry = timer instanceof Timer ? timer.entry : queue.find((t) => t.seq === timer);
  const i = queue.indexOf(entry);
  if (i >= 0) {
    queue.splice(i, 1);
    schedule();
  }
};

globalThis.setTimeout = (fn, ms, ...args) =>
  isUndici() ? real.setTimeout(fn, ms, ...args) : arm(fn, ms, args);
globalThis.setInterval = (fn, ms, ...args) =>
  isUndici() ? real.setInterval(fn, ms, ...args) : arm(fn, ms, args, Math.max(1, Number(ms) || 0));
const clearReal = globalThis.clearTimeout;
globalThis.clearTimeout = (t) => (t instanceof Timer || typeof t === "number" ? clear(t) : clearReal(t));
globalThis.clearInterval = globalThis.clearTimeout;
Date.now = () => origin + now;

AbortSignal.timeout = (ms) => {
  const controller = new AbortController();
  arm(
    () => controller.abort(new DOMException("The operation was aborted due to timeout", "TimeoutError")),
    ms,
    [],
  ).unref();
  return controller.signal;
};

globalThis.fetch = async (input, init) => {
  const response = await real.fetch(input, init);
  if (!response.headers.has("x-stand-in-hold")) return response;
  // Held by the stand-in: never answered; only the request's own timeout (or abort) ends the wait.
  // A real timer (never due) keeps the process alive as the held socket would.
  const signal = init?.signal;
  const alive = real.setTimeout(() => {}, 2 ** 31 - 1);
  return new Promise((_, reject) => {
    const end = () => {
      real.clearTimeout(alive);
      reject(signal.reason);
    };
    if (signal?.aborted) end();
    signal?.addEventListener("abort", end, { once: true });
  });
};

if (deadline !== Infinity) {
  // The Job's deadline, on the pod's clock: say so, and stand still until the harness kills the pod.
  arm(
    () => {
      report("deadline");
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
    },
    deadline,
    [],
  ).unref();
}
process.on("exit", () => report(`clock ${now}`));

// Tell the harness node has loaded.
report("loaded");
