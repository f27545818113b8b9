// What a real deploy on AWS depends on and mocks alone would not show: which security group the nodes
// carry, access entries for every identity that runs Pulumi, managed logs, the support policy, Cognito's
// registered URLs, TLS with a domain, and the checks that stop a deploy before it half-fails.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import YAML from "yaml";
import { beforeAll, describe, expect, it } from "vitest";
import { iamRoleOf, sameIamRole } from "../cluster/identity";
import { defaultDomainPrefix } from "../cluster-setup/config";
import { KARGO_CLI_CALLBACK_PORT } from "../kargo/kargoInstall";
import { ProgramError, planProgram, type ProgramPlan } from "../lib/cli/plan/harness";
import { PLAN_ACCOUNT_ID, PLAN_DEPLOYER_ROLE, PlanMocks, type UpstreamStack } from "../lib/cli/plan/mocks";
import { planChain, readStackConfig, repoRoot } from "../lib/cli/plan/projects";
import { docPages } from "../lib/markdown";
import { ofType, one, planError, planProject } from "./helpers";

/** Plans kargo against cluster-setup outputs changed by `change`, as a real upstream stack could hold them. */
async function planKargoAgainst(
  chain: ProgramPlan[],
  change: (outputs: Record<string, unknown>) => Record<string, unknown>,
  overrides: Record<string, unknown> = {},
): Promise<ProgramPlan> {
  const [cluster, setup] = chain;
  const upstream: Record<string, UpstreamStack> = {
    cluster: cluster!.upstream,
    "cluster-setup": { ...setup!.upstream, outputs: change({ ...setup!.upstream.outputs }) },
  };
  const config = readStackConfig("kargo");
  return planProgram({
    projectDir: path.join(repoRoot, "kargo"),
    project: "kargo",
    stack: config.stack,
    config: { ...config.values, ...overrides },
    secretKeys: config.secretKeys,
    upstream,
  });
}

describe("on AWS, for real", () => {
  let chain: ProgramPlan[];
  let cluster: ProgramPlan;
  let setup: ProgramPlan;
  let kargo: ProgramPlan;
  beforeAll(async () => {
    chain = await planChain();
    [cluster, setup, kargo] = chain as [ProgramPlan, ProgramPlan, ProgramPlan];
  });

  describe("the node port reaches the nodes", () => {
    it("opens the node port on the EKS-created group the managed nodes carry, and exports it as such", () => {
      const eks = one(cluster, "eks:index:Cluster").inputs;
      expect(eks.skipDefaultSecurityGroups).toBe(true);
      // What pulumi-eks answers: the component's own group (control plane only) unless defaults are
      // skipped, the EKS cluster's vpcConfig.clusterSecurityGroupId always.
      const answer = new PlanMocks("us-west-2").newResource({
        type: "eks:index:Cluster",
        name: "platform",
        inputs: { ...eks, skipDefaultSecurityGroups: false },
        custom: false,
      }).state as { clusterSecurityGroupId: string; eksCluster: { vpcConfig: Record<string, string> } };
      const eksCreated = answer.eksCluster.vpcConfig.clusterSecurityGroupId;
      expect(answer.clusterSecurityGroupId).not.toBe(eksCreated);
      expect(cluster.outputs.nodeSecurityGroupId).toBe(eksCreated);
      expect(cluster.outputs).not.toHaveProperty("clusterSecurityGroupId");
      expect(setup.outputs.nodeSecurityGroupId).toBe(eksCreated);

      const rule = one(
        kargo,
        "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
        "kargo-lb-to-nodes",
      ).inputs;
      expect(rule).toMatchObject({ securityGroupId: eksCreated, fromPort: 30443, toPort: 30443 });
    });

    it("attaches the target group to every Auto Scaling group of the node group", async () => {
      const groups = ["eks-platform-nodes-a", "eks-platform-nodes-b"];
      const twoGroups = await planKargoAgainst(chain, (o) => ({ ...o, nodeAutoScalingGroupNames: groups }));
      const targetGroup = one(twoGroups, "aws:lb/targetGroup:TargetGroup", "kargo");
      // The Kargo API's attachments (the webhook listener's target group has its own, webhook.test.ts).
      const api = (plan: typeof kargo) =>
        ofType(plan, "aws:autoscaling/attachment:Attachment").filter(
          (a) => !a.name.startsWith("kargo-webhooks-"),
        );
      const attachments = api(twoGroups);
      expect(attachments.map((a) => a.inputs.autoscalingGroupName).sort()).toEqual(groups);
      for (const a of attachments) expect(a.inputs.lbTargetGroupArn).toMatch(/:targetgroup\/kargo\//);
      expect(targetGroup.inputs).toMatchObject({ protocol: "TCP", port: 30443 });
      // The default chain: EKS runs a managed node group in one Auto Scaling group.
      expect(api(kargo).map((a) => a.inputs.autoscalingGroupName)).toEqual(
        setup.outputs.nodeAutoScalingGroupNames,
      );
    });
  });

  describe("who can reach the cluster", () => {
    it("keys access entries by account, so same-named roles in two accounts both get one", async () => {
      const plan = await planProject("cluster", {
        "cluster:clusterAdminRoleArns": [
          "arn:aws:iam::111111111111:role/Admins",
          "arn:aws:iam::222222222222:role/team/Admins",
        ],
      });
      const entries = one(plan, "eks:index:Cluster").inputs.accessEntries as Record<
        string,
        { principalArn: string }
      >;
      const admins = Object.entries(entries).filter(([key]) => key.startsWith("admin-"));
      expect(admins.map(([, e]) => e.principalArn).sort()).toEqual([
        "arn:aws:iam::111111111111:role/Admins",
        "arn:aws:iam::222222222222:role/team/Admins",
      ]);
    });

    it("reads role identity from role ARNs and from the STS ARN of a session", () => {
      const session = `arn:aws:sts::${PLAN_ACCOUNT_ID}:assumed-role/Deployer/ci-1234`;
      expect(iamRoleOf(session)).toEqual({ partition: "aws", account: PLAN_ACCOUNT_ID, name: "Deployer" });
      expect(sameIamRole(session, `arn:aws:iam::${PLAN_ACCOUNT_ID}:role/Deployer`)).toBe(true);
      expect(sameIamRole(session, `arn:aws:iam::${PLAN_ACCOUNT_ID}:role/ci/Deployer`)).toBe(true);
      expect(sameIamRole(session, `arn:aws:iam::999999999999:role/Deployer`)).toBe(false);
      expect(sameIamRole(session, `arn:aws:iam::${PLAN_ACCOUNT_ID}:role/Deployer2`)).toBe(false);
      expect(sameIamRole(`arn:aws:iam::${PLAN_ACCOUNT_ID}:user/Deployer`, session)).toBe(false);
    });

    const creator = `arn:aws:iam::${PLAN_ACCOUNT_ID}:role/${PLAN_DEPLOYER_ROLE}`;
    it.each([
      ["ciDeployRoleArn", creator],
      ["ciPreviewRoleArn", `arn:aws:iam::${PLAN_ACCOUNT_ID}:role/with/a/path/${PLAN_DEPLOYER_ROLE}`],
      ["clusterAdminRoleArns", [creator]],
    ])(
      "stops before creating anything when %s lists the identity creating the cluster",
      async (key, value) => {
        const overrides: Record<string, unknown> = { [`cluster:${key}`]: value };
        if (key === "ciPreviewRoleArn") overrides["cluster:ciDeployRoleArn"] = "";
        const error = await planError("cluster", overrides);
        expect(error.message).toMatch(
          new RegExp(
            `assumed-role/${PLAN_DEPLOYER_ROLE}/plan-session\\) creates the EKS cluster[\\s\\S]*cluster:${key} lists`,
          ),
        );
      },
    );

    it("lets a same-named role of another account through", async () => {
      const plan = await planProject("cluster", {
        "cluster:ciDeployRoleArn": `arn:aws:iam::999999999999:role/${PLAN_DEPLOYER_ROLE}`,
      });
      expect(one(plan, "eks:index:Cluster").inputs.accessEntries).toHaveProperty("ci-deploy");
    });

    it.each([
      [
        "a CI role that is also an admin",
        { "cluster:ciDeployRoleArn": "arn:aws:iam::123456789012:role/PlatformAdmins" },
        /cluster:ciDeployRoleArn: .*also in cluster:clusterAdminRoleArns/,
      ],
      [
        "one role for deploys and previews",
        {
          "cluster:ciDeployRoleArn": "arn:aws:iam::123456789012:role/ci",
          "cluster:ciPreviewRoleArn": "arn:aws:iam::123456789012:role/ci",
        },
        /cluster:ciPreviewRoleArn: must differ from cluster:ciDeployRoleArn/,
      ],
      [
        "a CI role that is no role ARN",
        { "cluster:ciDeployRoleArn": "ci" },
        /cluster:ciDeployRoleArn: .*IAM role ARN/,
      ],
      [
        "a retention CloudWatch refuses",
        { "cluster:clusterLogRetentionDays": 10 },
        /cluster:clusterLogRetentionDays: must be one of the periods CloudWatch Logs accepts: 1, 3, 5, 7, 14, 30/,
      ],
      [
        "an unknown support type",
        { "cluster:supportType": "LTS" },
        /cluster:supportType: allowed values are "STANDARD"/,
      ],
    ])("rejects %s", async (_, overrides, message) => {
      expect((await planError("cluster", overrides)).message).toMatch(message);
    });
  });

  it("manages the control-plane log group, created before the cluster, with a retention", () => {
    const logGroup = one(cluster, "aws:cloudwatch/logGroup:LogGroup");
    expect(logGroup.inputs).toMatchObject({ name: "/aws/eks/platform-example/cluster", retentionInDays: 30 });
    const eks = one(cluster, "eks:index:Cluster");
    expect(eks.dependsOn).toContain(logGroup.urn);
    expect(eks.inputs.name).toBe("platform-example");
    expect(cluster.outputs.controlPlaneLogGroupName).toBe("/aws/eks/platform-example/cluster");
  });

  it("stays in standard support unless told otherwise", async () => {
    expect(one(cluster, "eks:index:Cluster").inputs.upgradePolicy).toEqual({ supportType: "STANDARD" });
    const extended = await planProject("cluster", { "cluster:supportType": "EXTENDED" });
    expect(one(extended, "eks:index:Cluster").inputs.upgradePolicy).toEqual({ supportType: "EXTENDED" });
  });

  describe("Cognito", () => {
    it("registers the fixed-port CLI callback and logout URLs, with the classic hosted UI", () => {
      const client = one(kargo, "aws:cognito/userPoolClient:UserPoolClient").inputs;
      expect(client.callbackUrls).toContain(`http://localhost:${KARGO_CLI_CALLBACK_PORT}/auth/callback`);
      expect(client.logoutUrls).toEqual([`${kargo.outputs.kargoUrl}/login`]);
      expect(one(setup, "aws:cognito/userPoolDomain:UserPoolDomain").inputs.managedLoginVersion).toBe(1);
      const deploy = fs.readFileSync(docPages.deploy, "utf8");
      expect(deploy).toContain(`--sso --port ${KARGO_CLI_CALLBACK_PORT}`);
    });

    it("turns deletion protection off only through config and pulumi up, keeping the Pulumi protection", async () => {
      expect(one(setup, "aws:cognito/userPool:UserPool").inputs.deletionProtection).toBe("ACTIVE");
      const off = await planProject("cluster-setup", { "cluster-setup:cognitoDeletionProtection": false });
      const pool = one(off, "aws:cognito/userPool:UserPool");
      expect(pool.inputs.deletionProtection).toBe("INACTIVE");
      expect(pool.options.protect).toBe(true);
      expect(pool.inputs.mfaConfiguration).toBe("ON"); // every other setting stays as configured
    });

    it("exports the pool's region, and kargo stops before declaring anything when it is not the cluster's", async () => {
      expect(setup.outputs.cognitoRegion).toBe(setup.outputs.region);
      const error = await planKargoAgainst(chain, (o) => ({ ...o, cognitoRegion: "eu-west-1" })).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ProgramError);
      expect((error as ProgramError).message).toMatch(
        /Cognito user pool is in eu-west-1 but the cluster .* is in us-west-2/,
      );
      expect(
        (error as ProgramError).registered.filter((r) => r.type !== "pulumi:pulumi:StackReference"),
      ).toEqual([]);
    });

    it("refuses a default domain prefix Cognito would refuse, naming the key to set", async () => {
      expect(() => defaultDomainPrefix("aws-prod", "123456789012")).toThrow(
        /cluster-setup:cognitoDomainPrefix: the default "platform-aws-prod-<account id>" contains "aws"/,
      );
      expect(() => defaultDomainPrefix("x".repeat(42), "123456789012")).toThrow(/longer than 63/);
      expect(() => defaultDomainPrefix("prod", "123456789012")).not.toThrow();
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "stack-"));
      const file = path.join(dir, "Pulumi.amazon-dev.yaml");
      fs.copyFileSync(path.join(repoRoot, "cluster-setup", "Pulumi.example.yaml"), file);
      const error = await planChain({ project: "cluster-setup", configFile: file }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ProgramError);
      expect((error as ProgramError).message).toMatch(/contains "amazon"/);
      expect((error as ProgramError).registered.map((r) => r.type)).not.toContain(
        "kubernetes:helm.sh/v3:Release",
      );
    });
  });

  it("deletes the stacks namespace before the operator that finalizes its Stacks", () => {
    const namespace = ofType(setup, "kubernetes:core/v1:Namespace").find((n) => n.name === "stacks")!;
    const operator = one(setup, "kubernetes:helm.sh/v3:Release", "pulumi-kubernetes-operator");
    expect(namespace.dependsOn).toContain(operator.urn);
  });

  describe("TLS with a domain", () => {
    let tls: ProgramPlan;
    beforeAll(async () => {
      tls = await planProject("kargo", {
        "kargo:kargoHostname": "kargo.example.com",
        "kargo:kargoHostedZoneId": "Z0123456789ABCDEFGHIJ",
      });
    });

    it("gets an ACM certificate validated through its Route 53 record", () => {
      const certificate = one(tls, "aws:acm/certificate:Certificate");
      expect(certificate.inputs).toMatchObject({ domainName: "kargo.example.com", validationMethod: "DNS" });
      const record = one(tls, "aws:route53/record:Record", "kargo-certificate-validation").inputs;
      expect(record).toMatchObject({ zoneId: "Z0123456789ABCDEFGHIJ", type: "CNAME" });
      expect(record.name).toMatch(/^_[0-9a-f]+\.kargo\.example\.com\.$/);
      expect((record.records as string[])[0]).toMatch(/\.acm-validations\.aws\.$/);
      const validation = one(tls, "aws:acm/certificateValidation:CertificateValidation").inputs;
      expect(validation.validationRecordFqdns).toEqual([String(record.name).replace(/\.$/, "")]);
    });

    it("terminates TLS at the load balancer with it and re-encrypts to the API", () => {
      const listener = one(tls, "aws:lb/listener:Listener", "kargo").inputs;
      expect(listener).toMatchObject({ port: 443, protocol: "TLS" });
      expect(listener.certificateArn).toMatch(/^arn:aws:acm:us-west-2:\d{12}:certificate\//);
      expect(one(tls, "aws:lb/targetGroup:TargetGroup", "kargo").inputs.protocol).toBe("TLS");
      expect(tls.outputs.kargoCertificateArn).toBe(listener.certificateArn);
      const values = one(tls, "kubernetes:helm.sh/v3:Release").inputs.values as any;
      expect(values.api.host).toBe("kargo.example.com");
      expect(values.api.tls?.enabled).not.toBe(false);
    });

    it("points the name at the load balancer", () => {
      const record = one(tls, "aws:route53/record:Record", "kargo-host").inputs;
      expect(record).toMatchObject({ zoneId: "Z0123456789ABCDEFGHIJ", name: "kargo.example.com", type: "A" });
      expect((record.aliases as { name: string }[])[0]!.name).toBe(tls.outputs.kargoLoadBalancerHostname);
      expect(tls.outputs.kargoUrl).toBe("https://kargo.example.com");
    });

    it("keeps the self-signed pass-through without a domain", () => {
      expect(ofType(kargo, "aws:acm/certificate:Certificate")).toEqual([]);
      expect(ofType(kargo, "aws:route53/record:Record")).toEqual([]);
      expect(one(kargo, "aws:lb/listener:Listener", "kargo").inputs).toMatchObject({
        port: 443,
        protocol: "TCP",
      });
    });

    it.each([
      [
        { "kargo:kargoHostedZoneId": "Z0123456789ABCDEFGHIJ" },
        /kargo:kargoHostedZoneId: needs kargo:kargoHostname/,
      ],
      [
        { "kargo:kargoHostname": "kargo.example.com", "kargo:kargoHostedZoneId": "example.com" },
        /kargo:kargoHostedZoneId: must be a Route 53 hosted zone ID/,
      ],
      [{ "kargo:kargoLoadBalancerZones": 0 }, /kargo:kargoLoadBalancerZones: must be at least 1/],
      [
        { "kargo:kargoLoadBalancerZones": 5 },
        /kargo:kargoLoadBalancerZones: 5, but the cluster has public subnets in \d zone\(s\); allowed: 1 to \d, or unset for all of them/,
      ],
    ])("rejects %j", async (overrides, message) => {
      expect((await planError("kargo", overrides)).message).toMatch(message);
    });
  });

  it("deploys only after the tests pass, and re-applies kargo whenever cluster was deployed", () => {
    const deploy = YAML.parse(fs.readFileSync(path.join(repoRoot, ".github/workflows/deploy.yml"), "utf8"));
    expect(deploy.jobs.tests.uses).toBe("./.github/workflows/ci.yml");
    expect(deploy.jobs.changes.needs).toBe("tests");
    expect(deploy.jobs.cluster.needs).toBe("changes");
    for (const job of ["cluster-setup", "kargo"]) {
      expect(deploy.jobs[job].if, job).toContain("needs.changes.result == 'success'");
    }
    expect(deploy.jobs["cluster-setup"].if).toContain("needs.cluster.result == 'success'");
    expect(deploy.jobs.kargo.if).toContain("needs.cluster-setup.result == 'success'");
  });
});
