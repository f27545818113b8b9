// The pure parts of `npm run plan -- --diff`: the diff of two plans, replacement, the tree by parent and the
// renderers, over the planned platform and copies of it changed as a pull request would.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import YAML from "yaml";
import { beforeAll, describe, expect, it } from "vitest";
import { pipeline } from "../kargo/pipeline";
import { diffPlans, changeTree, propertyChanges, type ProjectPlan } from "../lib/cli/plan/diff";
import { renderDiff, type DiffReport } from "../lib/cli/plan/diff-format";
import { canonicalType, programPlans } from "../lib/cli/plan/diff-program";
import { reviewSummary } from "../lib/cli/plan/diff-summary";
import { planChain, repoRoot } from "../lib/cli/plan/projects";
import { validatePipeline } from "../lib/pipeline/validate";

const NODES = "eks:index:ManagedNodeGroup";
const programs = validatePipeline(pipeline).programs;
let base: ProjectPlan[];
beforeAll(async () => {
  base = [...(await planChain()), ...programPlans(repoRoot, programs).plans] as ProjectPlan[];
});

/** A copy of the plan with `change` applied to the resource of type `type` named `name`. */
function changed(
  type: string,
  name: string,
  change: (inputs: Record<string, unknown>) => void,
): ProjectPlan[] {
  const copy = structuredClone(base);
  const r = copy.flatMap((p) => p.resources).find((x) => x.type === type && x.name === name);
  expect(r, `${type} ${name}`).toBeDefined();
  change(r!.inputs);
  return copy;
}

const report = (before: ProjectPlan[], after: ProjectPlan[]): DiffReport => {
  const diff = diffPlans(before, after);
  return {
    base: { ref: "main", commit: "0".repeat(40) },
    diff,
    summary: reviewSummary(diff, before, after),
    violations: [],
    before,
    after,
  };
};

describe("the plan diff", () => {
  it("is empty between a plan and itself", () => {
    expect(diffPlans(base, structuredClone(base)).projects.flatMap((p) => p.changes)).toEqual([]);
  });

  it("shows a change inside an IAM policy document field by field", () => {
    const before = JSON.stringify({
      Statement: [{ Effect: "Allow", Action: ["s3:GetObject"], Resource: "a" }],
    });
    const after = JSON.stringify({
      Statement: [{ Effect: "Allow", Action: ["s3:GetObject"], Resource: "*" }],
    });
    expect(propertyChanges({ policy: before }, { policy: after })).toEqual([
      { path: "policy.Statement[0].Resource", before: "a", after: "*" },
    ]);
  });

  it("replaces a node group whose instance type changes, and lists it under loss", () => {
    const after = changed(NODES, "platform-nodes", (i) => (i.instanceTypes = ["t3.medium"]));
    const r = report(base, after);
    const change = r.diff.projects.flatMap((p) => p.changes)[0]!;
    expect(change).toMatchObject({ kind: "replace", replaceReasons: ["instanceTypes"] });
    expect(r.summary.loss.map((f) => f.name)).toEqual(["platform-nodes"]);
    expect(r.summary.cost.delta).toBeGreaterThan(0);
  });

  // A cluster made before the node group had a launch template (before commit fc9b804): pulumi-eks then
  // created no template, passed diskSize and amiType to the node group and read no AMI itself.
  const withoutLaunchTemplate = (i: Record<string, unknown>) => {
    for (const key of ["nodeadmExtraOptions", "amiId", "operatingSystem"]) delete i[key];
    i.amiType = "AL2023_ARM_64_STANDARD";
  };

  it("replaces a node group that gains a launch template, as an upgrade from a version without one does", () => {
    const before = changed(NODES, "platform-nodes", withoutLaunchTemplate);
    const r = report(before, base);
    const change = r.diff.projects.flatMap((p) => p.changes).find((c) => c.type === NODES);
    expect(change?.kind).toBe("replace");
    expect(change?.replaceReasons).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^nodeadmExtraOptions \(the node group gains a launch template\)$/),
      ]),
    );
    expect(r.summary.loss.map((f) => f.name)).toContain("platform-nodes");
    expect(renderDiff(r, "text")).toMatch(/replaced because .*gains a launch template/);
  });

  it("rolls the nodes, not the node group, when the pinned AMI moves or amiType goes with a launch template on both sides", () => {
    const moved = changed(NODES, "platform-nodes", (i) => (i.amiId = "ami-0123456789abcdef0"));
    expect(diffPlans(base, moved).projects.flatMap((p) => p.changes)[0]?.kind).toBe("update");
    const typed = changed(NODES, "platform-nodes", (i) => (i.amiType = "AL2023_ARM_64_STANDARD"));
    expect(diffPlans(typed, base).projects.flatMap((p) => p.changes)[0]?.kind).toBe("update");
  });

  it("updates in place what the provider updates in place", () => {
    const after = changed(
      NODES,
      "platform-nodes",
      (i) => ((i.scalingConfig as { maxSize: number }).maxSize += 1),
    );
    expect(diffPlans(base, after).projects.flatMap((p) => p.changes)[0]?.kind).toBe("update");
  });

  it("replaces a Kubernetes object whose name changes", () => {
    const ns = base.flatMap((p) => p.resources).find((r) => r.type === "kubernetes:core/v1:Namespace")!;
    const after = changed(ns.type, ns.name, (i) => ((i.metadata as { name: string }).name += "-renamed"));
    expect(diffPlans(base, after).projects.flatMap((p) => p.changes)[0]).toMatchObject({
      kind: "replace",
      replaceReasons: ["metadata.name"],
    });
  });

  it("removes what a commit deletes, protected resources first under loss", () => {
    // The programs' buckets, each protected (the policy pack's data-protected rule holds them to it), and a
    // made-up program's, so the rule is held whatever programs a fork keeps.
    const madeUp: ProjectPlan = {
      project: "zz-made-up",
      stack: "example",
      resources: [
        {
          urn: "urn:pulumi:example::zz-made-up::aws:s3/bucket:Bucket::zz-made-up",
          type: "aws:s3/bucket:Bucket",
          name: "zz-made-up",
          parent: null,
          inputs: {},
          options: { protect: true, retainOnDelete: false, deleteBeforeReplace: false },
        },
      ],
    };
    const before = [...base, madeUp];
    const after = structuredClone(before).map((p) => ({
      ...p,
      resources: p.resources.filter((r) => !["aws:s3/bucket:Bucket", NODES].includes(r.type)),
    }));
    const loss = report(before, after).summary.loss;
    const buckets = before.flatMap((p) => p.resources).filter((r) => r.type === "aws:s3/bucket:Bucket");
    for (const b of buckets) expect(b.options.protect, b.name).toBe(true);
    expect(loss.map((f) => [f.name, f.flags])).toEqual([
      ...buckets.map((b) => [b.name, ["protected"]]),
      ["platform-nodes", []],
    ]);
  });

  it("shows a new Kargo claim on an approver role under privilege", () => {
    const account = base
      .flatMap((p) => p.resources)
      .find((r) =>
        Object.keys((r.inputs.metadata as { annotations?: object })?.annotations ?? {}).some((k) =>
          k.startsWith("rbac.kargo.akuity.io/"),
        ),
      )!;
    const key = Object.keys((account.inputs.metadata as { annotations: object }).annotations).find((k) =>
      k.startsWith("rbac.kargo.akuity.io/"),
    )!;
    const after = changed(account.type, account.name, (i) => {
      (i.metadata as { annotations: Record<string, string> }).annotations[key] += ",everyone";
    });
    const [finding] = report(base, after).summary.privilege;
    expect(finding?.name).toBe(account.name);
    expect(finding?.lines[0]).toMatch(
      new RegExp(`^metadata\\.annotations\\.${key.replace(/[./]/g, "\\$&")}: .* → .*,everyone$`),
    );
  });

  it("puts a component's changed children under it", () => {
    const after = changed(NODES, "platform-nodes", (i) => (i.diskSize = 40));
    const project = diffPlans(base, after).projects.find((p) => p.project === "cluster")!;
    const [root] = changeTree(project, base[0], after[0]);
    expect(root!.type).toBe("platform:cluster:PlatformCluster");
    expect(root!.children.map((c) => c.name)).toEqual(["platform-nodes"]);
  });

  it("plans each YAML program as its Pulumi.yaml declares it, and lists the others as not planned", () => {
    const { plans, unplanned } = programPlans(repoRoot, programs);
    const yaml = programs.filter((x) => x.runtime === "yaml");
    expect(yaml.length).toBeGreaterThan(0);
    expect(plans.map((p) => p.project)).toEqual(yaml.map((x) => x.project));
    for (const [i, x] of yaml.entries()) {
      const declared = YAML.parse(fs.readFileSync(path.join(repoRoot, x.dir, "Pulumi.yaml"), "utf8"));
      expect(plans[i]!.resources.map((r) => r.name)).toEqual(Object.keys(declared.resources ?? {}));
    }
    expect(unplanned.map((x) => x.name)).toEqual(
      programs.filter((x) => x.runtime !== "yaml").map((x) => x.name),
    );
    // A made-up tree: a YAML program and one of another runtime, whatever this pipeline's are.
    const tree = fs.mkdtempSync(path.join(os.tmpdir(), "program-plans-"));
    fs.mkdirSync(path.join(tree, "a"));
    fs.writeFileSync(
      path.join(tree, "a", "Pulumi.yaml"),
      "name: made-up\nruntime: yaml\nresources:\n  q:\n    type: aws:sqs:Queue\n",
    );
    const other = { name: "b", dir: "b", project: "made-up-b", runtime: "python" };
    expect(programPlans(tree, [{ name: "a", dir: "a", project: "made-up", runtime: "yaml" }, other])).toEqual(
      {
        plans: [
          {
            project: "made-up",
            stack: "example",
            resources: [expect.objectContaining({ type: "aws:sqs/queue:Queue", name: "q" })],
          },
        ],
        unplanned: [other],
      },
    );
  });

  it("names each program it does not plan in every format", () => {
    const unplanned = [{ name: "made-up", dir: "programs/made-up", project: "p", runtime: "go" }];
    const r = { ...report(base, base), unplanned };
    expect(renderDiff(r, "text")).toContain("Program made-up (go, programs/made-up): not planned offline");
    expect(renderDiff(r, "markdown")).toMatch(
      /### Programs not planned offline\n\n- made-up \(go, programs\/made-up\): not planned offline/,
    );
    expect(JSON.parse(renderDiff(r, "json")).unplanned).toEqual(unplanned);
    expect(renderDiff(report(base, base), "markdown")).not.toContain("not planned offline");
  });

  it("reads Pulumi YAML's short type tokens as the provider's", () => {
    expect(canonicalType("aws:s3:Bucket")).toBe("aws:s3/bucket:Bucket");
    expect(canonicalType("aws:s3/bucket:Bucket")).toBe("aws:s3/bucket:Bucket");
  });

  it("renders Markdown with the four headings, the policy and the changes, inputs only as code", () => {
    const after = changed("aws:ec2/securityGroup:SecurityGroup", "kargo-webhooks", (i) => {
      (i.ingress as { cidrBlocks: string[] }[])[0]!.cidrBlocks = ["0.0.0.0/0"];
      i.description = "<script>x</script>";
    });
    const markdown = renderDiff(report(base, after), "markdown");
    for (const heading of ["Exposure", "Privilege", "Loss", "Cost", "Policy", "Changes"])
      expect(markdown).toContain(`### ${heading}`);
    // Inputs reach the comment only as code: escaped in lists, verbatim only inside fenced blocks.
    const prose = markdown.replace(/```diff\n[\s\S]*?\n```/g, "").replace(/`[^`\n]*`/g, "");
    expect(prose).not.toContain("<script>");
    expect(prose).toContain("open to the world: tcp 8443 from 0.0.0.0/0");
    expect(markdown).toContain("description: Webhook deliveries");
  });
});
