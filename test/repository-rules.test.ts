// The repository's rules as code (kargo/repositoryRules.ts, opt-in with kargo:githubRulesets): main changes
// only through a reviewed pull request whose checks passed; the stage branches have one writer, Kargo's
// GitHub App, or the user of its token when it has none. Checked on the plan of the kargo project.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { pullRequestChecks, unguardedMain } from "../kargo/repositoryRules";
import { PLAN_GITHUB_USER_ID } from "../lib/cli/plan/mocks";
import { repoRoot } from "../lib/cli/plan/projects";
import { stageBranch } from "../lib/pipeline/names";
import { ofType, planError, planProject } from "./helpers";

const RULESET = "github:index/repositoryRuleset:RepositoryRuleset";
const PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIplan\n-----END RSA PRIVATE KEY-----\n";
const on = { "kargo:githubRulesets": true, "kargo:githubAdminToken": "ghp_admin0123" };
const app = {
  "kargo:githubAppId": 424242,
  "kargo:githubAppInstallationId": 77,
  "kargo:githubAppPrivateKey": PEM,
};
const secrets = ["kargo:githubAdminToken", "kargo:githubAppPrivateKey"];
type Ruleset = {
  conditions: { refName: { includes: string[] } };
  rules: Record<string, any>;
  bypassActors: { actorType: string; actorId?: number | string; bypassMode: string }[];
};
const rulesets = async (config: Record<string, unknown>) => {
  const plan = await planProject("kargo", config, secrets);
  const all = ofType(plan, RULESET).map((r) => r.inputs as unknown as Ruleset);
  const stageRef = `refs/heads/${stageBranch("*")}`;
  const onMain = all.filter((r) => r.conditions.refName.includes.includes("~DEFAULT_BRANCH"));
  return {
    all,
    // The ruleset that holds main's checks, and the one that holds its reviews (none without reviews).
    main: onMain.find((r) => r.rules.requiredStatusChecks !== undefined),
    reviews: onMain.find((r) => r.rules.requiredStatusChecks === undefined),
    onMain,
    stages: all.find((r) => r.conditions.refName.includes.includes(stageRef)),
  };
};
const ADMIN = { actorType: "RepositoryRole", actorId: 5, bypassMode: "pull_request" };

describe("the repository rulesets", () => {
  it("are not planned unless asked for", async () => {
    expect((await rulesets({})).all).toEqual([]);
  });

  it("keep main to pull requests whose checks passed, without bypass, administrators included", async () => {
    for (const bypass of ["never", "pull_request", "always"]) {
      const { main } = await rulesets({ ...on, "kargo:githubAdminBypass": bypass });
      expect(main?.bypassActors ?? []).toEqual([]);
      expect(main?.rules).toMatchObject({ deletion: true, nonFastForward: true });
      expect(main?.rules.pullRequest).toBeDefined();
      const checks = pullRequestChecks(path.join(repoRoot, ".github", "workflows"));
      expect(checks.length).toBeGreaterThan(0);
      expect(
        main?.rules.requiredStatusChecks.requiredChecks.map((c: { context: string }) => c.context),
      ).toEqual(checks);
    }
  });

  it("by default, ask one approving review by someone other than the last pusher, and let nobody bypass it", async () => {
    const { reviews } = await rulesets(on);
    expect(reviews?.bypassActors ?? []).toEqual([]);
    expect(reviews?.rules.pullRequest).toMatchObject({
      requiredApprovingReviewCount: 1,
      dismissStaleReviewsOnPush: true,
      requireLastPushApproval: true,
      // No owners named (kargo:githubPathOwners, test/codeowners.test.ts): no owner's review asked.
      requireCodeOwnerReview: false,
    });
  });

  it("take the review count, last-push approval and admin bypass from config", async () => {
    const { reviews } = await rulesets({
      ...on,
      "kargo:githubRequiredReviews": 2,
      "kargo:githubRequireLastPushApproval": false,
      "kargo:githubAdminBypass": "always",
    });
    expect(reviews?.rules.pullRequest).toMatchObject({
      requiredApprovingReviewCount: 2,
      requireLastPushApproval: false,
    });
    expect(reviews?.bypassActors).toEqual([{ ...ADMIN, bypassMode: "always" }]);
  });

  // One maintainer cannot approve their own pull request: the admin bypass lets them merge it, through a
  // pull request only, while the checks (another ruleset, without bypass) still hold.
  it("let a lone maintainer merge through a pull request whose checks passed (githubAdminBypass: pull_request)", async () => {
    const { main, reviews } = await rulesets({ ...on, "kargo:githubAdminBypass": "pull_request" });
    expect(reviews?.bypassActors).toEqual([ADMIN]);
    expect(reviews?.rules.pullRequest.requiredApprovingReviewCount).toBe(1);
    expect(main?.bypassActors ?? []).toEqual([]);
    expect(main?.rules.requiredStatusChecks.requiredChecks.length).toBeGreaterThan(0);
  });

  it("with no review required, plan no reviews ruleset and keep the checks", async () => {
    const { onMain, main, reviews } = await rulesets({
      ...on,
      "kargo:githubRequiredReviews": 0,
      "kargo:githubRequireLastPushApproval": false,
    });
    expect(reviews).toBeUndefined();
    expect(onMain).toHaveLength(1);
    expect(main?.rules.requiredStatusChecks.requiredChecks.length).toBeGreaterThan(0);
  });

  it("refuse review settings that cannot hold, naming the key", async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ "kargo:githubRequiredReviews": 11 }, /kargo:githubRequiredReviews: must be at most 10/],
      [{ "kargo:githubRequiredReviews": -1 }, /kargo:githubRequiredReviews: must be at least 0/],
      [{ "kargo:githubRequiredReviews": 1.5 }, /kargo:githubRequiredReviews: must be a whole number/],
      [
        { "kargo:githubRequiredReviews": 0 },
        /kargo:githubRequireLastPushApproval: must be false when kargo:githubRequiredReviews is 0/,
      ],
      [
        {
          "kargo:githubRequiredReviews": 0,
          "kargo:githubRequireLastPushApproval": false,
          "kargo:githubAdminBypass": "pull_request",
        },
        /kargo:githubAdminBypass: must be never when kargo:githubRequiredReviews is 0/,
      ],
      [{ "kargo:githubAdminBypass": "admins" }, /kargo:githubAdminBypass: allowed values are "never"/],
      [{ "kargo:githubRequireLastPushApproval": "yes" }, /kargo:githubRequireLastPushApproval: must be true/],
    ];
    for (const [config, message] of cases)
      expect((await planError("kargo", { ...on, ...config }, secrets)).message).toMatch(message);
  });

  it("let only Kargo's App create, push or delete a stage branch", async () => {
    const { stages } = await rulesets({ ...on, ...app });
    expect(stages?.rules).toMatchObject({
      creation: true,
      update: true,
      deletion: true,
      nonFastForward: true,
    });
    expect(stages?.bypassActors).toEqual([
      { actorType: "Integration", actorId: 424242, bypassMode: "always" },
    ]);
  });

  it("without an App, let only the user of Kargo's token write them", async () => {
    const { stages } = await rulesets(on);
    expect(stages?.bypassActors).toEqual([
      { actorType: "User", actorId: Number(PLAN_GITHUB_USER_ID), bypassMode: "always" },
    ]);
  });

  it("need an admin token, and an App needs all three keys, each refusal naming the key", async () => {
    expect((await planError("kargo", { "kargo:githubRulesets": true })).message).toMatch(
      /kargo:githubAdminToken: must be set when kargo:githubRulesets is true/,
    );
    const alone = await planError("kargo", { "kargo:githubAppId": 424242 });
    expect(alone.message).toMatch(/kargo:githubAppInstallationId: must be set with kargo:githubAppId/);
    expect(alone.message).toMatch(/kargo:githubAppPrivateKey: must be set with kargo:githubAppId/);
    const key = await planError("kargo", { ...app, "kargo:githubAppPrivateKey": "not a key" }, secrets);
    expect(key.message).toMatch(/kargo:githubAppPrivateKey: must be the App's PEM private key/);
    expect(key.message).not.toContain("not a key");
  });
});

describe("a main without reviews", () => {
  it("is refused while no pull-request workflow reports a check, naming the key", () => {
    expect(unguardedMain(0, [])).toMatch(/^kargo:githubRequiredReviews: must be at least 1/);
    expect(unguardedMain(0, ["tests / test"])).toBeUndefined();
    expect(unguardedMain(1, [])).toBeUndefined();
  });
});

describe("Kargo's git credentials", () => {
  it("hold the App's keys, as Kargo reads them, when it has one", async () => {
    const plan = await planProject("kargo", app, secrets);
    const credentials = ofType(plan, "kubernetes:core/v1:Secret").filter(
      (s) =>
        (s.inputs.metadata as { labels?: Record<string, string> }).labels?.["kargo.akuity.io/cred-type"] ===
        "git",
    );
    expect(credentials).toHaveLength(1);
    const data = credentials[0]!.inputs.stringData as Record<string, unknown>;
    // The private key makes the whole of stringData secret in the plan, or only its own key.
    if (data !== ("[secret]" as unknown)) {
      expect(data).toMatchObject({
        repoURL: definition.source.repoURL,
        githubAppID: "424242",
        githubAppInstallationID: "77",
      });
      expect(data).not.toHaveProperty("password");
    }
  });
});

describe("pullRequestChecks", () => {
  it("names each always-running job of each reusable workflow a pull-request workflow calls, as GitHub does", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "workflows-"));
    const write = (file: string, text: string) => fs.writeFileSync(path.join(dir, file), text);
    write(
      "zz-pr.yml",
      "on:\n  pull_request:\njobs:\n  zz-caller:\n    uses: ./.github/workflows/zz-called.yml\n  zz-named:\n    name: Named\n    uses: ./.github/workflows/zz-called.yml\n  zz-skipped:\n    if: false\n    uses: ./.github/workflows/zz-called.yml\n",
    );
    write(
      "zz-called.yml",
      "on: workflow_call\njobs:\n  zz-a:\n    runs-on: x\n  zz-b:\n    name: B\n    runs-on: x\n  zz-sometimes:\n    if: github.head_ref == 'x'\n    runs-on: x\n",
    );
    write("zz-push.yml", "on: push\njobs:\n  zz-other:\n    uses: ./.github/workflows/zz-called.yml\n");
    expect(pullRequestChecks(dir)).toEqual([
      "Named / B",
      "Named / zz-a",
      "zz-caller / B",
      "zz-caller / zz-a",
    ]);
    fs.rmSync(dir, { recursive: true });
  });
});
