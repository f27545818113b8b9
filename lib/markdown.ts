// What the README's generated parts are made with: tables laid out as prettier lays them out, and the block
// between two HTML-comment markers replaced, so `npm run docs` and `prettier --check` agree on every byte.
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
  if (from < 0 || to < from) throw new Error(`README.md lacks the markers ${start} ... ${end}`);
  return `${text.slice(0, from)}${start}\n\n${body}\n\n${text.slice(to)}`;
}
