// The documentation holds together and its commands name what exists: every relative link between README.md,
// CONTRIBUTING.md and docs/*.md resolves (the file, and its #anchor by GitHub's heading slugs); every
// `npm run <script>` is a script of package.json; every `pulumi config set` names a key a project's config
// schema knows, a list set by --path from index 0 up (Pulumi refuses an index past the stack's own list);
// every `pulumi stack output` names an output a project exports; every repository variable the workflows read
// is documented; every `go test` runs from test/ (the Go module) on a package there; and kargo takes its
// region from cluster-setup, as the deploy page says.
import * as fs from "node:fs";
import * as path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { clusterConfigSchema } from "../cluster/config";
import { clusterSetupConfigSchema } from "../cluster-setup/config";
import { kargoConfigSchema } from "../kargo/config";
import { planProgram } from "../lib/cli/plan/harness";
import { planChain, readStackConfig, repoRoot } from "../lib/cli/plan/projects";
import { documentationPages } from "../lib/markdown";
import { planProject } from "./helpers";

const pages = documentationPages();
const relative = (file: string) => path.relative(repoRoot, file);
const read = (file: string) => fs.readFileSync(file, "utf8");

/** A page split into its fenced code blocks and the prose around them (inline code spans removed). */
function parts(text: string): { prose: string; blocks: string[] } {
  const blocks: string[] = [];
  const prose = text.replace(/^ *(```+|~~~+)[^\n]*\n([\s\S]*?)^ *\1 *$/gm, (_, _fence, body: string) => {
    blocks.push(body);
    return "";
  });
  return { prose, blocks };
}

/**
 * The anchors GitHub gives a page's headings (github-slugger, as github.com renders Markdown): the heading's
 * text as rendered (link targets, code and emphasis markers dropped), lower-cased, without punctuation or
 * symbols, each space a hyphen; a repeated slug gets -1, -2, ...
 */
export function headingAnchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, heading] of parts(text).prose.matchAll(/^#{1,6}[ \t]+(.*?)[ \t#]*$/gm)) {
    const rendered = heading!
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
      .replace(/<[^>]+>/g, "")
      .replace(/[`*]/g, "")
      .replace(/(^|\s)_([^_]+)_(?=\s|$)/g, "$1$2");
    const base = rendered
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
      .replace(/ /g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Every link and image target of a page's prose, outside code. */
export function linkTargets(text: string): string[] {
  const prose = parts(text).prose.replace(/`[^`]*`/g, "");
  return [...prose.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
}

/** What is wrong with each relative link of `page`: a file that does not exist, or an anchor it lacks. */
function brokenLinks(page: string): string[] {
  const problems: string[] = [];
  for (const target of linkTargets(read(page))) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: ...
    const [file, anchor] = target.split("#", 2) as [string, string | undefined];
    const resolved = file === "" ? page : path.resolve(path.dirname(page), decodeURIComponent(file));
    if (!fs.existsSync(resolved)) {
      problems.push(`${relative(page)}: ${target}: ${relative(resolved)} does not exist`);
      continue;
    }
    if (anchor !== undefined && resolved.endsWith(".md") && !headingAnchors(read(resolved)).has(anchor))
      problems.push(
        `${relative(page)}: ${target}: ${relative(resolved)} has no heading with anchor #${anchor}`,
      );
  }
  return problems;
}

/** Every `npm run <script>` a page names, in prose or code. */
const npmScripts = (text: string) => [...text.matchAll(/npm run ([a-z][\w:-]*)/g)].map((m) => m[1]!);

interface ConfigSet {
  key: string;
  index?: number;
}

/** The `pulumi config set` commands of a text: the key (namespace kept if given) and a --path list index. */
function configSets(text: string): ConfigSet[] {
  return [...text.matchAll(/pulumi config set((?:\s+--[a-z]+)*)\s+'?([A-Za-z][\w:-]*)(?:\[(\d+)\])?'?/g)].map(
    ([, flags, key, index]) =>
      flags!.includes("--path") && index !== undefined ? { key: key!, index: Number(index) } : { key: key! },
  );
}

/** What is wrong with the list indexes of `sets`, run in order on a stack that never set those lists. */
export function indexProblems(sets: ConfigSet[]): string[] {
  const length = new Map<string, number>();
  const problems: string[] = [];
  for (const { key, index } of sets) {
    if (index === undefined) continue;
    const have = length.get(key) ?? 0;
    if (index > have)
      problems.push(
        `${key}[${index}]: the stack's list has ${have} item(s) here, and Pulumi refuses an index past its end`,
      );
    length.set(key, Math.max(have, index + 1));
  }
  return problems;
}

describe("the documentation", () => {
  it("is README.md, CONTRIBUTING.md and the pages under docs/", () => {
    expect(pages.map(relative)).toEqual(
      expect.arrayContaining(["README.md", "CONTRIBUTING.md", expect.stringMatching(/^docs\/.+\.md$/)]),
    );
  });

  it.each(pages.map(relative))("%s: every relative link resolves, to the file and its #anchor", (page) => {
    expect(brokenLinks(path.join(repoRoot, page))).toEqual([]);
  });

  it("names only npm scripts that package.json has", () => {
    const scripts = Object.keys(JSON.parse(read(path.join(repoRoot, "package.json"))).scripts);
    const named = pages.flatMap((page) => npmScripts(read(page)).map((s) => `${relative(page)}: ${s}`));
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter((n) => !scripts.includes(n.split(": ")[1]!))).toEqual([]);
  });

  it("sets only config keys a project declares, and lists from their first index up", () => {
    // The keys each project's config schema knows (lib/config.ts refuses any other), by name and namespaced.
    const schemas = {
      cluster: clusterConfigSchema,
      "cluster-setup": clusterSetupConfigSchema,
      kargo: kargoConfigSchema,
    };
    const declared = new Set([
      "aws:region",
      ...Object.entries(schemas).flatMap(([project, schema]) =>
        Object.keys(schema.shape).flatMap((key) => [key, `${project}:${key}`]),
      ),
    ]);
    const problems: string[] = [];
    let commands = 0;
    for (const page of pages) {
      const { prose, blocks } = parts(read(page));
      // A block runs in order on one stack; a command in prose stands alone.
      const runs = [...blocks.map(configSets), ...configSets(prose).map((set) => [set])];
      for (const sets of runs) {
        commands += sets.length;
        for (const { key } of sets)
          if (!declared.has(key)) problems.push(`${relative(page)}: ${key} is declared by no project`);
        problems.push(...indexProblems(sets).map((p) => `${relative(page)}: ${p}`));
      }
    }
    expect(commands).toBeGreaterThan(0);
    expect(problems).toEqual([]);
  });

  it("names every repository variable the workflows read", () => {
    const github = path.join(repoRoot, ".github");
    const files = fs
      .readdirSync(github, { recursive: true, encoding: "utf8" })
      .filter((f) => /\.ya?ml$/.test(f))
      .map((f) => path.join(github, f));
    const used = new Set(
      files.flatMap((f) => [...read(f).matchAll(/\bvars\.([A-Z][A-Z0-9_]*)/g)].map((m) => m[1]!)),
    );
    expect(used.size).toBeGreaterThan(0);
    const documented = pages.map(read).join("\n");
    expect([...used].filter((name) => !documented.includes(`\`${name}\``))).toEqual([]);
  });

  it("runs go test from test/, where the Go module is, on packages that exist there", () => {
    const problems: string[] = [];
    let commands = 0;
    for (const page of pages) {
      const { prose, blocks } = parts(read(page));
      const spans = [...blocks, ...[...prose.matchAll(/`([^`]+)`/g)].map((m) => m[1]!)];
      for (const span of spans)
        for (const m of span.matchAll(/go test ((?:\.\/[\w./-]*\s*)+)/g)) {
          commands++;
          if (!/(^|\n|&&|;)\s*cd test\s*(&&|;|\n)/.test(span.slice(0, m.index)))
            problems.push(`${relative(page)}: \`${m[0].trim()}\` does not start with cd test`);
          for (const pkg of m[1]!.trim().split(/\s+/))
            if (!fs.existsSync(path.join(repoRoot, "test", pkg.replace(/\/\.\.\.$/, ""))))
              problems.push(`${relative(page)}: test/${pkg} does not exist`);
        }
    }
    expect(commands).toBeGreaterThan(0);
    expect(problems).toEqual([]);
  });

  describe("stack outputs", () => {
    let outputs: Set<string>;
    beforeAll(async () => {
      // The break-glass password is an output only while kargoAdminAccount is on, as the docs say.
      const plans = [...(await planChain()), await planProject("kargo", { "kargo:kargoAdminAccount": true })];
      outputs = new Set(plans.flatMap((plan) => Object.keys(plan.outputs)));
    });

    it("are only ones a project exports", () => {
      const named = pages.flatMap((page) =>
        [...read(page).matchAll(/pulumi stack output ([A-Za-z]\w*)/g)].map((m) => [relative(page), m[1]!]),
      );
      expect(named.length).toBeGreaterThan(0);
      expect(named.filter(([, output]) => !outputs.has(output!))).toEqual([]);
    });
  });
});

describe("what the deploy page says", () => {
  it("kargo takes its AWS region from cluster-setup: its stack sets none, and it follows another region", async () => {
    const [cluster, setup] = await planChain({ project: "cluster-setup" });
    const config = readStackConfig("kargo");
    expect(config.values["aws:region"]).toBeUndefined();
    const elsewhere = setup!.upstream.outputs.region === "eu-west-1" ? "eu-central-1" : "eu-west-1";
    const kargo = await planProgram({
      projectDir: path.join(repoRoot, "kargo"),
      project: "kargo",
      stack: config.stack,
      config: config.values,
      secretKeys: config.secretKeys,
      upstream: {
        cluster: cluster!.upstream,
        "cluster-setup": {
          ...setup!.upstream,
          outputs: { ...setup!.upstream.outputs, region: elsewhere, cognitoRegion: elsewhere },
        },
      },
    });
    const providers = kargo.resources.filter((r) => r.type === "pulumi:providers:aws");
    expect(providers.length).toBeGreaterThan(0);
    for (const provider of providers) expect(provider.inputs.region).toBe(elsewhere);
  });
});

describe("the checks themselves", () => {
  it("slug headings as GitHub does", () => {
    expect([
      ...headingAnchors("# Deploy `cluster` (pulumi up #1)\n## Approvals: who can do what\n## A\n## A\n"),
    ]).toEqual(["deploy-cluster-pulumi-up-1", "approvals-who-can-do-what", "a", "a-1"]);
    expect([...headingAnchors("```sh\n# a comment, not a heading\n```\n")]).toEqual([]);
  });

  it("find links in prose, not in code", () => {
    expect(linkTargets("[a](b.md#c) `[x](y.md)` ![i](img.png)\n```\n[z](w.md)\n```\n")).toEqual([
      "b.md#c",
      "img.png",
    ]);
  });

  it("refuse an index past the end of a list the stack never set", () => {
    expect(indexProblems([{ key: "groups", index: 3 }])).toHaveLength(1);
    expect(indexProblems([0, 1, 2, 3].map((index) => ({ key: "groups", index })))).toEqual([]);
  });
});
