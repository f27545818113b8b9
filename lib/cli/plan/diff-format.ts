// A plan diff for people: text for a terminal, Markdown for a pull-request comment, JSON for tools. The
// summary comes first (exposure, privilege, loss, cost, then the policies), then every change per project as
// a tree by parent, component children under their component.
import {
  changeTree,
  type ChangeKind,
  type ChangeNode,
  type PlanDiff,
  type ProjectPlan,
  type ResourceChange,
} from "./diff";
import type { PromotedProgram } from "./diff-program";
import { leftInCloudOf, type RiskClass } from "./diff-classes";
import { show, type Finding, type ReviewSummary } from "./diff-summary";
import { formats, type Format } from "./options";

export interface PolicyViolation {
  policy: string;
  urn: string;
  type: string;
  name: string;
  message: string;
}

export interface DiffReport {
  /** What the working tree is compared with: the ref as given and its commit. */
  base: { ref: string; commit: string };
  diff: PlanDiff;
  summary: ReviewSummary;
  /** Violations of the policy pack in the working tree's plan: each blocks a deploy. */
  violations: PolicyViolation[];
  before: ProjectPlan[];
  after: ProjectPlan[];
  /** Promoted programs of the working tree the offline plan does not run (diff-program.ts). */
  unplanned?: PromotedProgram[];
  /**
   * The promoted programs' Pulumi projects, and what stops each environment's previews of them: a program's
   * finding says in which environments its preview would stop, and who decides there.
   */
  stops?: { projects: string[]; environments: EnvironmentStop[] };
}

/** An environment's risk policy, as the pipeline reads it (lib/pipeline/schema.ts riskPolicy). */
export interface EnvironmentStop {
  environment: string;
  stopOn: RiskClass[] | "all";
  deciders: string[];
}

export { formats, type Format };

const sign: Record<ChangeKind, string> = { add: "+", remove: "-", replace: "+-", update: "~" };
const verb: Record<ChangeKind, string> = {
  add: "added",
  remove: "removed",
  replace: "replaced",
  update: "updated",
};
const usd = (n: number) => `${n < 0 ? "-" : ""}$${Math.abs(n).toFixed(2)}`;
const signedUsd = (n: number) => `${n > 0 ? "+" : ""}${usd(n)}`;

function counts(diff: PlanDiff): string {
  const all = diff.projects.flatMap((p) => p.changes);
  if (all.length === 0) return "no changes";
  return (["add", "remove", "replace", "update"] as const)
    .map((k) => [k, all.filter((c) => c.kind === k).length] as const)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${n} ${verb[k]}`)
    .join(", ");
}

/** The change lines of one resource: replacement reasons, then each input old → new. */
function changeLines(c: ResourceChange): string[] {
  const left = leftInCloudOf(c);
  if (left) return [left];
  if (c.kind === "add" || c.kind === "remove") return [];
  return [
    ...(c.kind === "replace" ? [`replaced because ${c.replaceReasons.join(", ")} changed`] : []),
    ...c.properties.map((p) => `${p.path}: ${show(p.before)} → ${show(p.after)}`),
  ];
}

interface Section {
  title: string;
  cls: RiskClass;
  findings: Finding[];
}

/**
 * Where a promoted program's change under heading `cls` stops its Freight: each environment that stops on
 * the class (or on every change), with its deciders. Nothing for the platform's own projects.
 */
function stopsLine(r: DiffReport, f: Finding, cls: RiskClass): string[] {
  if (!r.stops?.projects.includes(f.project)) return [];
  const where = r.stops.environments
    .filter((e) => e.stopOn === "all" || (f.classes.includes(cls) && e.stopOn.includes(cls)))
    .map((e) => `${e.environment} (${e.deciders.join(", ")} decide)`);
  return [where.length > 0 ? `stops at the preview in ${where.join(", ")}` : "stops in no environment"];
}

/** Why a promoted program is not in the diff, and where its changes show instead. */
const notPlanned = (x: PromotedProgram) =>
  `${x.name} (${x.runtime}, ${x.dir}): not planned offline; its preview stages and the pull-request preview show its changes`;

const sections = (s: ReviewSummary): Section[] => [
  { title: "Exposure", cls: "exposure", findings: s.exposure },
  { title: "Privilege", cls: "privilege", findings: s.privilege },
  { title: "Loss", cls: "loss", findings: s.loss },
  { title: "Cost", cls: "cost", findings: s.cost.findings },
];

function renderText(r: DiffReport): string {
  const out = [
    `Plan diff: ${r.base.ref} (${r.base.commit.slice(0, 12)}) → working tree: ${counts(r.diff)}`,
    "",
  ];
  const cost = r.summary.cost;
  for (const { title, cls, findings } of sections(r.summary)) {
    if (cls === "cost")
      out.push(`Cost: ${signedUsd(cost.delta)} a month (${usd(cost.before)} → ${usd(cost.after)})`);
    else out.push(`${title}${findings.length === 0 ? ": nothing" : ""}`);
    for (const f of findings) {
      const flags = f.flags.map((x) => `  !! ${x}`).join("");
      out.push(`  ${sign[f.kind]} ${f.project}: ${f.type} ${f.name}${flags}`);
      out.push(...[...stopsLine(r, f, cls), ...f.lines].map((l) => `      ${l}`));
    }
  }
  for (const l of cost.lines)
    out.push(`  ${l.item}: ${usd(l.before)} → ${usd(l.after)} (${signedUsd(l.delta)})`);
  for (const u of cost.unpriced) out.push(`  not priced: ${u}`);
  out.push(
    `Policy: ${r.violations.length === 0 ? "no violation" : `${r.violations.length} violation(s); each blocks a deploy`}`,
  );
  for (const v of r.violations) out.push(`  ${v.type} ${v.name} [${v.policy}]: ${v.message}`);
  for (const x of r.unplanned ?? []) out.push(`Program ${notPlanned(x)}`);
  out.push("", "Changes");
  for (const p of r.diff.projects) {
    if (p.changes.length === 0) continue;
    out.push(`== ${p.project}`);
    const walk = (nodes: ChangeNode[], depth: number) => {
      for (const n of nodes) {
        const pad = "  ".repeat(depth + 1);
        const mark = n.change ? sign[n.change.kind] : " ";
        out.push(`${pad}${mark} ${n.type} ${n.name}${n.change ? ` (${verb[n.change.kind]})` : ""}`);
        if (n.change) out.push(...changeLines(n.change).map((l) => `${pad}    ${l}`));
        walk(n.children, depth + 1);
      }
    };
    walk(tree(r, p.project), 0);
  }
  return out.join("\n");
}

const tree = (r: DiffReport, project: string) =>
  changeTree(
    r.diff.projects.find((p) => p.project === project)!,
    r.before.find((p) => p.project === project),
    r.after.find((p) => p.project === project),
  );

/** Text for a Markdown table cell or list item: no HTML, no line breaks. */
const md = (s: string) =>
  s
    .replace(/[<>]/g, (c) => (c === "<" ? "&lt;" : "&gt;"))
    .replace(/[*_|[\]\\]/g, (c) => `\\${c}`)
    .replace(/\r?\n/g, " ");
const code = (s: string) => `\`${s.replace(/`/g, "'").replace(/\r?\n/g, " ")}\``;

function renderMarkdown(r: DiffReport): string {
  const out = [
    `## Plan diff against ${code(r.base.ref)} (${r.base.commit.slice(0, 12)})`,
    "",
    `**${counts(r.diff)}**`,
    "",
  ];
  const cost = r.summary.cost;
  for (const { title, cls, findings } of sections(r.summary)) {
    out.push(`### ${title}`, "");
    if (cls === "cost")
      out.push(`**${signedUsd(cost.delta)} a month** (${usd(cost.before)} → ${usd(cost.after)})`, "");
    else if (findings.length === 0) out.push("Nothing.", "");
    for (const f of findings) {
      const flags = f.flags.map((x) => ` **⚠ ${md(x)}**`).join("");
      out.push(`- ${verb[f.kind]} ${code(f.type)} **${md(f.name)}** (${md(f.project)})${flags}`);
      out.push(...stopsLine(r, f, cls).map((l) => `  - ${md(l)}`), ...f.lines.map((l) => `  - ${code(l)}`));
    }
    if (findings.length > 0) out.push("");
  }
  if (cost.lines.length > 0) {
    out.push("| item | before | after | change |", "| --- | --- | --- | --- |");
    for (const l of cost.lines)
      out.push(`| ${md(l.item)} | ${usd(l.before)} | ${usd(l.after)} | ${signedUsd(l.delta)} |`);
    out.push("");
  }
  for (const u of cost.unpriced) out.push(`- not priced: ${md(u)}`);
  out.push(`### Policy`, "");
  if (r.violations.length === 0) out.push("No violation of the policy pack.", "");
  else {
    out.push(`**${r.violations.length} violation(s): each blocks a deploy.**`, "");
    for (const v of r.violations)
      out.push(`- ${code(v.policy)} ${code(v.type)} **${md(v.name)}**: ${md(v.message)}`);
    out.push("");
  }
  const unplanned = r.unplanned ?? [];
  if (unplanned.length > 0) {
    out.push(`### Programs not planned offline`, "");
    for (const x of unplanned) out.push(`- ${md(notPlanned(x))}`);
    out.push("");
  }
  out.push(`### Changes`, "");
  for (const p of r.diff.projects) {
    if (p.changes.length === 0) continue;
    out.push(`<details><summary>${md(p.project)}: ${p.changes.length} change(s)</summary>`, "", "```diff");
    const walk = (nodes: ChangeNode[], depth: number) => {
      for (const n of nodes) {
        const pad = "  ".repeat(depth);
        const mark = n.change ? (n.change.kind === "replace" ? "!" : sign[n.change.kind]) : " ";
        out.push(`${mark} ${pad}${n.type} ${n.name}${n.change ? ` (${verb[n.change.kind]})` : ""}`);
        if (n.change)
          out.push(...changeLines(n.change).map((l) => `  ${pad}    ${l.replace(/```/g, "'''")}`));
        walk(n.children, depth + 1);
      }
    };
    walk(tree(r, p.project), 0);
    out.push("```", "", "</details>", "");
  }
  return out.join("\n");
}

function renderJson(r: DiffReport): string {
  return JSON.stringify(
    {
      base: r.base,
      summary: r.summary,
      violations: r.violations,
      unplanned: r.unplanned ?? [],
      projects: r.diff.projects.map((p) => ({
        project: p.project,
        changes: p.changes,
        tree: tree(r, p.project),
      })),
    },
    null,
    2,
  );
}

export function renderDiff(report: DiffReport, format: Format): string {
  return format === "json"
    ? renderJson(report)
    : format === "markdown"
      ? renderMarkdown(report)
      : renderText(report);
}
