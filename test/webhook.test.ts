// The Warehouse hears about pushes from GitHub at once: a webhook receiver in the ProjectConfig, its
// generated secret, a way through the platform's load balancer, and the webhook registered on the repository.
import { beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { fork } from "../lib/fork";
import { githubRepository } from "../lib/pipeline/names";
import { githubWebhookPath } from "../lib/pipeline/promotion";
import { validatePipeline } from "../lib/pipeline/validate";
import type { ProgramPlan } from "../lib/cli/plan/harness";
import { kubernetesObjects } from "../lib/cli/plan/output";
import { checkedHookRanges } from "../kargo/warehouseWebhook";
import { ConfigError } from "../lib/config";
import { GITHUB_HOOKS_IPV4 } from "../lib/cli/plan/mocks";
import { planChain } from "../lib/cli/plan/projects";
import { one, ofType, planProject } from "./helpers";

type Obj = { kind: string; metadata: Record<string, any>; spec?: any; [k: string]: any };
const pipeline = validatePipeline(definition);

it("serves the receiver at the path Kargo derives: /github/ and SHA-256 of project, receiver name and secret", () => {
  // printf 'infragithubs3cr3t' | sha256sum (akuity/kargo v1.11.2 pkg/webhook/external/receiver.go)
  expect(githubWebhookPath({ ...pipeline, project: "infra" }, "s3cr3t")).toBe(
    "/github/e42c03d39134bf11c1db75daee4fbfe10bb57c06496f2abd747369130c67a2fc",
  );
});

it("registers webhooks on the github.com repository the pipeline names", () => {
  expect(githubRepository("https://github.com/acme/infra")).toEqual({ owner: "acme", name: "infra" });
});

describe("the Warehouse's GitHub webhook", () => {
  let plan: ProgramPlan;
  let objects: Obj[];
  beforeAll(async () => {
    plan = (await planChain())[2]!;
    objects = kubernetesObjects(plan) as Obj[];
  });
  const secret = () => String(plan.upstream.outputs.githubWebhookSecret);

  it("declares a GitHub receiver whose secret Kargo reads from the `secret` key of a generated Secret", () => {
    const config = objects.find((o) => o.kind === "ProjectConfig")!;
    expect(config.spec.webhookReceivers).toEqual([
      { name: "github", github: { secretRef: { name: "github-webhook" } } },
    ]);
    const stored = objects.find((o) => o.kind === "Secret" && o.metadata.name === "github-webhook")!;
    expect(stored.metadata.namespace).toBe(config.metadata.namespace);
    expect(stored.stringData).toBe("[secret]");
    expect(one(plan, "kubernetes:core/v1:Secret", "infra-github-webhook").inputs.stringData).toBe("[secret]");
    expect(plan.upstream.secretOutputNames).toContain("githubWebhookSecret");
    expect(secret()).toMatch(/^\S{20,}$/);
  });

  it("reaches Kargo's external webhooks server through the platform's load balancer on its own port", async () => {
    const lb = one(plan, "aws:lb/loadBalancer:LoadBalancer");
    const webhookGroup = one(plan, "aws:ec2/securityGroup:SecurityGroup", "kargo-webhooks");
    expect(webhookGroup.inputs.ingress).toEqual([
      {
        protocol: "tcp",
        fromPort: 8443,
        toPort: 8443,
        // GitHub's IPv4 hooks ranges as the provider's getIpRanges read them at deploy time (the plan's mock
        // answers like https://api.github.com/meta).
        cidrBlocks: GITHUB_HOOKS_IPV4,
      },
    ]);
    expect((lb.inputs.securityGroups as string[]).length).toBe(2);
    const listener = one(plan, "aws:lb/listener:Listener", "kargo-webhooks").inputs as any;
    const targetGroup = one(plan, "aws:lb/targetGroup:TargetGroup", "kargo-webhooks");
    expect(listener).toMatchObject({ port: 8443, protocol: "TCP" });
    expect(listener.defaultActions[0].type).toBe("forward");
    expect(targetGroup.inputs).toMatchObject({ port: 30444, protocol: "TCP", targetType: "instance" });
    // Like the API's target group, attached to every Auto Scaling group of the node group.
    const groups = plan.resources
      .filter(
        (r) => r.type === "aws:autoscaling/attachment:Attachment" && r.name.startsWith("kargo-webhooks-"),
      )
      .map((r) => r.inputs.autoscalingGroupName);
    const upstream = (await planChain({ project: "cluster-setup" }))[1]!;
    expect(groups).toEqual(upstream.outputs.nodeAutoScalingGroupNames);
    expect(
      one(plan, "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "kargo-webhooks-to-nodes")
        .inputs,
    ).toMatchObject({ ipProtocol: "tcp", fromPort: 30444, toPort: 30444 });
    const values = one(plan, "kubernetes:helm.sh/v3:Release").inputs.values as any;
    expect(values.externalWebhooksServer).toMatchObject({
      host: plan.outputs.kargoLoadBalancerHostname,
      service: { type: "NodePort", nodePort: 30444 },
    });
  });

  it("registers a push webhook on the repository with the URL and secret Kargo serves", () => {
    const url = `https://${String(plan.outputs.kargoLoadBalancerHostname)}:8443${githubWebhookPath(pipeline, secret())}`;
    expect(plan.outputs.githubWebhookUrl).toBe(url);
    const hook = one(plan, "github:index/repositoryWebhook:RepositoryWebhook").inputs;
    expect(hook).toEqual({
      repository: githubRepository(fork.githubRepo).name,
      events: ["push"],
      active: true,
      // The server's certificate is the chart's self-signed one; the delivery is signed with the secret.
      configuration: { url, contentType: "json", secret: "[secret]", insecureSsl: true },
    });
    const provider = one(plan, "pulumi:providers:github").inputs;
    expect(provider).toMatchObject({ owner: githubRepository(fork.githubRepo).owner, token: "[secret]" });
    expect(plan.outputs.githubWebhookRegistered).toBe(true);
    // Polling stays as the fallback.
    expect(objects.find((o) => o.kind === "Warehouse")!.spec.interval).toBe("5m0s");
  });

  it("allows exactly the configured ranges instead of GitHub's when kargo:webhookAllowedCidrs is set", async () => {
    const pinned = await planProject("kargo", { "kargo:webhookAllowedCidrs": ["140.82.112.0/20"] });
    const group = one(pinned, "aws:ec2/securityGroup:SecurityGroup", "kargo-webhooks");
    expect((group.inputs.ingress as { cidrBlocks: string[] }[])[0]!.cidrBlocks).toEqual(["140.82.112.0/20"]);
  });

  it("refuses GitHub's ranges when a security group could not hold them, naming the key that overrides them", () => {
    expect(checkedHookRanges(GITHUB_HOOKS_IPV4)).toEqual(GITHUB_HOOKS_IPV4);
    const many = Array.from({ length: 61 }, (_, i) => `140.82.${i}.0/24`);
    for (const [ranges, why] of [
      [many, /must list at most 60 CIDRs/],
      [["10.0.0.0/8"], /is a private range/],
      [[], /must list at least one CIDR/],
    ] as const) {
      expect(() => checkedHookRanges([...ranges])).toThrow(ConfigError);
      expect(() => checkedHookRanges([...ranges])).toThrow(
        /kargo:webhookAllowedCidrs: unset, and GitHub's hooks ranges .* cannot be used: .*; set the key to the ranges to allow/,
      );
      expect(() => checkedHookRanges([...ranges])).toThrow(why);
    }
  });

  it("only outputs the URL and the secret when the token may not manage hooks", async () => {
    const manual = await planProject("kargo", { "kargo:githubWebhook": false });
    expect(ofType(manual, "github:index/repositoryWebhook:RepositoryWebhook")).toEqual([]);
    expect(manual.outputs.githubWebhookRegistered).toBe(false);
    expect(manual.outputs.githubWebhookUrl).toMatch(/^https:\/\/.+:8443\/github\/[0-9a-f]{64}$/);
    expect(manual.upstream.secretOutputNames).toContain("githubWebhookSecret");
  });
});
