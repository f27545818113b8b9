// The rollback's up-front check: each stage's Stack template at the older commit against today's. The API
// server admits only today's template of a stage (lib/pipeline/admission.ts: the Stack's name and spec, but
// the commit a promotion sets), so an older one would be refused at its sync, half-way through a rollback.
// Checked for every stage before anything is promoted: all or nothing.
import { spawnSync } from "node:child_process";
import * as path from "node:path";
import YAML from "yaml";
import { isDeepStrictEqual } from "node:util";
import { driftManifestFile, stackManifestFile } from "./pipeline/names";
import type { Pipeline } from "./pipeline/schema";
import { renderStacks } from "./pipeline/stacks";

/** The promoted field: its value at any commit is the promotion's to set, never a difference. */
const PROMOTED = "commit";

/** What the admission policy holds a Stack to: its name and its spec, without the promoted commit. */
function admitted(text: string): unknown {
  const doc = YAML.parse(text) as { metadata?: { name?: unknown }; spec?: Record<string, unknown> } | null;
  const spec = { ...(doc?.spec ?? {}) };
  delete spec[PROMOTED];
  return { metadata: { name: doc?.metadata?.name }, spec };
}

/** The field paths where two values differ (`spec.workspaceTemplate.spec.image`, `spec.env[1].value`). */
export function differingPaths(a: unknown, b: unknown, at = ""): string[] {
  if (isDeepStrictEqual(a, b)) return [];
  const isObject = (v: unknown): v is Record<string, unknown> =>
    typeof v === "object" && v !== null && !Array.isArray(v);
  if (Array.isArray(a) && Array.isArray(b)) {
    return Array.from({ length: Math.max(a.length, b.length) }, (_, i) =>
      differingPaths(a[i], b[i], `${at}[${i}]`),
    ).flat();
  }
  if (isObject(a) && isObject(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return keys.flatMap((k) => differingPaths(a[k], b[k], at ? `${at}.${k}` : k));
  }
  return [at || "(the whole document)"];
}

/**
 * Where a stage's template at an older commit differs from `today`'s (its text as `npm run stacks` renders
 * it): field paths, or why there is nothing to compare (undefined: no such file).
 */
export function templateDifferences(
  stage: string,
  today: string | undefined,
  older: string | undefined,
): string[] {
  if (today === undefined) return [`no template today: ${stage} is not a stage of kargo/pipeline.ts`];
  if (older === undefined) return ["the whole file: the stage had no template at that commit"];
  return differingPaths(admitted(older), admitted(today));
}

/**
 * `git show <commit>:<stacks.dir>/<name>` in `repository` (the stage's Stack, or `name` such as its drift
 * check's); undefined when the commit lacks the file.
 */
export function templateAt(
  repository: string,
  p: Pipeline,
  commit: string,
  stage: string,
  name = stackManifestFile(stage),
): string | undefined {
  const file = path.posix.join(path.posix.normalize(p.stacks.dir), name);
  const r = spawnSync("git", ["-C", repository, "cat-file", "-e", `${commit}^{commit}`], {
    encoding: "utf8",
  });
  if (r.error) throw new Error(`git did not run (${r.error.message}): install git, or put it on PATH`);
  if (r.status !== 0)
    throw new Error(
      `commit ${commit} is not in the clone at ${repository}: run git -C ${repository} fetch origin, then again`,
    );
  const show = spawnSync("git", ["-C", repository, "show", `${commit}:${file}`], {
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
  return show.status === 0 ? show.stdout : undefined;
}

export interface TemplateRefusal {
  stage: string;
  /** The template's file under stacks.dir: the stage's Stack, or an update stage's drift check. */
  file: string;
  fields: string[];
}

/**
 * Every stage whose templates at `commit` the API server would refuse today, with the fields: its Stack's,
 * and an update stage's drift check's, which its promotion copies from the same commit (lib/pipeline/drift.ts).
 */
export function templateRefusals(
  repository: string,
  p: Pipeline,
  commit: string,
  stages: string[],
): TemplateRefusal[] {
  const today = renderStacks(p);
  return stages
    .flatMap((stage) =>
      [stackManifestFile(stage), driftManifestFile(stage)]
        .filter((file, i) => i === 0 || today.has(file))
        .map((file) => ({
          stage,
          file,
          fields: templateDifferences(stage, today.get(file), templateAt(repository, p, commit, stage, file)),
        })),
    )
    .filter((r) => r.fields.length > 0);
}

/** The refusal as the rollback prints it. */
export function refusalText(p: Pipeline, commit: string, refusals: TemplateRefusal[]): string {
  return [
    `refused: the Stack template of ${refusals.length} stage(s) at ${commit} differs from today's, which is all the API server admits; nothing was promoted. Revert on main instead.`,
    ...refusals.map(
      (r) => `  ${path.posix.join(p.stacks.dir, r.file)} (stage ${r.stage}): ${r.fields.join(", ")}`,
    ),
  ].join("\n");
}
