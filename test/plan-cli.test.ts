import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import YAML from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PLACEHOLDER_SECRET, projectOrder, repoRoot } from "../lib/cli/plan/projects";
import { sharedPlan, type SharedPlan } from "./shared-plan";
import { planInProcess } from "./helpers";

/**
 * `npm run plan -- ARGS` in this process, returning its exit code and output: the command as a user runs it is
 * the suite's shared run (test/shared-plan.ts); these are about what it does with its arguments.
 */
const plan = (...args: string[]) => planInProcess(args);

describe("npm run plan", () => {
  // `npm run plan -- --out DIR` of the example, run once for the suite (test/shared-plan.ts).
  let result: SharedPlan;
  let out: string;
  beforeAll(async () => {
    result = await sharedPlan();
    out = result.dir;
  });
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "plan-"));
  afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

  it("plans every project and exits 0, warning only of optional keys the example leaves unset", () => {
    // The example stack files cannot hold a secret; an optional one left unset is worth a warning.
    const example = (project: string) =>
      fs.readFileSync(path.join(repoRoot, project, "Pulumi.example.yaml"), "utf8");
    for (const line of result.stderr.split("\n").filter(Boolean)) {
      const key = /^warning: \[runtime\] ([\w-]+):(\w+) is not set: /.exec(line);
      expect(key, line).not.toBeNull();
      expect(example(key![1]!), line).toMatch(new RegExp(`#\\s*${key![1]}:${key![2]}:`));
    }
    expect(result.code).toBe(0);
    for (const project of projectOrder) expect(result.stdout).toContain(`== ${project} (stack example)`);
  });

  it("writes resources.json in the contract's shape for each project", () => {
    for (const project of projectOrder) {
      const doc = JSON.parse(fs.readFileSync(path.join(out, project, "resources.json"), "utf8"));
      expect(doc).toMatchObject({ project, stack: "example" });
      expect(Object.keys(doc).sort()).toEqual(["outputs", "project", "resources", "stack"]);
      expect(doc.resources.length).toBeGreaterThan(0);
      for (const r of doc.resources) {
        expect(Object.keys(r).sort()).toEqual(
          ["dependsOn", "inputs", "name", "options", "parent", "provider", "type", "urn"].sort(),
        );
        // Exactly the contract's options (shared/ARCHITECTURE.md, "Offline plan").
        expect(Object.keys(r.options).sort()).toEqual(["deleteBeforeReplace", "protect", "retainOnDelete"]);
      }
      expect(() =>
        YAML.parseAllDocuments(fs.readFileSync(path.join(out, project, "manifests.yaml"), "utf8")),
      ).not.toThrow();
    }
  });

  it("holds the VPC, the cluster and the managed node group", () => {
    const doc = JSON.parse(fs.readFileSync(path.join(out, "cluster", "resources.json"), "utf8"));
    const types = doc.resources.map((r: { type: string }) => r.type);
    expect(types).toEqual(
      expect.arrayContaining(["awsx:ec2:Vpc", "eks:index:Cluster", "eks:index:ManagedNodeGroup"]),
    );
  });

  it("never writes or prints a secret value", () => {
    const written = projectOrder
      .flatMap((p) =>
        ["resources.json", "manifests.yaml"].map((f) => fs.readFileSync(path.join(out, p, f), "utf8")),
      )
      .join("\n");
    for (const text of [written, result.stdout]) {
      expect(text).toContain("[secret]");
      expect(text).not.toContain(PLACEHOLDER_SECRET);
      // The planned kubeconfig's token command and CA data are only ever in the secret output.
      expect(text).not.toContain("get-token");
      expect(text).not.toContain("certificate-authority-data");
      expect(text).not.toMatch(/\$2a\$10\$/); // bcrypt hashes of generated passwords
    }
  });

  describe("reads like a review: what decides exposure and privilege is shown in full", () => {
    const planned = () =>
      projectOrder.flatMap(
        (p) =>
          JSON.parse(fs.readFileSync(path.join(out, p, "resources.json"), "utf8")).resources as {
            type: string;
            name: string;
            inputs: Record<string, any>;
          }[],
      );
    const ofType = (type: string) => planned().filter((r) => r.type === type);

    it("the cluster endpoint's public CIDRs and admin access entries", () => {
      const [cluster] = ofType("eks:index:Cluster");
      expect(result.stdout).toContain(
        `publicAccessCidrs: ${JSON.stringify(cluster!.inputs.publicAccessCidrs)}`,
      );
      expect(result.stdout).toContain(`accessEntries: ${JSON.stringify(cluster!.inputs.accessEntries)}`);
    });

    it("every security group rule", () => {
      for (const group of ofType("aws:ec2/securityGroup:SecurityGroup")) {
        for (const key of ["ingress", "egress"])
          expect(result.stdout).toContain(`${key}: ${JSON.stringify(group.inputs[key])}`);
      }
      const rules = planned().filter((r) => /^aws:vpc\/securityGroup(In|E)gressRule:/.test(r.type));
      expect(rules.length).toBeGreaterThan(0);
      for (const rule of rules) {
        for (const key of ["securityGroupId", "fromPort", "toPort"])
          expect(result.stdout).toContain(`${key}: ${rule.inputs[key]}`);
      }
    });

    it("every IAM policy statement, with every action, uncut", () => {
      const documents = planned().flatMap((r) =>
        ["policy", "assumeRolePolicy"].filter((k) => typeof r.inputs[k] === "string").map((k) => r.inputs[k]),
      );
      expect(documents.length).toBeGreaterThanOrEqual(2);
      for (const doc of documents) {
        for (const statement of [JSON.parse(doc).Statement].flat()) {
          expect(result.stdout).toContain([statement.Action].flat().join(","));
          if (statement.Condition) expect(result.stdout).toContain(JSON.stringify(statement.Condition));
        }
      }
    });

    it("every RBAC rule and binding", () => {
      const rbac = planned().filter((r) => r.type.startsWith("kubernetes:rbac.authorization.k8s.io/"));
      expect(rbac.length).toBeGreaterThan(0);
      for (const r of rbac) {
        for (const key of ["rules", "roleRef", "subjects"].filter((k) => r.inputs[k] !== undefined))
          expect(result.stdout).toContain(`${key}: ${JSON.stringify(r.inputs[key])}`);
      }
    });

    it("every Helm value we set over the chart's defaults, secrets redacted", () => {
      expect(result.stdout).toContain("values.crds.enabled = true");
      expect(result.stdout).toMatch(
        /values\.api\.oidc\.admins\.claims\.cognito:groups = \["platform-admins"\]/,
      );
      expect(result.stdout).toContain('values.configs.secret.argocdServerAdminPassword = "[secret]"');
    });

    it("the keys of each Secret, never its values", () => {
      const secrets = ofType("kubernetes:core/v1:Secret");
      expect(secrets.length).toBeGreaterThan(0);
      expect(result.stdout).toContain("stringData keys: password, repoURL, username (values redacted)");
      expect(result.stdout).toContain("stringData keys: accessToken (values redacted)");
    });
  });

  it("--resource shows one resource in full, secrets still redacted", async () => {
    const shown = await plan("--project", "cluster-setup", "--resource", "pulumi-access-token");
    expect(shown.code).toBe(0);
    const doc = YAML.parse(shown.stdout);
    expect(doc).toMatchObject({ type: "kubernetes:core/v1:Secret", inputs: { stringData: "[secret]" } });
    expect(shown.stdout).not.toContain(PLACEHOLDER_SECRET);
    const missing = await plan("--project", "cluster", "--resource", "no-such-thing");
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no resource named "no-such-thing"');
  });

  it("exits non-zero naming the key when the config is bad", async () => {
    const bad = path.join(scratch, "Pulumi.bad.yaml");
    fs.writeFileSync(bad, "config:\n  aws:region: us-west-2\n  cluster:availabilityZoneCount: 1\n");
    const failed = await plan("--project", "cluster", "--config", bad);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(
      /plan failed: project cluster: Invalid configuration for project "cluster"/,
    );
    expect(failed.stderr).toMatch(/cluster:availabilityZoneCount: must be at least 2/);
  });

  it("--project prints that project's plan only", async () => {
    const one = await plan("--project", "cluster");
    expect(one.code).toBe(0);
    expect(one.stdout).toContain("== cluster (stack example)");
    for (const later of projectOrder.slice(1)) expect(one.stdout).not.toContain(`== ${later} (stack`);
  });

  it("reports a --config file that does not exist as missing, planning nothing", async () => {
    const missing = path.join(scratch, "Pulumi.nowhere.yaml");
    const result = await plan("--project", "cluster", "--config", missing);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`--config: ${missing} does not exist`);
    expect(result.stdout).toBe("");
  });

  it("rejects unknown projects and options with a usage message", async () => {
    const unknownProject = await plan("--project", "clusters");
    expect(unknownProject.code).toBe(2);
    expect(unknownProject.stderr).toMatch(/--project must be one of cluster/);
    const unknownOption = await plan("--outdir", scratch);
    expect(unknownOption.code).toBe(2);
    expect(unknownOption.stderr).toMatch(/usage: npm run plan/);
  });
});

describe("the plan command's exit", () => {
  it("waits until a slow reader has taken all of its output", async () => {
    // More than a pipe's buffer, written before exiting, read only once the process has exited or a second
    // after the first byte: a bare process.exit would have dropped all but what the pipe held.
    const size = 1 << 20;
    const child = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        "-e",
        `const { exitAfterOutput } = require("./lib/cli/plan/command"); console.log("x".repeat(${size})); exitAfterOutput(3);`,
      ],
      { cwd: repoRoot, stdio: ["ignore", "pipe", "inherit"] },
    );
    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
    await new Promise((resolve) => child.stdout.once("readable", resolve));
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 1000))]);
    let received = 0;
    for await (const chunk of child.stdout) received += (chunk as Buffer).length;
    expect(received).toBe(size + 1);
    expect(await exited).toBe(3);
  });
});
