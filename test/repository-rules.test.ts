// The repository's rules as code (kargo/repositoryRules.ts, opt-in with kargo:githubRulesets): main changes
// only through a reviewed pull request whose checks passed; the stage branches have one writer, Kargo's
// GitHub App, or the user of its token when it has none. Checked on the plan of the kargo project.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { pullRequestChecks } from "../kargo/repositoryRules";
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
  return {
    all,
    main: all.find((r) => r.conditions.refName.includes.includes("~DEFAULT_BRANCH")),
    stages: all.find((r) => r.conditions.refName.includes.includes(stageRef)),
  };
};

describe("the repository rulesets", () => {
  it("are not planned unless asked for", async () => {
    expect((await rulesets({})).all).toEqual([]);
  });

  it("keep main to reviewed pull requests whose checks passed, without bypass", async () => {
    const { main } = await rulesets(on);
    expect(main?.bypassActors ?? []).toEqual([]);
    expect(main?.rules).toMatchObject({ deletion: true, nonFastForward: true });
    expect(main?.rules.pullRequest.requiredApprovingReviewCount).toBeGreaterThanOrEqual(1);
    expect(main?.rules.pullRequest.dismissStaleReviewsOnPush).toBe(true);
    const checks = pullRequestChecks(path.join(repoRoot, ".github", "workflows"));
    expect(checks.length).toBeGreaterThan(0);
    expect(
      main?.rules.requiredStatusChecks.requiredChecks.map((c: { context: string }) => c.context),
    ).toEqual(checks);
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
