// What the people who must act are told, as far as the pipeline decides it: the facts each program stage's
// verification carries on its AnalysisRun (Kargo copies a Stage's verification.analysisRunMetadata onto every
// AnalysisRun it builds, akuity/kargo v1.11.2 pkg/rollouts/analysis_run_builder.go), where Argo Rollouts'
// notifications read them (cluster-setup/addons/notifications.ts holds the triggers and templates).
import { programStages, runStages, type ProgramStage } from "./graph";
import { isProtected, riskPolicy, type Pipeline } from "./schema";
import { programOf } from "./stack-manifest";

/** The annotation prefix of these facts: one place, read by the templates (notifyKeys) and the tests. */
export const notifyPrefix = "notifications.pipeline/";

/** Every fact an AnalysisRun carries, by its name in the templates. */
export const notifyKeys = {
  stage: `${notifyPrefix}stage`,
  program: `${notifyPrefix}program`,
  environment: `${notifyPrefix}environment`,
  kind: `${notifyPrefix}kind`,
  /** "true" when a preview that would change what the environment stops on stops its Freight. */
  protected: `${notifyPrefix}protected`,
  /** Who may let a stopped preview through, and the stage they approve the Freight for. */
  approvers: `${notifyPrefix}approvers`,
  approveStage: `${notifyPrefix}approve-stage`,
  /** The gates Freight waits at once this environment passed it, each with who approves there. */
  nextGates: `${notifyPrefix}next-gates`,
  /** The program's stack in Pulumi Cloud, where each preview shows what it would do. */
  stackUrl: `${notifyPrefix}stack-url`,
  /** Kargo's UI for the project (kargo/index.ts sets it from Kargo's address). */
  kargoProjectUrl: `${notifyPrefix}kargo-project-url`,
} as const;

/** The update stage of the same program and environment a preview guards: where a stop is let through. */
export function updateAfter(p: Pipeline, s: ProgramStage): ProgramStage | undefined {
  return programStages(p).find(
    (u) =>
      u.kind === "update" && u.program === s.program && u.from !== "warehouse" && u.from.includes(s.name),
  );
}

/**
 * The gates Freight reaches once it passed this update stage: those fed by the join of its environment stage
 * (or by the stage itself), with their approver groups, e.g. "approvalgateqa (qa-approvers)". Only for a
 * program no other program depends on: one of those is the environment's last to pass, so each Freight is
 * announced once per such program, not once per program.
 */
export function nextGates(p: Pipeline, s: ProgramStage): string[] {
  if (s.kind !== "update" || p.programs.some((x) => x.dependsOn.includes(s.program))) return [];
  const sources = new Set([s.name, s.declared]);
  return runStages(p)
    .filter((g) => g.kind === "gate" && g.from !== "warehouse" && g.from.some((f) => sources.has(f)))
    .map((g) => {
      const declared = p.stages.find((d) => d.name === g.name);
      const approvers = declared?.kind === "gate" ? declared.approvers : [];
      return `${g.name} (${approvers.join(", ")})`;
    });
}

/** The annotations a program stage's AnalysisRuns carry for the notification templates. */
export function verificationNotice(p: Pipeline, s: ProgramStage): Record<string, string> {
  const env = p.environments[s.environment]!;
  const program = programOf(p, s.program);
  const guarded = s.kind === "preview" && isProtected(env);
  const gates = nextGates(p, s);
  return {
    [notifyKeys.stage]: s.name,
    [notifyKeys.program]: s.program,
    [notifyKeys.environment]: s.environment,
    [notifyKeys.kind]: s.kind,
    [notifyKeys.protected]: String(isProtected(env)),
    ...(guarded
      ? {
          [notifyKeys.approvers]: riskPolicy(env).deciders.join(", "),
          [notifyKeys.approveStage]: updateAfter(p, s)?.name ?? "",
        }
      : {}),
    ...(gates.length > 0 ? { [notifyKeys.nextGates]: gates.join("; ") } : {}),
    [notifyKeys.stackUrl]: `${p.pulumi.consoleUrl}/${p.pulumi.organization}/${program.project}/${env.pulumiStack}`,
  };
}

/**
 * The facts a program stage's Argo CD Application carries for Argo CD's notifications, which announce a
 * sync that fails or a Stack that goes Degraded before any verification runs
 * (cluster-setup/addons/argoCdNotifications.ts); kargo adds Kargo's address and the subscriptions.
 */
export function applicationNotice(p: Pipeline, s: ProgramStage): Record<string, string> {
  const notice = verificationNotice(p, s);
  const keys = [notifyKeys.stage, notifyKeys.program, notifyKeys.environment, notifyKeys.stackUrl];
  return Object.fromEntries(keys.map((k) => [k, notice[k]!]));
}
