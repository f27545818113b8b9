// `npm run upstream`: the snapshots the tripwires read (test/internal/upstream, test/health), fetched over git.
// No network here: the repositories it fetches from are built by the test under a file:// URL
// ($UPSTREAM_GIT_URL), shaped as GitHub serves them (owner/name.git, the pinned tag, partial clones allowed),
// and taken away once the command has run, so whatever the snapshot reads afterwards it holds itself.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { repoRoot } from "../lib/cli/plan/projects";
import { mirrorAll, mirrorDir, mirrorOne, readManifest, snapshotDir } from "../lib/cli/upstream/mirror";
import { pinned } from "../lib/crds/sources";

const gitEnv = {
  ...process.env,
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_AUTHOR_NAME: "Upstream",
  GIT_AUTHOR_EMAIL: "u@example.com",
  GIT_COMMITTER_NAME: "Upstream",
  GIT_COMMITTER_EMAIL: "u@example.com",
  GIT_TERMINAL_PROMPT: "0",
};
const git = (dir: string, ...args: string[]) =>
  spawnSync("git", ["-C", dir, ...args], { encoding: "utf8", env: gitEnv });
const must = (dir: string, ...args: string[]) => {
  const r = git(dir, ...args);
  if (r.status !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
};
const made: string[] = [];
const tmp = (prefix: string) => {
  made.push(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  return made[made.length - 1];
};
afterAll(() => made.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

/**
 * An upstream repository `repo` under `origins`, as a remote serves it: for each tag, its files (path to
 * contents), each tag a commit over the one before.
 */
function upstream(origins: string, repo: string, tags: [string, Record<string, string>][]) {
  const work = tmp("upstream-work-");
  must(work, "init", "--quiet");
  for (const [tag, files] of tags) {
    for (const [file, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(work, file)), { recursive: true });
      fs.writeFileSync(path.join(work, file), text);
    }
    must(work, "add", "--all");
    must(work, "commit", "--quiet", "--allow-empty", "-m", tag);
    must(work, "tag", tag);
  }
  const bare = snapshotDir(origins, repo);
  fs.mkdirSync(path.dirname(bare), { recursive: true });
  must(work, "clone", "--quiet", "--bare", work, bare);
  must(bare, "config", "uploadpack.allowFilter", "true");
  fs.rmSync(work, { recursive: true });
}

/** Runs `body` with the remotes out of reach, so a read the snapshot cannot answer itself fails. */
function offline<T>(origins: string, body: () => T): T {
  fs.renameSync(origins, `${origins}.away`);
  try {
    return body();
  } finally {
    fs.renameSync(`${origins}.away`, origins);
  }
}

describe("npm run upstream", () => {
  const manifest = readManifest(path.join(repoRoot, "test", "upstream-mirrors.json"));

  it("fetches every snapshot the manifest lists at its pin, with every file its models follow, for reading offline", () => {
    const origins = tmp("upstream-origins-");
    const cache = tmp("upstream-cache-");
    const wanted = Object.entries(manifest.snapshots).map(([repo, name]) => ({
      repo,
      tag: pinned[name as keyof typeof pinned],
      files: [
        ...new Set(
          manifest.models.flatMap((m) => m.mirrors.filter((f) => f.repo === repo).map((f) => f.path)),
        ),
      ],
    }));
    expect(wanted.length).toBeGreaterThan(0);
    for (const w of wanted)
      upstream(origins, w.repo, [[w.tag, Object.fromEntries(w.files.map((f) => [f, `${w.repo} ${f}\n`]))]]);
    const run = spawnSync(
      process.execPath,
      ["--import", "tsx", path.join(repoRoot, "lib", "cli", "upstream.ts")],
      {
        encoding: "utf8",
        env: { ...gitEnv, UPSTREAM_GIT_URL: `file://${origins}`, UPSTREAM_MIRROR_DIR: cache },
      },
    );
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    offline(origins, () => {
      for (const w of wanted) {
        // As test/internal/upstream/snapshot.go reads it: owner/name.git under the folder, the tag, the path.
        const dir = path.join(cache, ...w.repo.split("/")) + ".git";
        for (const f of w.files) expect(must(dir, "show", `${w.tag}:${f}`)).toBe(`${w.repo} ${f}\n`);
      }
    });
  });

  it("fetches the tag's trees but, of its files, only those listed; a listed file the tag lacks is named", () => {
    const origins = tmp("upstream-origins-");
    const cache = tmp("upstream-cache-");
    upstream(origins, "acme/widget", [
      ["v1.0.0", { "a.go": "a\n", "pkg/b.go": "b\n", "big.bin": "x".repeat(1e5) }],
    ]);
    const got = mirrorOne(cache, "acme/widget", "v1.0.0", ["a.go", "pkg/b.go", "gone.go"], {
      UPSTREAM_GIT_URL: `file://${origins}`,
    });
    expect(got).toMatchObject({ files: 2, missing: ["gone.go"], dir: snapshotDir(cache, "acme/widget") });
    offline(origins, () => {
      expect(must(got.dir, "show", "v1.0.0:pkg/b.go")).toBe("b\n");
      expect(must(got.dir, "ls-tree", "--name-only", "v1.0.0")).toContain("big.bin");
      expect(git(got.dir, "cat-file", "-e", "v1.0.0:big.bin").status).not.toBe(0);
    });
  });

  it("fetches the new tag into the same snapshot when a pin moves", () => {
    const origins = tmp("upstream-origins-");
    const cache = tmp("upstream-cache-");
    upstream(origins, "acme/widget", [
      ["v1.0.0", { "a.go": "one\n" }],
      ["v1.1.0", { "a.go": "two\n" }],
    ]);
    const env = { UPSTREAM_GIT_URL: `file://${origins}/` };
    mirrorOne(cache, "acme/widget", "v1.0.0", ["a.go"], env);
    const again = mirrorOne(cache, "acme/widget", "v1.1.0", ["a.go"], env);
    offline(origins, () => {
      expect(must(again.dir, "show", "v1.1.0:a.go")).toBe("two\n");
      expect(must(again.dir, "show", "v1.0.0:a.go")).toBe("one\n");
    });
  });

  it("names the repository, the tag and the URL when the tag cannot be fetched", () => {
    const origins = tmp("upstream-origins-");
    upstream(origins, "acme/widget", [["v1.0.0", { "a.go": "a\n" }]]);
    const url = `file://${origins}`;
    expect(() =>
      mirrorOne(tmp("upstream-cache-"), "acme/widget", "v9.9.9", ["a.go"], { UPSTREAM_GIT_URL: url }),
    ).toThrow(
      `acme/widget v9.9.9 from ${url}/acme/widget.git: git fetch: fatal: couldn't find remote ref refs/tags/v9.9.9`,
    );
  });

  it("fetches each snapshot at the tag lib/crds/sources.ts pins under the name the manifest gives", () => {
    const origins = tmp("upstream-origins-");
    upstream(origins, "acme/widget", [[pinned.pko, { "a.go": "a\n" }]]);
    const got = mirrorAll(
      {
        snapshots: { "acme/widget": "pko" },
        models: [
          {
            mirrors: [
              { repo: "acme/widget", path: "a.go" },
              { repo: "acme/other", path: "b.go" },
            ],
          },
        ],
      },
      tmp("upstream-cache-"),
      { UPSTREAM_GIT_URL: `file://${origins}` },
    );
    expect(got.map(({ repo, tag, files }) => ({ repo, tag, files }))).toEqual([
      { repo: "acme/widget", tag: pinned.pko, files: 1 },
    ]);
  });

  it("refuses a snapshot the manifest does not pin, naming it and what is allowed", () => {
    const file = path.join(tmp("upstream-manifest-"), "m.json");
    fs.writeFileSync(file, JSON.stringify({ snapshots: { "acme/widget": "nowhere" }, models: [] }));
    expect(() => readManifest(file)).toThrow(
      /snapshots: "acme\/widget".*"nowhere" a name lib\/crds\/sources.ts pins \(kargo, pko/,
    );
  });

  it("keeps the snapshots where Go's os.UserCacheDir puts a user's cache, unless $UPSTREAM_MIRROR_DIR says where", () => {
    const tail = path.join("infra-change-platform", "upstream");
    expect(mirrorDir({ UPSTREAM_MIRROR_DIR: "/srv/m" }, "linux", "/h")).toBe("/srv/m");
    expect(mirrorDir({}, "linux", "/h")).toBe(path.join("/h", ".cache", tail));
    expect(mirrorDir({ XDG_CACHE_HOME: "/c" }, "linux", "/h")).toBe(path.join("/c", tail));
    expect(mirrorDir({ XDG_CACHE_HOME: "/c" }, "darwin", "/h")).toBe(
      path.join("/h", "Library", "Caches", tail),
    );
  });
});
