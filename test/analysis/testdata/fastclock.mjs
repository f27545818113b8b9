// Preloaded (node --import) into each verification Job the harness runs: timers and Date.now run `speed`
// times faster (jobs.go, jobSpeed), as the analysis controller's clock does (clock_test.go), so a 45-minute
// verification takes seconds while the script's intervals and timeout stay as emitted. Request timeouts
// (AbortSignal.timeout) stay real, as the web provider's did.
const speed = Number(new URL(import.meta.url).searchParams.get("speed") ?? "1000");
const { setTimeout: realSetTimeout, setInterval: realSetInterval } = globalThis;
globalThis.setTimeout = (fn, ms = 0, ...args) => realSetTimeout(fn, ms / speed, ...args);
globalThis.setInterval = (fn, ms = 0, ...args) => realSetInterval(fn, ms / speed, ...args);
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
