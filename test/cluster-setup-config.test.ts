import { describe, expect, it } from "vitest";
import { planError } from "./helpers";

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
  ];

  it.each(cases)("%s", async (_, overrides, message) => {
    const error = await planError("cluster-setup", overrides);
    expect(error.message).toMatch(/^Invalid configuration for project "cluster-setup":/);
    expect(error.message).toMatch(message);
  });
});
