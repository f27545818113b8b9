// Checks of the stages and environments as a whole: names a stage may not take, upstreams listed twice,
// previews after their own update, unused environments, and protected environments that nothing could stop
// a destructive change on. Each returns `stage "<name>": ...` or `environment "<name>": ...` problems.
import { ancestors } from "./graph";
import { names } from "./names";
import { type EnvironmentStage, type ParsedPipeline, type Stage } from "./schema";

/** An environment no stage uses is a typo or a leftover; reported with the graph checks. */
export function unusedEnvironmentProblems(p: ParsedPipeline): string[] {
  const used = new Set(
    p.stages.filter((s): s is EnvironmentStage => s.kind !== "gate").map((s) => s.environment),
  );
  return Object.keys(p.environments)
    .filter((name) => !used.has(name))
    .map(
      (name) =>
        `environments.${name}: no stage uses it; add stages for it or remove it (environments in use: ${[...used].sort().join(", ") || "none"})`,
    );
}

/** Names a stage may not have: the Warehouse literal and the project's other Kargo objects. */
export const reservedStageNames = (): ReadonlyMap<string, string> =>
  new Map([
    ["warehouse", 'the word "from" uses for the Warehouse'],
    [names.warehouse, "the Warehouse's name"],
    [names.promotionTask, "the PromotionTask's name"],
    [names.analysis.preview, "the preview AnalysisTemplate's name"],
    [names.analysis.update, "the update AnalysisTemplate's name"],
    [names.gitCredentials, "the git credentials Secret's name"],
    [names.verificationToken, "the verification token Secret's name"],
    [names.verificationScript, "the verification script ConfigMap's name"],
  ]);

export function stageProblems(p: ParsedPipeline): string[] {
  const problems: string[] = [];
  const reserved = reservedStageNames();
  for (const s of p.stages) {
    const owner = reserved.get(s.name);
    if (owner)
      problems.push(
        `stage "${s.name}": the name is ${owner}; choose another (reserved: ${[...reserved.keys()].join(", ")})`,
      );
    if (s.from !== "warehouse") {
      const twice = [...new Set(s.from.filter((up, i) => s.from.indexOf(up) !== i))];
      for (const up of twice)
        problems.push(`stage "${s.name}": lists upstream stage "${up}" more than once; list each once`);
    }
  }
  return problems;
}

/** Needs an acyclic graph: a preview must not come after the update of its own environment. */
export function orderProblems(stages: Stage[]): string[] {
  const problems: string[] = [];
  for (const s of stages) {
    // Stryker disable next-line ConditionalExpression: no update has an ancestor updating its environment (one update stage per environment is checked first)
    if (s.kind !== "preview") continue;
    const before = ancestors(stages, s.name);
    const update = stages.find(
      (u) => u.kind === "update" && u.environment === s.environment && before.has(u.name),
    );
    if (update)
      problems.push(
        `stage "${s.name}": previews environment "${s.environment}" after its update stage "${update.name}" has applied; a preview must come before its update (or beside it), never after`,
      );
  }
  return problems;
}
