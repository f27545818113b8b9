// What each Cognito group can do through Kargo's API (its CLI and UI use the same API), from the roles the
// kargo plan declares. Kargo maps a signed-in user to every project ServiceAccount whose claims match and
// authorizes each call by any of them (akuity/kargo v1.11.2 pkg/server/kubernetes/client.go,
// getAuthorizedClient), so a group's power is the union of its ServiceAccounts' Roles.
//   promote into S: `promote` on Stage S, then `create` promotions as the user
//                   (pkg/server/promote_to_stage_v1alpha1.go)
//   approve for S:  `promote` on Stage S, then `patch` freights/status as the user
//                   (pkg/server/approve_freight_v1alpha1.go; the REST route `approve` checks the same).
// No other Kargo API call writes a Freight's status: the generic resource API updates the main resource,
// whose status the API server ignores (the Freight CRD has a status subresource).
import { beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { isGate, programStages, runStages } from "../lib/pipeline/graph";
import { rollbackRequesters, rollbackRequestName } from "../lib/pipeline/rollback-request";
import { riskPolicy } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import { kubernetesObjects } from "../lib/cli/plan/output";
import { planChain } from "../lib/cli/plan/projects";
import { allowsOnKargo, type RbacRule } from "./helpers";

type Rule = RbacRule;
type Obj = {
  kind: string;
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
} & {
  rules?: Rule[];
  roleRef?: { kind: string; name: string };
  subjects?: { kind: string; name: string; namespace?: string }[];
};

const pipeline = validatePipeline(definition);

/**
 * The gates a group approves, the update stages whose stops it decides (every program's update stage of each
 * environment it is a decider of), and the preview stages it may start a rollback in: every program's
 * preview stage of those environments, and of each preview stage one of its gates feeds.
 */
const stagesOf = (group: string) => {
  const gates = pipeline.stages.filter((s) => isGate(s) && s.approvers.includes(group)).map((s) => s.name);
  const decides = (environment: string) =>
    riskPolicy(pipeline.environments[environment]!).deciders.includes(group);
  const fed = new Set(
    pipeline.stages
      .filter((s) => s.kind === "preview" && s.from !== "warehouse" && s.from.some((u) => gates.includes(u)))
      .map((s) => s.name),
  );
  const ofKind = (kind: string) => programStages(pipeline).filter((s) => s.kind === kind);
  return {
    gates,
    updates: ofKind("update")
      .filter((s) => decides(s.environment))
      .map((s) => s.name),
    previews: ofKind("preview")
      .filter((s) => decides(s.environment) || fed.has(s.declared))
      .map((s) => s.name),
  };
};

describe("what each approver group can do through Kargo's API", () => {
  let rulesOf: (group: string) => Rule[];
  const groups = [
    ...new Set([
      ...pipeline.stages.filter(isGate).flatMap((g) => g.approvers),
      ...Object.values(pipeline.environments).flatMap((e) => riskPolicy(e).deciders),
    ]),
  ];

  beforeAll(async () => {
    const objects = kubernetesObjects((await planChain())[2]!) as Obj[];
    const inProject = objects.filter((o) => o.metadata.namespace === pipeline.project);
    rulesOf = (group) => {
      const accounts = inProject
        .filter((o) => o.kind === "ServiceAccount")
        .filter((sa) => {
          const claims = sa.metadata.annotations?.["rbac.kargo.akuity.io/claims"];
          return claims !== undefined && (JSON.parse(claims)["cognito:groups"] as string[]).includes(group);
        })
        .map((sa) => sa.metadata.name);
      const roles = inProject
        .filter((b) => b.kind === "RoleBinding" && b.subjects!.some((s) => accounts.includes(s.name)))
        .map((b) => b.roleRef!.name);
      // kargo-viewer is Kargo's own read-only project Role, not in the plan.
      return inProject
        .filter((r) => r.kind === "Role" && roles.includes(r.metadata.name))
        .flatMap((r) => r.rules!);
    };
  });

  // Every Stage Kargo runs: gates, each program's stages, and the joins.
  const stagesWhere = (rules: Rule[], second: [string, string]) =>
    runStages(pipeline)
      .filter((s) => allowsOnKargo(rules, "promote", "stages", s.name) && allowsOnKargo(rules, ...second))
      .map((s) => s.name)
      .sort();

  // Kargo checks `promote` on the target Stage and `patch` on freights/status separately, each by any of the
  // user's accounts: a group that decides an environment's stops and also a gate can approve Freight for that
  // gate too (the API server then admits it only for Freight verified where the gate waits for:
  // lib/pipeline/approval-admission.ts), and for the preview stages it may promote into (which the API server
  // never admits). Never for a stage it cannot promote into, and never around another group's gate (e.g.
  // qapreview past both QA gates); docs/security-and-approvals.md states what that gate approval reaches.
  it("lets a group approve Freight only for its environments' update stages, and its own gates and previews if it has any of those", () => {
    for (const group of groups) {
      const { updates, gates, previews } = stagesOf(group);
      const expected = (updates.length > 0 ? [...updates, ...gates, ...previews] : []).sort();
      expect(stagesWhere(rulesOf(group), ["patch", "freights/status"]), group).toEqual(expected);
    }
  });

  // A hand-made update is a decider's act (a rollback's update): nobody else promotes into an update stage,
  // whatever else they approve; previews, by their deciders and the approvers of the gates that feed them.
  it("lets a group promote into its gates, the previews it feeds or decides, and the update stages it decides", () => {
    for (const group of groups) {
      const { updates, gates, previews } = stagesOf(group);
      expect(stagesWhere(rulesOf(group), ["create", "promotions"]), group).toEqual(
        [...gates, ...previews, ...updates].sort(),
      );
    }
  });

  it("gives no group anything else to write", () => {
    for (const group of groups) {
      for (const rule of rulesOf(group)) {
        // Its environments' rollback requests, by name, which Kargo's `kargo update configmap` rewrites.
        if (rule.resources.includes("configmaps")) {
          const own = Object.keys(pipeline.environments)
            .filter((env) => rollbackRequesters(pipeline, env).includes(group))
            .map(rollbackRequestName);
          expect(rule.resources, group).toEqual(["configmaps"]);
          expect(rule.resourceNames?.length, group).toBe(1);
          expect(own, group).toContain(rule.resourceNames![0]);
          expect([...rule.verbs].sort(), group).toEqual(["get", "patch", "update"]);
          continue;
        }
        const grants = rule.verbs.flatMap((v) => rule.resources.map((r) => `${v} ${r}`));
        for (const grant of grants)
          expect(
            ["promote stages", "create promotions", "patch freights/status"],
            `${group}: ${grant}`,
          ).toContain(grant);
      }
    }
  });
});
