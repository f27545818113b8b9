// The cluster project: its network, nodes, access and exports. Its storage (the EBS CSI driver and the
// snapshot controller) is cluster-storage.test.ts's.
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { beforeAll, describe, expect, it } from "vitest";
import type { ProgramPlan } from "../lib/cli/plan/harness";
import { planAmiId } from "../lib/cli/plan/mocks";
import { al2023AmiParameter, NODE_AMI_RELEASE } from "../lib/nodeAmi";
import { BURST_AMI_ALIAS } from "../cluster-setup/karpenter";
import { readStackConfig, repoRoot } from "../lib/cli/plan/projects";
import { maxPodsExpression, nodeConfig } from "../cluster/platformCluster";
import { one, planProject } from "./helpers";

describe("cluster project", () => {
  let plan: ProgramPlan;
  beforeAll(async () => {
    plan = await planProject("cluster");
  });

  it("builds a VPC with one NAT gateway and subnets tagged for load balancers", () => {
    const vpc = one(plan, "awsx:ec2:Vpc").inputs;
    expect(vpc.cidrBlock).toBe("10.0.0.0/16");
    expect(vpc.numberOfAvailabilityZones).toBe(2);
    expect(vpc.natGateways).toEqual({ strategy: "Single" });
    const specs = vpc.subnetSpecs as { type: string; tags: Record<string, string> }[];
    expect(specs.find((s) => s.type === "Public")?.tags["kubernetes.io/role/elb"]).toBe("1");
    expect(specs.find((s) => s.type === "Private")?.tags["kubernetes.io/role/internal-elb"]).toBe("1");
  });

  it("runs nodes in a managed node group in the private subnets only", async () => {
    const cluster = one(plan, "eks:index:Cluster").inputs;
    expect(cluster.skipDefaultNodeGroup).toBe(true);
    const nodes = one(plan, "eks:index:ManagedNodeGroup").inputs;
    expect(nodes.subnetIds).toEqual(plan.upstream.outputs.privateSubnetIds);
    expect(nodes.subnetIds).not.toEqual(
      expect.arrayContaining(plan.upstream.outputs.publicSubnetIds as string[]),
    );
    expect(nodes).toMatchObject({
      instanceTypes: ["t4g.medium"],
      operatingSystem: "AL2023",
      capacityType: "ON_DEMAND",
    });
    // The sizes of the stack config the plan runs with: a fork with more environments may give it more nodes.
    const config = readStackConfig("cluster").values;
    expect(nodes.scalingConfig).toEqual({
      minSize: config["cluster:nodeMinSize"],
      desiredSize: config["cluster:nodeDesiredSize"],
      maxSize: config["cluster:nodeMaxSize"],
    });
    expect(nodes.nodeRole).toBe(one(plan, "aws:iam/role:Role", "platform-nodes").urn);
  });

  // The AMI is the pinned release's, read from the parameter AWS never re-points (lib/nodeAmi.ts); the plan
  // answers one AMI ID per parameter name, so the ID says which parameter was read.
  it("runs the pinned AMI release for the cluster's Kubernetes version and the nodes' architecture", async () => {
    const version = String(one(plan, "eks:index:Cluster").inputs.version);
    expect(NODE_AMI_RELEASE).toMatch(/^v\d{8}$/);
    const parameter = al2023AmiParameter(version, "arm64");
    expect(parameter).toBe(
      `/aws/service/eks/optimized-ami/${version}/amazon-linux-2023/arm64/standard/amazon-eks-node-al2023-arm64-standard-${version}-${NODE_AMI_RELEASE}/image_id`,
    );
    const nodes = one(plan, "eks:index:ManagedNodeGroup").inputs;
    expect(nodes.amiId).toBe(planAmiId(parameter));
    // amiType would make pulumi-eks refuse amiId; releaseVersion it drops with a launch template.
    expect(nodes).not.toHaveProperty("amiType");
    const x86 = await planProject("cluster", { "cluster:nodeInstanceTypes": ["t3a.medium", "t3.medium"] });
    expect(one(x86, "eks:index:ManagedNodeGroup").inputs.amiId).toBe(
      planAmiId(al2023AmiParameter(version, "x86_64")),
    );
    // Burst nodes run the same release.
    expect(BURST_AMI_ALIAS).toBe(`al2023@${NODE_AMI_RELEASE}`);
  });

  it("creates the OIDC provider, API authentication, encryption and logging", () => {
    const cluster = one(plan, "eks:index:Cluster").inputs;
    const key = one(plan, "aws:kms/key:Key");
    expect(cluster).toMatchObject({
      createOidcProvider: true,
      authenticationMode: "API",
      version: "1.35",
      endpointPrivateAccess: true,
      enabledClusterLogTypes: ["audit"],
      publicAccessCidrs: ["0.0.0.0/0"],
      name: "platform-example",
    });
    expect(key.inputs.enableKeyRotation).toBe(true);
    expect(cluster.encryptionConfigKeyArn).toMatch(/^arn:aws:kms:us-west-2:\d{12}:key\//);
    expect(one(plan, "eks:index:Cluster").dependsOn).toContain(key.urn);
  });

  it("makes the configured roles cluster admins, and CI's roles deployers and readers, through access entries", () => {
    const entries = one(plan, "eks:index:Cluster").inputs.accessEntries as Record<string, unknown>;
    const policy = (name: string) => ({
      [name]: {
        policyArn: `arn:aws:eks::aws:cluster-access-policy/${name}`,
        accessScope: { type: "cluster" },
      },
    });
    expect(entries).toEqual({
      "admin-123456789012-PlatformAdmins": {
        principalArn: "arn:aws:iam::123456789012:role/PlatformAdmins",
        accessPolicies: policy("AmazonEKSClusterAdminPolicy"),
      },
      "ci-deploy": {
        principalArn: "arn:aws:iam::123456789012:role/platform-ci-deploy",
        accessPolicies: policy("AmazonEKSClusterAdminPolicy"),
      },
      // Reads everything, Secrets (Helm release state) included, and writes nothing.
      "ci-preview": {
        principalArn: "arn:aws:iam::123456789012:role/platform-ci-preview",
        accessPolicies: policy("AmazonEKSAdminViewPolicy"),
      },
    });
  });

  it("gives the preview identity read of every object, Secrets included, so only approved previews may use it", () => {
    const entries = one(plan, "eks:index:Cluster").inputs.accessEntries as Record<
      string,
      { accessPolicies: Record<string, { accessScope: unknown }>; kubernetesGroups?: string[] }
    >;
    const preview = entries["ci-preview"]!;
    // Its whole reach: one AWS access policy, cluster-wide, and no Kubernetes group any RBAC binding could
    // widen. AmazonEKSAdminViewPolicy is get/list/watch on every resource, Secrets among them
    // (docs.aws.amazon.com/eks/latest/userguide/access-policy-permissions.html).
    expect(Object.keys(preview.accessPolicies)).toEqual(["AmazonEKSAdminViewPolicy"]);
    expect(preview.accessPolicies.AmazonEKSAdminViewPolicy!.accessScope).toEqual({ type: "cluster" });
    expect(preview.kubernetesGroups).toBeUndefined();
    // So nothing a pull request runs before a reviewer approves may hold it: the workflows ask for it only in
    // the preview environment (test/docs-and-ci.test.ts pins the trust policy docs/deploy.md gives the role).
    const previewWorkflow = YAML.parse(
      fs.readFileSync(path.join(repoRoot, ".github/workflows/preview.yml"), "utf8"),
    );
    for (const [name, job] of Object.entries<{ environment?: string }>(previewWorkflow.jobs)) {
      if (JSON.stringify(job).includes("AWS_PREVIEW_ROLE_ARN")) expect(job.environment, name).toBe("preview");
    }
  });

  it("turns on the VPC CNI's prefix delegation and sets the nodes' max pods from it, capped by nodeMaxPods", async () => {
    const cluster = one(plan, "eks:index:Cluster").inputs;
    expect(cluster.vpcCniOptions).toMatchObject({ enablePrefixDelegation: true, warmPrefixTarget: 1 });
    const nodes = one(plan, "eks:index:ManagedNodeGroup").inputs;
    const maxPods = readStackConfig("cluster").values["cluster:nodeMaxPods"] as number;
    expect(nodes.nodeadmExtraOptions).toEqual([
      { contentType: "application/node.eks.aws", content: nodeConfig(maxPods) },
    ]);
    // nodeadm's variables for a t4g.medium: 3 interfaces of 6 addresses; a prefix per address slot.
    const evaluate = (expr: string, enis: number, ips: number) => {
      const [cond, then, otherwise] = expr.split(/ \? | : /);
      const value = (e: string) =>
        Function("default_enis", "ips_per_eni", `return ${e}`)(enis, ips) as number;
      return value(cond!) ? value(then!) : value(otherwise!);
    };
    expect(evaluate(maxPodsExpression(40), 3, 6)).toBe(40);
    expect(evaluate(maxPodsExpression(110), 3, 6)).toBe(110);
    expect(evaluate(maxPodsExpression(110), 2, 2)).toBe(34);
    const other = await planProject("cluster", { "cluster:nodeMaxPods": 64 });
    expect(one(other, "eks:index:ManagedNodeGroup").inputs.nodeadmExtraOptions).toEqual([
      { contentType: "application/node.eks.aws", content: nodeConfig(64) },
    ]);
  });

  it("tags the private subnets for burst nodes and gives them the node role's instance profile", () => {
    const vpc = one(plan, "awsx:ec2:Vpc").inputs;
    const specs = vpc.subnetSpecs as { type: string; tags: Record<string, string> }[];
    expect(specs.find((s) => s.type === "Private")?.tags["karpenter.sh/discovery"]).toBe("platform-example");
    expect(specs.find((s) => s.type === "Public")?.tags["karpenter.sh/discovery"]).toBeUndefined();
    const profile = one(plan, "aws:iam/instanceProfile:InstanceProfile");
    expect(String(profile.inputs.role)).toMatch(/^platform-nodes-[0-9a-f]{7}$/);
    expect(plan.outputs.burstNodeInstanceProfile).toBe(profile.inputs.name);
    expect(plan.outputs.nodeArchitecture).toBe("arm64");
    expect(plan.outputs.nodeInstanceFamilies).toEqual(["t4g"]);
  });

  it("tags what it creates with the stack it belongs to", () => {
    for (const type of [
      "awsx:ec2:Vpc",
      "eks:index:Cluster",
      "eks:index:ManagedNodeGroup",
      "aws:kms/key:Key",
    ]) {
      expect(one(plan, type).inputs.tags, type).toMatchObject({ "platform:stack": "cluster/example" });
    }
  });

  it("passes a per-zone NAT strategy through", async () => {
    const ha = await planProject("cluster", {
      "cluster:natGatewayStrategy": "OnePerAz",
      "cluster:availabilityZoneCount": 3,
    });
    expect(one(ha, "awsx:ec2:Vpc").inputs).toMatchObject({
      natGateways: { strategy: "OnePerAz" },
      numberOfAvailabilityZones: 3,
    });
    expect(ha.outputs.privateSubnetIds).toHaveLength(3);
  });

  it("exports the contract cluster-setup reads, with the kubeconfig secret", () => {
    expect(Object.keys(plan.outputs).sort()).toEqual(
      [
        "baseWorkspaces",
        "burstNodeInstanceProfile",
        "clusterName",
        "controlPlaneLogGroupName",
        "ebsCsiDriver",
        "kubeconfig",
        "nodeArchitecture",
        "nodeAutoScalingGroupNames",
        "nodeInstanceFamilies",
        "nodeMaxPods",
        "nodeRoleArn",
        "nodeSecurityGroupId",
        "oidcProviderArn",
        "oidcProviderUrl",
        "privateSubnetIds",
        "publicSubnetIds",
        "region",
        "vpcId",
        "volumeSnapshots",
      ].sort(),
    );
    expect(plan.outputs.kubeconfig).toBe("[secret]");
    expect(plan.upstream.secretOutputNames).toEqual(["kubeconfig"]);
    expect(plan.outputs.oidcProviderUrl).toMatch(/^https:\/\/oidc\.eks\.us-west-2\.amazonaws\.com\/id\//);
    expect(plan.outputs.region).toBe("us-west-2");
    // docs/deploy.md names each of them, and nothing else, where it lists them.
    const deploy = fs.readFileSync(path.join(repoRoot, "docs", "deploy.md"), "utf8");
    const listed = /^Its outputs, which `cluster-setup` reads: ([\s\S]*?)\. The kubeconfig runs/m.exec(
      deploy,
    );
    expect(listed, "docs/deploy.md lists the cluster's outputs").not.toBeNull();
    const named = [...listed![1]!.matchAll(/`([A-Za-z]+)`/g)]
      .map((m) => m[1])
      .filter((n) => n !== "cluster-setup");
    expect(named.sort()).toEqual(Object.keys(plan.outputs).sort());
  });
});
