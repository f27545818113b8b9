// The upstream snapshots the tripwires read (test/internal/upstream, test/health): for each repository
// test/upstream-mirrors.json lists under `snapshots`, the tag lib/crds/sources.ts pins it at, fetched over git
// into a cache folder. Only the tag's commit and trees come (depth 1, no blobs), then the blobs of the files
// the manifest's models follow, so a snapshot stays small (Kargo's and PKO's together 0.6 MB at our pins); a
// file the tests read later that is not among them is fetched by git on first read.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { pinned } from "../../crds/sources";

/** test/upstream-mirrors.json, as far as the mirror reads it. */
export interface MirrorManifest {
  /** Repository (owner/name) to the name lib/crds/sources.ts pins it under. */
  snapshots: Record<string, string>;
  models: { mirrors: { repo: string; path: string }[] }[];
}

type Env = Record<string, string | undefined>;

/**
 * The user's cache folder as Go's os.UserCacheDir names it, so `go test` alone finds what this command wrote
 * (test/internal/upstream/snapshot.go, MirrorDir).
 */
export function userCacheDir(env: Env, platform: NodeJS.Platform, home: string): string {
  if (platform === "win32") return env.LocalAppData || path.join(home, "AppData", "Local");
  if (platform === "darwin") return path.join(home, "Library", "Caches");
  return env.XDG_CACHE_HOME || path.join(home, ".cache");
}

/** Where the snapshots are kept: $UPSTREAM_MIRROR_DIR, else infra-change-platform/upstream in the cache folder. */
export const mirrorDir = (env: Env = process.env, platform = process.platform, home = os.homedir()) =>
  env.UPSTREAM_MIRROR_DIR ||
  path.join(userCacheDir(env, platform, home), "infra-change-platform", "upstream");

/** Where a repository is fetched from: https://github.com/<owner>/<name>.git, or under $UPSTREAM_GIT_URL. */
export const remoteUrl = (repo: string, env: Env = process.env) =>
  `${(env.UPSTREAM_GIT_URL || "https://github.com").replace(/\/+$/, "")}/${repo}.git`;

/** The snapshot of `repo` (owner/name): a bare git folder, owner/name.git under the mirror folder. */
export const snapshotDir = (base: string, repo: string) => path.join(base, ...`${repo}.git`.split("/"));

export function readManifest(file: string): MirrorManifest {
  const m = JSON.parse(fs.readFileSync(file, "utf8")) as Partial<MirrorManifest>;
  if (typeof m.snapshots !== "object" || m.snapshots === null || !Array.isArray(m.models))
    throw new Error(`${file}: needs "snapshots" and "models"`);
  for (const [repo, name] of Object.entries(m.snapshots))
    if (!/^[\w.-]+\/[\w.-]+$/.test(repo) || !Object.hasOwn(pinned, name))
      throw new Error(
        `${file}: snapshots: "${repo}" must be an owner/name, and "${name}" a name lib/crds/sources.ts pins (${Object.keys(pinned).join(", ")})`,
      );
  return m as MirrorManifest;
}

export interface Mirrored {
  repo: string;
  tag: string;
  dir: string;
  files: number;
  /** Files the manifest lists that the tag does not hold: their checks will say so. */
  missing: string[];
}

/** git in `dir` (a bare repository): its output, or an error naming the subcommand and what git said. */
function git(dir: string, args: string[], input?: string): string {
  try {
    return execFileSync("git", ["-C", dir, ...args], {
      input,
      encoding: "utf8",
      stdio: ["pipe", "pipe", "pipe"],
      // Never wait on a prompt for credentials: the repositories are public.
      env: { ...process.env, GIT_TERMINAL_PROMPT: "0" },
    });
  } catch (err) {
    const stderr = String((err as { stderr?: unknown }).stderr ?? "").trim();
    throw new Error(
      `git ${args.find((a) => !a.startsWith("-") && !a.includes("="))}: ${stderr || (err as Error).message}`,
    );
  }
}

/** Fetches one repository's pinned tag and the blobs of `files` at it into its snapshot under `base`. */
export function mirrorOne(
  base: string,
  repo: string,
  tag: string,
  files: string[],
  env: Env = process.env,
): Mirrored {
  const dir = snapshotDir(base, repo);
  const url = remoteUrl(repo, env);
  if (!fs.existsSync(path.join(dir, "HEAD"))) {
    fs.mkdirSync(dir, { recursive: true });
    git(dir, ["init", "--quiet", "--bare"]);
    git(dir, ["remote", "add", "origin", url]);
  } else git(dir, ["remote", "set-url", "origin", url]);
  try {
    git(dir, ["fetch", "--quiet", "--depth=1", "--filter=blob:none", "origin", "tag", tag]);
  } catch (err) {
    throw new Error(`${repo} ${tag} from ${url}: ${(err as Error).message}`);
  }
  const present: string[] = [];
  const missing: string[] = [];
  for (const file of files) {
    try {
      present.push(git(dir, ["rev-parse", `${tag}:${file}`]).trim());
    } catch {
      missing.push(file);
    }
  }
  // What git itself runs to fetch a partial clone's missing objects, for all of them in one request.
  if (present.length > 0)
    git(
      dir,
      [
        "-c",
        "fetch.negotiationAlgorithm=noop",
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        "--recurse-submodules=no",
        "origin",
        "--stdin",
      ],
      present.join("\n") + "\n",
    );
  return { repo, tag, dir, files: present.length, missing };
}

/** Every snapshot the manifest lists, at its pin, with the files its models follow. */
export function mirrorAll(manifest: MirrorManifest, base: string, env: Env = process.env): Mirrored[] {
  return Object.entries(manifest.snapshots).map(([repo, name]) => {
    const files = manifest.models.flatMap((m) => m.mirrors.filter((f) => f.repo === repo).map((f) => f.path));
    return mirrorOne(base, repo, pinned[name as keyof typeof pinned], [...new Set(files)].sort(), env);
  });
}
