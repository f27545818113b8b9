// Karpenter's burst capacity as cluster-setup plans it: least privilege for its controller, a NodePool only
// workspaces and verification Jobs land on, and their tolerations.
import { beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { runSimulation, type Simulation } from "@cloud-copilot/iam-simulate";
import { controllerPolicy, instanceProfileStatements } from "../cluster-setup/karpenter";
import type { ProgramPlan } from "../lib/cli/plan/harness";
import { planChain } from "../lib/cli/plan/projects";
import { programStages } from "../lib/pipeline/graph";
import { BURST_TAINT, stackManifest } from "../lib/pipeline/stack-manifest";
import { validatePipeline } from "../lib/pipeline/validate";
import { analysisTemplateKinds, analysisTemplateSpec } from "../lib/pipeline/verification";
import { interruptionEvents } from "../cluster-setup/interruptionQueue";
import { pluginCacheObjects } from "../lib/pipeline/plugin-seed";
import { irsaTrust, ofType, one, planProject } from "./helpers";

const pipeline = validatePipeline(definition);
type Statement = { Sid: string; Action: string | string[]; Resource: string | string[]; Condition?: object };
type Policy = { Version: string; Statement: Statement[] };

/** The region and account the policy is written for, read from the one ARN naming both (the cluster's). */
function arnParts(policy: Policy): { region: string; accountId: string } {
  const cluster = policy.Statement.find((s) => [s.Action].flat().includes("eks:DescribeCluster"))!;
  const [, , , region, accountId] = String(cluster.Resource).split(":");
  return { region: region!, accountId: accountId! };
}

/** What IAM decides for the controller's role asking `action` on `resource` (iam-simulate's engine). */
async function decide(
  policy: Policy,
  action: string,
  resource: string,
  contextVariables: Record<string, string> = {},
): Promise<string> {
  const { accountId } = arnParts(policy);
  const simulation: Simulation = {
    identityPolicies: [{ name: "karpenter", policy }],
    serviceControlPolicies: [],
    resourceControlPolicies: [],
    request: {
      action,
      principal: `arn:aws:iam::${accountId}:role/karpenter`,
      resource: { accountId, resource },
      contextVariables,
    },
  };
  const result = await runSimulation(simulation, {});
  if (result.resultType === "error")
    throw new Error(`${action} ${resource}: ${JSON.stringify(result.errors)}`);
  return result.overallResult;
}

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
    ) as Policy;
    const pass = policy.Statement.filter((s) => [s.Action].flat().includes("iam:PassRole"));
    expect(pass.map((s) => s.Resource)).toEqual([cluster.outputs.nodeRoleArn]);
    // Whatever it creates or deletes carries the cluster's ownership tag.
    const name = String(cluster.outputs.clusterName);
    for (const s of policy.Statement.filter((s) =>
      [s.Action].flat().some((a) => /Terminate|Delete|CreateTags|CreateLaunchTemplate/.test(a)),
    ))
      expect(JSON.stringify(s.Condition), s.Sid).toContain(`kubernetes.io/cluster/${name}`);
    // Instance profiles only as upstream's statements have them; no wildcard action, no queue unless there is one.
    const actions = policy.Statement.flatMap((s) => [s.Action].flat());
    const args = { clusterName: "c", region: "r", accountId: "1", partition: "aws", nodeRoleArn: "n" };
    expect(policy.Statement.filter((s) => [s.Action].flat().some((a) => /InstanceProfile/.test(a)))).toEqual(
      instanceProfileStatements({ ...args, clusterName: name, ...arnParts(policy) }),
    );
    expect(actions.some((a) => a.includes("*"))).toBe(false);
    expect(actions.some((a) => a.startsWith("sqs:"))).toBe(false);
    expect(controllerPolicy({ ...args, interruptionQueueArn: "q" })).toContain('"Resource":"q"');
  });

  it("lets the EC2NodeClass's finalizer finish, as Karpenter v1.15.1 runs it, and touch no profile it did not make", async () => {
    const policy = JSON.parse(
      String(one(setup, "aws:iam/rolePolicy:RolePolicy", "karpenter").inputs.policy),
    ) as Policy;
    const name = String(cluster.outputs.clusterName);
    const { region, accountId } = arnParts(policy);
    const profile = (profileName: string) => `arn:aws:iam::${accountId}:instance-profile/${profileName}`;
    const nodeClass = "burst";
    // The finalizer's calls (aws/karpenter-provider-aws v1.15.1 pkg/controllers/nodeclass/controller.go
    // finalize): the profiles under the class's IAM path (instanceprofile.go ListProfiles; IAM lists only on
    // "*"), the legacy profile `<cluster>_<hash>` looked up before it is deleted (Delete: GetInstanceProfile,
    // whose NoSuchEntity it ignores; ec2nodeclass.go LegacyInstanceProfileName), then the class's launch
    // templates found by tag and deleted (launchtemplate.go DeleteAll), tagged as utils.go GetTags tags them.
    const launchTemplateTags = {
      [`aws:ResourceTag/kubernetes.io/cluster/${name}`]: "owned",
      "aws:ResourceTag/karpenter.sh/nodepool": nodeClass,
      "aws:ResourceTag/eks:eks-cluster-name": name,
      "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": nodeClass,
    };
    const finalizer: [string, string, Record<string, string>?][] = [
      ["iam:ListInstanceProfiles", "*"],
      ["iam:GetInstanceProfile", profile(`${name}_1234567890123456789`)],
      ["ec2:DescribeLaunchTemplates", "*", { "aws:RequestedRegion": region }],
      [
        "ec2:DeleteLaunchTemplate",
        `arn:aws:ec2:${region}:${accountId}:launch-template/lt-0123456789abcdef0`,
        launchTemplateTags,
      ],
    ];
    for (const [action, resource, context] of finalizer)
      expect(await decide(policy, action, resource, context), action).toBe("Allowed");
    // A profile Karpenter would make for a class naming a role: tagged for this cluster, region and class.
    const own = {
      [`aws:ResourceTag/kubernetes.io/cluster/${name}`]: "owned",
      "aws:ResourceTag/topology.kubernetes.io/region": region,
      "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": nodeClass,
    };
    const made = profile(`karpenter/${region}/${name}/uid/${name}_1`);
    expect(await decide(policy, "iam:DeleteInstanceProfile", made, own)).toBe("Allowed");
    expect(await decide(policy, "iam:RemoveRoleFromInstanceProfile", made, own)).toBe("Allowed");
    const requested = {
      [`aws:RequestTag/kubernetes.io/cluster/${name}`]: "owned",
      "aws:RequestTag/eks:eks-cluster-name": name,
      "aws:RequestTag/topology.kubernetes.io/region": region,
      "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": nodeClass,
    };
    expect(await decide(policy, "iam:CreateInstanceProfile", made, requested)).toBe("Allowed");
    // The cluster project's profile carries no class tag; another cluster's profile is not ours.
    const { [`aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass`]: _, ...untagged } = own;
    const theirs = { ...own, [`aws:ResourceTag/kubernetes.io/cluster/${name}`]: "shared" };
    for (const tags of [untagged, theirs])
      for (const action of [
        "iam:DeleteInstanceProfile",
        "iam:AddRoleToInstanceProfile",
        "iam:TagInstanceProfile",
      ])
        expect(
          await decide(policy, action, profile(String(cluster.outputs.burstNodeInstanceProfile)), tags),
          action,
        ).toBe("ImplicitlyDenied");
    expect(
      await decide(policy, "iam:CreateInstanceProfile", made, {
        ...requested,
        "aws:RequestTag/topology.kubernetes.io/region": "elsewhere",
      }),
    ).toBe("ImplicitlyDenied");
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
    // The seed Job tolerates them too (lib/pipeline/plugin-seed.ts).
    expect(tolerates(pluginCacheObjects(pipeline).job.spec.template.spec.tolerations), "seed").toBe(true);
    for (const r of ofType(setup, "kubernetes:helm.sh/v3:Release"))
      expect(JSON.stringify(r.inputs.values ?? {}), r.name).not.toContain(BURST_TAINT.key);
  });

  it("keeps Karpenter from disrupting a running workspace, verification or seed pod", () => {
    // Upstream's key and value (sigs.k8s.io/karpenter v1.15.1 pkg/apis/v1/labels.go DoNotDisruptAnnotationKey).
    const annotated = (metadata: { annotations?: Record<string, string | undefined> } | undefined) =>
      metadata?.annotations?.["karpenter.sh/do-not-disrupt"];
    for (const s of programStages(pipeline)) {
      const pod = stackManifest(pipeline, s).spec.workspaceTemplate!.spec!.podTemplate as {
        metadata?: { annotations?: Record<string, string | undefined> };
      };
      expect(annotated(pod.metadata), s.name).toBe("true");
    }
    for (const kind of analysisTemplateKinds(pipeline))
      for (const metric of analysisTemplateSpec(pipeline, kind).metrics ?? [])
        expect(annotated(metric.provider?.job?.spec.template.metadata), `${kind} ${metric.name}`).toBe(
          "true",
        );
    expect(annotated(pluginCacheObjects(pipeline).job.spec.template.metadata)).toBe("true");
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
