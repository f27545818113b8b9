// validatePipeline: the one entry to the checks. Schema first, then every check that needs no graph order,
// then the graph checks, then the risk stops (check-risk.ts); all problems of a round are reported together,
// as a PipelineError, before any resource is registered.
import { accountProblems } from "./check-accounts";
import { programProblems } from "./check-programs";
import { resourceNameProblems } from "./check-reach";
import {
  defaultRepoRoot,
  environmentProblems,
  sourcePathProblems,
  stacksDirProblems,
} from "./check-repository";
import { riskPolicyFieldProblems, riskStopProblems } from "./check-risk";
import { reservedStageNames, orderProblems, stageProblems, unusedEnvironmentProblems } from "./check-stages";
import {
  apiUrlProblems,
  branchProblems,
  namespaceProblems,
  verificationProblems,
  verificationImageProblems,
} from "./check-values";
import { ancestors, environmentStages, expandStages, findCycle, programStageName, upstreamOf } from "./graph";
import { stackObjectName } from "./names";
import {
  MAX_PROGRAM_STAGES,
  MAX_STACK_NAME,
  PipelineError,
  dnsLabel,
  pipelineSchema,
  type EnvironmentStage,
  type ParsedPipeline,
  type Pipeline,
  type PipelineInput,
} from "./schema";

export interface CheckOptions {
  /** Repository the paths of the definition are relative to; this checkout by default. */
  repoRoot?: string;
}

/** Every check above that needs no graph order, for validatePipeline's first round of problems. */
export function inputProblems(p: ParsedPipeline, options: CheckOptions = {}): string[] {
  const repoRoot = options.repoRoot ?? defaultRepoRoot;
  return [
    ...namespaceProblems(p),
    ...branchProblems(p.source.branch),
    ...sourcePathProblems(p, repoRoot),
    ...apiUrlProblems(p.pulumi),
    ...stacksDirProblems(
      p.stacks.dir,
      p.programs.map((x) => x.dir),
      repoRoot,
    ),
    ...verificationImageProblems(p.verification.image),
    ...verificationProblems(p.verification),
    ...environmentProblems(p, repoRoot),
    ...accountProblems(p),
    ...stageProblems(p),
    ...riskPolicyFieldProblems(p),
  ];
}

/**
 * Validates a pipeline definition and fills in defaults. Throws a {@link PipelineError} naming every stage
 * and what is wrong with it; run it before registering any resource.
 */
export function validatePipeline(input: unknown, options: CheckOptions = {}): Pipeline {
  // Before zod, which drops an own "__proto__" key without a word.
  const nameProblems = environmentNameProblems(input);
  if (nameProblems.length > 0) throw new PipelineError(nameProblems);
  const parsed = pipelineSchema.safeParse(input);
  if (!parsed.success) {
    throw new PipelineError(
      parsed.error.issues.map((issue) => {
        const [first, index, ...rest] = issue.path.map(String);
        const stageName =
          first === "stages" ? (input as PipelineInput).stages?.[Number(index)]?.name : undefined;
        const programName =
          first === "programs" ? (input as PipelineInput).programs?.[Number(index)]?.name : undefined;
        const where = stageName
          ? `stage "${stageName}"${rest.length ? ` (${rest.join(".")})` : ""}`
          : typeof programName === "string" && dnsLabel.test(programName) && rest[0] !== "name"
            ? ["programs", programName, ...rest].join(".")
            : issue.path.join(".") || "pipeline";
        return `${where}: ${issue.message}`;
      }),
    );
  }
  const pipeline = parsed.data;
  const problems: string[] = [];
  const { stages } = pipeline;
  if (stages.length === 0)
    throw new PipelineError(["pipeline: has no stages; it needs at least a gate and an update stage"]);

  const names = new Map<string, number>();
  for (const s of stages) names.set(s.name, (names.get(s.name) ?? 0) + 1);
  for (const [name, count] of names) {
    if (count > 1) problems.push(`stage "${name}": the name is used by ${count} stages`);
  }

  for (const s of stages) {
    const at = `stage "${s.name}"`;
    if (!dnsLabel.test(s.name)) {
      problems.push(`${at}: the name must be a DNS label (lower-case letters, digits and '-', at most 63)`);
    }
    for (const up of upstreamOf(s)) {
      if (!names.has(up)) problems.push(`${at}: upstream stage "${up}" does not exist`);
      if (up === s.name) problems.push(`${at}: lists itself as upstream`);
    }
    if (s.kind === "gate" && s.approvers.length === 0) {
      problems.push(`${at}: a gate needs at least one approver group`);
    }
    if (s.kind !== "gate") {
      if (!Object.hasOwn(pipeline.environments, s.environment)) {
        problems.push(
          `${at}: environment "${s.environment}" is not defined; defined environments: ${Object.keys(pipeline.environments).join(", ") || "none"}`,
        );
      }
    }
    if (s.requireAll && upstreamOf(s).length < 2) {
      problems.push(`${at}: requireAll needs at least two upstream stages`);
    }
  }

  const updates = stages.filter((s) => s.kind === "update");
  for (const env of new Set(updates.map((s) => s.environment))) {
    const same = updates.filter((s) => s.environment === env).map((s) => s.name);
    if (same.length > 1)
      problems.push(`stages ${same.map((n) => `"${n}"`).join(", ")}: update the same environment "${env}"`);
  }
  for (const s of stages.filter((s): s is EnvironmentStage => s.kind === "preview")) {
    if (!updates.some((u) => u.environment === s.environment)) {
      problems.push(
        `stage "${s.name}": previews environment "${s.environment}", which no update stage deploys`,
      );
    }
  }
  problems.push(...inputProblems(pipeline, options));
  const resolved = programProblems(pipeline, options.repoRoot ?? defaultRepoRoot);
  problems.push(...resolved.problems);
  if (resolved.problems.length === 0) problems.push(...resourceNameProblems(pipeline, resolved.programs));
  if (problems.length > 0) throw new PipelineError(problems);

  // Graph checks need resolvable upstreams, so they come after the checks above.
  const cycle = findCycle(stages);
  if (cycle) problems.push(`stages ${cycle.map((n) => `"${n}"`).join(" -> ")}: form a cycle`);
  const reachable = new Set(stages.filter((s) => s.from === "warehouse").map((s) => s.name));
  for (let grew = true; grew;) {
    grew = false;
    for (const s of stages) {
      if (!reachable.has(s.name) && upstreamOf(s).some((up) => reachable.has(up))) {
        reachable.add(s.name);
        grew = true;
      }
    }
  }
  if (!cycle) problems.push(...orderProblems(stages));
  problems.push(...unusedEnvironmentProblems(pipeline));
  for (const s of stages) {
    if (!reachable.has(s.name)) problems.push(`stage "${s.name}": is not reachable from the Warehouse`);
    if (s.kind === "update" && !cycle) {
      const before = ancestors(stages, s.name);
      if (!stages.some((g) => g.kind === "gate" && before.has(g.name))) {
        problems.push(`stage "${s.name}": runs pulumi up with no approval gate upstream`);
      }
    }
  }
  if (problems.length === 0) problems.push(...riskStopProblems(pipeline));
  if (problems.length > 0) throw new PipelineError(problems);
  problems.push(...runStageProblems(pipeline));
  if (problems.length > 0) throw new PipelineError(problems);
  return { ...pipeline, programs: resolved.programs };
}

/**
 * The Kargo stages the programs make of the definition's stages: their names must be free and short enough
 * for a PKO Stack, and the programs' dependencies must fit the stages' order.
 */
function runStageProblems(pipeline: ParsedPipeline): string[] {
  // Names first: the expansion keys stages by name, so two stages of one name would read as one (a cycle
  // that is not there, or a graph that cannot be ordered at all).
  const environmentStageCount = environmentStages(pipeline).length;
  const count = environmentStageCount * pipeline.programs.length;
  if (count > MAX_PROGRAM_STAGES)
    return [
      `stages: ${environmentStageCount} preview and update stages times ${pipeline.programs.length} programs make ${count} program stages (each a Kargo Stage, an Argo CD Application, a PKO Stack and its admission policy); at most ${MAX_PROGRAM_STAGES} are allowed: remove stages or programs`,
    ];
  const problems: string[] = [];
  const seen = new Map<string, string>();
  const declared = new Set(pipeline.stages.map((s) => s.name));
  const reserved = reservedStageNames();
  for (const s of environmentStages(pipeline)) {
    for (const x of pipeline.programs) {
      const name = programStageName(s.name, x.name);
      const at = `stage "${s.name}" (program "${x.name}")`;
      if (declared.has(name) || seen.has(name))
        problems.push(
          `${at}: its Kargo stage "${name}" is also ${seen.get(name) ?? "a stage of the definition"}; rename the stage or the program`,
        );
      seen.set(name, `program "${x.name}"'s stage in "${s.name}"`);
      const owner = reserved.get(name);
      if (owner)
        problems.push(`${at}: its Kargo stage "${name}" is ${owner}; rename the stage or the program`);
      const stackName = stackObjectName(pipeline, name);
      if (stackName.length > MAX_STACK_NAME)
        problems.push(
          `${at}: its PKO Stack would be named "${stackName}" (${stackName.length} characters); PKO allows ${MAX_STACK_NAME}. Shorten the stage, program or project name`,
        );
      if (!dnsLabel.test(name))
        problems.push(
          `${at}: its Kargo stage "${name}" is longer than a DNS label (63); shorten the stage or program name`,
        );
    }
  }
  if (problems.length > 0) return problems;

  const { cycle, mixed } = expandStages(pipeline);
  if (cycle) {
    return [
      `programs: their dependencies cannot fit the stages: Kargo stages ${cycle.map((n) => `"${n}"`).join(" -> ")} would wait for each other. A program's preview waits for its dependencies' update in the same environment, so nothing between an environment's preview and its update may wait for every program's preview`,
    ];
  }
  return mixed.map(
    (m) =>
      `programs.${m.program}.dependsOn: stage "${m.stage}" would take Freight from any one of ${m.upstream.map((u) => `"${u}"`).join(", ")} and also wait for the program's dependencies, which Kargo cannot combine; set requireAll on the stage or give it one upstream`,
  );
}

/**
 * Environment names, read as the definition's own keys: each becomes part of Kubernetes names (the
 * ServiceAccount `<stacks.serviceAccountName>-<environment>` in cluster-setup, whose `stackEnvironments` are
 * DNS labels), so it must be a DNS label. That also refuses every name that is a JavaScript builtin in
 * disguise (`__proto__`, `toString`, `hasOwnProperty`); a DNS label such as `constructor` is an ordinary name,
 * and every lookup by name (Object.hasOwn, Maps) treats it as one.
 */
export function environmentNameProblems(input: unknown): string[] {
  // Anything but an object of environments has no names of its own (a list's are its indices); zod says
  // what is wrong with it.
  const environments = (input as { environments?: unknown } | null | undefined)?.environments;
  return Object.keys(environments ?? {})
    .filter((name) => !dnsLabel.test(name))
    .map(
      (name) =>
        `environments.${name}: "${name}" is not a DNS label; allowed: 1-63 lower-case letters, digits and '-', starting and ending with a letter or digit (it names the environment's ServiceAccount)`,
    );
}
