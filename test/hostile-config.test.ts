// Bad stack configs as a hostile or careless user would write them: each is refused with a message naming the
// key and what is allowed, before any resource is registered, and without repeating a secret.
import { describe, expect, it } from "vitest";
import { type ProjectName } from "../lib/cli/plan/projects";
import { planError } from "./helpers";

type Case = [name: string, overrides: Record<string, unknown>, message: RegExp, secretKeys?: string[]];

const many = (n: number, make: (i: number) => string) => Array.from({ length: n }, (_, i) => make(i));
const rule = (r: Record<string, unknown>) => ({ "cluster-setup:stackRbacRules": [r] });

const cases: Record<ProjectName, Case[]> = {
  cluster: [
    [
      "a region AWS does not have",
      { "aws:region": "us-west-9" },
      /aws:region: "us-west-9" is not an AWS region; allowed: .*us-west-2/,
    ],
    [
      "no region",
      { "aws:region": undefined },
      /aws:region: is required; set it with pulumi config set aws:region <region>/,
    ],
    [
      "a typo of the project namespace",
      { "clustr:vpcCidr": "10.1.0.0/16" },
      /clustr:vpcCidr: namespace "clustr" looks like a typo of "cluster" and would be ignored; did you mean cluster:vpcCidr\?/,
    ],
    [
      "the project namespace capitalized",
      { "Cluster:nodeMaxSize": 5 },
      /Cluster:nodeMaxSize: namespace "Cluster" looks like a typo of "cluster"/,
    ],
    [
      "another project's key",
      { "cluster-setup:stacksNamespace": "x" },
      /cluster-setup:stacksNamespace: belongs to project "cluster-setup", not "cluster", and would be ignored/,
    ],
    [
      "a Kubernetes version EKS retired",
      { "cluster:kubernetesVersion": "1.29" },
      /cluster:kubernetesVersion: must be a Kubernetes minor version EKS offers: 1\.31, 1\.32, .*1\.35/,
    ],
    [
      "a Kubernetes version that does not exist",
      { "cluster:kubernetesVersion": "1.99" },
      /cluster:kubernetesVersion: must be a Kubernetes minor version EKS offers/,
    ],
    [
      "octets and prefix out of range",
      { "cluster:vpcCidr": "999.999.999.999/99" },
      /cluster:vpcCidr: "999\.999\.999\.999\/99" is not an IPv4 CIDR such as/,
    ],
    [
      "a loopback VPC",
      { "cluster:vpcCidr": "127.0.0.0/16" },
      /cluster:vpcCidr: "127\.0\.0\.0\/16" is not in a private range \(10\.0\.0\.0\/8/,
    ],
    [
      "loopback as a public range",
      { "cluster:publicAccessCidrs": ["127.0.0.0/8"] },
      /cluster:publicAccessCidrs \(at 0\): "127\.0\.0\.0\/8" is a loopback range, which never reaches an internet-facing endpoint; list public ranges, or 0\.0\.0\.0\/0/,
    ],
    [
      "multicast as a public range",
      { "cluster:publicAccessCidrs": ["224.0.0.0/4"] },
      /cluster:publicAccessCidrs \(at 0\): "224\.0\.0\.0\/4" is a multicast range/,
    ],
    [
      "a reserved range as a public one",
      { "cluster:publicAccessCidrs": ["240.0.0.0/4"] },
      /cluster:publicAccessCidrs \(at 0\): "240\.0\.0\.0\/4" is a reserved range/,
    ],
    [
      "carrier-grade NAT as a public range",
      { "cluster:publicAccessCidrs": ["100.64.0.0/10"] },
      /cluster:publicAccessCidrs \(at 0\): "100\.64\.0\.0\/10" is a carrierGradeNat range/,
    ],
    [
      "an allow-list CIDR with host bits",
      { "cluster:publicAccessCidrs": ["203.0.113.7/24"] },
      /cluster:publicAccessCidrs \(at 0\): "203\.0\.113\.7\/24" has host bits set; use its network address 203\.0\.113\.0\/24/,
    ],
    [
      "more public CIDRs than EKS takes",
      { "cluster:publicAccessCidrs": many(41, (i) => `198.51.${i}.0/24`) },
      /cluster:publicAccessCidrs: must list at most 40 CIDRs \(EKS accepts at most 40/,
    ],
    [
      "a repeated public CIDR",
      { "cluster:publicAccessCidrs": ["8.8.8.0/24", "8.8.8.0/24"] },
      /cluster:publicAccessCidrs: must not repeat a CIDR/,
    ],
    [
      "5000 instance types",
      { "cluster:nodeInstanceTypes": many(5000, (i) => `m${i}.large`) },
      /cluster:nodeInstanceTypes: must list at most 20 EC2 instance types/,
    ],
    [
      "a repeated instance type",
      { "cluster:nodeInstanceTypes": ["t4g.medium", "t4g.medium"] },
      /cluster:nodeInstanceTypes: must not repeat an instance type/,
    ],
    [
      "51 admin roles",
      { "cluster:clusterAdminRoleArns": many(51, (i) => `arn:aws:iam::123456789012:role/A${i}`) },
      /cluster:clusterAdminRoleArns: must list at most 50 roles/,
    ],
    [
      "a CI role that is also a cluster admin, which EKS would refuse a second access entry",
      {
        "cluster:clusterAdminRoleArns": ["arn:aws:iam::123456789012:role/Shared"],
        "cluster:ciPreviewRoleArn": "arn:aws:iam::123456789012:role/Shared",
      },
      /cluster:ciPreviewRoleArn: "arn:aws:iam::123456789012:role\/Shared" is also in cluster:clusterAdminRoleArns; a role gets one access entry, list it once/,
    ],
    [
      "a repeated control-plane log type",
      { "cluster:clusterLogTypes": ["audit", "api", "audit"] },
      /cluster:clusterLogTypes: must not repeat a log type/,
    ],
    [
      "a plain key set as a secret",
      { "cluster:vpcCidr": "10.9.0.0/16" },
      /cluster:vpcCidr: is set as a secret, but the program uses it in resource names and plain properties where it cannot stay secret; set it without --secret/,
      ["cluster:vpcCidr"],
    ],
  ],
  "cluster-setup": [
    ["no region", { "aws:region": undefined }, /aws:region: is required/],
    [
      "a typo of the project namespace",
      { "cluster-setpu:clusterStack": "a/b/c" },
      /cluster-setpu:clusterStack: namespace "cluster-setpu" looks like a typo of "cluster-setup".*did you mean cluster-setup:clusterStack\?/,
    ],
    [
      "kube-system as the stacks namespace",
      { "cluster-setup:stacksNamespace": "kube-system" },
      /cluster-setup:stacksNamespace: must be a namespace of its own, not the cluster's or an add-on's \(default, kube-system, .*argocd.*\): the stack owns it/,
    ],
    [
      "default as the stacks namespace",
      { "cluster-setup:stacksNamespace": "default" },
      /cluster-setup:stacksNamespace: must be a namespace of its own/,
    ],
    [
      "Argo CD's namespace",
      { "cluster-setup:stacksNamespace": "argocd" },
      /cluster-setup:stacksNamespace: must be a namespace of its own/,
    ],
    [
      "cert-manager's namespace",
      { "cluster-setup:stacksNamespace": "cert-manager" },
      /cluster-setup:stacksNamespace: must be a namespace of its own/,
    ],
    [
      "the operator's namespace",
      { "cluster-setup:stacksNamespace": "pulumi-kubernetes-operator" },
      /cluster-setup:stacksNamespace: must be a namespace of its own/,
    ],
    [
      "Kargo's namespace",
      { "cluster-setup:stacksNamespace": "kargo" },
      /cluster-setup:stacksNamespace: must be a namespace of its own/,
    ],
    [
      "a kube- namespace",
      { "cluster-setup:stacksNamespace": "kube-stacks" },
      /cluster-setup:stacksNamespace: must be a namespace of its own.*kube-\*/,
    ],
    [
      "every verb listed one by one",
      rule({
        apiGroups: [""],
        resources: ["pods"],
        verbs: ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "bind"],
      }),
      /cluster-setup:stackRbacRules \(at 0\.verbs\): must list at most 8 verbs/,
    ],
    [
      "bind on cluster role bindings",
      rule({
        apiGroups: ["rbac.authorization.k8s.io"],
        resources: ["clusterrolebindings"],
        verbs: ["create", "bind"],
      }),
      /cluster-setup:stackRbacRules \(at 0\): grants bind, which let a program give itself more permissions/,
    ],
    [
      "escalate on roles",
      rule({ apiGroups: ["rbac.authorization.k8s.io"], resources: ["roles"], verbs: ["escalate"] }),
      /cluster-setup:stackRbacRules \(at 0\): grants escalate/,
    ],
    [
      "a Job, which runs a pod as any ServiceAccount of the namespace",
      rule({ apiGroups: ["batch"], resources: ["jobs"], verbs: ["get", "create"] }),
      /cluster-setup:stackRbacRules \(at 0\): grants create on jobs\.batch, whose spec\.template\.spec\.serviceAccountName runs a pod as any ServiceAccount/,
    ],
    [
      "impersonate",
      rule({ apiGroups: [""], resources: ["users"], verbs: ["impersonate"] }),
      /cluster-setup:stackRbacRules \(at 0\): grants impersonate/,
    ],
    [
      "secrets cluster-wide",
      {
        ...rule({ apiGroups: [""], resources: ["secrets"], verbs: ["get"] }),
        "cluster-setup:stackRbacScope": "cluster",
      },
      /cluster-setup:stackRbacRules \(at 0\): grants secrets cluster-wide/,
    ],
    [
      "every Secret of the stacks namespace",
      rule({ apiGroups: [""], resources: ["secrets"], verbs: ["get"] }),
      /cluster-setup:stackRbacRules \(at 0\): grants every Secret in the stacks namespace, which holds the Pulumi and git tokens; name the Secrets in resourceNames/,
    ],
    [
      "writes to RBAC",
      rule({ apiGroups: ["rbac.authorization.k8s.io"], resources: ["rolebindings"], verbs: ["create"] }),
      /cluster-setup:stackRbacRules \(at 0\): writes to rbac\.authorization\.k8s\.io, which changes who may do what; grant only get, list and watch there/,
    ],
    [
      "an unknown verb",
      rule({ apiGroups: [""], resources: ["configmaps"], verbs: ["get", "nuke"] }),
      /cluster-setup:stackRbacRules \(at 0\): has unknown verb\(s\) nuke; allowed verbs are get, list, watch, create, update, patch, delete, deletecollection/,
    ],
    [
      "a wildcard resource",
      rule({ apiGroups: [""], resources: ["*"], verbs: ["get"] }),
      /cluster-setup:stackRbacRules \(at 0\): has a wildcard in resources/,
    ],
    [
      "a wildcard verb",
      rule({ apiGroups: ["apps"], resources: ["deployments"], verbs: ["*"] }),
      /cluster-setup:stackRbacRules \(at 0\): has a wildcard in verbs/,
    ],
    [
      "minting ServiceAccount tokens",
      rule({ apiGroups: [""], resources: ["serviceaccounts/token"], verbs: ["create"] }),
      /cluster-setup:stackRbacRules \(at 0\): grants serviceaccounts\/token, which reach other identities or nodes/,
    ],
    [
      "exec into pods",
      rule({ apiGroups: [""], resources: ["pods/exec"], verbs: ["create"] }),
      /cluster-setup:stackRbacRules \(at 0\): grants pods\/exec/,
    ],
    [
      "resourceNames with list",
      rule({ apiGroups: [""], resources: ["configmaps"], verbs: ["list"], resourceNames: ["a"] }),
      /cluster-setup:stackRbacRules \(at 0\): uses resourceNames with list, which Kubernetes cannot narrow by name/,
    ],
    [
      "an unknown RBAC scope",
      { "cluster-setup:stackRbacScope": "global" },
      /cluster-setup:stackRbacScope: allowed values are "namespace" \(a Role in the stacks namespace, the default\) and "cluster"/,
    ],
    [
      "more managed policies than IAM attaches",
      { "cluster-setup:stackPolicyArns": many(20, (i) => `arn:aws:iam::123456789012:policy/P${i}`) },
      /cluster-setup:stackPolicyArns: must list at most 19 policies: IAM attaches at most 20 managed policies to a role/,
    ],
    [
      "a repeated managed policy",
      {
        "cluster-setup:stackPolicyArns": [
          "arn:aws:iam::123456789012:policy/P",
          "arn:aws:iam::123456789012:policy/P",
        ],
      },
      /cluster-setup:stackPolicyArns: must not repeat a policy ARN/,
    ],
    [
      "administrator access for every program",
      { "cluster-setup:stackPolicyArns": ["arn:aws:iam::aws:policy/AdministratorAccess"] },
      /cluster-setup:stackPolicyArns: must not grant administrator, power-user or IAM-wide access/,
    ],
    [
      "an environment named preview",
      { "cluster-setup:stackEnvironments": ["dev", "preview"] },
      /cluster-setup:stackEnvironments: "preview" names the read-only identity previews run under/,
    ],
    [
      "a repeated environment",
      { "cluster-setup:stackEnvironments": ["dev", "dev"] },
      /cluster-setup:stackEnvironments: must not repeat an environment/,
    ],
    [
      "an environment that is not a DNS label",
      { "cluster-setup:stackEnvironments": ["QA"] },
      /cluster-setup:stackEnvironments \(at 0\): must be a DNS label/,
    ],
    [
      "ServiceAccount names past 63 characters",
      { "cluster-setup:stackServiceAccount": "s".repeat(60) },
      /cluster-setup:stackEnvironments: gives ServiceAccount "s{60}-dev" \(64 characters; at most 63\)/,
    ],
    [
      "a plain key set as a secret",
      { "cluster-setup:stacksNamespace": "team-stacks" },
      /cluster-setup:stacksNamespace: is set as a secret, .*keys that may be secret: argoCdValues, argoEventsValues, argoRolloutsValues, certManagerValues, notifySlackToken, notifyWebhookUrl, pulumiAccessToken, pulumiOperatorValues/,
      ["cluster-setup:stacksNamespace"],
    ],
  ],
  kargo: [
    [
      "a region AWS does not have",
      { "aws:region": "mars-east-1" },
      /aws:region: "mars-east-1" is not an AWS region/,
    ],
    [
      "a typo of the project namespace",
      { "kargoo:kargoHostname": "kargo.example.com" },
      /kargoo:kargoHostname: namespace "kargoo" looks like a typo of "kargo".*did you mean kargo:kargoHostname\?/,
    ],
    [
      "a hostname label past 63 characters",
      { "kargo:kargoHostname": `${"a".repeat(64)}.example.com` },
      /kargo:kargoHostname: has a label of more than 63 characters/,
    ],
    [
      "a hostname past 253 characters",
      { "kargo:kargoHostname": many(5, () => "a".repeat(60)).join(".") + ".com" },
      /kargo:kargoHostname: is 308 characters; a DNS name has at most 253/,
    ],
    [
      "a hostname with a scheme",
      { "kargo:kargoHostname": "https://kargo.example.com" },
      /kargo:kargoHostname: must be a DNS name such as kargo\.example\.com: .*no scheme or port/,
    ],
    [
      "a hostname of one label",
      { "kargo:kargoHostname": "kargo" },
      /kargo:kargoHostname: must be a fully qualified DNS name/,
    ],
    [
      "an allowed CIDR that is not one",
      { "kargo:kargoAllowedCidrs": ["999.999.999.999/99"] },
      /kargo:kargoAllowedCidrs \(at 0\): "999\.999\.999\.999\/99" is not an IPv4 CIDR/,
    ],
    [
      "a private range on the internet-facing load balancer",
      { "kargo:kargoAllowedCidrs": ["10.0.0.0/8"] },
      /kargo:kargoAllowedCidrs \(at 0\): "10\.0\.0\.0\/8" is a private range, which never reaches an internet-facing endpoint/,
    ],
    [
      "more CIDRs than a security group holds",
      { "kargo:kargoAllowedCidrs": many(61, (i) => `198.51.${i}.0/24`) },
      /kargo:kargoAllowedCidrs: must list at most 60 CIDRs \(each is one rule of the load balancer's security group/,
    ],
    [
      "a git username with a control character",
      { "kargo:gitUsername": "git\nX-Injected: 1" },
      /kargo:gitUsername: must be printable characters without spaces, control characters or ':'/,
    ],
    [
      "a git username with a colon",
      { "kargo:gitUsername": "git:x" },
      /kargo:gitUsername: must be printable characters without spaces, control characters or ':' \(it travels in HTTP basic auth\)/,
    ],
    [
      "an admin switch that is not a boolean",
      { "kargo:kargoAdminAccount": "yes" },
      /kargo:kargoAdminAccount: Invalid input: expected boolean/,
    ],
    [
      "a token with spaces",
      { "kargo:gitToken": "ghp_abc def" },
      /kargo:gitToken: must be printable ASCII without spaces/,
    ],
    [
      "chart values with a __proto__ key, which JavaScript and Pulumi would drop",
      { "kargo:kargoValues": JSON.parse('{"__proto__": {"api": {"replicas": 3}}}') },
      /kargo:kargoValues \(at __proto__\): the key "__proto__" is not allowed; .* Rename it/,
    ],
    [
      "chart values with a nested __proto__ key",
      { "kargo:kargoValues": JSON.parse('{"api": {"__proto__": {"replicas": 3}}}') },
      /kargo:kargoValues \(at api\.__proto__\): the key "__proto__" is not allowed/,
    ],
  ],
};

for (const project of ["cluster", "cluster-setup", "kargo"] as const) {
  describe(`${project} refuses hostile config before registering anything`, () => {
    it.each(cases[project])("%s", async (_, overrides, message, secretKeys = []) => {
      const error = await planError(project, overrides, secretKeys);
      expect(error.message).toMatch(message);
      expect(error.message).not.toMatch(/\n\s+at /); // no stack trace
      for (const key of secretKeys) {
        const value = overrides[key];
        if (typeof value === "string") expect(error.message).not.toContain(value);
      }
    });
  });
}
