// Who may ask for an environment's rollback, as rendered from kargo/pipeline.ts: the groups, the Roles that
// let them write the request, and the admission policy that holds it to them. What the API server then
// admits is test/kube/rollback_test.go's (Go).
import { beforeAll, describe, expect, it } from "vitest";
import { CEL_MAX_EXPRESSION_CODE_POINTS, codePoints } from "../lib/pipeline/cel";
import { environmentStages, isGate } from "../lib/pipeline/graph";
import {
  ROLLBACK_REQUEST_FIELDS,
  rollbackRequestAdmission,
  rollbackRequestName,
  rollbackRequestRoles,
} from "../lib/pipeline/rollback-request";
import { approverRoles, deciderRoles } from "../lib/pipeline/rbac";
import { riskPolicy, type Pipeline } from "../lib/pipeline/schema";
import { platformNamespaces } from "../lib/namespaces";
import { validatePipeline } from "../lib/pipeline/validate";
import { kubernetesReachChanges } from "../lib/cli/plan/diff-reach";
import type { ProjectPlan } from "../lib/cli/plan/diff";
import { planChain } from "../lib/cli/plan/projects";
import { planKargo, type Obj } from "./kargo-support";
import { largestPipeline } from "./largest-pipeline";
import { first, last, pipeline, withEnvironments } from "./risk-stops-support";

/** An environment's deciders, and the approvers of the gates its preview stages take Freight from. */
const expectedRequesters = (p: Pipeline, environment: string) => {
  const feeding = environmentStages(p)
    .filter((s) => s.kind === "preview" && s.environment === environment)
    .flatMap((s) => (s.from === "warehouse" ? [] : s.from));
  const promoters = p.stages.filter(isGate).filter((g) => feeding.includes(g.name));
  return [
    ...new Set([
      ...riskPolicy(p.environments[environment]!).deciders,
      ...promoters.flatMap((g) => g.approvers),
    ]),
  ].sort();
};

const forks = () => {
  const decider = riskPolicy(pipeline.environments[first.name]!).deciders;
  return [
    pipeline,
    // The older names: deciders written destructiveChangeApprovers, and an environment that stops nothing.
    validatePipeline(
      withEnvironments({
        [first.name]: { destructiveChangeApprovers: decider.length > 0 ? decider : ["old-approvers"] },
        [last.name]: { protected: false },
      }),
    ),
    largestPipeline(),
  ];
};

describe("who may ask for an environment's rollback", () => {
  it("is its deciders and its promoters, each environment's own, whatever names the fields are written in", () => {
    for (const p of forks()) {
      const roles = rollbackRequestRoles(p);
      for (const environment of Object.keys(p.environments)) {
        const want = expectedRequesters(p, environment);
        const role = roles.find((r) => r.environment === environment);
        expect(role?.groups ?? [], environment).toEqual(want);
      }
      expect(roles.length, p.project).toBeGreaterThan(0);
    }
  });

  it("lets their Kargo role ServiceAccounts (and groups) read and rewrite their own environment's request, by name, nothing else", () => {
    for (const p of forks()) {
      for (const role of rollbackRequestRoles(p)) {
        // RBAC cannot name an object on create: the kargo project creates each request, nobody else.
        expect(role.rules).toEqual([
          {
            apiGroups: [""],
            resources: ["configmaps"],
            resourceNames: [rollbackRequestName(role.environment)],
            verbs: ["get", "patch", "update"].sort(),
          },
        ]);
        // The accounts Kargo maps exactly these groups onto (rbac.ts): each account's groups are requesters.
        const mapped = [...approverRoles(p), ...deciderRoles(p)];
        const want = mapped
          .filter((r) => {
            const groups = JSON.parse(r.serviceAccount.annotations["rbac.kargo.akuity.io/claims"]!)[
              "cognito:groups"
            ] as string[];
            return "gate" in r
              ? environmentStages(p).some(
                  (s) =>
                    s.kind === "preview" &&
                    s.environment === role.environment &&
                    s.from !== "warehouse" &&
                    s.from.includes(r.gate),
                )
              : r.environment === role.environment && groups.length > 0;
          })
          .map((r) => r.serviceAccount.name)
          .sort();
        expect(role.serviceAccounts, role.name).toEqual(want);
        expect(role.serviceAccounts.length, role.name).toBeGreaterThan(0);
      }
    }
  });

  it("judges every ConfigMap write in the project's namespace, failing closed, in expressions the API server compiles at any size", () => {
    for (const p of forks()) {
      const [policy, binding] = rollbackRequestAdmission(p, "kargo") as unknown as [Obj, Obj];
      expect(policy.spec.failurePolicy).toBe("Fail");
      expect(policy.spec.matchConstraints.resourceRules).toEqual([
        {
          apiGroups: [""],
          apiVersions: ["v1"],
          operations: ["CREATE", "UPDATE"],
          resources: ["configmaps"],
        },
      ]);
      expect(binding.spec).toEqual({
        policyName: policy.metadata.name,
        validationActions: ["Deny"],
        matchResources: { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": p.project } } },
      });
      const expressions = [
        ...policy.spec.variables.map((v: { expression: string }) => v.expression),
        ...policy.spec.validations.flatMap((v: { expression: string; messageExpression?: string }) => [
          v.expression,
          v.messageExpression ?? "",
        ]),
      ];
      for (const e of expressions) expect(codePoints(e)).toBeLessThan(CEL_MAX_EXPRESSION_CODE_POINTS);
      // Every environment, and each field a request must hold, is in what it reads.
      const all = expressions.join("\n");
      for (const environment of Object.keys(p.environments)) expect(all).toContain(`'${environment}'`);
      for (const field of ROLLBACK_REQUEST_FIELDS) expect(all).toContain(`'${field}'`);
    }
  });

  describe("in the plan", () => {
    let ofKind: (kind: string) => Obj[];
    let base: ProjectPlan[];
    beforeAll(async () => {
      ({ ofKind } = await planKargo());
      base = (await planChain()) as ProjectPlan[];
    });

    // The plan diff's oversight section (Kargo reach) names the request a group may no longer write.
    it("is narrowed for the groups of an environment whose rollback request Role is no longer bound, and names the request", () => {
      const roles = rollbackRequestRoles(pipeline);
      expect(roles.length).toBeGreaterThan(0);
      for (const role of roles) {
        const copy = structuredClone(base);
        for (const p of copy)
          p.resources = p.resources.filter(
            (r) =>
              !(
                r.type.startsWith("kubernetes:") &&
                r.inputs.kind === "RoleBinding" &&
                (r.inputs.roleRef as { name: string }).name === role.name
              ),
          );
        const changes = kubernetesReachChanges(base, copy);
        const request = `write ${rollbackRequestName(role.environment)} (ask to roll back)`;
        for (const group of role.groups) {
          const change = changes.find((c) => c.identity === `group ${group}`);
          expect(change?.removed, `${role.environment}: ${group}`).toContain(request);
          expect(change?.added, group).toEqual([]);
        }
      }
    });

    it("declares the policy, its binding, each empty request, and each Role bound to its Kargo role ServiceAccounts and groups", () => {
      for (const o of rollbackRequestAdmission(pipeline, platformNamespaces.kargo)) {
        const planned = ofKind(o.kind).find((x) => x.metadata.name === o.metadata.name);
        expect(planned?.spec, o.metadata.name).toEqual(o.spec);
      }
      for (const role of rollbackRequestRoles(pipeline)) {
        const planned = ofKind("Role").find((r) => r.metadata.name === role.name)!;
        expect(planned.metadata.namespace).toBe(pipeline.project);
        expect(planned.rules).toEqual(role.rules);
        const binding = ofKind("RoleBinding").find((b) => b.roleRef?.name === role.name)!;
        expect(binding.subjects).toEqual([
          ...role.serviceAccounts.map((name) => ({
            kind: "ServiceAccount",
            name,
            namespace: pipeline.project,
          })),
          ...role.groups.map((name) => ({ kind: "Group", apiGroup: "rbac.authorization.k8s.io", name })),
        ]);
        // Each request exists, empty, for Kargo's API to rewrite (it updates, never creates, what it names).
        const request = ofKind("ConfigMap").find(
          (c) => c.metadata.name === rollbackRequestName(role.environment),
        );
        expect(request?.metadata.namespace, role.environment).toBe(pipeline.project);
        expect(request?.data ?? {}).toEqual({});
      }
    });
  });
});
