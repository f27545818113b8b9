import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import {
  clusterSetupConfigSchema,
  defaultDomainPrefix,
  escalation,
  grantableVerbs,
} from "../cluster-setup/config";
import { workloadResources, workloadWriteVerbs } from "../cluster-setup/escalation";
import { readCrdFile } from "../lib/crds/schema";
import { upstreamCrdsDir, validationData } from "./crds-support";
import { planError } from "./helpers";
import { MAX_ENVIRONMENTS } from "../lib/pipeline/schema";

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

describe("what a stack's programs may be granted in the cluster (stackRbacRules)", () => {
  type Rule = Parameters<typeof escalation>[0];
  const scopes = ["namespace", "cluster"] as const;

  it("grants a rule that says exactly what it lets a program do", () => {
    const safe: [Rule, (typeof scopes)[number][]][] = [
      [
        {
          apiGroups: ["apps"],
          resources: ["deployments", "deployments/scale"],
          verbs: grantableVerbs.filter((v) => !workloadWriteVerbs.includes(v)),
        },
        [...scopes],
      ],
      [{ apiGroups: ["apps"], resources: ["deployments/scale"], verbs: grantableVerbs }, [...scopes]],
      [
        { apiGroups: ["rbac.authorization.k8s.io"], resources: ["roles"], verbs: ["get", "list", "watch"] },
        [...scopes],
      ],
      [
        { apiGroups: ["certificates.k8s.io"], resources: ["certificatesigningrequests"], verbs: ["get"] },
        [...scopes],
      ],
      [
        {
          apiGroups: [""],
          resources: ["secrets"],
          verbs: ["get", "update", "patch", "delete"],
          resourceNames: ["app-config"],
        },
        ["namespace"],
      ],
      [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get"], resourceNames: [] }, [...scopes]],
      [{ apiGroups: ["", "batch"], resources: ["jobs", "pods/log"], verbs: ["get", "delete"] }, [...scopes]],
      [
        { apiGroups: ["", "batch"], resources: ["configmaps", "pods/log"], verbs: ["create", "get"] },
        [...scopes],
      ],
    ];
    for (const [rule, allowedIn] of safe)
      for (const scope of allowedIn)
        expect(escalation(rule, scope), `${JSON.stringify(rule)} in ${scope}`).toBeUndefined();
  });

  it("refuses each way a rule could let a program give itself more than it says", () => {
    const risky: [Rule, RegExp][] = [
      [
        { apiGroups: [""], resources: ["pods"], verbs: ["get"], resourceNames: ["web-*"] },
        /^has a wildcard in resourceNames/,
      ],
      [{ apiGroups: ["*"], resources: ["pods"], verbs: ["get"] }, /^has a wildcard in apiGroups/],
      [
        { apiGroups: ["certificates.k8s.io"], resources: ["certificatesigningrequests"], verbs: ["approve"] },
        /^grants approve, which let/,
      ],
      [
        { apiGroups: ["certificates.k8s.io"], resources: ["signers"], verbs: ["sign", "get"] },
        /^grants sign, which let/,
      ],
      ...["pods/attach", "pods/portforward", "nodes/proxy", "certificatesigningrequests/approval"].map(
        (resource): [Rule, RegExp] => [
          { apiGroups: [""], resources: ["pods", resource], verbs: ["get"] },
          new RegExp(`^grants ${resource}, which reach other identities or nodes`),
        ],
      ),
      [
        {
          apiGroups: ["admissionregistration.k8s.io"],
          resources: ["validatingwebhookconfigurations"],
          verbs: ["get", "delete"],
        },
        /^writes to admissionregistration\.k8s\.io, which changes who may do what/,
      ],
      [
        {
          apiGroups: ["apps", "certificates.k8s.io"],
          resources: ["certificatesigningrequests"],
          verbs: ["create"],
        },
        /^writes to certificates\.k8s\.io/,
      ],
      ...(["create", "watch", "deletecollection"] as const).map((verb): [Rule, RegExp] => [
        { apiGroups: [""], resources: ["configmaps"], verbs: ["get", verb], resourceNames: ["a"] },
        new RegExp(`^uses resourceNames with ${verb}, which Kubernetes cannot narrow by name`),
      ]),
    ];
    for (const [rule, message] of risky)
      for (const scope of scopes)
        expect(escalation(rule, scope), `${JSON.stringify(rule)} in ${scope}`).toMatch(message);
  });

  it("refuses a Secret named in a cluster-wide rule: the name matches in every namespace", () => {
    const rule = { apiGroups: [""], resources: ["secrets"], verbs: ["get"], resourceNames: ["app-config"] };
    expect(escalation(rule, "cluster")).toBe("grants secrets cluster-wide, every credential in the cluster");
    // In the stacks namespace an empty list of names is no narrowing at all.
    expect(escalation({ ...rule, resourceNames: [] }, "namespace")).toMatch(
      /^grants every Secret in the stacks namespace/,
    );
  });
});

describe("no rule lets a program run a pod as another environment's ServiceAccount", () => {
  type Rule = Parameters<typeof escalation>[0];
  const scopes = ["namespace", "cluster"] as const;
  const pairs = Object.entries(workloadResources).flatMap(([group, resources]) =>
    Object.keys(resources).map((resource) => ({ group, resource })),
  );

  it("refuses create, update and patch on every resource whose objects run a pod under a ServiceAccount they name", () => {
    for (const { group, resource } of pairs)
      for (const verb of workloadWriteVerbs)
        for (const scope of scopes) {
          const rule: Rule = {
            apiGroups: ["", group],
            resources: ["configmaps", resource],
            verbs: ["get", verb],
          };
          const what = group === "" ? resource : `${resource}.${group}`;
          const field = workloadResources[group]![resource]!;
          expect(escalation(rule, scope), `${JSON.stringify(rule)} in ${scope}`).toBe(
            `grants ${verb} on ${what}, whose ${field} runs a pod as any ServiceAccount in the namespace, ` +
              "another environment's identity included; grant only get, list, watch and delete there",
          );
        }
  });

  it("names the field that chooses the ServiceAccount", () => {
    expect(
      escalation({ apiGroups: ["batch"], resources: ["cronjobs"], verbs: ["create"] }, "namespace"),
    ).toMatch(
      /^grants create on cronjobs\.batch, whose spec\.jobTemplate\.spec\.template\.spec\.serviceAccountName runs a pod as any ServiceAccount/,
    );
    expect(
      escalation({ apiGroups: ["auto.pulumi.com"], resources: ["updates"], verbs: ["patch"] }, "namespace"),
    ).toMatch(/^grants patch on updates\.auto\.pulumi\.com, whose spec\.workspaceName/);
  });

  it("still grants reading and deleting them", () => {
    for (const { group, resource } of pairs)
      for (const scope of scopes)
        expect(
          escalation(
            { apiGroups: [group], resources: [resource], verbs: ["get", "list", "watch", "delete"] },
            scope,
          ),
        ).toBeUndefined();
  });

  it("refuses wildcards that would cover them, in verbs, resources and apiGroups", () => {
    const cases: [Rule, string][] = [
      [{ apiGroups: ["batch"], resources: ["jobs"], verbs: ["*"] }, "verbs"],
      [{ apiGroups: ["batch"], resources: ["*"], verbs: ["create"] }, "resources"],
      [{ apiGroups: ["*"], resources: ["jobs"], verbs: ["create"] }, "apiGroups"],
      [{ apiGroups: ["auto.pulumi.com"], resources: ["*/status", "updates"], verbs: ["get"] }, "resources"],
    ];
    for (const [rule, field] of cases)
      expect(escalation(rule, "namespace")).toMatch(new RegExp(`^has a wildcard in ${field}`));
  });

  it("refuses adding an ephemeral container to a running pod, which runs as that pod's ServiceAccount", () => {
    expect(
      escalation({ apiGroups: [""], resources: ["pods/ephemeralcontainers"], verbs: ["patch"] }, "namespace"),
    ).toMatch(/^grants pods\/ephemeralcontainers, which reach other identities/);
  });

  // Derived from the schemas, not from the list: every custom resource the platform installs or reads whose
  // schema names a ServiceAccount (the committed CRD data, and the upstream CRDs where this clone has them).
  it("covers every custom resource whose schema names a serviceAccountName", () => {
    const crds = [
      ...Object.values(validationData.crds).flat(),
      ...(upstreamCrdsDir
        ? fs
            .readdirSync(upstreamCrdsDir, { recursive: true, encoding: "utf8" })
            .filter((f) => /\.ya?ml$/.test(f) && !/values/.test(f))
            .flatMap((f) => {
              const text = fs.readFileSync(path.join(upstreamCrdsDir!, f), "utf8");
              return text.includes("CustomResourceDefinition") ? readCrdFile(f, text) : [];
            })
        : []),
    ];
    const naming = crds.filter((crd) => JSON.stringify(crd.schema).includes('"serviceAccountName"'));
    expect(naming.map((crd) => crd.kind)).toEqual(expect.arrayContaining(["Stack", "AnalysisTemplate"]));
    for (const crd of naming) {
      // The plural of each of these kinds is its lower-cased kind plus "s" (their CRDs' spec.names.plural).
      const resource = `${crd.kind.toLowerCase()}s`;
      expect(workloadResources[crd.group]?.[resource], `${crd.group} ${resource}`).toBeDefined();
    }
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
