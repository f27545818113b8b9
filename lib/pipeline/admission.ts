// The API server, not a convention, keeps each PKO Stack to its own stage. Whoever can push a stage branch
// writes the whole Stack manifest, its name and labels included, so nothing in the manifest can say which
// stage it belongs to. What Argo CD adds itself can: when it applies an object it sets the tracking
// annotation to `<Application>:<group>/<kind>:<namespace>/<name>`, overwriting any value the manifest brought
// (argo-cd v3.4.4 util/argo/resource_tracking.go SetAppInstance, called for every target object in
// controller/state.go). Each stage's Application is the pipeline's, so the Application named there decides
// what the Stack may be: exactly the planned manifest of that stage, apart from the commit a promotion sets.
import { programStages } from "./graph";
import { stackObjectName } from "./names";
import type { Pipeline } from "./schema";
import { stackManifest } from "./stack-manifest";

/** The annotation Argo CD's default (annotation) tracking writes on every object it applies. */
export const ARGOCD_TRACKING_ANNOTATION = "argocd.argoproj.io/tracking-id";

/** The one field of a Stack a stage branch may choose: the promoted commit. */
const PROMOTED_FIELD = "commit";

/** The policy's and its binding's name. */
export const stackAdmissionName = (p: Pick<Pipeline, "project">) => `${p.project}-stacks-bound-to-stage`;

/**
 * A JSON value as a CEL literal. Every value inside a list or map is wrapped in `dyn()`: the API server's CEL
 * wants each list and map literal homogeneous, and a Stack spec mixes strings, booleans, lists and maps.
 */
export function celLiteral(value: unknown): string {
  if (typeof value === "string") return `'${value.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new Error(`no CEL literal for ${value}`);
    return Number.isInteger(value) ? String(value) : value.toExponential();
  }
  if (typeof value === "boolean") return String(value);
  if (Array.isArray(value)) return `[${value.map((v) => `dyn(${celLiteral(v)})`).join(", ")}]`;
  if (value !== null && typeof value === "object")
    return `{${Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${celLiteral(k)}: dyn(${celLiteral(v)})`)
      .join(", ")}}`;
  throw new Error(`no CEL literal for ${String(value)}`);
}

/** What each Application may apply: the name and the spec (without the commit) of its stage's Stack. */
export function plannedStacks(p: Pipeline): Record<string, { name: string; spec: Record<string, unknown> }> {
  return Object.fromEntries(
    programStages(p).map((s) => {
      const manifest = stackManifest(p, s);
      const spec: Record<string, unknown> = { ...manifest.spec };
      delete spec[PROMOTED_FIELD];
      // JSON round trip: what the API server sees, without undefined fields.
      return [
        stackObjectName(p, s.name),
        { name: manifest.metadata.name, spec: JSON.parse(JSON.stringify(spec)) },
      ];
    }),
  );
}

/** A field of the planned spec the policy names on its own, so a refusal says what was forged. */
const namedFields = [
  ["serviceAccountName", "the ServiceAccount (and so the AWS identity) of the stage"],
  ["stack", "the Pulumi stack of the stage"],
  ["projectRepo", "the pipeline's repository"],
  ["repoDir", "the folder of the stage's program"],
] as const;

/**
 * The ValidatingAdmissionPolicy (Kubernetes' built-in CEL admission) and its binding: in the stacks namespace,
 * a Stack is created or changed only as the planned Stack of the stage whose Application applies it.
 */
export function stackAdmissionPolicy(p: Pipeline) {
  const name = stackAdmissionName(p);
  const ns = p.stacks.namespace;
  const guarded = (expression: string) => `!variables.known || (${expression})`;
  const validations = [
    {
      expression: "variables.known",
      message: `A Stack in namespace ${ns} is applied only by one of the pipeline's Argo CD Applications: its ${ARGOCD_TRACKING_ANNOTATION} annotation must name one`,
      reason: "Forbidden",
    },
    {
      expression: guarded("object.metadata.name == variables.expected.name"),
      message: `metadata.name: an Application applies only its own stage's Stack (named in ${ARGOCD_TRACKING_ANNOTATION}); a stage branch cannot carry another stage's Stack`,
      reason: "Forbidden",
    },
    ...namedFields.map(([field, what]) => ({
      expression: guarded(
        `has(object.spec.${field}) && object.spec.${field} == variables.expected.spec.${field}`,
      ),
      message: `spec.${field} must be ${what} whose Application applies this Stack, as planned`,
      reason: "Forbidden" as const,
    })),
    {
      expression: guarded(
        "has(object.spec.workspaceTemplate) && has(object.spec.workspaceTemplate.spec) && has(object.spec.workspaceTemplate.spec.image) && object.spec.workspaceTemplate.spec.image == variables.expected.spec.workspaceTemplate.spec.image",
      ),
      message:
        "spec.workspaceTemplate.spec.image must be the workspace image planned for the stage's program",
      reason: "Forbidden",
    },
    {
      expression: guarded(
        "has(object.spec.workspaceTemplate) && dyn(object.spec.workspaceTemplate) == dyn(variables.expected.spec.workspaceTemplate)",
      ),
      message:
        "spec.workspaceTemplate must be the planned one: no other volumes, host paths, service accounts, privileges or resources",
      reason: "Forbidden",
    },
    {
      expression: guarded(
        `dyn(object.spec).all(k, k == '${PROMOTED_FIELD}' || k in variables.expected.spec) && variables.expected.spec.all(k, k in dyn(object.spec) && dyn(object.spec)[k] == variables.expected.spec[k])`,
      ),
      message: `spec: a stage branch may change only spec.${PROMOTED_FIELD}; every other field must be as planned`,
      reason: "Forbidden",
    },
  ];
  const tracking = `object.metadata.?annotations[?'${ARGOCD_TRACKING_ANNOTATION}'].orValue('')`;
  const policy = {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingAdmissionPolicy",
    metadata: { name, labels: { "app.kubernetes.io/part-of": p.project } },
    spec: {
      failurePolicy: "Fail",
      matchConstraints: {
        resourceRules: [
          {
            apiGroups: ["pulumi.com"],
            apiVersions: ["*"],
            resources: ["stacks"],
            operations: ["CREATE", "UPDATE"],
          },
        ],
      },
      variables: [
        { name: "application", expression: `${tracking}.split(':')[0]` },
        { name: "planned", expression: celLiteral(plannedStacks(p)) },
        { name: "known", expression: "variables.application in variables.planned" },
        { name: "expected", expression: "variables.planned[variables.application]" },
      ],
      validations,
    },
  };
  const binding = {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingAdmissionPolicyBinding",
    metadata: { name, labels: { "app.kubernetes.io/part-of": p.project } },
    spec: {
      policyName: name,
      validationActions: ["Deny"],
      matchResources: { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": ns } } },
    },
  };
  return { policy, binding };
}
