// The admission policy that keeps each PKO Stack to its stage (lib/pipeline/admission.ts), as the kargo
// project plans it: one entry per program stage, each the Stack that stage's Application deploys, bound to
// the stacks namespace. That the API server enforces it is the Go harness's (test/kube/admission_test.go).
import { beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import {
  ARGOCD_TRACKING_ANNOTATION,
  celLiteral,
  plannedStacks,
  stackAdmissionName,
  stackAdmissionPolicy,
} from "../lib/pipeline/admission";
import { programStages } from "../lib/pipeline/graph";
import { stackObjectName } from "../lib/pipeline/names";
import { stackManifest } from "../lib/pipeline/stack-manifest";
import { validatePipeline } from "../lib/pipeline/validate";
import { one } from "./helpers";
import { planKargo, withExtraProgram, type Obj } from "./kargo-support";

const pipeline = validatePipeline(definition);

describe("the Stack admission policy", () => {
  let ofKind: (kind: string) => Obj[];
  let setup: Awaited<ReturnType<typeof planKargo>>["setup"];
  beforeAll(async () => ({ ofKind, setup } = await planKargo()));

  it("is planned with its binding, on Stacks of the stacks namespace only, refusing what it does not admit", () => {
    const [policy] = ofKind("ValidatingAdmissionPolicy").filter(
      (o) => o.metadata.name === stackAdmissionName(pipeline),
    );
    const [binding] = ofKind("ValidatingAdmissionPolicyBinding").filter(
      (o) => o.metadata.name === stackAdmissionName(pipeline),
    );
    expect(policy?.spec.failurePolicy).toBe("Fail");
    expect(policy?.spec.matchConstraints.resourceRules).toEqual([
      expect.objectContaining({ apiGroups: ["pulumi.com"], resources: ["stacks"] }),
    ]);
    expect(binding?.spec).toEqual({
      policyName: policy?.metadata.name,
      validationActions: ["Deny"],
      matchResources: {
        namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": pipeline.stacks.namespace } },
      },
    });
  });

  it("admits, for each stage's Application, exactly that stage's Stack apart from its commit", () => {
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
          name: metadata.name,
          spec: JSON.parse(JSON.stringify(rest)),
        });
      }
    }
  });

  it("reads the Application from Argo CD's tracking annotation, which Argo CD writes itself", () => {
    const { policy } = stackAdmissionPolicy(pipeline);
    const application = policy.spec.variables.find((v) => v.name === "application")!;
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
