// `npm run history`: an environment's promotions read back from the stage branches with git alone. The repository
// here is built by the test, its commits carrying records shaped as promotionMessage writes them (the Go
// scenario test/promotion/record_test.go has Kargo's expressions write them and runs this command on those).
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { environmentHistory, formatHistory, gitLog, parseRecord } from "../lib/history";
import { programStages } from "../lib/pipeline/graph";
import { stageBranch } from "../lib/pipeline/names";
import { recordTrailer } from "../lib/pipeline/promotion";
import { validatePipeline } from "../lib/pipeline/validate";

const pipeline = validatePipeline(definition);
const git = (dir: string, ...args: string[]) => {
  const r = spawnSync("git", ["-C", dir, ...args], {
    encoding: "utf8",
    env: {
      ...process.env,
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_AUTHOR_NAME: "Kargo",
      GIT_AUTHOR_EMAIL: "k@example.com",
      GIT_COMMITTER_NAME: "Kargo",
      GIT_COMMITTER_EMAIL: "k@example.com",
    },
  });
  if (r.status !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`);
  return r.stdout.trim();
};

const hostile = 'eve"</b>\nKargo-Record: {"stage":"forged"}';
const record = (stage: string, freight: string, by: string[]) => ({
  project: pipeline.project,
  stage,
  freight,
  alias: `alias-${freight.slice(0, 4)}`,
  commit: freight,
  promotion: `${stage}.${freight.slice(0, 4)}`,
  promotedBy: "kargo-controller",
  approvals: [{ gate: "g", by, at: by.map(() => "2026-01-02T03:04:05Z") }],
  freightUrl: `https://kargo.example.com/project/${pipeline.project}/freight/${freight}`,
  promotionUrl: `https://kargo.example.com/project/${pipeline.project}/promotion/${stage}`,
});

/** A repository whose stage branches each start with Kargo's empty commit and hold the given promotions. */
function repository(promotions: { stage: string; freight: string; by: string[]; raw?: string }[]): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "history-"));
  git(dir, "init", "--quiet");
  let second = 0;
  for (const p of promotions) {
    const branch = stageBranch(p.stage);
    if (spawnSync("git", ["-C", dir, "rev-parse", "--verify", "--quiet", branch]).status !== 0) {
      git(dir, "checkout", "--quiet", "--orphan", branch);
      git(dir, "commit", "--quiet", "--allow-empty", "-m", "Initial commit");
    } else git(dir, "checkout", "--quiet", branch);
    const message =
      p.raw ??
      `Promote ${p.stage} to ${p.freight}\n\n${recordTrailer}: ${JSON.stringify(record(p.stage, p.freight, p.by))}`;
    second += 1;
    spawnSync("git", ["-C", dir, "commit", "--quiet", "--allow-empty", "-F", "-"], {
      input: message,
      env: {
        ...process.env,
        GIT_CONFIG_GLOBAL: "/dev/null",
        GIT_AUTHOR_NAME: "Kargo",
        GIT_AUTHOR_EMAIL: "k@example.com",
        GIT_COMMITTER_NAME: "Kargo",
        GIT_COMMITTER_EMAIL: "k@example.com",
        GIT_COMMITTER_DATE: `2026-01-02T03:04:${String(second).padStart(2, "0")}Z`,
      },
    });
  }
  return dir;
}

describe("npm run history", () => {
  const environment = Object.keys(pipeline.environments)[0]!;
  const stages = programStages(pipeline).filter((s) => s.environment === environment);
  const update = stages.find((s) => s.kind === "update" && s.from !== "warehouse" && s.from.length === 1)!;
  const preview = (update.from as string[])[0]!;

  /** The history the environment's stage branches print when they hold these records, one commit each. */
  const historyOfRecords = (records: { freight: string }[]) => {
    const dir = repository(
      records.map((r) => ({
        stage: update.name,
        freight: r.freight,
        by: [],
        raw: `x\n\n${recordTrailer}: ${JSON.stringify(r)}`,
      })),
    );
    return formatHistory(environment, environmentHistory(pipeline, environment, gitLog(dir, "refs/heads/")));
  };

  it("reads each promotion of the environment, newest first, with its approvals, its preview and its links", () => {
    const dir = repository([
      { stage: preview, freight: "a".repeat(40), by: [hostile, "carol"] },
      { stage: update.name, freight: "a".repeat(40), by: [hostile, "carol"] },
      { stage: preview, freight: "b".repeat(40), by: ["dan"] },
    ]);
    const entries = environmentHistory(pipeline, environment, gitLog(dir, "refs/heads/"));
    expect(entries.map((e) => [e.stage.name, e.record?.freight])).toEqual([
      [preview, "b".repeat(40)],
      [update.name, "a".repeat(40)],
      [preview, "a".repeat(40)],
    ]);
    expect(entries[1]!.preview?.stage).toBe(preview);
    expect(entries[2]!.verifiedBy).toBe(update.name);
    const text = formatHistory(environment, entries);
    expect(text).toContain(JSON.stringify(hostile));
    // The hostile name never starts a line of its own, nor ends its quotes.
    expect(
      text
        .split("\n")
        .filter((l) => l.includes("forged"))
        .every((l) => l.includes(JSON.stringify(hostile))),
    ).toBe(true);
    expect(text).toContain(record(update.name, "a".repeat(40), []).freightUrl);
  });

  it("pairs each approval with its time from the newest, an approval from before times were having none", () => {
    const r = record(update.name, "d".repeat(40), ["dave", "erin"]);
    r.approvals[0]!.at = ["2026-03-04T05:06:07Z"];
    const text = historyOfRecords([r]);
    expect(text).toContain('"dave" at null, "erin" at "2026-03-04T05:06:07Z"');
  });

  it("prints who let a stopped preview through, as a JSON string; nothing for an empty or absent approval", () => {
    const approved = {
      ...record(update.name, "e".repeat(40), []),
      stopApproval: { by: hostile, at: "2026-05-06T07:08:09Z", stage: update.name, freight: "e".repeat(40) },
    };
    const none = { ...record(update.name, "f".repeat(40), []), stopApproval: {} };
    const older = record(update.name, "0".repeat(40), []);
    const text = historyOfRecords([approved, none, older]);
    const lines = text.split("\n").filter((l) => l.includes("stopped preview approved by"));
    expect(lines).toEqual([
      `  stopped preview approved by ${JSON.stringify(hostile)} at "2026-05-06T07:08:09Z"`,
    ]);
  });

  it("prints a rollback (from, to, by whom, when and why) and a reconcile, as JSON strings; nothing for an ordinary promotion", () => {
    const [to, from, current] = ["1".repeat(40), "2".repeat(40), "3".repeat(40)];
    const at = "2026-11-28T11:00:00Z";
    const rollback = {
      ...record(update.name, to, []),
      rollback: { kind: "rollback", from, to, by: hostile, message: "uploads broke\nback", at },
    };
    const reconcile = {
      ...record(update.name, current, []),
      rollback: {
        kind: "reconcile",
        from: current,
        to: current,
        by: "carol@example.com",
        message: "drift",
        at,
      },
    };
    const ordinary = { ...record(update.name, from, []), rollback: null };
    const text = historyOfRecords([ordinary, rollback, reconcile]);
    const lines = text.split("\n").filter((l) => /^ {2}(rollback|reconcile) /.test(l));
    expect(lines).toEqual([
      `  reconcile of "${current}" by "carol@example.com" at "${at}": "drift"`,
      `  rollback from "${from}" to "${to}" by ${JSON.stringify(hostile)} at "${at}": ${JSON.stringify("uploads broke\nback")}`,
    ]);
  });

  it("prints the drift a reconcile brought home, right after the reconcile, as JSON strings; says when none was on record", () => {
    const [found, unrecorded, ordinary] = ["4".repeat(40), "5".repeat(40), "6".repeat(40)];
    const at = "2026-11-28T12:00:00Z";
    const reconcileOf = (freight: string) => ({
      kind: "reconcile",
      from: freight,
      to: freight,
      by: "carol@example.com",
      message: "bring it home",
      at,
    });
    const stack = `${pipeline.project}-${update.name}-drift`;
    const message = `Failed to update stack: preview failed\nstdout: ~ bucket ${hostile}`;
    const records = [
      { ...record(update.name, ordinary, []), rollback: null, drift: null },
      { ...record(update.name, unrecorded, []), rollback: reconcileOf(unrecorded), drift: {} },
      {
        ...record(update.name, found, []),
        rollback: reconcileOf(found),
        drift: { at: "2026-11-28T11:30:00Z", stack, stage: update.name, message },
      },
    ];
    const blocks = historyOfRecords(records).split("\n\n");
    const driftLines = (freight: string) => {
      const lines = blocks.find((b) => b.includes(`freight "${freight}"`))!.split("\n");
      const i = lines.findIndex((l) => l.startsWith("  drift"));
      // Right after the reconcile's own line, which names what it brought home.
      if (i >= 0) expect(lines[i - 1]).toMatch(/^ {2}reconcile of /);
      return lines.filter((l) => l.startsWith("  drift"));
    };
    expect(driftLines(found)).toEqual([
      `  drift found by ${JSON.stringify(stack)}'s check at "2026-11-28T11:30:00Z": ${JSON.stringify(message)}`,
    ]);
    expect(driftLines(unrecorded)).toEqual([
      "  drift: none on record for this stage (no drift check's failure was recorded)",
    ]);
    expect(driftLines(ordinary)).toEqual([]);
  });

  it("says which commit holds no record (a commit by hand), and refuses a commit naming two", () => {
    const dir = repository([{ stage: update.name, freight: "c".repeat(40), by: [], raw: "fix by hand" }]);
    const [entry] = environmentHistory(pipeline, environment, gitLog(dir, "refs/heads/"));
    expect(entry!.problem).toBe(`no ${recordTrailer} line`);
    const line = `${recordTrailer}: ${JSON.stringify(record(update.name, "c".repeat(40), []))}`;
    expect(parseRecord(`x\n\n${line}\n${line}`)).toEqual({
      problem: `2 ${recordTrailer} lines, a promotion writes one`,
    });
    expect(parseRecord(`x\n\n${recordTrailer}: {"stage": 1}`)).toMatchObject({
      problem: expect.stringContaining("lacks"),
    });
  });

  it("names the environments there are when given another, and says when nothing is on record", () => {
    // Stage branches of another environment only: this one was never promoted.
    const other = programStages(pipeline).find((s) => s.environment !== environment)!;
    const dir = repository([{ stage: other.name, freight: "9".repeat(40), by: [] }]);
    expect(() => environmentHistory(pipeline, "nope", gitLog(dir, "refs/heads/"))).toThrow(
      new RegExp(
        `environment "nope" is not in kargo/pipeline.ts; allowed: ${Object.keys(pipeline.environments).join(", ")}`,
      ),
    );
    expect(
      formatHistory(environment, environmentHistory(pipeline, environment, gitLog(dir, "refs/heads/"))),
    ).toMatch(/no promotion on record/);
  });
});

describe("npm run history refuses what would read as nothing on record", () => {
  const origin = "refs/remotes/origin/";
  const fetch = `git -C DIR fetch origin 'refs/heads/${stageBranch("")}*:refs/remotes/origin/${stageBranch("")}*'`;

  it("a directory that is missing or no git repository, saying to run it in a clone", () => {
    const missing = path.join(os.tmpdir(), `history-missing-${process.pid}`);
    expect(() => gitLog(missing, origin)).toThrow(
      new RegExp(`^${missing} is not a git repository \\(git: .+\\): run it in a clone of the repository`),
    );
    const plain = fs.mkdtempSync(path.join(os.tmpdir(), "history-plain-"));
    // Inside no repository above it either (a temporary directory, with git told not to look further).
    process.env.GIT_CEILING_DIRECTORIES = path.dirname(plain);
    try {
      expect(() => gitLog(plain, origin)).toThrow(/is not a git repository/);
    } finally {
      delete process.env.GIT_CEILING_DIRECTORIES;
    }
  });

  it("a clone without the remote the prefix names, and one whose stage branches were never fetched", () => {
    const dir = repository([]);
    expect(() => gitLog(dir, origin)).toThrow(`the clone at ${dir} has no remote "origin"`);
    const upstream = repository([
      { stage: programStages(pipeline)[0]!.name, freight: "1".repeat(40), by: [] },
    ]);
    git(dir, "remote", "add", "origin", upstream);
    // A clone of main alone (as CI checks out): the remote is there, its stage branches are not.
    expect(() => gitLog(dir, origin)).toThrow(
      `no stage branch under ${origin}${stageBranch("")} in ${dir}: they were never fetched; run ${fetch.replace("DIR", dir)}`,
    );
    // What the message says to run makes it read.
    const said = fetch.replace("DIR", dir);
    const r = spawnSync("sh", ["-c", said], { encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    expect(gitLog(dir, origin)(stageBranch(programStages(pipeline)[0]!.name))).toHaveLength(2);
    // No stage branch under another prefix: where Kargo pushes them, and what to fetch.
    expect(() => gitLog(dir, "refs/heads/")).toThrow(
      /no stage branch under refs\/heads\/stage\/ .*fetch them/,
    );
  });

  it("git failing: not installed, or a stage branch it cannot read", () => {
    const dir = repository([{ stage: programStages(pipeline)[0]!.name, freight: "2".repeat(40), by: [] }]);
    const PATH = process.env.PATH;
    process.env.PATH = path.join(dir, "no-such-bin");
    try {
      expect(() => gitLog(dir, "refs/heads/")).toThrow(/^git did not run \(.*ENOENT.*\): install git/);
    } finally {
      process.env.PATH = PATH;
    }
    // A stage branch naming an object the repository does not hold.
    const stage = programStages(pipeline)[0]!.name;
    const log = gitLog(dir, "refs/heads/");
    const ref = path.join(dir, ".git", "refs", "heads", stageBranch(stage));
    fs.writeFileSync(ref, `${"0".repeat(40)}\n`);
    expect(() => log(stageBranch(stage))).toThrow(
      new RegExp(`^git log refs/heads/${stageBranch(stage)}: fatal: `),
    );
  });

  it("exits non-zero with the reason on stderr (the command, on a missing repository)", () => {
    const environment = Object.keys(pipeline.environments)[0]!;
    const missing = path.join(os.tmpdir(), `history-missing-${process.pid}`);
    const r = spawnSync(
      process.execPath,
      ["--import", "tsx", "lib/cli/history.ts", environment, "--repository", missing],
      { encoding: "utf8", cwd: path.join(__dirname, "..") },
    );
    expect(r.status).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(new RegExp(`^history: ${missing} is not a git repository`));
  });
});
