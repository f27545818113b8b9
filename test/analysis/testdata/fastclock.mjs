// Preloaded (node --import) into each verification Job the harness runs: timers and Date.now run `speed`
// times faster (jobs.go, jobSpeed), as the analysis controller's clock does (clock_test.go), so a 45-minute
// verification takes seconds while the script's intervals and timeout stay as emitted. Request timeouts
// stay real: AbortSignal.timeout, and the connect and headers timeouts of Node's fetch (undici, bundled in
// Node, keeps them on setTimeout; sped up, its 10 s connect timeout would be 100 ms, which a TLS handshake
// on a loaded machine outlasts).
const speed = Number(new URL(import.meta.url).searchParams.get("speed") ?? "1000");
const { setTimeout: realSetTimeout, setInterval: realSetInterval } = globalThis;
const factor = () => ((new Error().stack ?? "").includes("node:internal/deps/undici/") ? 1 : speed);
globalThis.setTimeout = (fn, ms = 0, ...args) => realSetTimeout(fn, ms / factor(), ...args);
globalThis.setInterval = (fn, ms = 0, ...args) => realSetInterval(fn, ms / factor(), ...args);
const realNow = Date.now;
const origin = realNow();
Date.now = () => origin + (realNow() - origin) * speed;

// Tell the harness node has loaded (fd 3, when it passes one): the Job's deadline counts from here.
import { writeSync } from "node:fs";
try {
  writeSync(3, "loaded\n");
} catch {
  // not run by the harness
}
