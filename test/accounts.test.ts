// Environments in other AWS accounts (environments.<name>.aws): hostile accounts and regions are refused
// naming the field before anything is registered; a named account changes only that environment's
// identities (its previews' ServiceAccount, its workspace's region), derived from the definition.
import { Region } from "@pulumi/aws/types/enums";
import { describe, expect, it } from "vitest";
import { previewPolicy } from "../lib/pipeline/access";
import { accountOf, environmentsIn, namedAccounts, previewServiceAccount } from "../lib/pipeline/accounts";
import { AWS_REGIONS } from "../lib/pipeline/check-accounts";
import { programStages } from "../lib/pipeline/graph";
import { stackManifest, stackServiceAccount } from "../lib/pipeline/stack-manifest";
import { validatePipeline } from "../lib/pipeline/validate";
import { base, basePipeline, expectRefused, firstEnv, withEnvironments } from "./pipeline-support";

const envs = Object.keys(basePipeline.environments);
const last = envs.at(-1)!;
/** An account no environment of the definition names, so only what a test moves there acts in it. */
const freshAccount = ["210987654321", "310987654321", "410987654321"].find(
  (a) => !namedAccounts(basePipeline.environments).includes(a),
)!;
/** The definition with `last` (and, with `also`, another) in account `accountId`. */
const inAccount = (aws: { accountId: string; region?: string }, ...names: string[]) =>
  withEnvironments(Object.fromEntries(names.map((n) => [n, { ...base.environments[n]!, aws }])));

describe("an environment's AWS account", () => {
  const hostile: [string, { accountId: string; region?: string }, RegExp][] = [
    [
      "eleven digits",
      { accountId: "12345678901" },
      /aws\.accountId: "12345678901" is not an AWS account ID; allowed: exactly twelve digits/,
    ],
    [
      "thirteen digits",
      { accountId: "1234567890123" },
      /aws\.accountId: "1234567890123" is not an AWS account ID/,
    ],
    [
      "an ARN",
      { accountId: "arn:aws:iam::123456789012:root" },
      /aws\.accountId: "arn:aws:iam::123456789012:root" is not an AWS account ID/,
    ],
    [
      "digits with spaces",
      { accountId: "1234 5678 9012" },
      /aws\.accountId: "1234 5678 9012" is not an AWS account ID/,
    ],
    [
      "a made-up region",
      { accountId: "210987654321", region: "us-north-9" },
      /aws\.region: "us-north-9" is not an AWS region @pulumi\/aws knows; allowed: .*us-east-1/,
    ],
    [
      "a region in capitals",
      { accountId: "210987654321", region: "US-EAST-1" },
      /aws\.region: "US-EAST-1" is not an AWS region/,
    ],
  ];
  for (const [what, aws, message] of hostile)
    it(`refuses ${what}, naming the environment's field`, () => {
      expectRefused(inAccount(aws, last), new RegExp(`environments\\.${last}\\.${message.source}`));
    });

  it("refuses a field it does not know", () => {
    expectRefused(
      withEnvironments({
        [last]: { ...base.environments[last]!, aws: { accountId: "210987654321", role: "x" } as never },
      }),
      new RegExp(`environments\\.${last}\\.aws: .*"role"`),
    );
  });

  it("refuses an environment whose ServiceAccount would be a named account's preview identity", () => {
    expectRefused(
      withEnvironments({
        [last]: { ...base.environments[last]!, aws: { accountId: "210987654321" } },
        "preview-210987654321": { pulumiStack: "x" },
      }),
      /environments\.preview-210987654321: its ServiceAccount would be the one previews in account 210987654321 run as/,
    );
  });

  it("knows every region of the pinned @pulumi/aws, and no other", () => {
    expect(AWS_REGIONS).toEqual(Object.values(Region).sort());
    for (const region of AWS_REGIONS)
      expect(() => validatePipeline(inAccount({ accountId: "210987654321", region }, last))).not.toThrow();
  });

  it("lets protected environments share an account: each keeps its own identity", () => {
    const both = envs.slice(-2);
    const p = validatePipeline(inAccount({ accountId: freshAccount }, ...both));
    expect(namedAccounts(p.environments)).toContain(freshAccount);
    expect(environmentsIn(p.environments, freshAccount)).toEqual(both);
    for (const env of both) expect(accountOf(p.environments, env)).toBe(freshAccount);
  });

  describe("with one environment in another account", () => {
    const account = freshAccount;
    const p = validatePipeline(inAccount({ accountId: account, region: AWS_REGIONS[0] }, last));
    const stages = programStages(p);

    it("runs that environment's previews as the account's preview identity, every other stage as before", () => {
      for (const s of stages) {
        const before = programStages(basePipeline).find((b) => b.name === s.name)!;
        expect(stackServiceAccount(p, s), s.name).toBe(
          s.kind === "preview" && s.environment === last
            ? previewServiceAccount(p.stacks.serviceAccountName, account)
            : stackServiceAccount(basePipeline, before),
        );
      }
    });

    it("gives that environment's workspaces its region, and no other's", () => {
      for (const s of stages) {
        const env = stackManifest(p, s).spec.workspaceTemplate?.spec?.env ?? [];
        const region = env.filter((e) => e.name === "AWS_REGION" || e.name === "AWS_DEFAULT_REGION");
        // The moved environment gets the region given; every other one keeps what the fork gave it.
        const given =
          s.environment === last ? AWS_REGIONS[0] : basePipeline.environments[s.environment]!.aws?.region;
        expect(region, s.name).toEqual(
          given
            ? [
                { name: "AWS_REGION", value: given },
                { name: "AWS_DEFAULT_REGION", value: given },
              ]
            : [],
        );
      }
    });

    it("reads that environment's stacks only with the account's preview identity", () => {
      for (const x of p.programs.filter((x) => x.aws)) {
        const stackArns = (doc: ReturnType<typeof previewPolicy>) => JSON.stringify(doc ?? {});
        const lastStack = p.environments[last]!.pulumiStack;
        const firstStack = p.environments[firstEnv]!.pulumiStack;
        expect(stackArns(previewPolicy(p, x, "aws", account))).toContain(`-${lastStack}-`);
        expect(stackArns(previewPolicy(p, x, "aws", account))).not.toContain(`-${firstStack}-`);
        expect(stackArns(previewPolicy(p, x))).not.toContain(`-${lastStack}-`);
      }
    });
  });
});
