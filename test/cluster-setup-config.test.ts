import { describe, expect, it } from "vitest";
import { clusterSetupConfigSchema, defaultDomainPrefix } from "../cluster-setup/config";
import { planError } from "./helpers";
import { MAX_ENVIRONMENTS } from "../lib/pipeline/schema";

// What a stack's programs may be granted in the cluster (stackRbacRules) is cluster-setup-rbac.test.ts's.

describe("cluster-setup rejects bad config before registering anything", () => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    [
      "no cluster stack",
      { "cluster-setup:clusterStack": undefined },
      /cluster-setup:clusterStack: is required; set it with pulumi config set clusterStack <value>/,
    ],
    [
      "a cluster stack that is not org/project/stack",
      { "cluster-setup:clusterStack": "cluster" },
      /cluster-setup:clusterStack: must name the cluster stack as <org>\/<project>\/<stack>/,
    ],
    [
      "the stacks repository, which is the fork's (lib/fork.ts), set as a key",
      { "cluster-setup:stacksRepoURL": "https://github.com/acme/infra.git" },
      /cluster-setup:stacksRepoURL: unknown key/,
    ],
    [
      "a namespace that is not a DNS label",
      { "cluster-setup:stacksNamespace": "Pulumi_Stacks" },
      /cluster-setup:stacksNamespace: must be a DNS label/,
    ],
    [
      "an unknown MFA mode",
      { "cluster-setup:cognitoMfa": "SOMETIMES" },
      /cluster-setup:cognitoMfa: Invalid option: expected one of "OFF"\|"OPTIONAL"\|"ON"/,
    ],
    [
      "the admin group among the approvers",
      { "cluster-setup:cognitoApproverGroups": ["qa-approvers", "platform-admins"] },
      /cluster-setup:cognitoApproverGroups: must not include the admin group "platform-admins"/,
    ],
    [
      "a repeated approver group",
      { "cluster-setup:cognitoApproverGroups": ["qa", "qa"] },
      /cluster-setup:cognitoApproverGroups: must not repeat a group/,
    ],
    [
      "no approver group",
      { "cluster-setup:cognitoApproverGroups": [] },
      /cluster-setup:cognitoApproverGroups: must list at least one approver group/,
    ],
    [
      "a reserved word in the Cognito domain",
      { "cluster-setup:cognitoDomainPrefix": "my-aws-login" },
      /cluster-setup:cognitoDomainPrefix: must not contain "aws"/,
    ],
    [
      "an RBAC rule that grants everything",
      { "cluster-setup:stackRbacRules": [{ apiGroups: ["*"], resources: ["*"], verbs: ["*"] }] },
      /cluster-setup:stackRbacRules \(at 0\): has a wildcard in apiGroups; list exactly what your programs manage/,
    ],
    [
      "an RBAC rule with a misspelt field",
      { "cluster-setup:stackRbacRules": [{ apiGroup: [""], resources: ["pods"], verbs: ["get"] }] },
      /cluster-setup:stackRbacRules \(at 0\): Unrecognized key: "apiGroup"/,
    ],
    [
      "a malformed policy ARN",
      { "cluster-setup:stackPolicyArns": ["AdministratorAccess"] },
      /cluster-setup:stackPolicyArns \(at 0\): must be an IAM policy ARN/,
    ],
    [
      "an empty Pulumi token",
      { "cluster-setup:pulumiAccessToken": "" },
      /cluster-setup:pulumiAccessToken: must be set: pulumi config set --secret pulumiAccessToken/,
    ],
    [
      "chart values that are not a map",
      { "cluster-setup:argoCdValues": ["a"] },
      /cluster-setup:argoCdValues: Invalid input: expected record/,
    ],
    ["no burst CPU", { "cluster-setup:burstCpuLimit": 0 }, /cluster-setup:burstCpuLimit: must be at least 1/],
    [
      "burst memory in fractions",
      { "cluster-setup:burstMemoryGiB": 2.5 },
      /cluster-setup:burstMemoryGiB: Invalid input: expected int/,
    ],
    [
      "a burst node removed before the next stage can use it",
      { "cluster-setup:burstConsolidateAfterSeconds": 5 },
      /cluster-setup:burstConsolidateAfterSeconds: must be at least 30/,
    ],
    [
      "Karpenter values that are not a map",
      { "cluster-setup:karpenterValues": "replicas=2" },
      /cluster-setup:karpenterValues: Invalid input: expected record/,
    ],
  ];

  it.each(cases)("%s", async (_, overrides, message) => {
    const error = await planError("cluster-setup", overrides);
    expect(error.message).toMatch(/^Invalid configuration for project "cluster-setup":/);
    expect(error.message).toMatch(message);
  });
});

describe("cluster-setup accepts what each key allows", () => {
  it.each([
    [
      "a power-user managed policy",
      "arn:aws:iam::aws:policy/PowerUserAccess",
      /must not grant administrator/,
    ],
    ["IAM-wide access", "arn:aws:iam::aws:policy/IAMFullAccess", /must not grant administrator/],
  ])("refuses %s for every program", async (_, arn, message) => {
    const error = await planError("cluster-setup", { "cluster-setup:stackPolicyArns": [arn] });
    expect(error.message).toMatch(new RegExp(`cluster-setup:stackPolicyArns: ${message.source}`));
  });

  it("takes AWS managed policies whose names only begin like an administrator's, up to 19 of them", () => {
    const policies = clusterSetupConfigSchema.shape.stackPolicyArns;
    // A real AWS managed policy, scoped to Amplify: not AdministratorAccess.
    expect(policies.safeParse(["arn:aws:iam::aws:policy/AdministratorAccess-Amplify"]).success).toBe(true);
    const nineteen = Array.from({ length: 19 }, (_, i) => `arn:aws:iam::123456789012:policy/P${i}`);
    expect(policies.safeParse(nineteen).success).toBe(true);
  });

  it("names ServiceAccounts up to 63 characters, the preview one included", async () => {
    // <stackServiceAccount>-preview is the longest name.
    const longest = 63 - "-preview".length;
    const accounts = clusterSetupConfigSchema.safeParse({
      clusterStack: "org/cluster/dev",
      pulumiAccessToken: "pul-token",
      stackServiceAccount: "s".repeat(longest),
    });
    expect(accounts.error?.issues ?? []).toEqual([]);
    const error = await planError("cluster-setup", {
      "cluster-setup:stackServiceAccount": "s".repeat(longest + 1),
    });
    expect(error.message).toMatch(
      new RegExp(
        `cluster-setup:stackEnvironments: gives ServiceAccount "s{${longest + 1}}-preview" \\(64 characters; at most 63\\)`,
      ),
    );
  });
});

describe("the default Cognito domain prefix (cognitoDomainPrefix unset)", () => {
  const valueOf = (output: unknown) => (output as { promise(): Promise<string> }).promise();

  it("is platform-<stack>-<account>, the stack name lower-cased and made DNS-safe", async () => {
    expect(await valueOf(defaultDomainPrefix("Prod_EU.1", "123456789012"))).toBe(
      "platform-prod-eu-1-123456789012",
    );
    // 63 characters at most: platform-<41 characters>-<12-digit account>.
    const longest = "s".repeat(41);
    expect(await valueOf(defaultDomainPrefix(longest, "123456789012"))).toHaveLength(63);
  });

  it("refuses, naming the key to set, a stack name that would make Cognito refuse it", () => {
    expect(() => defaultDomainPrefix("s".repeat(42), "123456789012")).toThrow(
      /cluster-setup:cognitoDomainPrefix: the default "platform-s{42}-<account id>" is longer than 63 characters; set cognitoDomainPrefix/,
    );
    for (const word of ["aws", "amazon", "cognito"])
      expect(() => defaultDomainPrefix(`team-${word}`, "123456789012"), word).toThrow(
        new RegExp(
          `cluster-setup:cognitoDomainPrefix: the default "platform-team-${word}-<account id>" contains "${word}", which Cognito reserves`,
        ),
      );
  });
});

describe("cluster-setup's limits", () => {
  const valid = { clusterStack: "org/cluster/dev", pulumiAccessToken: "pul-token" };
  const many = (n: number, make: (i: number) => string) => Array.from({ length: n }, (_, i) => make(i));
  const rules = (rule: Record<string, unknown>, n = 1) => ({ stackRbacRules: Array(n).fill(rule) });
  const rule = { apiGroups: [""], resources: ["configmaps"], verbs: ["get"] };
  const problems = (config: Record<string, unknown>) =>
    (clusterSetupConfigSchema.safeParse({ ...valid, ...config }).error?.issues ?? []).map(
      (i) => `${i.path.join(".")}: ${i.message}`,
    );

  it.each([
    [{ pulumiAccessToken: "p".repeat(1001) }, /^pulumiAccessToken: Too big/],
    [
      { stackEnvironments: many(MAX_ENVIRONMENTS + 1, (i) => `env${i}`) },
      new RegExp(`^stackEnvironments: must list at most ${MAX_ENVIRONMENTS} environments`),
    ],
    [
      { cognitoApproverGroups: many(51, (i) => `g${i}`) },
      /^cognitoApproverGroups: must list at most 50 approver groups/,
    ],
    [{ cognitoApproverGroups: ["-approvers"] }, /^cognitoApproverGroups.0: must be 1-128 letters, digits/],
    [{ cognitoApproverGroups: [`a${"b".repeat(128)}`] }, /^cognitoApproverGroups.0: must be 1-128/],
    [{ cognitoAdminGroup: "platform admins" }, /^cognitoAdminGroup: must be 1-128/],
    [
      { cognitoDomainPrefix: "Platform" },
      /^cognitoDomainPrefix: must be lower-case letters, digits and '-', at most 63/,
    ],
    [{ cognitoDomainPrefix: "platform-" }, /^cognitoDomainPrefix: must be lower-case/],
    [{ cognitoDomainPrefix: "p".repeat(64) }, /^cognitoDomainPrefix: must be lower-case/],
    [
      { cognitoDomainPrefix: "my-amazon-login" },
      /^cognitoDomainPrefix: must not contain "aws", "amazon" or "cognito"/,
    ],
    [{ cognitoDomainPrefix: "cognito-login" }, /^cognitoDomainPrefix: must not contain/],
    [{ cognitoDeletionProtection: "no" }, /^cognitoDeletionProtection: must be true or false/],
    [rules(rule, 51), /^stackRbacRules: must list at most 50 rules/],
    [rules({ ...rule, apiGroups: [] }), /^stackRbacRules.0.apiGroups: must list at least one API group/],
    [
      rules({ ...rule, apiGroups: many(21, (i) => `g${i}.io`) }),
      /^stackRbacRules.0.apiGroups: must list at most 20/,
    ],
    [rules({ ...rule, resources: [] }), /^stackRbacRules.0.resources: must list at least one resource/],
    [
      rules({ ...rule, resources: many(51, (i) => `r${i}`) }),
      /^stackRbacRules.0.resources: must list at most 50/,
    ],
    [rules({ ...rule, verbs: [] }), /^stackRbacRules.0.verbs: must list at least one verb/],
    [
      rules({ ...rule, resourceNames: many(101, (i) => `n${i}`) }),
      /^stackRbacRules.0.resourceNames: must list at most 100/,
    ],
  ])("refuses %j", (config, message) => {
    expect(problems(config)).toEqual([expect.stringMatching(message)]);
  });

  it("accepts each at its limit", () => {
    for (const config of [
      { pulumiAccessToken: "p".repeat(1000) },
      { stackEnvironments: many(MAX_ENVIRONMENTS, (i) => `env${i}`) },
      { cognitoApproverGroups: many(50, (i) => `g${i}`) },
      { cognitoApproverGroups: [`a${"b".repeat(127)}`, "qa.approvers_1"] },
      { cognitoDomainPrefix: "p".repeat(63) },
      { cognitoDomainPrefix: "a" },
      { cognitoDeletionProtection: false },
      rules(rule, 50),
      rules({ ...rule, apiGroups: many(20, (i) => `g${i}.io`), resources: many(50, (i) => `r${i}`) }),
      rules({ ...rule, resourceNames: many(100, (i) => `n${i}`) }),
    ])
      expect(problems(config), JSON.stringify(config).slice(0, 80)).toEqual([]);
  });
});
