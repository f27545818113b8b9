import type * as pulumi from "@pulumi/pulumi";

/** The AWS account every planned ARN lives in. */
/** The numeric GitHub user ID the plan's GitHub answers with. */
export const PLAN_GITHUB_USER_ID = "1000001";

export const PLAN_ACCOUNT_ID = "123456789012";
/** The Pulumi Cloud organization the plan runs in (`pulumi.getOrganization()`). */
export const PLAN_ORGANIZATION = "plan-org";

/** The role the plan's `pulumi up` runs as (GetCallerIdentity answers with a session of it). */
export const PLAN_DEPLOYER_ROLE = "platform-deployer";

/** GitHub's webhook source ranges, as its meta API lists them under `hooks`. */
export const GITHUB_HOOKS_IPV4 = ["192.30.252.0/22", "185.199.108.0/22", "140.82.112.0/20", "143.55.64.0/20"];
export const GITHUB_HOOKS_IPV6 = ["2a0a:a440::/29", "2606:50c0::/32"];

/** Outputs of an upstream stack, as a StackReference would read them. */
export interface UpstreamStack {
  outputs: Record<string, unknown>;
  secretOutputNames: string[];
}

/** Deterministic hex of a given length, so every plan of the same program is byte-identical. */
const hex = (seed: string, length: number): string => {
  let h = 2166136261;
  let out = "";
  while (out.length < length) {
    for (const c of seed + out.length) h = Math.imul(h ^ c.charCodeAt(0), 16777619) >>> 0;
    out += h.toString(16).padStart(8, "0");
  }
  return out.slice(0, length);
};

/** The name the plan gives a role: its own, or Pulumi's auto-name (`<resource name>-<7 hex>`). */
export const plannedRoleName = (name: string, inputs: Record<string, unknown>): string =>
  String(inputs.name ?? `${name}-${hex(name, 7)}`);

/** The numeric ID the plan answers for a GitHub user or team (`user:<login>`, `team:<slug>`), as a string. */
export const planGithubId = (key: string): string => String(parseInt(hex(key, 7), 16));

/** The AMI ID the plan answers for an EKS-optimized AMI's SSM parameter: one per parameter name. */
export const planAmiId = (parameterName: string): string => `ami-${hex(parameterName, 17)}`;

/**
 * Mocks that answer like AWS, EKS and Kubernetes would: resource ids, ARNs, subnet lists, an OIDC issuer, a
 * kubeconfig, generated passwords. Downstream projects read these through StackReferences, so they must be
 * realistic enough for the next program to run on.
 */
export class PlanMocks implements pulumi.runtime.Mocks {
  constructor(
    /** `aws:region` of the stack; undefined when the stack sets none. */
    private readonly configRegion: string | undefined,
    /** Upstream stacks by their `org/project/stack` name; matched on the project part. */
    private readonly upstream: Record<string, UpstreamStack> = {},
  ) {}

  /** Provider id → the one account it may act in. */
  private readonly providerAccounts = new Map<string, string>();

  /** The account a resource lives in: its provider's, or the plan's. */
  private accountOf(args: pulumi.runtime.MockResourceArgs): string {
    const providerId = args.provider?.split("::").pop();
    return (providerId && this.providerAccounts.get(providerId)) || PLAN_ACCOUNT_ID;
  }

  /**
   * The region resources are named in: the stack's, or for a project whose AWS provider takes its region from
   * upstream (kargo), the region upstream exported.
   */
  private get region(): string {
    const upstreamRegion = Object.values(this.upstream)
      .map((u) => u.outputs.region)
      .find((r): r is string => typeof r === "string");
    return this.configRegion ?? upstreamRegion ?? "no-region";
  }

  newResource(args: pulumi.runtime.MockResourceArgs): {
    id: string | undefined;
    state: Record<string, unknown>;
  } {
    if (args.type === "pulumi:pulumi:StackReference") {
      const stackName = String(args.inputs.name);
      const project = stackName.split("/")[1] ?? stackName;
      const upstream = this.upstream[project];
      if (!upstream) throw new Error(`plan: no planned outputs for the upstream stack "${stackName}"`);
      return { id: stackName, state: { name: stackName, ...upstream } };
    }
    const state = { ...args.inputs, ...this.computed(args) };
    const id = args.custom ? String(state.id ?? this.idFor(args)) : undefined;
    // A provider pinned to one account (allowedAccountIds) makes its resources' ARNs in that account.
    if (args.type === "pulumi:providers:aws" && id !== undefined) {
      const allowed = args.inputs.allowedAccountIds;
      const accounts = (typeof allowed === "string" ? JSON.parse(allowed) : allowed) as string[] | undefined;
      if (accounts?.length === 1) this.providerAccounts.set(id, accounts[0]!);
    }
    return { id, state };
  }

  call(args: pulumi.runtime.MockCallArgs): Record<string, unknown> {
    switch (args.token) {
      case "aws:index/getRegion:getRegion":
        if (this.configRegion === undefined)
          throw new Error("aws:region is not set: set it with pulumi config set aws:region <region>");
        return { id: this.region, name: this.region, region: this.region };
      case "aws:index/getPartition:getPartition":
        return { id: "aws", partition: "aws", dnsSuffix: "amazonaws.com" };
      case "aws:index/getCallerIdentity:getCallerIdentity":
        return {
          id: PLAN_ACCOUNT_ID,
          accountId: PLAN_ACCOUNT_ID,
          // What STS answers for a session of an assumed role, not the role's own ARN.
          arn: `arn:aws:sts::${PLAN_ACCOUNT_ID}:assumed-role/${PLAN_DEPLOYER_ROLE}/plan-session`,
          userId: "AROAPLANPLANPLANPLAN",
        };
      case "github:index/getIpRanges:getIpRanges":
        // GitHub's meta API (https://api.github.com/meta) as it answered in 2026; only `hooks` is read.
        return {
          id: "github-meta",
          hooks: [...GITHUB_HOOKS_IPV4, ...GITHUB_HOOKS_IPV6],
          hooksIpv4s: GITHUB_HOOKS_IPV4,
          hooksIpv6s: GITHUB_HOOKS_IPV6,
        };
      case "github:index/getUser:getUser":
        // With username "" GitHub answers for the token's own user (the provider's github_user data source).
        return args.inputs.username
          ? { ...args.inputs, id: planGithubId(`user:${args.inputs.username}`), login: args.inputs.username }
          : { ...args.inputs, id: PLAN_GITHUB_USER_ID, login: "plan-token-user" };
      case "github:index/getTeam:getTeam":
        return { ...args.inputs, id: planGithubId(`team:${args.inputs.slug}`), name: args.inputs.slug };
      case "aws:ssm/getParameter:getParameter": {
        // An EKS-optimized AMI's parameter answers one AMI ID per parameter name, so the plan (and its diff)
        // shows the node AMI move exactly when the parameter it reads does.
        const name = String(args.inputs.name);
        const ami = name.startsWith("/aws/service/eks/optimized-ami/") ? planAmiId(name) : undefined;
        return ami === undefined
          ? args.inputs
          : { ...args.inputs, id: name, arn: name, type: "String", value: ami };
      }
      case "aws:eks/getCluster:getCluster": {
        // The cluster the cluster project's plan made (eksCluster below), by its name.
        const issuer = `https://oidc.eks.${this.region}.amazonaws.com/id/${hex(String(args.inputs.name), 32).toUpperCase()}`;
        return { id: args.inputs.name, name: args.inputs.name, identities: [{ oidcs: [{ issuer }] }] };
      }
      case "aws:eks/getClusters:getClusters":
        // The plan is of a first deploy: no cluster exists yet.
        return { id: this.region, names: [] };
      default:
        return args.inputs;
    }
  }

  private idFor(args: pulumi.runtime.MockResourceArgs): string {
    if (args.type.startsWith("kubernetes:")) {
      const metadata = (args.inputs.metadata ?? {}) as { name?: string; namespace?: string };
      const name = metadata.name ?? args.name;
      return metadata.namespace ? `${metadata.namespace}/${name}` : name;
    }
    return `${args.name}-${hex(args.type + args.name, 8)}`;
  }

  private computed(args: pulumi.runtime.MockResourceArgs): Record<string, unknown> {
    const { type, name, inputs } = args;
    const account = this.accountOf(args);
    const arn = (service: string, resource: string, global = false) =>
      `arn:aws:${service}:${global ? "" : this.region}:${account}:${resource}`;
    switch (type) {
      case "awsx:ec2:Vpc": {
        const zones = Number(inputs.numberOfAvailabilityZones ?? 2);
        const subnets = (kind: string) =>
          Array.from({ length: zones }, (_, i) => `subnet-${hex(`${name}${kind}${i}`, 17)}`);
        return {
          vpcId: `vpc-${hex(name, 17)}`,
          publicSubnetIds: subnets("public"),
          privateSubnetIds: subnets("private"),
          isolatedSubnetIds: [],
        };
      }
      case "eks:index:Cluster":
        return this.eksCluster(
          String(inputs.name ?? name),
          inputs.skipDefaultSecurityGroups === true,
          inputs,
        );
      case "eks:index:ManagedNodeGroup":
        // The real output is a reference to the aws.eks.NodeGroup; its plain state serves the same reads.
        return {
          nodeGroup: { resources: [{ autoscalingGroups: [{ name: `eks-${name}-${hex(name, 24)}` }] }] },
        };
      case "aws:iam/role:Role": {
        const roleName = plannedRoleName(name, inputs);
        return {
          name: roleName,
          arn: arn("iam", `role/${roleName}`, true),
          uniqueId: `AROA${hex(name, 16)}`,
        };
      }
      case "aws:iam/openIdConnectProvider:OpenIdConnectProvider":
        return { arn: arn("iam", `oidc-provider/${String(inputs.url).replace(/^https:\/\//, "")}`, true) };
      case "aws:iam/policy:Policy": {
        const policyName = String(inputs.name ?? `${name}-${hex(name, 7)}`);
        return { name: policyName, arn: arn("iam", `policy/${policyName}`, true) };
      }
      case "aws:kms/key:Key": {
        const keyId = `${hex(name, 8)}-${hex(name + 1, 4)}-${hex(name + 2, 4)}-${hex(name + 3, 4)}-${hex(name + 4, 12)}`;
        return { keyId, arn: arn("kms", `key/${keyId}`) };
      }
      case "aws:cognito/userPool:UserPool": {
        const id = `${this.region}_${hex(name, 9)}`;
        return {
          id,
          arn: arn("cognito-idp", `userpool/${id}`),
          endpoint: `cognito-idp.${this.region}.amazonaws.com/${id}`,
        };
      }
      case "aws:cognito/userPoolClient:UserPoolClient":
        return { id: hex(name, 26) };
      case "random:index/randomPassword:RandomPassword":
      case "random:index/randomString:RandomString": {
        const result = `plan-${hex(name, Math.max(8, Number(inputs.length ?? 32) - 5))}`;
        return { result, bcryptHash: `$2a$10$${hex(name + "bcrypt", 53)}` };
      }
      case "aws:lb/loadBalancer:LoadBalancer": {
        const lbName = `${name}-${hex(name, 8)}`;
        return {
          name: lbName,
          arn: arn("elasticloadbalancing", `loadbalancer/net/${lbName}/${hex(name, 16)}`),
          dnsName: `${lbName}-${hex(name + "dns", 16)}.elb.${this.region}.amazonaws.com`,
          // The load balancers' canonical hosted zone, which alias records point into.
          zoneId: `Z${hex(this.region + "elb", 13).toUpperCase()}`,
        };
      }
      case "aws:acm/certificate:Certificate": {
        const domainName = String(inputs.domainName);
        return {
          arn: arn(
            "acm",
            `certificate/${hex(name, 8)}-${hex(name + 1, 4)}-${hex(name + 2, 4)}-${hex(name + 3, 12)}`,
          ),
          status: "PENDING_VALIDATION",
          // What ACM asks DNS validation to publish: one CNAME per name.
          domainValidationOptions: [
            {
              domainName,
              resourceRecordName: `_${hex(domainName, 32)}.${domainName}.`,
              resourceRecordType: "CNAME",
              resourceRecordValue: `_${hex(domainName + "value", 32)}.xlfgrmvvlj.acm-validations.aws.`,
            },
          ],
        };
      }
      case "aws:acm/certificateValidation:CertificateValidation":
        return { id: String(inputs.certificateArn), certificateArn: inputs.certificateArn };
      case "aws:route53/record:Record":
        return { fqdn: String(inputs.name).replace(/\.$/, "") };
      case "aws:cloudwatch/logGroup:LogGroup":
        return { arn: arn("logs", `log-group:${String(inputs.name)}`) };
      case "aws:lb/targetGroup:TargetGroup":
        return { arn: arn("elasticloadbalancing", `targetgroup/${name}/${hex(name, 16)}`) };
      case "kubernetes:core/v1:Service":
        return {
          status: {
            loadBalancer: {
              ingress: [{ hostname: `k8s-${hex(name, 20)}.elb.${this.region}.amazonaws.com` }],
            },
          },
        };
      default:
        return type.startsWith("aws:") && inputs.arn === undefined
          ? { arn: arn(type.split(":")[1]!.split("/")[0]!, `${name}`) }
          : {};
    }
  }

  private eksCluster(
    clusterName: string,
    skipDefaultSecurityGroups: boolean,
    inputs: Record<string, unknown>,
  ): Record<string, unknown> {
    const issuerId = hex(clusterName, 32).toUpperCase();
    const eksSecurityGroup = `sg-${hex(clusterName + "eks-cluster-sg", 17)}`;
    const componentSecurityGroup = `sg-${hex(clusterName + "sg", 17)}`;
    const oidcIssuer = `oidc.eks.${this.region}.amazonaws.com/id/${issuerId}`;
    const kubeconfig = {
      apiVersion: "v1",
      kind: "Config",
      clusters: [
        {
          name: "kubernetes",
          cluster: {
            server: `https://${issuerId}.gr7.${this.region}.eks.amazonaws.com`,
            "certificate-authority-data": Buffer.from(`plan CA of ${clusterName}`).toString("base64"),
          },
        },
      ],
      contexts: [{ name: "aws", context: { cluster: "kubernetes", user: "aws" } }],
      "current-context": "aws",
      users: [
        {
          name: "aws",
          user: {
            exec: {
              apiVersion: "client.authentication.k8s.io/v1beta1",
              command: "aws",
              args: [
                "--region",
                this.region,
                "eks",
                "get-token",
                "--cluster-name",
                clusterName,
                "--output",
                "json",
              ],
            },
          },
        },
      ],
    };
    return {
      kubeconfig,
      kubeconfigJson: JSON.stringify(kubeconfig),
      oidcIssuer,
      oidcProviderUrl: `https://${oidcIssuer}`,
      oidcProviderArn: `arn:aws:iam::${PLAN_ACCOUNT_ID}:oidc-provider/${oidcIssuer}`,
      // The group EKS creates (eks-cluster-sg-*), which managed nodes without a launch template carry; the
      // component returns its own group instead unless skipDefaultSecurityGroups is set.
      eksCluster: {
        name: clusterName,
        vpcConfig: { clusterSecurityGroupId: eksSecurityGroup },
        upgradePolicy: inputs.upgradePolicy ?? { supportType: "EXTENDED" },
      },
      clusterSecurityGroupId: skipDefaultSecurityGroups ? eksSecurityGroup : componentSecurityGroup,
      nodeSecurityGroupId: skipDefaultSecurityGroups
        ? eksSecurityGroup
        : `sg-${hex(clusterName + "nodesg", 17)}`,
    };
  }
}
