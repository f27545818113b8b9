// Who may move Freight by hand: per gate, the ServiceAccount its approver groups map to; per environment
// that stops anything, the one its deciders map to; and every approver group, for Kargo's cluster-level
// read. Each with exactly the verbs Kargo's API checks. An environment's update stages are promoted by hand
// by its deciders alone (a rollback's update is a decider's act); its preview stages by its deciders and
// its promoters, the approvers of the gates its previews take Freight from (they start a rollback).
import { environmentStages, isGate, programStages } from "./graph";
import { riskPolicy, type Pipeline } from "./schema";

export interface ApproverRole {
  gate: string;
  serviceAccount: { name: string; annotations: Record<string, string> };
  rules: { apiGroups: string[]; resources: string[]; resourceNames?: string[]; verbs: string[] }[];
}

/** A project ServiceAccount Kargo maps every member of `groups` (the `cognito:groups` claim) onto. */
const claimMappedAccount = (name: string, groups: string[]) => ({
  name,
  annotations: { "rbac.kargo.akuity.io/claims": JSON.stringify({ "cognito:groups": groups }) },
});

/** Kargo's custom verb for promoting into (and approving Freight for) these Stages. */
const promoteOn = (...stages: string[]) => ({
  apiGroups: ["kargo.akuity.io"],
  resources: ["stages"],
  resourceNames: stages,
  verbs: ["promote"],
});

const createPromotions = { apiGroups: ["kargo.akuity.io"], resources: ["promotions"], verbs: ["create"] };

/** The Kargo stages (one per program) of the preview stages that take Freight from `upstream`, or of all. */
const previewStagesOf = (p: Pipeline, environment: string, upstream?: string) => {
  const declared = new Set(
    environmentStages(p)
      .filter((s) => s.kind === "preview" && s.environment === environment)
      .filter((s) => upstream === undefined || (s.from !== "warehouse" && s.from.includes(upstream)))
      .map((s) => s.name),
  );
  return programStages(p)
    .filter((s) => declared.has(s.declared))
    .map((s) => s.name);
};

/** The gates the environment's preview stages take Freight from. */
export const environmentGates = (p: Pipeline, environment: string): string[] => [
  ...new Set(
    environmentStages(p)
      .filter((s) => s.kind === "preview" && s.environment === environment)
      .flatMap((s) => (s.from === "warehouse" ? [] : s.from)),
  ),
];

/** The ServiceAccount Kargo maps a gate's approvers to. */
export const approverAccount = (gate: string) => `approver-${gate}`;

/**
 * An environment's promoters: the approvers of every gate one of its preview stages takes Freight from, who
 * let Freight into it today. With its deciders they may promote into its preview stages by hand and ask for
 * its rollback (lib/pipeline/rollback-request.ts); none for an environment no gate feeds.
 */
export const environmentPromoters = (p: Pipeline, environment: string): string[] => {
  const gates = new Set(environmentGates(p, environment));
  return [
    ...new Set(
      p.stages
        .filter(isGate)
        .filter((g) => gates.has(g.name))
        .flatMap((g) => g.approvers),
    ),
  ];
};

/**
 * Per gate: a ServiceAccount Kargo maps the gate's Cognito groups to, with exactly what promoting into the
 * gate, and into the preview stages that take Freight from it, through Kargo's API takes. The API checks
 * `promote` on the Stage, then creates the Promotion with a client authorized as the user, which needs
 * `create` on promotions (akuity/kargo v1.11.2 pkg/server/promote_to_stage_v1alpha1.go,
 * pkg/server/kubernetes/client.go). `create` cannot be limited to one Stage (RBAC has no resourceNames on
 * create), see the README. No `patch freights/status`: approving Freight (`kargo approve`) lets it skip the
 * upstream stages' verification, so only admins may. No update stage: a hand-made update is a decider's.
 */
export function approverRoles(p: Pipeline): ApproverRole[] {
  const environments = Object.keys(p.environments);
  return p.stages.filter(isGate).map((gate) => ({
    gate: gate.name,
    serviceAccount: claimMappedAccount(approverAccount(gate.name), gate.approvers),
    rules: [
      promoteOn(gate.name, ...environments.flatMap((env) => previewStagesOf(p, env, gate.name))),
      createPromotions,
    ],
  }));
}

/**
 * Every approver group, of gates and deciders of stops: Kargo's `api.oidc.users`, so approvers get the
 * cluster-level read (`kargo-user`: list projects) that opening a project in the UI or CLI takes.
 */
export const approverGroups = (p: Pipeline): string[] =>
  [
    ...new Set([
      ...p.stages.filter(isGate).flatMap((g) => g.approvers),
      ...Object.values(p.environments).flatMap((env) => riskPolicy(env).deciders),
    ]),
  ].sort();

/** The ServiceAccount an environment's deciders map to, named for its update stage. */
export const deciderAccount = (updateStage: string) => `decider-${updateStage}`;

export interface DeciderRole {
  environment: string;
  /** The definition's update stage of the environment. */
  stage: string;
  /** Its Kargo stages, one per program, whose Freight they may approve and promote by hand. */
  stages: string[];
  /** Its preview stages' Kargo stages, into which they may promote by hand (a rollback's first step). */
  previews: string[];
  serviceAccount: { name: string; annotations: Record<string, string> };
  rules: { apiGroups: string[]; resources: string[]; resourceNames?: string[]; verbs: string[] }[];
}

/**
 * Per environment that stops anything: a ServiceAccount Kargo maps its deciders to, with exactly what Kargo's
 * manual approval of Freight for the environment's update stages (one per program) checks (akuity/kargo
 * v1.11.2 pkg/server/approve_freight_v1alpha1.go): `promote` on that Stage, and `patch` on
 * `freights/status`, which the API server writes as the user (pkg/server/kubernetes/client.go). Freight names
 * are generated, so the second cannot name them; Kargo's API reaches it only through an approval, which
 * checks the first. And what promoting by hand into those Stages and the environment's preview stages takes
 * (`promote` on each, `create` on promotions): a rollback previews, then updates, by hand; Kargo's Promotion
 * webhook asks the same `promote` of whoever creates a Promotion (pkg/webhook/kubernetes/promotion/webhook.go
 * authorize). Approving Freight for a preview stage stays refused: the API server admits none
 * (approval-admission.ts). One role for every class: an approval is of Freight for a Stage (api/v1alpha1/freight_types.go,
 * `status.approvedFor` keyed by Stage name), never of a class, so a group per class could not be held apart.
 */
export function deciderRoles(p: Pipeline): DeciderRole[] {
  return Object.entries(p.environments).flatMap(([environment, env]) => {
    const update = environmentStages(p).find((s) => s.kind === "update" && s.environment === environment);
    const { deciders } = riskPolicy(env);
    // An environment that stops anything with an update stage and no deciders is refused (check-risk.ts).
    if (!update || deciders.length === 0) return [];
    const stages = programStages(p)
      .filter((s) => s.declared === update.name)
      .map((s) => s.name);
    const previews = previewStagesOf(p, environment);
    return [
      {
        environment,
        stage: update.name,
        stages,
        previews,
        serviceAccount: claimMappedAccount(deciderAccount(update.name), deciders),
        rules: [
          promoteOn(...stages, ...previews),
          { apiGroups: ["kargo.akuity.io"], resources: ["freights/status"], verbs: ["patch"] },
          createPromotions,
        ],
      },
    ];
  });
}
