// The largest pipeline the validation allows, made from the limits in lib/pipeline/schema.ts and nothing
// else: MAX_ENVIRONMENTS environments, each behind a gate of its own with a preview and an update, and
// MAX_PROGRAMS programs (kargo/pipeline.ts's own first, then made-up YAML programs), written into a throwaway
// checkout with a stack config per environment. Its project and stacks namespace are its own, so its
// admission policies can sit beside the example's in one API server. No vitest here: test/kube/largest.ts
// runs it under tsx for the Go harness.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { pipeline as definition } from "../kargo/pipeline";
import { defaultRepoRoot } from "../lib/pipeline/check-repository";
import { MAX_ENVIRONMENTS, MAX_PROGRAMS, type Pipeline, type PipelineInput } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";

/** Short names, so the longest Stack name stays within PKO's limit whatever the example's names are. */
const PROJECT = "max";
const environmentName = (i: number) => `e${i}`;
const programName = (i: number) => `p${i}`;

/** Files of a program's folder that lock its dependencies, copied with its Pulumi.yaml. */
const lockFiles = [
  "Pulumi.yaml",
  "package.json",
  "package-lock.json",
  "pyproject.toml",
  "uv.lock",
  "go.mod",
  "go.sum",
];

/** The definition at the limits, with `environments` and `programs` counts (the limits by default). */
export function largestDefinition(environments = MAX_ENVIRONMENTS, programs = MAX_PROGRAMS): PipelineInput {
  const approvers = ["max-approvers"];
  const envs = Array.from({ length: environments }, (_, i) => environmentName(i));
  const own = definition.programs.slice(0, programs);
  return {
    ...definition,
    project: PROJECT,
    programs: [
      ...own,
      ...Array.from({ length: programs - own.length }, (_, i) => ({
        name: programName(i),
        dir: `programs/${PROJECT}-${programName(i)}`,
      })),
    ],
    stacks: {
      ...definition.stacks,
      namespace: `${PROJECT}-stacks`,
      // Quantities as a fork might write them, in a form Kubernetes does not (whole cores in millicores,
      // GiB in MiB): the Stacks must still survive PKO's updates (lib/pipeline/quantity.ts).
      workspaceResources: { requests: { cpu: "1000m", memory: "1024Mi" }, limits: { memory: "2048Mi" } },
    },
    environments: Object.fromEntries(
      envs.map((e) => [e, { pulumiStack: e, destructiveChangeApprovers: approvers }]),
    ),
    stages: envs.flatMap((e) => [
      { name: `${e}gate`, kind: "gate" as const, from: "warehouse" as const, approvers },
      { name: `${e}preview`, kind: "preview" as const, environment: e, from: [`${e}gate`] },
      { name: e, kind: "update" as const, environment: e, from: [`${e}preview`] },
    ]),
  };
}

/**
 * A checkout holding the definition's programs: the example's with their Pulumi.yaml and lock files, the
 * made-up ones as YAML programs, each with a stack config per environment.
 */
export function checkoutFor(input: PipelineInput): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "largest-pipeline-"));
  for (const project of ["cluster", "cluster-setup", "kargo"]) {
    fs.mkdirSync(path.join(root, project));
    fs.writeFileSync(path.join(root, project, "Pulumi.yaml"), `name: ${project}\nruntime: nodejs\n`);
  }
  for (const x of input.programs) {
    const dir = path.join(root, x.dir);
    fs.mkdirSync(dir, { recursive: true });
    const source = path.join(defaultRepoRoot, x.dir);
    if (fs.existsSync(path.join(source, "Pulumi.yaml"))) {
      for (const f of lockFiles)
        if (fs.existsSync(path.join(source, f))) fs.copyFileSync(path.join(source, f), path.join(dir, f));
    } else {
      fs.writeFileSync(path.join(dir, "Pulumi.yaml"), `name: ${PROJECT}-${x.name}\nruntime: yaml\n`);
    }
    for (const env of Object.values(input.environments))
      fs.writeFileSync(
        path.join(dir, `Pulumi.${env.pulumiStack}.yaml`),
        "config:\n  aws:region: us-west-2\n",
      );
  }
  return root;
}

/** The largest pipeline, validated in a throwaway checkout (removed again before this returns). */
export function largestPipeline(input = largestDefinition()): Pipeline {
  const root = checkoutFor(input);
  try {
    return validatePipeline(input, { repoRoot: root });
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}
