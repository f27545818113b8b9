// `npm run plan -- --diff` between two real commits of a temporary repository (a copy of the tracked files,
// node_modules linked): the second commit opens a port to the world, widens every program's IAM policy in
// every environment, deletes a promoted YAML program's protected resource (and adds an unprotected bucket),
// adds a node, and changes the path (an environment's gates removed, a stop weakened, an environment moved to
// another account: lib/cli/plan/path-examples.ts). The path's changes and the widened reach must be said first
// under oversight, each other change under its heading, with the cost, and the policy pack must flag the ones
// that break a rule. One diff run (two plans) for the whole file.
import { policyResourceName, sameAccount } from "../lib/pipeline/access";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import YAML from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pipeline } from "../kargo/pipeline";
import { WEBHOOKS_LISTENER_PORT } from "../kargo/warehouseWebhook";
import { price } from "../lib/cli/plan/costs";
import type { ChangeNode, ResourceChange } from "../lib/cli/plan/diff";
import type { PolicyViolation } from "../lib/cli/plan/diff-format";
import { canonicalType, type PromotedProgram } from "../lib/cli/plan/diff-program";
import type { Oversight } from "../lib/cli/plan/diff-oversight";
import type { ReviewSummary } from "../lib/cli/plan/diff-summary";
import { repoRoot } from "../lib/cli/plan/projects";
import { oversightOf } from "../lib/pipeline/oversight";
import { validatePipeline } from "../lib/pipeline/validate";
import { unexpectedStderr } from "./helpers";
import { pathChanged } from "../lib/cli/plan/path-examples";

const run = promisify(execFile);
const tsx = path.join(repoRoot, "node_modules", ".bin", "tsx");

async function plan(cwd: string, ...args: string[]) {
  try {
    const { stdout, stderr } = await run(tsx, ["lib/cli/plan.ts", ...args], { cwd, maxBuffer: 64 << 20 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

function edit(file: string, change: (text: string) => string) {
  const before = fs.readFileSync(file, "utf8");
  const after = change(before);
  expect(after, `${file} changed`).not.toBe(before);
  fs.writeFileSync(file, after);
}

interface JsonReport {
  base: { ref: string; commit: string };
  oversight: Oversight;
  summary: ReviewSummary;
  violations: PolicyViolation[];
  unplanned: PromotedProgram[];
  projects: { project: string; changes: ResourceChange[]; tree: ChangeNode[] }[];
}

const exampleCluster = YAML.parse(fs.readFileSync(path.join(repoRoot, "cluster/Pulumi.example.yaml"), "utf8"))
  .config as Record<string, unknown>;
const nodes = exampleCluster["cluster:nodeDesiredSize"] as number;
const environments = Object.keys(pipeline.environments);
const programs = validatePipeline(pipeline).programs;
/**
 * A made-up YAML program the copy adds before its first commit, whatever programs a fork keeps: a protected
 * bucket (what the second commit deletes) and an AWS access that writes (what it widens).
 */
const madeUp = { name: "zz-diff", dir: "programs/zz-diff", project: "zz-diff-program" };
const protectedName = "zz-data";
const protectedDecl = { type: "aws:s3:Bucket" };
/** The bucket the second commit adds, unprotected. */
const added = "zz-logs";
/** Its statements keep to the role's own account, as `npm run plan` requires of every program's access. */
const sameAccountCondition = JSON.stringify(sameAccount);
const madeUpDeclaration = `{ name: "${madeUp.name}", dir: "${madeUp.dir}", aws: {
  update: (s) => [{ Effect: "Allow", Action: ["s3:GetObject", "s3:PutObject"], Resource: s.pulumiStacks.map((st) => \`arn:\${s.partition}:s3:::${madeUp.project}-\${st}/*\`), Condition: ${sameAccountCondition} }],
  preview: (s) => [{ Effect: "Allow", Action: ["s3:GetObject"], Resource: s.pulumiStacks.map((st) => \`arn:\${s.partition}:s3:::${madeUp.project}-\${st}/*\`), Condition: ${sameAccountCondition} }],
} }`;
/** Each program's policy in each environment, as kargo/index.ts names them: the fork's and the made-up one's. */
const programPolicies = [...programs.filter((x) => x.aws).map((x) => x.name), madeUp.name].flatMap((name) =>
  environments.map((env) => policyResourceName(name, env)),
);

describe("npm run plan -- --diff, between two commits", () => {
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), "plan-diff-repo-"));
  const git = (...args: string[]) =>
    run("git", ["-c", "user.email=test@example.com", "-c", "user.name=test", ...args], { cwd: repo });
  let report: JsonReport;
  let badRef: Awaited<ReturnType<typeof plan>>;
  let badConfig: Awaited<ReturnType<typeof plan>>;

  afterAll(() => fs.rmSync(repo, { recursive: true, force: true }));

  beforeAll(async () => {
    // The working tree as a fresh clone of it would have it: tracked and new files, none ignored.
    const tracked = (
      await run("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: repoRoot })
    ).stdout
      .split("\0")
      .filter(Boolean);
    for (const file of tracked) {
      const from = path.join(repoRoot, file);
      if (!fs.existsSync(from)) continue;
      fs.mkdirSync(path.dirname(path.join(repo, file)), { recursive: true });
      fs.copyFileSync(from, path.join(repo, file));
    }
    fs.symlinkSync(fs.realpathSync(path.join(repoRoot, "node_modules")), path.join(repo, "node_modules"));
    fs.mkdirSync(path.join(repo, madeUp.dir), { recursive: true });
    fs.writeFileSync(
      path.join(repo, madeUp.dir, "Pulumi.yaml"),
      YAML.stringify({
        name: madeUp.project,
        runtime: "yaml",
        resources: {
          [protectedName]: {
            ...protectedDecl,
            properties: { bucketPrefix: "zz-data-" },
            options: { protect: true },
          },
        },
      }),
    );
    for (const env of Object.values(pipeline.environments))
      fs.writeFileSync(path.join(repo, madeUp.dir, `Pulumi.${env.pulumiStack}.yaml`), "config: {}\n");
    const declaration = "export const pipeline: PipelineInput = {";
    edit(path.join(repo, "kargo/pipeline.ts"), (t) =>
      t.includes(declaration)
        ? `${t.replace(declaration, "const ours: PipelineInput = {")}\nexport const pipeline: PipelineInput = { ...ours, programs: [...ours.programs, ${madeUpDeclaration}] };\n`
        : t,
    );
    await git("init", "--quiet");
    fs.appendFileSync(path.join(repo, ".git", "info", "exclude"), "node_modules\n");
    await git("add", "--all");
    await git("commit", "--quiet", "-m", "before");

    // Opens Kargo's webhook listener to the world.
    edit(path.join(repo, "kargo/Pulumi.example.yaml"), (t) =>
      // Set, or left to GitHub's ranges in a comment.
      t.replace(
        /(# )?kargo:webhookAllowedCidrs:\n(\s+(#\s+)?- .*\n?)+/,
        "kargo:webhookAllowedCidrs:\n    - 0.0.0.0/0\n",
      ),
    );
    // Widens every program's policy in every environment to every resource, whatever the program's access.
    edit(path.join(repo, "lib/pipeline/access.ts"), (t) =>
      t.replace(
        "Statement: x.aws.update(scopeOf(p, x, [env.pulumiStack], partition))",
        'Statement: x.aws.update(scopeOf(p, x, [env.pulumiStack], partition)).map((s) => ({ ...s, Resource: "*" }))',
      ),
    );
    // Removes the gates before an environment, weakens a stop, moves an environment to another account.
    edit(path.join(repo, "kargo/pipeline.ts"), (t) =>
      t
        .replace(
          "export const pipeline: PipelineInput = { ...ours,",
          'import { pathChanged } from "../lib/cli/plan/path-examples";\nexport const pipeline: PipelineInput = pathChanged({ ...ours,',
        )
        .replace(/\] \};\n$/, "] }).pipeline;\n"),
    );
    // Adds a node.
    edit(path.join(repo, "cluster/Pulumi.example.yaml"), (t) =>
      t
        .replace(`cluster:nodeDesiredSize: ${nodes}`, `cluster:nodeDesiredSize: ${nodes + 1}`)
        // Room for it, whatever the fork's maximum.
        .replace(
          /cluster:nodeMaxSize: (\d+)/,
          (_, max: string) => `cluster:nodeMaxSize: ${Math.max(Number(max), nodes + 1)}`,
        ),
    );
    // Deletes the YAML program's protected resource and adds a bucket that is not protected.
    edit(path.join(repo, madeUp.dir, "Pulumi.yaml"), (t) => {
      const doc = YAML.parseDocument(t);
      doc.deleteIn(["resources", protectedName]);
      doc.setIn(["resources", added], { type: "aws:s3:Bucket", properties: { bucketPrefix: "logs-" } });
      return doc.toString();
    });
    await git("commit", "--quiet", "--all", "-m", "after");
    fs.writeFileSync(path.join(repo, "broken.yaml"), "config: [not, a, map]\n");

    const [diff, ...bad] = await Promise.all([
      plan(repo, "--diff", "HEAD~1", "--format", "json"),
      plan(repo, "--diff", "no-such-ref"),
      plan(repo, "--diff", "HEAD~1", "--project", "cluster", "--config", "broken.yaml"),
    ]);
    expect(unexpectedStderr(diff.stderr)).toEqual([]);
    expect(diff.code).toBe(0);
    report = JSON.parse(diff.stdout);
    [badRef, badConfig] = bad as [typeof diff, typeof diff];
  });

  it("says first, in a reviewer's words, that the path lost its people, a stop weakened, an environment moved and identities reach further", () => {
    const changed = pathChanged(pipeline);
    const after = validatePipeline(changed.pipeline);
    const lines = report.oversight.changes.map((c) => c.line);
    expect(changed.gated, "the example has an environment gated after others").toBeDefined();
    const upstream = oversightOf(after).find((o) => o.environment === changed.gated)!.upstream;
    expect(lines).toContain(
      `${changed.gated}: no person between ${upstream.join(", ")} and ${changed.gated}`,
    );
    expect(lines).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^${changed.stopping!.environment}: stop weakened: no longer stops on ${changed.stopping!.dropped} `,
        ),
      ),
    );
    expect(lines).toContainEqual(
      expect.stringMatching(
        new RegExp(`^${changed.moved}: moves to another AWS account: .* → ${changed.account}$`),
      ),
    );
    // Every environment's identity may now act on every resource: the engine finds each widened.
    const widened = report.oversight.changes.filter((c) => / AWS reach widened/.test(c.line));
    expect(widened.length).toBeGreaterThanOrEqual(environments.length);
    // Weakened first: nothing strengthened or merely changed comes before a weakening.
    const directions = report.oversight.changes.map((c) => c.direction);
    expect(directions[0]).toBe("weakened");
    expect(directions.lastIndexOf("weakened")).toBeLessThan(
      Math.max(directions.indexOf("changed"), directions.indexOf("strengthened"), directions.length),
    );
    expect(directions.slice(0, directions.lastIndexOf("weakened") + 1).every((d) => d === "weakened")).toBe(
      true,
    );
  });

  it("names the commit it compares with", async () => {
    expect(report.base.commit).toBe((await git("rev-parse", "HEAD~1")).stdout.trim());
  });

  it("shows the port opened to the world under exposure, and the policy pack blocks it", () => {
    const finding = report.summary.exposure.find(
      (f) => f.name === "kargo-webhooks" && f.type.includes("securityGroup:"),
    );
    expect(finding?.flags).toContain(`open to the world: tcp ${WEBHOOKS_LISTENER_PORT} from 0.0.0.0/0`);
    expect(finding?.lines.join("\n")).toMatch(/ingress\[0\]\.cidrBlocks: .* → \["0\.0\.0\.0\/0"\]/);
    expect(report.violations).toContainEqual(
      expect.objectContaining({ policy: "security-group-world-ingress", name: "kargo-webhooks" }),
    );
  });

  it("shows every program's widened IAM policy in every environment under privilege, and the policy pack blocks each", () => {
    expect(programPolicies.length).toBeGreaterThan(0);
    for (const name of programPolicies) {
      const finding = report.summary.privilege.find((f) => f.name === name);
      expect(finding?.flags, name).toContain("allows actions on every resource (*)");
      expect(
        finding?.lines.some((l) => /^\s*\+ .*Allow .* on \*/.test(l)),
        name,
      ).toBe(true);
      expect(report.violations, name).toContainEqual(
        expect.objectContaining({ policy: "iam-no-write-on-star", name }),
      );
    }
  });

  it("lists the YAML program's protected resource's deletion first under loss", () => {
    const [first] = report.summary.loss;
    expect(first).toMatchObject({
      kind: "remove",
      project: madeUp.project,
      name: protectedName,
      type: canonicalType(protectedDecl.type),
    });
    expect(first!.flags).toContain("protected");
  });

  it("blocks the unprotected bucket that was added", () => {
    expect(report.violations).toContainEqual(
      expect.objectContaining({ policy: "data-protected", name: added }),
    );
  });

  it("names the programs it does not plan offline", () => {
    expect(report.unplanned.map((x) => x.name)).toEqual(
      programs.filter((x) => x.runtime !== "yaml").map((x) => x.name),
    );
  });

  it("prices the added node: one more instance and its root volume", () => {
    const type = (exampleCluster["cluster:nodeInstanceTypes"] as string[])[0]!;
    const disk = exampleCluster["cluster:nodeDiskSizeGiB"] as number;
    const expected = price.instancePerHour[type]! * 730 + disk * price.volumePerGBMonth.gp3!;
    expect(report.summary.cost.delta).toBeCloseTo(expected, 1);
    expect(report.summary.cost.lines.map((l) => l.item)).toContain(
      `${type} node × ${nodes} → ${type} node × ${nodes + 1}`,
    );
    // Adding a node breaks no rule.
    expect(report.violations.filter((v) => v.type === "eks:index:ManagedNodeGroup")).toEqual([]);
  });

  it("puts a component's children under the component, with the inputs that changed", () => {
    const cluster = report.projects.find((p) => p.project === "cluster")!;
    const component = cluster.tree.find((n) =>
      n.children.some((c) => c.type === "eks:index:ManagedNodeGroup"),
    );
    expect(component?.change, "the component itself did not change").toBeUndefined();
    const nodeGroup = component!.children.find((c) => c.type === "eks:index:ManagedNodeGroup")!;
    expect(nodeGroup.change?.kind).toBe("update");
    expect(nodeGroup.change?.properties).toContainEqual({
      path: "scalingConfig.desiredSize",
      before: nodes,
      after: nodes + 1,
    });
  });

  it("exits 2 for a ref that is no commit, 1 with the program's message for a bad config", () => {
    expect(badRef.code).toBe(2);
    expect(badRef.stderr).toContain('"no-such-ref" is not a commit');
    expect(badConfig.code).toBe(1);
    expect(badConfig.stderr).toMatch(
      /plan failed: stack config .*broken\.yaml: its config is a list, not a map/,
    );
  });
});
