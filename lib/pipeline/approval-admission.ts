// The API server, not the deciders' restraint, keeps an approval on the pipeline's path. Kargo records an
// approval as a merge patch of the Freight's status adding `approvedFor.<stage>` (akuity/kargo v1.11.2
// pkg/server/approve_freight_v1alpha1.go, through pkg/kubeclient/patch.go PatchStatus), and an approved
// Freight is available to that stage whatever its upstream stages say (api/v1alpha1/stage_types.go
// IsFreightAvailable). The same status says where the Freight stands: `currentlyIn.<stage>` while a stage
// holds it, `verifiedIn.<stage>` once it passed there (api/v1alpha1/freight_types.go FreightStatus; written by
// the controller, pkg/controller/stages/regular_stages.go syncFreight and verifyStageFreight,
// control_flow_stages.go for joins). So a policy on Freight can admit an approval only for Freight the path
// has brought to the stage:
// - an update stage: held by (or verified in) the environment's preview of the same program, the stop the
//   approval decides, and verified in every other upstream it waits for (any one, without requireAll);
// - a gate: verified in every upstream it waits for (any one, without requireAll; from the Warehouse, none);
// - a preview stage or a join: never. A preview's stop is decided by approving its update; a join is
//   verified by Kargo once every program's stage is. Nobody holds `promote` on a join; a preview's deciders
//   and promoters do, to start a rollback (rbac.ts), and this refuses their approval there.
// Only a key that `approvedFor` gains is judged: the controller's writes of currentlyIn and verifiedIn, and
// an approval Kargo already recorded, pass as they are, whatever the Freight has done since.
//
// How it scales. The rules are data, one entry per Kargo stage, and the CEL around them is the same for any
// pipeline. At the schema's limits they outgrow what the API server compiles in good time (and could outgrow
// the CEL parser's 100,000 code points per expression), so they are split by stage name into policies of at
// most RULES_PER_POLICY code points of rules (the largest pipeline: 3). Each policy judges the gained keys in
// its own range of names; the ranges cover every string, so a key no stage has is refused by the policy
// whose range holds it. A request runs every policy, but a policy builds its rules only when a key in its
// range is gained, and then over its own range: the cost of a request stays one range's, whatever the size.
import { admissionLabels, denyBinding, forbidden, inNamespace } from "./admission-objects";
import { celLiteral, codePoints } from "./cel";
import { runStages, type RunStage } from "./graph";
import type { Pipeline } from "./schema";

/** What an approval for one Kargo stage needs the Freight to stand on. */
export interface ApprovalRule {
  stage: string;
  kind: RunStage["kind"];
  /** An update stage's own preview (same environment and program): the stop its approval decides. */
  preview?: string;
  /** The other upstream stages it waits for; none from the Warehouse. */
  upstream: string[];
  /** Every one of `upstream` (requireAll), or any one. */
  all: boolean;
}

/** Every Kargo stage's rule, in the order of {@link runStages}. */
export function approvalRules(p: Pick<Pipeline, "stages" | "programs">): ApprovalRule[] {
  const stages = runStages(p);
  const previews = new Map(
    stages.flatMap((s) => (s.kind === "preview" ? [[`${s.environment}\n${s.program}`, s.name]] : [])),
  );
  return stages.map((s) => {
    const from = s.from === "warehouse" ? [] : s.from;
    const all = s.kind === "join" ? true : s.requireAll;
    if (s.kind !== "update") return { stage: s.name, kind: s.kind, upstream: from, all };
    const preview = previews.get(`${s.environment}\n${s.program}`);
    return { stage: s.name, kind: s.kind, preview, upstream: from.filter((u) => u !== preview), all };
  });
}

/**
 * The most code points of rules one policy holds. Far below the parser's limit: the API server compiles a
 * policy when it is written and again when it loads it, and the largest pipeline's rules as one literal of
 * 72,000 code points (each value wrapped in `dyn`) outlasted its request timeout on a busy machine, where
 * three of about 18,000 (of one type each) apply at once (test/kube/approval_test.go applies them).
 */
export const RULES_PER_POLICY = 20_000;

const list = (xs: string[]) => `[${xs.map(celLiteral).join(", ")}]`;

/**
 * A range's rules as the policy reads them, each a literal of one type (no `dyn`, which the API server's
 * type checker pays for): every stage's kind; each update's preview; the upstream stages of each gate and
 * update that has some; and those that wait for all of theirs.
 */
function ruleLiterals(rules: ApprovalRule[]) {
  const judged = rules.filter((r) => r.kind === "gate" || r.kind === "update");
  const map = (entries: [string, string][]) =>
    `{${entries.map(([k, v]) => `${celLiteral(k)}: ${v}`).join(", ")}}`;
  return {
    kinds: map(rules.map((r) => [r.stage, celLiteral(r.kind)])),
    previews: map(
      judged.flatMap((r): [string, string][] => (r.preview ? [[r.stage, celLiteral(r.preview)]] : [])),
    ),
    upstream: map(
      judged.flatMap((r): [string, string][] => (r.upstream.length > 0 ? [[r.stage, list(r.upstream)]] : [])),
    ),
    all: list(judged.filter((r) => r.all && r.upstream.length > 0).map((r) => r.stage)),
  };
}

/** What one rule adds to a policy, in code points. */
const ruleSize = (r: ApprovalRule) =>
  Object.values(ruleLiterals([r])).reduce((n, literal) => n + codePoints(literal), 0);

/**
 * The rules split by name into ranges of at most `budget` code points each. The first range starts at every
 * string, each next one at its first name, and each ends where the next starts: every key is in one.
 */
export function ruleRanges(
  rules: ApprovalRule[],
  budget = RULES_PER_POLICY,
): { from?: string; to?: string; rules: ApprovalRule[] }[] {
  const sorted = [...rules].sort((a, b) => (a.stage < b.stage ? -1 : a.stage > b.stage ? 1 : 0));
  const groups: ApprovalRule[][] = [];
  let size = 0;
  for (const r of sorted) {
    const n = ruleSize(r);
    if (n > budget) throw new Error(`stage "${r.stage}": its approval rule alone is ${n} code points`);
    if (groups.length === 0 || size + n > budget) {
      groups.push([]);
      size = 0;
    }
    groups.at(-1)!.push(r);
    size += n;
  }
  return groups.map((g, i) => ({
    ...(i > 0 ? { from: g[0]!.stage } : {}),
    ...(i < groups.length - 1 ? { to: groups[i + 1]![0]!.stage } : {}),
    rules: g,
  }));
}

/** The policy (and binding) judging approvals, `-<n>` after the first when the rules take several. */
export const approvalAdmissionName = (p: Pick<Pipeline, "project">, index = 0) =>
  `${p.project}-approvals-follow-the-path${index === 0 ? "" : `-${index + 1}`}`;

const freightRule = {
  apiGroups: ["kargo.akuity.io"],
  apiVersions: ["*"],
  operations: ["CREATE", "UPDATE"],
  resources: ["freights", "freights/status"],
};

const verified = (u: string) => `${u} in variables.verified`;
const preview = "variables.previews[k]";
const upstream = "variables.upstream[k]";
const heldOk = `(!(k in variables.previews) || ${preview} in variables.held || ${verified(preview)})`;
const waitsForAll = "k in variables.all";
const upstreamOk = `(!(k in variables.upstream) || (${waitsForAll} ? ${upstream}.all(u, ${verified("u")}) : ${upstream}.exists(u, ${verified("u")})))`;
const approvable = "variables.kinds[k] in ['gate', 'update']";

/** What one refused key lacks, in words. */
const lacks = [
  `!(k in variables.kinds) ? 'no stage of project ' + object.metadata.namespace + ' is named so'`,
  `variables.kinds[k] == 'preview' ? 'it is a preview stage: Freight reaches it only from its upstream stages, and its stop is decided by approving the update stage after it'`,
  `variables.kinds[k] == 'join' ? 'it is a join: Kargo verifies Freight there once every program stage of its environment has'`,
  `((${heldOk} ? [] : ['it is not held by the preview ' + ${preview} + ' (the stop an approval decides) nor verified there'])` +
    ` + (${upstreamOk} ? [] : [${waitsForAll} ? 'it is not verified in ' + ${upstream}.filter(u, !(${verified("u")})).join(', ') + ' (the stage waits for every one of ' + ${upstream}.join(', ') + ')' : 'it is verified in none of ' + ${upstream}.join(', ')])).join('; and ')`,
].join(" : ");

function policy(p: Pick<Pipeline, "project">, index: number, range: ReturnType<typeof ruleRanges>[number]) {
  const bounds = [
    ...(range.from === undefined ? [] : [`k >= ${celLiteral(range.from)}`]),
    ...(range.to === undefined ? [] : [`k < ${celLiteral(range.to)}`]),
  ];
  return {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingAdmissionPolicy" as const,
    metadata: { name: approvalAdmissionName(p, index), labels: admissionLabels(p) },
    spec: {
      failurePolicy: "Fail",
      matchConstraints: { resourceRules: [freightRule] },
      variables: [
        { name: "approved", expression: "object.?status.?approvedFor.orValue({})" },
        {
          name: "before",
          expression: "request.operation == 'CREATE' ? {} : oldObject.?status.?approvedFor.orValue({})",
        },
        {
          name: "judged",
          expression: `variables.approved.filter(k, !(k in variables.before)${bounds.map((b) => ` && ${b}`).join("")})`,
        },
        { name: "verified", expression: "object.?status.?verifiedIn.orValue({})" },
        { name: "held", expression: "object.?status.?currentlyIn.orValue({})" },
        ...Object.entries(ruleLiterals(range.rules)).map(([name, expression]) => ({ name, expression })),
        {
          name: "refused",
          expression: `variables.judged.filter(k, !(k in variables.kinds) || !(${approvable} && ${heldOk} && ${upstreamOk}))`,
        },
      ],
      validations: [
        {
          ...forbidden(
            "size(variables.refused) == 0",
            "status.approvedFor: an approval is admitted only for Freight the pipeline's path has brought to the stage",
          ),
          messageExpression: `'status.approvedFor: Freight ' + object.metadata.name + ' may not be approved for ' + variables.refused.map(k, 'stage ' + k + ': ' + (${lacks})).join('; for ')`,
        },
      ],
    },
  };
}

/**
 * The admission objects that hold every approval in the project's namespace to the pipeline's path: for each
 * range of stage names its policy and the binding that applies it to the project's Freight. `budget`: the
 * code points of rules per policy (smaller only to try the split on a small pipeline).
 */
export function approvalAdmission(
  p: Pick<Pipeline, "project" | "stages" | "programs">,
  budget = RULES_PER_POLICY,
) {
  return ruleRanges(approvalRules(p), budget).flatMap((range, i) => {
    const o = policy(p, i, range);
    return [o, denyBinding(p, o.metadata.name, inNamespace(p.project))];
  });
}

/** The name of the policy (and binding) that judges approvals for `stage`: the one whose range holds it. */
export function approvalAdmissionOf(p: Pick<Pipeline, "project" | "stages" | "programs">) {
  const ranges = ruleRanges(approvalRules(p));
  return (stage: string) =>
    approvalAdmissionName(
      p,
      ranges.findIndex(
        (g) => (g.from === undefined || stage >= g.from) && (g.to === undefined || stage < g.to),
      ),
    );
}
