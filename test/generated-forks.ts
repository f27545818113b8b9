// Forks of kargo/pipeline.ts at the schema's limits and in the shapes docs/make-it-yours.md allows, for
// test/generated-forks.test.ts: the fork's own project, source, stacks and verification, with environments
// side by side, chained or in diamonds (up to MAX_ENVIRONMENTS), programs after the fork's own in every
// runtime with a default image, in dependency diamonds (up to MAX_PROGRAMS, so up to MAX_PROGRAM_STAGES
// program stages), and each environment's risk policy in one of the forms the docs say work, the older
// names included. Each is written into a throwaway checkout (every program's folder with its Pulumi.yaml,
// lock files and a stack config per environment) and validated there, as a fork's would be.
import { pipeline as definition } from "../kargo/pipeline";
import type { Pipeline, PipelineInput } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import { packageJson, packageLock, tempRepo, writeProgram } from "./checkout-support";

type StageInput = PipelineInput["stages"][number];
type EnvironmentInput = PipelineInput["environments"][string];

export interface ForkShape {
  /** Environments in all, the fork's own replaced. */
  environments: number;
  /** Each behind a gate from the Warehouse; each behind the one before; or pairs side by side, joined. */
  layout: "side by side" | "chained" | "diamonds";
  /** Programs in all: as many of the fork's own as leave room for one of each runtime, then generated ones. */
  programs: number;
  /** The generated programs: independent, or in diamonds (a; b and c after a; d after b and c; ...). */
  dependencies: "none" | "diamonds";
  /** Risk policies in the older names (destructiveChangeApprovers, protected) where the docs allow them. */
  olderNames?: boolean;
}

/** The runtimes with a default workspace image, and the files each needs to pin what it installs. */
const runtimes: { runtime: string; files: Record<string, string> }[] = [
  { runtime: "yaml", files: {} },
  {
    runtime: "{ name: nodejs, options: { packagemanager: npm } }",
    files: {
      "package.json": packageJson,
      "package-lock.json": packageLock({ "@pulumi/pulumi": "3.270.0" }),
      "index.ts": "export {};\n",
    },
  },
  {
    runtime: "{ name: python, options: { toolchain: uv } }",
    files: { "pyproject.toml": "", "uv.lock": "version = 1\n", "__main__.py": "" },
  },
  {
    runtime: "go",
    files: {
      "go.mod": "module zz\n\ngo 1.24\n\nrequire github.com/pulumi/pulumi/sdk/v3 v3.270.0\n",
      "go.sum": "",
      "main.go": "package main\n",
    },
  },
];

/** The fork's approver group: its first gate's. */
const approvers = definition.stages.find((s) => s.kind === "gate")!.approvers;

/** Environment `i`'s risk policy: every form the docs give, in turn, in the new names or the older ones. */
function policy(i: number, olderNames: boolean): Omit<EnvironmentInput, "pulumiStack"> {
  const forms: Omit<EnvironmentInput, "pulumiStack">[] = olderNames
    ? [
        { destructiveChangeApprovers: approvers },
        { protected: false },
        { protected: true, destructiveChangeApprovers: approvers },
        { stopOn: ["loss"], deciders: approvers },
      ]
    : [
        { stopOn: ["loss"], deciders: approvers },
        { deciders: approvers },
        { stopEveryPreview: true, deciders: approvers },
        { ephemeral: true },
        { stopOn: [] },
        { stopOn: ["cost", "exposure", "loss", "privilege"], deciders: approvers },
      ];
  return forms[i % forms.length]!;
}

/** Where environment `i`'s gate takes Freight from, in a layout. */
function gateFrom(layout: ForkShape["layout"], i: number): Pick<StageInput, "from" | "requireAll"> {
  if (i === 0 || layout === "side by side") return { from: "warehouse" };
  if (layout === "chained") return { from: [`f${i - 1}`] };
  // Diamonds: f0; f1 and f2 after f0; f3 after both; f4 and f5 after f3; ...
  if (i % 3 === 0) return { from: [`f${i - 2}`, `f${i - 1}`], requireAll: true };
  return { from: [`f${i - (i % 3)}`] };
}

/** Program `k` of the generated ones: in diamonds, as the environments are. */
const programDependencies = (k: number, dependencies: ForkShape["dependencies"]): string[] =>
  dependencies === "none" || k === 0 ? [] : k % 3 === 0 ? [`g${k - 2}`, `g${k - 1}`] : [`g${k - (k % 3)}`];

/** The fork's definition in `shape`, and its checkout. */
export function generatedFork(shape: ForkShape): { input: PipelineInput; root: string } {
  const names = Array.from({ length: shape.environments }, (_, i) => `f${i}`);
  const environments = Object.fromEntries(
    names.map((e, i) => [e, { pulumiStack: e, ...policy(i, shape.olderNames ?? false) }]),
  );
  const stages = names.flatMap((e, i): StageInput[] => [
    { name: `${e}g`, kind: "gate", ...gateFrom(shape.layout, i), approvers },
    { name: `${e}p`, kind: "preview", environment: e, from: [`${e}g`] },
    { name: e, kind: "update", environment: e, from: [`${e}p`] },
  ]);
  // The fork's own programs first, leaving room for one generated program of each runtime; any of its own
  // whose dependency is left out goes too.
  let own = definition.programs.slice(0, Math.max(0, shape.programs - runtimes.length));
  for (let kept = -1; kept !== own.length;) {
    kept = own.length;
    own = own.filter((x) => (x.dependsOn ?? []).every((d) => own.some((o) => o.name === d)));
  }
  const generated = Array.from({ length: shape.programs - own.length }, (_, k) => ({
    name: `g${k}`,
    dir: `programs/zz-generated-${k}`,
    dependsOn: programDependencies(k, shape.dependencies),
  }));
  const input: PipelineInput = { ...definition, programs: [...own, ...generated], environments, stages };
  const root = tempRepo(undefined, environments);
  generated.forEach((x, k) => {
    const { runtime, files } = runtimes[k % runtimes.length]!;
    writeProgram(
      root,
      { dir: x.dir, project: `${definition.project}-${x.name}`, runtime, files },
      environments,
    );
  });
  return { input, root };
}

/** The fork in `shape`, validated in its checkout. */
export function validatedFork(shape: ForkShape): Pipeline {
  const { input, root } = generatedFork(shape);
  return validatePipeline(input, { repoRoot: root });
}

/** Which runtimes a generated fork's programs run, for the test to say it met every one. */
export const runtimeNames = runtimes.map(({ runtime }) => runtime.match(/^(?:\{ name: )?(\w+)/)![1]!);
