// What the generated parts of the documentation are made with, and where they live: tables laid out as prettier
// lays them out, and the block between two HTML-comment markers replaced, so `npm run docs` and
// `prettier --check` agree on every byte.
import * as fs from "node:fs";
import * as path from "node:path";

const repoRoot = path.resolve(__dirname, "..");

/** The pages that hold generated sections, by what they hold (`npm run docs`, `npm run docs:reach`). */
export const docPages = {
  /** The front door: the pipeline diagram and the idle cost it states. */
  readme: path.join(repoRoot, "README.md"),
  /** The capacity and idle-cost tables. */
  capacityAndCost: path.join(repoRoot, "docs", "capacity-and-cost.md"),
  /**
   * The reach table (test/kube writes it), the claims about the approver roles, and what stops on Pulumi's
   * engine (test/pulumiengine writes it).
   */
  securityAndApprovals: path.join(repoRoot, "docs", "security-and-approvals.md"),
  /** The plan diff, with its oversight section's example output. */
  reviewingChanges: path.join(repoRoot, "docs", "reviewing-changes.md"),
  /** The deploy steps: the CI roles' trust policies, signing in. */
  deploy: path.join(repoRoot, "docs", "deploy.md"),
} as const;

/** Every page of the documentation: README.md, CONTRIBUTING.md and docs/*.md. */
export function documentationPages(): string[] {
  const docs = path.join(repoRoot, "docs");
  return [
    path.join(repoRoot, "README.md"),
    path.join(repoRoot, "CONTRIBUTING.md"),
    ...fs
      .readdirSync(docs)
      .filter((f) => f.endsWith(".md"))
      .sort()
      .map((f) => path.join(docs, f)),
  ];
}
export function markdownTable(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  return [
    line(rows[0]!),
    `| ${widths.map((w) => "-".repeat(w)).join(" | ")} |`,
    ...rows.slice(1).map(line),
  ].join("\n");
}

/** `text` with what stands between the `start` and `end` markers replaced by `body` (blank lines around). */
export function replaceBetweenMarkers(text: string, start: string, end: string, body: string): string {
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  if (from < 0 || to < from) throw new Error(`the page lacks the markers ${start} ... ${end}`);
  return `${text.slice(0, from)}${start}\n\n${body}\n\n${text.slice(to)}`;
}
