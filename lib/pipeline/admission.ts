// The API server, not a convention, keeps each PKO Stack to its own stage. Whoever can push a stage branch
// writes the whole Stack manifest, its name and labels included, so nothing in the manifest can say which
// stage it belongs to. What Argo CD adds itself can: when it applies an object it sets the tracking
// annotation to `<Application>:<group>/<kind>:<namespace>/<name>`, overwriting any value the manifest brought
// (argo-cd v3.4.4 util/argo/resource_tracking.go SetAppInstance, called for every target object in
// controller/state.go). Each stage's Application is the pipeline's, so the Application named there decides
// what the Stack may be: exactly the planned manifest of that stage, apart from the commit a promotion sets.
//
// How it scales. One policy holding every planned Stack stops at the CEL parser's 100,000 code points per
// expression (about 47 program stages), and the API server then refuses the policy itself. Kubernetes v1.34
// offers three ways to spread a policy: parameter resources (paramKind, paramRef by name or selector), one
// binding per case, and matchConditions. Parameters hold data, but the core kinds only hold strings and CEL
// in the API server cannot parse JSON, so a whole Stack spec as a parameter needs a custom resource of our
// own: one more CRD, and one more API group whose writers could rewrite the plan (the admission API group is
// already one no program may write: cluster-setup's escalation check). So each program stage gets its own
// small policy holding only its Stack (its size is one Stack's, whatever the pipeline's), bound by name to
// that Stack alone (the binding's resourceNames: the API server picks the one policy without evaluating any
// CEL); one more policy refuses every Stack whose name no stage plans (its binding excludes the planned
// names). A request runs one policy's CEL, however many stages there are: the per-expression cost limit and
// the runtime budget (k8s.io/apiserver v0.34.3 pkg/apis/cel/config.go PerCallLimit, RuntimeCELCostBudget)
// apply per policy and binding, so they too stay one Stack's.
//
// What the API server does not re-check: an UPDATE that leaves `spec` as it was (matchConditions). PKO adds
// and removes its finalizer with ordinary updates, Argo CD re-applies what a branch already holds, and either
// changes only metadata; holding those to a plan that has moved on since would leave a Stack that was not yet
// re-promoted impossible to finalize or re-sync. A change of `spec` is always held to the current plan.
import { denyBinding, denyPolicy, forbidden, inNamespace } from "./admission-objects";
import { CEL_MAX_EXPRESSION_CODE_POINTS, celLiteral, codePoints } from "./cel";
import { programStages, type ProgramStage } from "./graph";
import { driftName, stackObjectName, stageBranch } from "./names";
import { driftStackManifest, driftStages } from "./drift";
import { PipelineError, type Pipeline } from "./schema";
import { stackManifest } from "./stack-manifest";

export { celLiteral } from "./cel";

/** The annotation Argo CD's default (annotation) tracking writes on every object it applies. */
export const ARGOCD_TRACKING_ANNOTATION = "argocd.argoproj.io/tracking-id";

/** The one field of a Stack a stage branch may choose: the promoted commit. */
const PROMOTED_FIELD = "commit";

/** The policy (and binding) refusing every Stack no stage plans. */
export const stackAdmissionName = (p: Pick<Pipeline, "project">) => `${p.project}-stacks-bound-to-stage`;

/**
 * The policy (and binding) of one program stage's Stack. The dot keeps it apart from any name made of the
 * project, stage and program names, which are DNS labels.
 */
export const stageAdmissionName = (p: Pick<Pipeline, "project">, stage: string) =>
  `${stackObjectName(p, stage)}.bound-to-stage`;

/** What a stage's Application may apply: its Stack's name and spec, without the commit. */
export interface PlannedStack {
  stage: string;
  /** The Argo CD Application that applies it (named like the Stack: lib/pipeline/names.ts). */
  application: string;
  name: string;
  spec: Record<string, unknown>;
}

export function plannedStack(p: Pipeline, s: ProgramStage): PlannedStack {
  const manifest = stackManifest(p, s);
  const spec: Record<string, unknown> = { ...manifest.spec };
  delete spec[PROMOTED_FIELD];
  // JSON round trip: what the API server sees, without undefined fields.
  return {
    stage: s.name,
    application: stackObjectName(p, s.name),
    name: manifest.metadata.name,
    spec: JSON.parse(JSON.stringify(spec)) as Record<string, unknown>,
  };
}

/**
 * An update stage's drift check (lib/pipeline/drift.ts): applied by the update stage's own Application, from
 * its branch, and held to its plan like the stage's Stack, under its own policy and binding.
 */
export function plannedDriftStack(p: Pipeline, s: ProgramStage): PlannedStack {
  const manifest = driftStackManifest(p, s);
  const { [PROMOTED_FIELD]: _promoted, ...spec } = manifest.spec;
  return {
    stage: s.name,
    application: stackObjectName(p, s.name),
    name: manifest.metadata.name,
    spec: JSON.parse(JSON.stringify(spec)) as Record<string, unknown>,
  };
}

/** The policy (and binding) of an update stage's drift check. */
export const driftAdmissionName = (p: Pick<Pipeline, "project">, stage: string) =>
  stageAdmissionName(p, driftName(stage));

/** What each Application may apply, by Application. */
export function plannedStacks(p: Pipeline): Record<string, PlannedStack> {
  return Object.fromEntries(
    programStages(p).map((s) => {
      const planned = plannedStack(p, s);
      return [planned.application, planned];
    }),
  );
}

/** A field of the planned spec the policy names on its own, so a refusal says what was forged. */
const namedFields = [
  ["serviceAccountName", "the ServiceAccount (and so the AWS identity)"],
  ["stack", "the Pulumi stack"],
  ["projectRepo", "the repository"],
  ["repoDir", "the program's folder"],
] as const;

const stacksRule = {
  apiGroups: ["pulumi.com"],
  apiVersions: ["*"],
  resources: ["stacks"],
  operations: ["CREATE", "UPDATE"],
};

/**
 * Only a CREATE, or an UPDATE that changes `spec`, is checked: PKO's finalizer and Argo CD's re-apply of the
 * same manifest change metadata only (item 2 of issue #43; test/kube/admission_test.go runs PKO's sequence).
 */
const SPEC_CHANGES = {
  name: "creates-or-changes-spec",
  expression:
    "request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec",
};

const tracking = `object.metadata.?annotations[?'${ARGOCD_TRACKING_ANNOTATION}'].orValue('')`;

/** One stage's policy: its Stack is applied by its Application and is its planned Stack, apart from the commit. */
function stagePolicy(p: Pipeline, planned: PlannedStack, name = stageAdmissionName(p, planned.stage)) {
  return denyPolicy(p, name, [stacksRule], {
    matchConditions: [SPEC_CHANGES],
    variables: [
      { name: "application", expression: `${tracking}.split(':')[0]` },
      { name: "expected", expression: celLiteral(planned.spec) },
    ],
    validations: [
      forbidden(
        `variables.application == ${celLiteral(planned.application)}`,
        `metadata.annotations[${ARGOCD_TRACKING_ANNOTATION}]: Stack ${planned.name} is applied only by Argo CD Application ${planned.application}, from branch ${stageBranch(planned.stage)}; no other Application, person or tool may create or change it`,
      ),
      ...namedFields.map(([field, what]) =>
        forbidden(
          `has(object.spec.${field}) && object.spec.${field} == variables.expected.${field}`,
          `spec.${field} must be ${what} planned for stage ${planned.stage}`,
        ),
      ),
      forbidden(
        "has(object.spec.workspaceTemplate) && has(object.spec.workspaceTemplate.spec) && has(object.spec.workspaceTemplate.spec.image) && object.spec.workspaceTemplate.spec.image == variables.expected.workspaceTemplate.spec.image",
        `spec.workspaceTemplate.spec.image must be the workspace image planned for stage ${planned.stage}'s program`,
      ),
      forbidden(
        "has(object.spec.workspaceTemplate) && dyn(object.spec.workspaceTemplate) == dyn(variables.expected.workspaceTemplate)",
        `spec.workspaceTemplate must be stage ${planned.stage}'s planned one: no other volumes, host paths, service accounts, privileges or resources`,
      ),
      forbidden(
        `dyn(object.spec).all(k, k == '${PROMOTED_FIELD}' || k in variables.expected) && variables.expected.all(k, k in dyn(object.spec) && dyn(object.spec)[k] == variables.expected[k])`,
        `spec: a stage branch may change only spec.${PROMOTED_FIELD}; every other field must be as planned for stage ${planned.stage}`,
      ),
    ],
  });
}

/**
 * The admission objects that keep every Stack in the stacks namespace to its stage, in the order to create
 * them: for each program stage its policy and the binding that applies it to that stage's Stack alone, then
 * the policy and binding refusing every Stack no stage plans.
 */
export function stackAdmission(p: Pipeline) {
  const ns = p.stacks.namespace;
  const drift = driftStages(p).map((s) => plannedDriftStack(p, s));
  const planned = [...Object.values(plannedStacks(p)), ...drift];
  const policies = [
    ...Object.values(plannedStacks(p)).map((s) => ({ s, policy: stagePolicy(p, s) })),
    ...drift.map((s) => ({ s, policy: stagePolicy(p, s, driftAdmissionName(p, s.stage)) })),
  ];
  const tooLong = policies.filter(({ policy }) =>
    policy.spec.variables.some((v) => codePoints(v.expression) > CEL_MAX_EXPRESSION_CODE_POINTS),
  );
  if (tooLong.length > 0)
    throw new PipelineError(
      tooLong.map(
        ({ s }) =>
          `stage "${s.stage}": its planned Stack is longer than the ${CEL_MAX_EXPRESSION_CODE_POINTS} code points the API server's CEL parses in one expression; shorten what it holds (the program's folder, image, names)`,
      ),
    );
  const stages = policies.flatMap(({ s, policy }) => [
    policy,
    denyBinding(p, policy.metadata.name, {
      ...inNamespace(ns),
      resourceRules: [{ ...stacksRule, resourceNames: [s.name] }],
    }),
  ]);
  const name = stackAdmissionName(p);
  const unplanned = denyPolicy(p, name, [stacksRule], {
    matchConditions: [SPEC_CHANGES],
    validations: [
      forbidden(
        "false",
        `metadata.name: a Stack in namespace ${ns} must be the planned Stack of one of the pipeline's program stages, applied by that stage's Argo CD Application; no stage plans this name`,
      ),
    ],
  });
  // A Stack created with generateName has no name when admission matches it, so it is not excluded either.
  const others = denyBinding(p, name, {
    ...inNamespace(ns),
    excludeResourceRules: [{ ...stacksRule, resourceNames: planned.map((s) => s.name) }],
  });
  return [...stages, unplanned, others];
}
