// `npm run programs [-- --environment NAME] [--changed]`: the promoted programs of kargo/pipeline.ts and
// their update stages, as JSON, for the workflows. preview.yml previews each program whose files a pull
// request changes (`--changed` reads the changed paths, one a line, on stdin) against one environment's stack
// (`--environment`); `stages` lists each update stage with its stack, for a person or a script (the stages'
// drift is checked in the cluster: lib/pipeline/drift.ts).
import { withoutSourceMaps } from "./plan/fast-start";
import * as fs from "node:fs";
import { parseArgs } from "node:util";
import { pipeline as definition } from "../../kargo/pipeline";
import { programStages } from "../pipeline/graph";
import { PipelineError, type Pipeline, type Program } from "../pipeline/schema";
import { parsePathSelector, selectorMatches } from "../pipeline/selectors";
import { validatePipeline } from "../pipeline/validate";

export interface ProgramEntry {
  name: string;
  /** Its folder, repository-relative: the work-dir of its previews. */
  dir: string;
  /** Its Pulumi project and runtime, from its Pulumi.yaml. */
  project: string;
  runtime: string;
  /** With `--environment`: that environment and the program's stack there, `<org>/<project>/<stack>`. */
  environment?: string;
  stack?: string;
}

/** A program's update stage: the Kargo stage whose branch (stage/<name>) holds what it last ran. */
export interface UpdateStageEntry {
  name: string;
  program: string;
  environment: string;
  stack: string;
  dir: string;
  runtime: string;
}

export interface ProgramsReport {
  programs: ProgramEntry[];
  stages: UpdateStageEntry[];
}

/** A bad option (exit status 2). */
export class UsageError extends Error {}

const usage = "usage: npm run programs -- [--environment NAME] [--changed < changed-paths]";

/** A program's Pulumi stack in an environment, as its PKO Stack names it. */
export const stackOf = (p: Pipeline, program: Program, environment: string) =>
  `${p.pulumi.organization}/${program.project}/${p.environments[environment]!.pulumiStack}`;

/**
 * The environment previews run against: `requested`, or when it is empty the environment Freight reaches
 * first (that of the first update stage in the pipeline's order).
 */
export function previewEnvironment(p: Pipeline, requested: string): string {
  if (requested === "")
    return programStages(p).find((s) => s.kind === "update")?.environment ?? Object.keys(p.environments)[0]!;
  if (!Object.hasOwn(p.environments, requested))
    throw new UsageError(
      `--environment: "${requested}" is not an environment of kargo/pipeline.ts; environments: ${Object.keys(p.environments).join(", ")}`,
    );
  return requested;
}

/**
 * Whether a change to `files` (repository-relative) changes the program, as the Warehouse decides whether a
 * commit is Freight: a file in its folder or its includePaths, and not in source.excludePaths.
 */
export function changesProgram(p: Pipeline, program: Program, files: string[]): boolean {
  const selectors = (list: string[]) => list.map(parsePathSelector).filter((s) => typeof s !== "string");
  const include = selectors([program.dir, ...program.includePaths]);
  const exclude = selectors(p.source.excludePaths);
  return files.some(
    (file) => include.some((s) => selectorMatches(s, file)) && !exclude.some((s) => selectorMatches(s, file)),
  );
}

export function programsReport(
  p: Pipeline,
  options: { environment?: string; changed?: string[] } = {},
): ProgramsReport {
  const environment =
    options.environment === undefined ? undefined : previewEnvironment(p, options.environment);
  const changed = options.changed;
  const programs = p.programs
    .filter((x) => changed === undefined || changesProgram(p, x, changed))
    .map((x): ProgramEntry => ({
      name: x.name,
      dir: x.dir,
      project: x.project,
      runtime: x.runtime,
      ...(environment === undefined ? {} : { environment, stack: stackOf(p, x, environment) }),
    }));
  const stages = programStages(p)
    .filter((s) => s.kind === "update")
    .map((s): UpdateStageEntry => {
      const x = p.programs.find((y) => y.name === s.program)!;
      return {
        name: s.name,
        program: x.name,
        environment: s.environment,
        stack: stackOf(p, x, s.environment),
        dir: x.dir,
        runtime: x.runtime,
      };
    });
  return { programs, stages };
}

function main(args: string[]): number {
  let values;
  try {
    values = parseArgs({
      args,
      options: { environment: { type: "string" }, changed: { type: "boolean" } },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (err) {
    console.error(`${(err as Error).message}\n${usage}`);
    return 2;
  }
  try {
    const changed = values.changed
      ? fs
          .readFileSync(0, "utf8")
          .split("\n")
          .map((l) => l.trim())
          .filter(Boolean)
      : undefined;
    const report = programsReport(validatePipeline(definition), {
      environment: values.environment,
      changed,
    });
    console.log(JSON.stringify(report));
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`${err.message}\n${usage}`);
      return 2;
    }
    if (!(err instanceof PipelineError)) throw err;
    console.error(err.message);
    return 1;
  }
}

if (require.main === module) {
  withoutSourceMaps();
  process.exitCode = main(process.argv.slice(2));
}
