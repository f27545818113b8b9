// Karpenter's burst capacity as cluster-setup plans it: least privilege for its controller, a NodePool only
// workspaces and verification Jobs land on, and their tolerations.
import { beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { controllerPolicy } from "../cluster-setup/karpenter";
import type { ProgramPlan } from "../lib/cli/plan/harness";
import { planChain } from "../lib/cli/plan/projects";
import { programStages } from "../lib/pipeline/graph";
import { BURST_TAINT, stackManifest } from "../lib/pipeline/stack-manifest";
import { validatePipeline } from "../lib/pipeline/validate";
import { analysisTemplateKinds, analysisTemplateSpec } from "../lib/pipeline/verification";
import { interruptionEvents } from "../cluster-setup/interruptionQueue";
import { irsaTrust, ofType, one, planProject } from "./helpers";

const pipeline = validatePipeline(definition);
type Statement = { Sid: string; Action: string | string[]; Resource: string | string[]; Condition?: object };

describe("burst capacity", () => {
  let cluster: ProgramPlan;
  let setup: ProgramPlan;
  beforeAll(async () => {
    [cluster, setup] = (await planChain({ project: "cluster-setup" })) as [ProgramPlan, ProgramPlan];
  });

  it("gives Karpenter's controller a role only its ServiceAccount assumes, passing only the node role", () => {
    const role = one(setup, "aws:iam/role:Role", "karpenter");
    expect(JSON.parse(String(role.inputs.assumeRolePolicy))).toEqual(
      irsaTrust(cluster.outputs, "kube-system:karpenter"),
    );
    const policy = JSON.parse(
      String(one(setup, "aws:iam/rolePolicy:RolePolicy", "karpenter").inputs.policy),
    ) as {
      Statement: Statement[];
    };
    const pass = policy.Statement.filter((s) => [s.Action].flat().includes("iam:PassRole"));
    expect(pass.map((s) => s.Resource)).toEqual([cluster.outputs.nodeRoleArn]);
    // Whatever it creates or deletes carries the cluster's ownership tag.
    const name = String(cluster.outputs.clusterName);
    for (const s of policy.Statement.filter((s) =>
      [s.Action].flat().some((a) => /Terminate|Delete|CreateTags|CreateLaunchTemplate/.test(a)),
    ))
      expect(JSON.stringify(s.Condition), s.Sid).toContain(`kubernetes.io/cluster/${name}`);
    // No instance-profile management, no wildcard action, no queue unless there is one.
    const actions = policy.Statement.flatMap((s) => [s.Action].flat());
    expect(actions.filter((a) => /InstanceProfile/.test(a))).toEqual(["iam:GetInstanceProfile"]);
    expect(actions.some((a) => a.includes("*"))).toBe(false);
    expect(actions.some((a) => a.startsWith("sqs:"))).toBe(false);
    const args = {
      clusterName: "c",
      region: "r",
      accountId: "1",
      partition: "aws",
      nodeRoleArn: "n",
      instanceProfileName: "p",
    };
    expect(controllerPolicy({ ...args, interruptionQueueArn: "q" })).toContain('"Resource":"q"');
  });

  it("launches on-demand nodes of the base's architecture, tainted, removed once empty, within limits", () => {
    const pool = ofType(setup, "kubernetes:karpenter.sh/v1:NodePool")[0]!.inputs as {
      spec: { template: { spec: Record<string, unknown> }; disruption: object; limits: object };
    };
    const spec = pool.spec.template.spec as {
      requirements: { key: string; values: string[] }[];
      taints: object[];
    };
    const req = Object.fromEntries(spec.requirements.map((r) => [r.key, r.values]));
    expect(req["karpenter.sh/capacity-type"]).toEqual(["on-demand"]);
    expect(req["kubernetes.io/arch"]).toEqual([cluster.outputs.nodeArchitecture]);
    expect(spec.taints).toEqual([BURST_TAINT]);
    expect(pool.spec.disruption).toMatchObject({ consolidationPolicy: "WhenEmpty" });
    expect(pool.spec.limits).toMatchObject({ cpu: expect.any(String), memory: expect.stringMatching(/Gi$/) });
    const nodeClass = ofType(setup, "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass")[0]!.inputs as {
      spec: { instanceProfile: string; kubelet: { maxPods: number }; subnetSelectorTerms: object[] };
    };
    expect(nodeClass.spec.instanceProfile).toBe(cluster.outputs.burstNodeInstanceProfile);
    // An AL2023 EKS AMI of a pinned release, never `@latest`.
    expect((nodeClass.spec as unknown as { amiSelectorTerms: object[] }).amiSelectorTerms).toEqual([
      { alias: expect.stringMatching(/^al2023@v\d{8}$/) },
    ]);
    expect(nodeClass.spec.kubelet.maxPods).toBe(cluster.outputs.nodeMaxPods);
    expect(nodeClass.spec.subnetSelectorTerms).toEqual([
      { tags: { "karpenter.sh/discovery": cluster.outputs.clusterName } },
    ]);
  });

  it("lets every workspace and verification pod onto burst nodes, and no platform release", () => {
    const tolerates = (tolerations: { key?: string; effect?: string }[] | undefined) =>
      (tolerations ?? []).some((t) => t.key === BURST_TAINT.key && t.effect === BURST_TAINT.effect);
    for (const s of programStages(pipeline)) {
      const pod = stackManifest(pipeline, s).spec.workspaceTemplate!.spec!.podTemplate as {
        spec: { tolerations?: { key?: string; effect?: string }[] };
      };
      expect(tolerates(pod.spec.tolerations), s.name).toBe(true);
    }
    const jobs = JSON.stringify(
      analysisTemplateKinds(pipeline).map((k) => analysisTemplateSpec(pipeline, k)),
    );
    expect(jobs).toContain(`"key":"${BURST_TAINT.key}"`);
    for (const r of ofType(setup, "kubernetes:helm.sh/v3:Release"))
      expect(JSON.stringify(r.inputs.values ?? {}), r.name).not.toContain(BURST_TAINT.key);
  });

  it("adds an interruption queue only when asked, readable by the controller alone, fed only by EventBridge", async () => {
    expect(ofType(setup, "aws:sqs/queue:Queue")).toEqual([]);
    expect(String(one(setup, "aws:iam/rolePolicy:RolePolicy", "karpenter").inputs.policy)).not.toContain(
      "sqs:",
    );
    const withQueue = await planProject("cluster-setup", {
      "cluster-setup:karpenterInterruptionQueue": true,
    });
    const queue = one(withQueue, "aws:sqs/queue:Queue");
    const policy = String(one(withQueue, "aws:iam/rolePolicy:RolePolicy", "karpenter").inputs.policy);
    const read = (JSON.parse(policy) as { Statement: Statement[] }).Statement.filter((s) =>
      [s.Action].flat().some((a) => a.startsWith("sqs:")),
    );
    const queuePolicy = JSON.parse(
      String(one(withQueue, "aws:sqs/queuePolicy:QueuePolicy").inputs.policy),
    ) as {
      Statement: { Effect: string; Principal: unknown; Resource: string }[];
    };
    // The queue's ARN, as its own policy names it: the one queue the controller may read.
    const queueArn = queuePolicy.Statement[0]!.Resource;
    expect(queueArn).toMatch(/^arn:aws:sqs:/);
    expect(read.map((s) => s.Resource)).toEqual([queueArn]);
    expect(one(withQueue, "kubernetes:helm.sh/v3:Release", "karpenter").inputs.values).toMatchObject({
      settings: { interruptionQueue: queue.inputs.name },
    });
    const rules = ofType(withQueue, "aws:cloudwatch/eventRule:EventRule").map((r) =>
      JSON.parse(String(r.inputs.eventPattern)),
    );
    expect(rules).toEqual(
      interruptionEvents.map((e) => ({ source: [e.source], "detail-type": [e.detailType] })),
    );
    expect(queuePolicy.Statement.filter((s) => s.Effect === "Allow").map((s) => s.Principal)).toEqual([
      { Service: "events.amazonaws.com" },
    ]);
  });
});
