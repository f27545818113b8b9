// The largest pipeline the validation allows plans: as many environments as it takes (MAX_ENVIRONMENTS), each
// behind a gate of its own after the one before, with as many programs (MAX_PROGRAMS, each depending on the
// one before), every program stage it allows (MAX_PROGRAM_STAGES), made in a copy of this repository as a
// fork would make it. It plans within two minutes of CPU time, and no resource's dependencies grow with the
// pipeline (each Stage once depended on every Application: 1,000 program stages took 1.5 GB and 12 s, then
// 0.55 GB and 6 s without).
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ProjectPlan } from "../lib/cli/plan/diff";
import { programStageName } from "../lib/pipeline/graph";
import { stackObjectName } from "../lib/pipeline/names";
import {
  MAX_ENVIRONMENTS,
  MAX_PROGRAM_STAGES,
  MAX_PROGRAMS,
  type PipelineInput,
} from "../lib/pipeline/schema";
import { pipeline as definition } from "../kargo/pipeline";
import { unexpectedStderr } from "./helpers";
import { copyOfRepository, pipelineSourceOver } from "./repo-copy";
import { sharedResources } from "./shared-plan";

const environmentCount = MAX_ENVIRONMENTS;
const programCount = MAX_PROGRAMS;
const stageCount = MAX_PROGRAM_STAGES;

const environments = Array.from({ length: environmentCount }, (_, i) => `zz${i}`);
const programs = Array.from({ length: programCount }, (_, i) => ({
  name: `zzp${i}`,
  dir: `programs/zz-scale-${i}`,
  ...(i > 0 ? { dependsOn: [`zzp${i - 1}`] } : {}),
}));
const approvers = definition.stages.find((s) => s.kind === "gate")!.approvers;
const stages: PipelineInput["stages"] = environments.flatMap((env, i) => [
  { name: `gate${env}`, kind: "gate", from: i === 0 ? "warehouse" : [environments[i - 1]!], approvers },
  { name: `${env}preview`, kind: "preview", environment: env, from: [`gate${env}`] },
  { name: env, kind: "update", environment: env, from: [`${env}preview`] },
]);
const programStageNames = stages
  .filter((s) => s.kind !== "gate")
  .flatMap((s) => programs.map((x) => programStageName(s.name, x.name)));

describe(`a pipeline of ${environmentCount} environments and ${stageCount} program stages`, () => {
  const copy = fs.mkdtempSync(path.join(os.tmpdir(), "plan-scale-"));
  const out = path.join(copy, "plan-out");
  let run: { code: number; stderr: string };
  let cpuSeconds: number;
  let kargo: ProjectPlan;

  beforeAll(async () => {
    await copyOfRepository(copy);
    for (const x of programs) {
      fs.mkdirSync(path.join(copy, x.dir), { recursive: true });
      fs.writeFileSync(
        path.join(copy, x.dir, "Pulumi.yaml"),
        `name: ${definition.project}-${x.name}\nruntime: yaml\nresources: {}\n`,
      );
      for (const env of environments)
        fs.writeFileSync(path.join(copy, x.dir, `Pulumi.${env}.yaml`), "config: {}\n");
    }
    const environmentsSource = Object.fromEntries(
      environments.map((env) => [env, { pulumiStack: env, destructiveChangeApprovers: approvers }]),
    );
    fs.writeFileSync(
      path.join(copy, "kargo/pipeline.ts"),
      pipelineSourceOver(
        `{ ...ours, programs: ${JSON.stringify(programs)}, environments: ${JSON.stringify(environmentsSource)}, stages: ${JSON.stringify(stages)} }`,
      ),
    );
    // The plan's own CPU time (user and system), which a busy machine barely changes, unlike its wall time.
    const usage = path.join(copy, "cpu.json");
    fs.writeFileSync(
      path.join(copy, "cpu-usage.mjs"),
      `import fs from "node:fs";\nprocess.on("exit", () => fs.writeFileSync(${JSON.stringify(usage)}, JSON.stringify(process.cpuUsage())));\n`,
    );
    run = await new Promise((resolve) =>
      execFile(
        process.execPath,
        [
          "--import",
          "./cpu-usage.mjs",
          "--import",
          "tsx",
          "lib/cli/plan.ts",
          "--project",
          "kargo",
          "--out",
          out,
        ],
        { cwd: copy, maxBuffer: 256 * 1024 * 1024 },
        (err, _stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, stderr }),
      ),
    );
    const { user, system } = JSON.parse(fs.readFileSync(usage, "utf8")) as { user: number; system: number };
    cpuSeconds = (user + system) / 1e6;
    const written = path.join(out, "kargo", "resources.json");
    kargo = fs.existsSync(written) ? JSON.parse(fs.readFileSync(written, "utf8")) : { resources: [] };
  });
  afterAll(() => fs.rmSync(copy, { recursive: true, force: true }));

  it("plans every program stage, with its Application", () => {
    expect(unexpectedStderr(run.stderr)).toEqual([]);
    expect(run.code).toBe(0);
    expect(programStageNames.length).toBeGreaterThanOrEqual(stageCount);
    const named = (type: string) =>
      new Set(kargo.resources.filter((r) => r.type === type).map((r) => (r.inputs.metadata as any).name));
    const stagesPlanned = named("kubernetes:kargo.akuity.io/v1alpha1:Stage");
    const applications = named("kubernetes:argoproj.io/v1alpha1:Application");
    for (const name of programStageNames) {
      expect(stagesPlanned.has(name), name).toBe(true);
      expect(applications.has(stackObjectName(definition, name)), name).toBe(true);
    }
  });

  it("within two minutes of CPU time", () => {
    expect(cpuSeconds).toBeGreaterThan(0);
    expect(cpuSeconds).toBeLessThan(120);
  });

  it("with no resource depending on more resources than the example's most dependent one", async () => {
    const example = await sharedResources("kargo");
    const most = Math.max(...example.map((r) => r.dependsOn?.length ?? 0));
    const over = kargo.resources.filter((r) => (r.dependsOn?.length ?? 0) > most);
    expect(over.map((r) => `${r.type} ${r.name}: ${r.dependsOn!.length}`)).toEqual([]);
  });
});
