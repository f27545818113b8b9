// Which preview an update is compared with: the verification Job (kargo/verification/verify.mjs, run with
// node as its container runs it) against a Pulumi Cloud stand-in served in process. An update at stack
// version N is compared only with the newest succeeded preview of its commit listed under
// `updates/{N-1}/previews`, the state it changed; a preview of the same commit against another version
// (its first promotion's, before a rollback took the stack back to it) never counts. The Go harness
// (test/analysis TestRollbackComparedWithItsOwnPreview) runs the same through Argo Rollouts' controller.
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "../lib/cli/plan/projects";
import { bucket, db, eventsOf, role, type Meta } from "./verification-events-support";

const script = path.join(repoRoot, "kargo/verification/verify.mjs");
const [older, newer] = [
  "4f1c2b9e8d7a6c5b4a3928171605f4e3d2c1b0a9",
  "9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b",
];

type Operation = { head: string; start: number; result?: string; steps: Meta[] };
/** One stack: its updates, oldest first (version i+1), and its previews by the version they ran against. */
type Stack = { updates: Operation[]; previews: Record<number, (Operation & { id: string })[]> };

const info = (o: Operation, kind: string, version = 0) => ({
  kind,
  version,
  result: o.result ?? "succeeded",
  startTime: o.start,
  endTime: o.start + 60,
  environment: { "git.head": o.head },
});

/** Pulumi Cloud's routes the Job reads (kargo/verification/cloud.mjs), answered from `stack`. */
function serve(stack: () => Stack, asked: string[]) {
  return createServer((req, res) => {
    const url = new URL(req.url!, "http://stand-in");
    asked.push(url.pathname.replace(/^\/api\/stacks\/org\/app\/dev\//, ""));
    const s = stack();
    const answer = (status: number, body: unknown) => {
      res.writeHead(status, { "Content-Type": "application/json" });
      res.end(JSON.stringify(body));
    };
    const route = url.pathname.replace(/^\/api\/stacks\/org\/app\/dev\//, "");
    const history = s.updates.map((u, i) => ({ ...info(u, "update", i + 1), id: `update-${i + 1}` }));
    let m: RegExpExecArray | null;
    if (route === "updates") return answer(200, { updates: [...history].reverse() });
    if ((m = /^updates\/(latest|\d+)\/previews$/.exec(route))) {
      const version = m[1] === "latest" ? s.updates.length : Number(m[1]);
      const list = s.previews[version];
      if (!list) return answer(404, { code: 404, message: "Not Found" });
      const entries = list.map((p) => ({ info: info(p, "preview"), updateID: p.id }));
      return answer(200, { updates: entries.sort((a, b) => b.info.startTime - a.info.startTime) });
    }
    if ((m = /^updates\/(\d+)$/.exec(route))) {
      const u = history[Number(m[1]) - 1];
      return u ? answer(200, { info: u, updateID: u.id, version: u.version }) : answer(404, { code: 404 });
    }
    if ((m = /^(update|preview)\/([^/]+)\/events$/.exec(route))) {
      const ops: (Operation & { id: string })[] =
        m[1] === "update"
          ? s.updates.map((u, i) => ({ ...u, id: `update-${i + 1}` }))
          : Object.values(s.previews).flat();
      const o = ops.find((x) => x.id === m![2]);
      if (o) return answer(200, { events: eventsOf(...o.steps), continuationToken: null });
    }
    answer(404, { code: 404, message: "Not Found" });
  });
}

let stack: Stack;
const asked: string[] = [];
const server = serve(() => stack, asked);
let api = "";
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  api = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** The Job verifying the update of `commit` on the stack: its exit code, its record and its reason. */
async function verifyUpdate(s: Stack, commit: string) {
  stack = s;
  asked.length = 0;
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "",
    PULUMI_API_URL: api,
    PULUMI_CONSOLE_URL: "https://app.pulumi.com",
    PULUMI_ORGANIZATION: "org",
    PULUMI_PROJECT: "app",
    PULUMI_STACK: "dev",
    COMMIT: commit,
    OPERATION: "update",
    KARGO_PROJECT: "infra",
    INTERVAL: "1s",
    TIMEOUT: "30s",
    PAGE_SIZE: "10",
    ERROR_LIMIT: "2",
    PULUMI_ACCESS_TOKEN: "t",
  };
  const child = spawn(process.execPath, [script], { env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  const line = stdout.split("\n").find((l) => l.includes('"record":"pulumi-verification"'));
  const previewsAsked = asked.filter((a) => a.endsWith("/previews"));
  return { code, stderr, record: line ? JSON.parse(line) : undefined, previewsAsked };
}

// A release (`older`) promoted first, a newer release after it, then a rollback to the older one.
const created = [
  { op: "create", ...bucket },
  { op: "create", ...role },
];
const newerRelease = [
  { op: "same", ...bucket },
  { op: "same", ...role },
  { op: "create", ...db },
];
const rolledBack = [
  { op: "same", ...bucket },
  { op: "same", ...role },
  { op: "delete", ...db },
];
const firstPromotion = { head: older, start: 900, steps: created, id: "preview-older-v0" };
const history = (rollback: Meta[]): Operation[] => [
  { head: older, start: 1000, steps: created },
  { head: newer, start: 2000, steps: newerRelease },
  { head: older, start: 3100, steps: rollback },
];
const previews = (fresh?: Partial<Operation>) => ({
  0: [firstPromotion],
  1: [{ head: newer, start: 1900, steps: newerRelease, id: "preview-newer-v1" }],
  2: fresh ? [{ head: older, start: 3000, steps: rolledBack, id: "preview-older-v2", ...fresh }] : [],
});

describe("an update at stack version N, compared with its commit's preview against version N-1", () => {
  it("compares a stack's first update with its preview against version 0", async () => {
    const { code, record, previewsAsked } = await verifyUpdate(
      { updates: [{ head: older, start: 1000, steps: created }], previews: { 0: [firstPromotion] } },
      older,
    );
    expect(code).toBe(0);
    expect(record).toMatchObject({ version: 1, against: 0, preview: { updateID: firstPromotion.id } });
    expect(previewsAsked).toEqual(["updates/0/previews"]);
  });

  it("takes a rollback's fresh preview under N-1, never the commit's first preview under an older version", async () => {
    // The first promotion's preview would match too: the update is compared with the fresh one only.
    const { code, stderr, record, previewsAsked } = await verifyUpdate(
      {
        updates: history(rolledBack),
        previews: { ...previews({}), 0: [{ ...firstPromotion, steps: rolledBack, start: 2999 }] },
      },
      older,
    );
    expect(code, stderr).toBe(0);
    expect(record).toMatchObject({ version: 3, against: 2, preview: { updateID: "preview-older-v2" } });
    expect(previewsAsked).toEqual(["updates/2/previews"]);
  });

  it("takes the newest succeeded preview of the commit under N-1", async () => {
    const s = { updates: history(rolledBack), previews: previews({}) };
    s.previews[2] = [
      { head: older, start: 2500, steps: created, id: "preview-older-v2-early" },
      { head: older, start: 3000, steps: rolledBack, id: "preview-older-v2" },
      { head: older, start: 3050, steps: created, id: "preview-older-v2-failed", result: "failed" },
    ];
    const { code, record } = await verifyUpdate(s, older);
    expect(code).toBe(0);
    expect(record.preview.updateID).toBe("preview-older-v2");
  });

  it("fails a rollback's update whose only preview of the commit ran against an older version", async () => {
    const reason = (v: number) =>
      `the update of ${older.slice(0, 12)} on org/app/dev (https://app.pulumi.com/org/app/dev/updates/${v + 1}): ` +
      `no succeeded preview of ${older.slice(0, 12)} against the state this update changed (version ${v}), ` +
      "so it cannot be shown to do only what was approved.";
    // The first promotion's preview shows exactly what the update did, and still does not count: none under
    // version 2, a failed one there, or one of another commit there.
    for (const fresh of [
      undefined,
      { result: "failed" },
      { head: newer },
      // Started after the update: not the preview it was let through on.
      { start: 3200 },
    ]) {
      const s = { updates: history(created), previews: previews(fresh) };
      const { code, stderr, record } = await verifyUpdate(s, older);
      expect(code, JSON.stringify(fresh)).toBe(1);
      expect(stderr).toContain(reason(2));
      expect(stderr).toMatch(/npm run rollback/);
      expect(record).toBeUndefined();
    }
    // No previews list for version 2 at all (Pulumi Cloud's 404): the same verdict, not an error.
    const missing = { updates: history(created), previews: { 0: [firstPromotion] } };
    const { code, stderr } = await verifyUpdate(missing, older);
    expect(code).toBe(1);
    expect(stderr).toContain(reason(2));
  });

  it("fails a retry after a failed update of the commit: the failed attempt changed the state its preview saw", async () => {
    // What the failed attempt did is in no operation the Job compares but this retry, which ran after it.
    const s: Stack = {
      updates: [
        { head: older, start: 1000, steps: created, result: "failed" },
        {
          head: older,
          start: 1200,
          steps: [
            { op: "same", ...bucket },
            { op: "create", ...role },
          ],
        },
      ],
      previews: { 0: [firstPromotion] },
    };
    const { code, stderr } = await verifyUpdate(s, older);
    expect(code).toBe(1);
    expect(stderr).toContain("against the state this update changed (version 1)");
  });

  it("passes a rollback's update against its fresh preview, and fails one only the stale preview showed", async () => {
    const passed = await verifyUpdate({ updates: history(rolledBack), previews: previews({}) }, older);
    expect(passed.code, passed.stderr).toBe(0);
    expect(passed.record).toMatchObject({ against: 2, unexpected: [] });
    // The update created what the commit's first preview showed, not what its fresh preview did.
    const stale = await verifyUpdate({ updates: history(created), previews: previews({}) }, older);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain(
      "did what its preview (https://app.pulumi.com/org/app/dev/previews/preview-older-v2) did not show",
    );
    expect(stale.record).toMatchObject({ against: 2, preview: { updateID: "preview-older-v2" } });
  });
});
