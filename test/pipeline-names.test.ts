// Names and paths in a pipeline definition as the systems that read them do: Kargo's and git's own rules
// (checked against the real engines), names every JavaScript object already has, and the namespaces
// Kubernetes and the platform reserve.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { branchProblems } from "../lib/pipeline/check-values";
import { parsePathSelector, selectorMatches } from "../lib/pipeline/selectors";
import { type PipelineInput } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import { writeStacks } from "../lib/pipeline/stacks";
import { programStageName } from "../lib/pipeline/graph";
import { stackManifestFile } from "../lib/pipeline/names";
import {
  base,
  firstGate,
  previewOfFirstUpdate,
  withStacks,
  withStage,
  problemsOf,
  removeTempDirs,
  tempRepo,
} from "./pipeline-support";

afterEach(removeTempDirs);

describe("what Kargo and git accept, checked against the real engines", () => {
  // Each case: our verdict must be git's (`git check-ref-format --branch`), wherever Kargo's schema agrees.
  const branches = [
    "a./b",
    "a.b.lock/c",
    "main",
    "release/1.x",
    "a..b",
    "a/.b",
    "x.lock",
    "a//b",
    "HEAD",
    "feat/x_y-z",
    "v1.2",
    "a/b.lock/c",
  ];
  it.each(branches)("judges branch %j as git does", (branch) => {
    const git = spawnSync("git", ["check-ref-format", "--branch", branch], { cwd: os.tmpdir() });
    const ours = branchProblems(branch);
    expect(ours.length === 0, ours.join("; ")).toBe(git.status === 0);
  });

  // Go's regexp.Compile and Kargo's own matchers judge thousands of generated selectors in the Go harness
  // (test/differential); these are the cases a reader looks for.
  // Kargo's path selectors (pkg/pattern/matcher.go): a bare path is a base directory, glob: is doublestar.
  const matches: [string, string, boolean][] = [
    ["Pulumi.yaml", "Pulumi.yaml", true],
    ["stacks", "stacks/dev.yaml", true],
    ["stacks", "stacksx/dev.yaml", false],
    [".", "stacks/dev.yaml", true],
    ["glob:stacks/**", "stacks", true],
    ["glob:stacks/*", "stacks/sub/dev.yaml", false],
    ["glob:**/dev.yaml", "stacks/dev.yaml", true],
    ["glob:stacks/[!d]*.yaml", "stacks/dev.yaml", false],
    ["glob:{stacks,other}/*.yaml", "stacks/qa.yaml", true],
    ["regex:^stacks/", "stacks/dev.yaml", true],
    ["regex:(?i)^STACKS/", "stacks/dev.yaml", true],
    ["glob:**/*.{yaml,yml}", "stacks/sub/dev.yml", true],
  ];
  it.each([
    ["glob:stacks*/**", "an ending two ways to match nothing"],
    ["glob:stacks/a**", "a ** glued to other characters"],
    ["glob:stacks/***", "a run of three stars"],
    ["glob:stacks/", "a trailing slash"],
    [`glob:${"{a,b}".repeat(11)}`, "2048 alternatives, past the 2000 it expands"],
    ["glob:stacks/[{a,b}]", "braces inside a class"],
  ])("refuses %j (%s): Kargo would decide it by doublestar's corner cases", (selector) => {
    expect(parsePathSelector(selector)).toMatch(
      /uses glob syntax this platform does not check .*regexp: selector/,
    );
  });
  it.each(matches)("selector %j matches %j: %s", (selector, file, expected) => {
    const parsed = parsePathSelector(selector);
    if (typeof parsed === "string") throw new Error(parsed);
    expect(selectorMatches(parsed, file)).toBe(expected);
  });
});

describe("names every JavaScript object already has", () => {
  // A pipeline read from JSON (or built with computed keys) has these as its own keys.
  const withRawEnvironment = (name: string): unknown => {
    const input = JSON.parse(JSON.stringify(base)) as { environments: Record<string, unknown> };
    Object.defineProperty(input.environments, name, {
      value: { pulumiStack: "extra", destructiveChangeApprovers: ["dev-approvers"] },
      enumerable: true,
      configurable: true,
      writable: true,
    });
    return input;
  };

  it.each(["__proto__", "toString", "hasOwnProperty", "valueOf"])(
    "refuses an environment named %s, which no Kubernetes name can hold",
    (name) => {
      const message = problemsOf(withRawEnvironment(name));
      expect(message).toContain(`environments.${name}: "${name}" is not a DNS label; allowed:`);
    },
  );

  it.each(["constructor", "toString", "__proto__", "hasOwnProperty"])(
    "refuses a stage of environment %s when no such environment is defined",
    (name) => {
      const message = problemsOf(withStage({ ...previewOfFirstUpdate, environment: name }));
      expect(message).toContain(`stage "${previewOfFirstUpdate.name}": environment "${name}" is not defined`);
    },
  );

  it("accepts an environment and stages named constructor, and writes Stack manifests without undefined", () => {
    const input: PipelineInput = {
      ...base,
      environments: {
        ...base.environments,
        constructor: { pulumiStack: "constructor", destructiveChangeApprovers: ["dev-approvers"] },
      },
      stages: [
        ...base.stages,
        {
          name: "constructorpreview",
          kind: "preview",
          environment: "constructor",
          from: [firstGate.name],
        },
        { name: "constructor", kind: "update", environment: "constructor", from: ["constructorpreview"] },
      ],
    };
    const repo = tempRepo();
    for (const x of base.programs)
      fs.writeFileSync(
        path.join(repo, x.dir, "Pulumi.constructor.yaml"),
        "config:\n  aws:region: us-west-2\n",
      );
    const pipeline = validatePipeline(input, { repoRoot: repo });
    const { written } = writeStacks(pipeline, repo);
    const files = pipeline.programs.flatMap((x) =>
      ["constructor", "constructorpreview"].map((stage) => ({
        file: stackManifestFile(programStageName(stage, x.name)),
        project: x.project,
      })),
    );
    expect(written).toEqual(expect.arrayContaining(files.map(({ file }) => `stacks/${file}`)));
    for (const { file, project } of files) {
      const text = fs.readFileSync(path.join(repo, "stacks", file), "utf8");
      expect(text, file).not.toContain("undefined");
      expect(text, file).toContain(`stack: ${base.pulumi.organization}/${project}/constructor`);
    }
  });
});

describe("the pipeline's namespaces", () => {
  it.each([
    "default",
    "kube-system",
    "kube-anything",
    "argocd",
    "cert-manager",
    "kargo",
    "pulumi-kubernetes-operator",
    "argo-rollouts",
  ])("refuses %s as the Kargo project", (ns) => {
    const message = problemsOf({ ...base, project: ns });
    expect(message).toContain(`project: "${ns}" is a namespace the platform or Kubernetes reserves`);
    expect(message).toContain("allowed: a namespace of its own");
  });

  it("refuses the stacks namespace as the Kargo project", () => {
    expect(problemsOf({ ...base, project: base.stacks.namespace })).toContain(
      `project: "${base.stacks.namespace}" is also stacks.namespace`,
    );
  });

  it.each(["default", "kube-system", "argocd"])("refuses %s as the stacks namespace", (ns) => {
    expect(problemsOf(withStacks({ namespace: ns }))).toContain(
      `stacks.namespace: "${ns}" is a namespace the platform or Kubernetes reserves`,
    );
  });
});
