// The admission policies that keep each PKO Stack to its stage (lib/pipeline/admission.ts), as the kargo
// project plans them: one policy per program stage holding that stage's Stack, bound to that Stack's name
// alone in the stacks namespace, and one refusing every other name. That the API server enforces them, at
// the largest pipeline the validation allows too, is the Go harness's (test/kube/admission_test.go,
// test/kube/largest_test.go); here, what they are made of and that no expression grows with the pipeline.
import { beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import {
  ARGOCD_TRACKING_ANNOTATION,
  driftAdmissionName,
  plannedStacks,
  stackAdmission,
  stackAdmissionName,
  stageAdmissionName,
} from "../lib/pipeline/admission";
import { CEL_MAX_EXPRESSION_CODE_POINTS, celLiteral, codePoints } from "../lib/pipeline/cel";
import { programStages } from "../lib/pipeline/graph";
import { driftName, stackObjectName } from "../lib/pipeline/names";
import { driftStages } from "../lib/pipeline/drift";
import { MAX_PROGRAM_STAGES, type Pipeline } from "../lib/pipeline/schema";
import { stackManifest } from "../lib/pipeline/stack-manifest";
import { validatePipeline } from "../lib/pipeline/validate";
import { one } from "./helpers";
import { planKargo, withExtraProgram, type Obj } from "./kargo-support";
import { largestPipeline } from "./largest-pipeline";

const pipeline = validatePipeline(definition);

/** Every CEL expression of a set of admission objects. */
const expressions = (objects: Obj[]) =>
  objects
    .filter((o) => o.kind === "ValidatingAdmissionPolicy")
    .flatMap((o) =>
      [...(o.spec.matchConditions ?? []), ...(o.spec.variables ?? []), ...o.spec.validations].map(
        (e: { expression: string }) => ({ policy: o.metadata.name as string, expression: e.expression }),
      ),
    );

describe("the Stack admission policies", () => {
  let ofKind: (kind: string) => Obj[];
  let setup: Awaited<ReturnType<typeof planKargo>>["setup"];
  let largest: Pipeline;
  beforeAll(async () => {
    ({ ofKind, setup } = await planKargo());
    largest = largestPipeline();
  });

  it("are planned as lib/pipeline/admission.ts derives them: a policy and binding per program stage, and one for every other name", () => {
    const planned = [...ofKind("ValidatingAdmissionPolicy"), ...ofKind("ValidatingAdmissionPolicyBinding")];
    const derived = stackAdmission(pipeline) as Obj[];
    const key = (o: Obj) => `${o.kind} ${o.metadata.name}`;
    expect(
      planned
        .filter((o) => derived.some((d) => key(d) === key(o)))
        .map(key)
        .sort(),
    ).toEqual(derived.map(key).sort());
    for (const d of derived) {
      const o = planned.find((x) => key(x) === key(d))!;
      expect({ metadata: o.metadata, spec: o.spec }).toEqual({ metadata: d.metadata, spec: d.spec });
    }
    expect(derived).toHaveLength(2 * (programStages(pipeline).length + driftStages(pipeline).length) + 2);
  });

  it("bind each stage's policy to its Stack's name alone, and the other one to every name no stage plans, in the stacks namespace only", () => {
    for (const p of [pipeline, withExtraProgram(pipeline), largest]) {
      const objects = stackAdmission(p) as Obj[];
      const bindings = objects.filter((o) => o.kind === "ValidatingAdmissionPolicyBinding");
      const namespaceSelector = { matchLabels: { "kubernetes.io/metadata.name": p.stacks.namespace } };
      // Each program stage's Stack, and each update stage's drift check (lib/pipeline/drift.ts).
      const bound = [
        ...programStages(p).map((s) => ({
          policy: stageAdmissionName(p, s.name),
          stack: stackObjectName(p, s.name),
        })),
        ...driftStages(p).map((s) => ({
          policy: driftAdmissionName(p, s.name),
          stack: stackObjectName(p, driftName(s.name)),
        })),
      ];
      expect(driftStages(p).length).toBeGreaterThan(0);
      const names = bound.map((b) => b.stack);
      for (const { policy, stack } of bound) {
        const b = bindings.find((o) => o.metadata.name === policy)!;
        expect(b.spec.policyName).toBe(policy);
        expect(b.spec.validationActions).toEqual(["Deny"]);
        expect(b.spec.matchResources.namespaceSelector).toEqual(namespaceSelector);
        expect(b.spec.matchResources.resourceRules).toEqual([
          expect.objectContaining({ resources: ["stacks"], resourceNames: [stack] }),
        ]);
      }
      const others = bindings.find((o) => o.metadata.name === stackAdmissionName(p))!;
      expect(others.spec.matchResources.namespaceSelector).toEqual(namespaceSelector);
      expect(others.spec.matchResources.excludeResourceRules).toEqual([
        expect.objectContaining({ resources: ["stacks"] }),
      ]);
      expect(others.spec.matchResources.excludeResourceRules[0].resourceNames.sort()).toEqual(names.sort());
      for (const policy of objects.filter((o) => o.kind === "ValidatingAdmissionPolicy")) {
        expect(policy.spec.failurePolicy).toBe("Fail");
        expect(policy.spec.matchConstraints.resourceRules).toEqual([
          expect.objectContaining({ apiGroups: ["pulumi.com"], resources: ["stacks"] }),
        ]);
      }
    }
  });

  it("admit, for each stage's Application, exactly that stage's Stack apart from its commit", () => {
    for (const p of [pipeline, withExtraProgram(pipeline)]) {
      const planned = plannedStacks(p);
      expect(Object.keys(planned).sort()).toEqual(
        programStages(p)
          .map((s) => stackObjectName(p, s.name))
          .sort(),
      );
      for (const s of programStages(p)) {
        const { metadata, spec } = stackManifest(p, s);
        const { commit: _promoted, ...rest } = spec;
        expect(planned[stackObjectName(p, s.name)]).toEqual({
          stage: s.name,
          application: stackObjectName(p, s.name),
          name: metadata.name,
          spec: JSON.parse(JSON.stringify(rest)),
        });
        const policy = (stackAdmission(p) as Obj[]).find(
          (o) => o.kind === "ValidatingAdmissionPolicy" && o.metadata.name === stageAdmissionName(p, s.name),
        )!;
        expect(policy.spec.variables).toContainEqual({
          name: "expected",
          expression: celLiteral(JSON.parse(JSON.stringify(rest))),
        });
      }
    }
  });

  it("hold no expression that grows with the pipeline: at the largest pipeline the validation allows, each is one Stack's size", () => {
    expect(programStages(largest)).toHaveLength(MAX_PROGRAM_STAGES);
    const small = expressions(stackAdmission(pipeline) as Obj[]);
    const large = expressions(stackAdmission(largest) as Obj[]);
    const longest = (xs: typeof small) => Math.max(...xs.map((x) => codePoints(x.expression)));
    // One Stack's size, however many stages: the largest pipeline's longest expression is no longer than the
    // longest of the example's Stacks can make it (their names differ by a few characters).
    expect(longest(large)).toBeLessThan(longest(small) * 1.2);
    expect(longest(large)).toBeLessThan(CEL_MAX_EXPRESSION_CODE_POINTS / 10);
  });

  it("read the Application from Argo CD's tracking annotation, which Argo CD writes itself", () => {
    const policy = (stackAdmission(pipeline) as Obj[]).find(
      (o) => o.metadata.name === stageAdmissionName(pipeline, programStages(pipeline)[0]!.name),
    )!;
    const application = policy.spec.variables.find((v: { name: string }) => v.name === "application")!;
    expect(application.expression).toContain(`'${ARGOCD_TRACKING_ANNOTATION}'`);
    // cluster-setup's Argo CD says so rather than relying on its default.
    const argocd = one(setup, "kubernetes:helm.sh/v3:Release", "argocd").inputs.values as {
      configs: { cm: Record<string, unknown> };
    };
    expect(argocd.configs.cm["application.resourceTrackingMethod"]).toBe("annotation");
  });
});

describe("celLiteral", () => {
  it("quotes strings so no value can end the literal early", () => {
    expect(celLiteral("it's a \\ path")).toBe(`'it\\'s a \\\\ path'`);
  });
  it("wraps every element so lists and maps mixing types stay homogeneous", () => {
    expect(celLiteral({ a: [1, "x"], b: true })).toBe(`{'a': dyn([dyn(1), dyn('x')]), 'b': dyn(true)}`);
  });
});
