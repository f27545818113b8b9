import * as fs from "node:fs";
import * as path from "node:path";
import * as github from "@pulumi/github";
import * as pulumi from "@pulumi/pulumi";
import YAML from "yaml";
import { stageBranchPrefix } from "../lib/pipeline/names";

/** Who pushes the stage branches: Kargo's GitHub App, or the user whose token Kargo pushes with. */
export type KargoGitIdentity =
  { kind: "app"; appId: number } | { kind: "user"; userId: pulumi.Input<number> };

export interface RepositoryRulesArgs {
  /** The pipeline's repository (its name, under the provider's owner). */
  repository: string;
  /** A provider whose token may administer the repository (Administration: write). */
  provider: github.Provider;
  /** The only actor that may create, update or delete a stage branch. */
  kargo: KargoGitIdentity;
  /** Status checks a pull request must pass before it merges into main. */
  requiredChecks: string[];
}

/**
 * The repository's rules as code, two GitHub repository rulesets: `main` takes changes only through a reviewed
 * pull request whose checks passed, never a force push or a deletion; the stage branches are Kargo's alone,
 * since whatever a stage branch holds is what its Stack runs (the Stack admission policy keeps each Stack
 * to its stage; this keeps the commit to what Kargo promoted).
 */
export class RepositoryRules extends pulumi.ComponentResource {
  readonly mainRulesetId: pulumi.Output<number>;
  readonly stageRulesetId: pulumi.Output<number>;

  constructor(name: string, args: RepositoryRulesArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:kargo:RepositoryRules", name, {}, opts);
    const ruleset = (
      suffix: string,
      title: string,
      ref: string,
      bypassActors: github.types.input.RepositoryRulesetBypassActor[],
      rules: github.types.input.RepositoryRulesetRules,
    ) =>
      new github.RepositoryRuleset(
        `${name}-${suffix}`,
        {
          repository: args.repository,
          name: title,
          target: "branch",
          enforcement: "active",
          conditions: { refName: { includes: [ref], excludes: [] } },
          bypassActors,
          rules,
        },
        { parent: this, provider: args.provider },
      );
    // Nobody bypasses main's rules, administrators included.
    const main = ruleset("main", "main: reviewed pull requests only", "~DEFAULT_BRANCH", [], {
      deletion: true,
      nonFastForward: true,
      pullRequest: {
        requiredApprovingReviewCount: 1,
        dismissStaleReviewsOnPush: true,
        requireLastPushApproval: true,
        requiredReviewThreadResolution: false,
      },
      requiredStatusChecks: {
        strictRequiredStatusChecksPolicy: true,
        requiredChecks: args.requiredChecks.map((context) => ({ context })),
      },
    });
    // A stage's first promotion creates its branch as an orphan and each one after pushes a new commit on top
    // (lib/pipeline/promotion.ts): Kargo creates and updates; nobody force-pushes or deletes.
    const stages = ruleset(
      "stages",
      "stage branches: Kargo only",
      `refs/heads/${stageBranchPrefix}*`,
      [kargoBypass(args.kargo)],
      { creation: true, update: true, deletion: true, nonFastForward: true },
    );
    this.mainRulesetId = main.rulesetId;
    this.stageRulesetId = stages.rulesetId;
    this.registerOutputs({ mainRulesetId: this.mainRulesetId, stageRulesetId: this.stageRulesetId });
  }
}

/** Kargo's identity as a ruleset bypass actor: its App (an Integration), or its token's user. */
export function kargoBypass(kargo: KargoGitIdentity): github.types.input.RepositoryRulesetBypassActor {
  return kargo.kind === "app"
    ? { actorType: "Integration", actorId: kargo.appId, bypassMode: "always" }
    : { actorType: "User", actorId: kargo.userId, bypassMode: "always" };
}

/**
 * The checks a pull request reports from this repository's own workflows, as GitHub names them: for each job
 * of a pull-request workflow that calls a reusable workflow, `<caller job> / <called job>` for every called
 * job that always runs (no `if:`). Read from `.github/workflows` so a fork's renamed jobs follow.
 */
export function pullRequestChecks(workflowsDir: string): string[] {
  type Job = { name?: string; uses?: string; if?: unknown };
  const read = (file: string) =>
    YAML.parse(fs.readFileSync(path.join(workflowsDir, file), "utf8")) as {
      on?: unknown;
      jobs?: Record<string, Job>;
    };
  const checks: string[] = [];
  for (const file of fs.readdirSync(workflowsDir).filter((f) => /\.ya?ml$/.test(f))) {
    const workflow = read(file);
    const triggers = typeof workflow.on === "string" ? [workflow.on] : Object.keys(workflow.on ?? {});
    if (!triggers.includes("pull_request")) continue;
    for (const [id, job] of Object.entries(workflow.jobs ?? {})) {
      const local = /^\.\/\.github\/workflows\/(.+)$/.exec(job.uses ?? "");
      if (!local || job.if !== undefined) continue;
      for (const [calledId, called] of Object.entries(read(local[1]!).jobs ?? {})) {
        if (called.if === undefined) checks.push(`${job.name ?? id} / ${called.name ?? calledId}`);
      }
    }
  }
  return checks.sort();
}
