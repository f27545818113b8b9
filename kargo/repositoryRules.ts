import * as fs from "node:fs";
import * as path from "node:path";
import * as github from "@pulumi/github";
import * as pulumi from "@pulumi/pulumi";
import YAML from "yaml";
import { stageBranchPrefix } from "../lib/pipeline/names";
import type { AdminBypassMode } from "./config";

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
  /** How many approvals a pull request into main needs, and who may merge without them. */
  review: ReviewRules;
}

export interface ReviewRules {
  /** Approving reviews a pull request into main needs (0: none, the checks alone guard main). */
  requiredReviews: number;
  /** The most recent push must be approved by someone other than who pushed it. */
  requireLastPushApproval: boolean;
  /** Whether repository admins may merge without the reviews (never the checks): see adminBypass. */
  adminBypass: AdminBypassMode;
  /** One of the approvals must come from an owner of the changed files (.github/CODEOWNERS, the path's). */
  codeOwners: boolean;
}

/**
 * The repository role "admin" as a ruleset bypass actor. A `RepositoryRole` actor's ID is the base role's:
 * maintain 2, write 4, admin 5 (integrations/terraform-provider-github docs/resources/repository_ruleset.md,
 * bypass_actors, which @pulumi/github 6.15.0 wraps). `pull_request` lets admins merge a pull request without
 * the ruleset's rules, never push past them; `always` also lets them push to main directly.
 */
export const REPOSITORY_ADMIN_ROLE_ID = 5;
export function adminBypass(mode: AdminBypassMode): github.types.input.RepositoryRulesetBypassActor[] {
  return mode === "never"
    ? []
    : [{ actorType: "RepositoryRole", actorId: REPOSITORY_ADMIN_ROLE_ID, bypassMode: mode }];
}

/**
 * The repository's rules as code, GitHub repository rulesets: `main` takes changes only through a pull request
 * whose checks passed, reviewed as `review` says, never a force push or a deletion; the stage branches are Kargo's alone,
 * since whatever a stage branch holds is what its Stack runs (the Stack admission policy keeps each Stack
 * to its stage; this keeps the commit to what Kargo promoted).
 */
export class RepositoryRules extends pulumi.ComponentResource {
  readonly mainRulesetId: pulumi.Output<number>;
  /** The reviews ruleset; none when no review is required. */
  readonly reviewRulesetId: pulumi.Output<number> | undefined;
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
    // Two rulesets on main, since a bypass actor skips every rule of the ruleset it bypasses: the first
    // (pull requests only, checks passed, no force push or deletion) has no bypass, administrators
    // included; the second holds the reviews, which repository admins may skip when adminBypass says so
    // (the one-maintainer case, docs/deploy.md). GitHub applies every ruleset that matches a branch.
    const main = ruleset("main", "main: pull requests whose checks passed", "~DEFAULT_BRANCH", [], {
      deletion: true,
      nonFastForward: true,
      pullRequest: {
        requiredApprovingReviewCount: 0,
        dismissStaleReviewsOnPush: true,
        requireLastPushApproval: false,
        requiredReviewThreadResolution: false,
      },
      requiredStatusChecks: {
        strictRequiredStatusChecksPolicy: true,
        requiredChecks: args.requiredChecks.map((context) => ({ context })),
      },
    });
    const reviews =
      args.review.requiredReviews > 0
        ? ruleset("main-reviews", "main: reviewed", "~DEFAULT_BRANCH", adminBypass(args.review.adminBypass), {
            pullRequest: {
              requiredApprovingReviewCount: args.review.requiredReviews,
              dismissStaleReviewsOnPush: true,
              requireLastPushApproval: args.review.requireLastPushApproval,
              requireCodeOwnerReview: args.review.codeOwners,
              requiredReviewThreadResolution: false,
            },
          })
        : undefined;
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
    this.reviewRulesetId = reviews?.rulesetId;
    this.stageRulesetId = stages.rulesetId;
    this.registerOutputs({
      mainRulesetId: this.mainRulesetId,
      reviewRulesetId: this.reviewRulesetId,
      stageRulesetId: this.stageRulesetId,
    });
  }
}

/** Kargo's identity as a ruleset bypass actor: its App (an Integration), or its token's user. */
export function kargoBypass(kargo: KargoGitIdentity): github.types.input.RepositoryRulesetBypassActor {
  return kargo.kind === "app"
    ? { actorType: "Integration", actorId: kargo.appId, bypassMode: "always" }
    : { actorType: "User", actorId: kargo.userId, bypassMode: "always" };
}

/** Why main would take anything: no review required and no check to pass; undefined when it is guarded. */
export function unguardedMain(requiredReviews: number, requiredChecks: string[]): string | undefined {
  return requiredReviews === 0 && requiredChecks.length === 0
    ? "kargo:githubRequiredReviews: must be at least 1 while no pull-request workflow in .github/workflows reports a check: with neither, anything merges into main"
    : undefined;
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
