// docs/rotating-secrets.md says where each secret lands, and that is where the programs put it: each key a
// project declares secret is planned with a value of its own and followed into every resource that holds it
// (Kubernetes Secrets, chart values, custom resources, providers), with every option that adds a place on, and
// with the read tokens and the GitHub App off (where the other tokens stand in for them). The page also names
// every generated password, every Secret and secret chart value the projects write, and says "env" wherever
// one of our own pods takes a Secret as an environment variable (a running pod then keeps the old value).
// What reads each value upstream is read at the pinned tags and named on the page; it cannot run here.
import * as fs from "node:fs";
import * as path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { planProgram, SECRET, type PlannedResource, type ProgramPlan } from "../lib/cli/plan/harness";
import { planChain, readStackConfig, repoRoot, type ProjectName } from "../lib/cli/plan/projects";
import { programStages } from "../lib/pipeline/graph";
import { stackManifest } from "../lib/pipeline/stack-manifest";
import { validatePipeline } from "../lib/pipeline/validate";
import { ofType, planError } from "./helpers";

const page = fs.readFileSync(path.join(repoRoot, "docs", "rotating-secrets.md"), "utf8");
const pipeline = validatePipeline(definition);
const projects = ["cluster-setup", "kargo"] as const satisfies readonly ProjectName[];

/**
 * A value of its own for each key a project declares secret, shaped as its schema wants; the test looks for
 * it (for the PEM key, its body line). The first test checks that these are every such key.
 */
const marked: Record<string, string> = {
  "cluster-setup:pulumiAccessToken": "pul-rotate-pulumiAccessToken",
  "cluster-setup:notifySlackToken": "xoxb-rotate-notifySlackToken",
  "cluster-setup:notifyWebhookUrl": "https://hooks.example.com/rotate-notifyWebhookUrl",
  "kargo:gitToken": "rotate-gitToken",
  "kargo:gitReadToken": "rotate-gitReadToken",
  "kargo:pulumiReadToken": "rotate-pulumiReadToken",
  "kargo:githubAdminToken": "rotate-githubAdminToken",
  "kargo:pulumiAdminToken": "rotate-pulumiAdminToken",
  "kargo:githubAppPrivateKey":
    "-----BEGIN RSA PRIVATE KEY-----\nrotate-githubAppPrivateKey\n-----END RSA PRIVATE KEY-----\n",
};
const needle = (key: string) => marked[key]!.trim().split("\n").at(-2) ?? marked[key]!;
const markedIn = (project: string) =>
  Object.fromEntries(Object.entries(marked).filter(([k]) => k.startsWith(`${project}:`)));

/** Every option that adds a place a secret lands in: notifications to both destinations, Argo Events. */
const setupOptions = { "cluster-setup:notifySlackChannel": "#infra-changes" };
/** The Kargo admin account, the repository's rules and Pulumi Cloud's trust of the CI. */
const kargoOptions = {
  "kargo:kargoAdminAccount": true,
  "kargo:githubRulesets": true,
  "kargo:pulumiCloudOidc": true,
  "kargo:ciClusterStack": "plan-org/cluster/ci",
};
/** The GitHub App's other keys, set with its private key. */
const appOptions = { "kargo:githubAppId": 1, "kargo:githubAppInstallationId": 2 };
/** Unset, other tokens stand in: gitToken for gitReadToken and the App, pulumiAccessToken for pulumiReadToken. */
const standIns = ["kargo:gitReadToken", "kargo:pulumiReadToken", "kargo:githubAppPrivateKey"];

/** The rows of the markdown tables under a `## ` heading, each as its cells. */
function tables(heading: string): string[][][] {
  const start = page.indexOf(`\n## ${heading}\n`);
  expect(start, `the page has a "## ${heading}" section`).toBeGreaterThanOrEqual(0);
  const end = page.indexOf("\n## ", start + 1);
  const found: string[][][] = [];
  let current: string[][] | undefined;
  for (const line of page.slice(start, end < 0 ? undefined : end).split("\n")) {
    if (!line.startsWith("|")) {
      current = undefined;
      continue;
    }
    const cells = line
      .slice(1, -1)
      .split(" | ")
      .map((c) => c.trim());
    if (cells.every((c) => /^-+$/.test(c))) continue;
    if (!current) found.push((current = []));
    else current.push(cells);
  }
  return found;
}

const [where, when] = tables("What picks each new value up");
const names = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
/** The rows of a table whose first cell names `value` (as `value` or `project:value`). */
const rowsFor = (table: string[][], value: string) =>
  table.filter((row) => names(row[0]!).some((n) => n === value || n.endsWith(`:${value}`)));
/** The names in the "lands in" cell of `key`'s row (`project:key` or `key`). */
const landsIn = (key: string) => {
  const rows = rowsFor(where!, key.slice(key.indexOf(":") + 1));
  expect(rows, `a row for ${key}`).toHaveLength(1);
  return names(rows[0]![1]!);
};

/** Each project's keys that may be set as secrets, as the program says when another key is set so. */
async function secretCapableKeys(project: (typeof projects)[number]): Promise<string[]> {
  const config = readStackConfig(project);
  const plain = Object.keys(config.values).find(
    (k) => k.startsWith(`${project}:`) && !config.secretKeys.includes(k),
  )!;
  const error = await planError(project, { [plain]: config.values[plain] }, [plain]);
  const listed = /keys that may be secret: ([^)]+)\)/.exec(error.message);
  expect(listed, error.message).not.toBeNull();
  return listed![1]!.split(", ");
}

/**
 * Whether `project:key` is one the project declares secret: in its Pulumi.yaml (the CLI then refuses it in
 * the clear), or to the program, which refuses it in the clear.
 */
async function declaredSecret(project: ProjectName, key: string): Promise<boolean> {
  const full = `${project}:${key}`;
  if (readStackConfig(project).secretKeys.includes(full)) return true;
  return planChain({ project, overrides: { [full]: "in-the-clear" } }).then(
    () => false,
    (error: Error) => error.message.includes(`${full}: must be encrypted as it's secret`),
  );
}

/** A planned name as the page writes it: the pipeline's project as a placeholder. */
const asWritten = (name: string) =>
  name.startsWith(`${pipeline.project}-`) ? `<project>${name.slice(pipeline.project.length)}` : name;

/** The dotted paths of every leaf of `value` that `test` picks. */
function leaves(value: unknown, test: (leaf: unknown) => boolean, at: string[] = []): string[][] {
  if (test(value)) return [at];
  if (value && typeof value === "object")
    return Object.entries(value).flatMap(([k, v]) => leaves(v, test, [...at, k]));
  return [];
}

/** Every Secret name that `value` references as an env source (`secretKeyRef`) or a PKO Secret ref. */
function envSecretNames(value: unknown): string[] {
  if (!value || typeof value !== "object") return [];
  const here: string[] = [];
  const record = value as Record<string, unknown>;
  const ref = record.secretKeyRef as { name?: string } | undefined;
  if (ref?.name) here.push(ref.name);
  const pko = record as { type?: string; secret?: { name?: string } };
  if (pko.type === "Secret" && pko.secret?.name) here.push(pko.secret.name);
  return [...here, ...Object.values(record).flatMap(envSecretNames)];
}

/** cluster-setup, then kargo over it, as `pulumi up` of both runs them (secrets shown only when `reveal`). */
async function planBoth(options: { reveal: boolean; unset?: string[] }): Promise<ProgramPlan[]> {
  const [cluster] = await planChain({ project: "cluster" });
  const plan = async (project: ProjectName, extra: Record<string, unknown>, upstream: ProgramPlan[]) => {
    const config = readStackConfig(project);
    const secrets = Object.fromEntries(
      Object.entries(markedIn(project)).filter(([k]) => !(options.unset ?? []).includes(k)),
    );
    return planProgram({
      projectDir: path.join(repoRoot, project),
      project,
      stack: config.stack,
      config: { ...config.values, ...secrets, ...extra },
      secretKeys: [...config.secretKeys, ...Object.keys(secrets)],
      upstream: Object.fromEntries(upstream.map((p) => [p.project, p.upstream])),
      revealSecrets: options.reveal,
    });
  };
  const setup = await plan("cluster-setup", setupOptions, [cluster!]);
  const app = options.unset?.includes("kargo:githubAppPrivateKey") ? {} : appOptions;
  const kargo = await plan("kargo", { ...kargoOptions, ...app }, [cluster!, setup]);
  return [setup, kargo];
}

describe("docs/rotating-secrets.md", () => {
  let plans: ProgramPlan[];
  let revealed: ProgramPlan[][];
  let named: (namespace: string, name: string) => string;

  beforeAll(async () => {
    plans = await planBoth({ reveal: false });
    revealed = [await planBoth({ reveal: true }), await planBoth({ reveal: true, unset: standIns })];
    const stacksNamespace = String(plans[0]!.outputs.stacksNamespace);
    named = (namespace, name) => {
      const ns =
        namespace === pipeline.project
          ? "<project>"
          : namespace === stacksNamespace
            ? "<stacksNamespace>"
            : namespace;
      return `${ns}/${asWritten(name)}`;
    };
  });

  /** Where a resource's value at `at` lands, as the page writes it. */
  const place = (r: PlannedResource, at: string[]): string[] => {
    if (r.type === "kubernetes:helm.sh/v3:Release") return [at.slice(1).join(".")];
    if (r.type.startsWith("pulumi:providers:")) return [r.name];
    const metadata = r.inputs.metadata as { name: string; namespace: string } | undefined;
    return metadata ? [named(metadata.namespace, metadata.name)] : [r.type];
  };
  /** Whether a cell's names hold a place: itself, or a chart value as its parent path and its key. */
  const holds = (cell: string[], where: string) => {
    const parts = where.split(".");
    return (
      cell.includes(where) ||
      (parts.length > 1 && cell.includes(parts.slice(0, -1).join(".")) && cell.includes(parts.at(-1)!))
    );
  };

  it("has a row in both tables for the same values", () => {
    expect(where!.length).toBeGreaterThan(0);
    expect(when!.map((row) => row[0])).toEqual(where!.map((row) => row[0]));
  });

  it("follows every key the projects declare secret, and names every key that may be set so", async () => {
    const declared: string[] = [];
    for (const project of projects) {
      const keys = await secretCapableKeys(project);
      for (const key of keys) {
        expect(page, `${project}:${key}`).toMatch(new RegExp(`\`(${project}:)?${key}\``));
        if (await declaredSecret(project, key)) declared.push(`${project}:${key}`);
      }
      // Both kinds in each project: the tokens it declares secret, and chart values a user may set so.
      expect(declared.filter((k) => k.startsWith(`${project}:`)).length).toBeGreaterThan(0);
      expect(declared.filter((k) => k.startsWith(`${project}:`)).length).toBeLessThan(keys.length);
    }
    expect(Object.keys(marked).sort()).toEqual(declared.sort());
    for (const key of declared) {
      expect(rowsFor(where!, key.slice(key.indexOf(":") + 1)), key).toHaveLength(1);
      expect(rowsFor(when!, key.slice(key.indexOf(":") + 1)), key).toHaveLength(1);
    }
  });

  it.each(Object.keys(marked))("says every place %s lands in, and no planned place it does not", (key) => {
    const places = new Set<string>();
    for (const both of revealed)
      for (const r of both.flatMap((p) => p.resources))
        for (const at of leaves(r.inputs, (v) => typeof v === "string" && v.includes(needle(key))))
          place(r, at).forEach((p) => places.add(p));
    expect(places.size, `${key} lands somewhere`).toBeGreaterThan(0);
    const cell = landsIn(key);
    expect([...places].filter((p) => !holds(cell, p))).toEqual([]);
    // Conversely, each Secret or custom resource the plans write that the row names holds this value.
    const planned = new Set(
      plans.flatMap((p) =>
        p.resources.flatMap((r) => {
          const m = r.inputs.metadata as { name?: string; namespace?: string } | undefined;
          return m?.name && m.namespace && leaves(r.inputs, (v) => v === SECRET).length > 0
            ? [named(m.namespace, m.name)]
            : [];
        }),
      ),
    );
    expect(cell.filter((n) => planned.has(n) && !places.has(n))).toEqual([]);
  });

  it("names every password the projects generate, in both of its sections", () => {
    const passwords = plans.flatMap((p) =>
      ofType(p, "random:index/randomPassword:RandomPassword").map((r) => asWritten(r.name)),
    );
    expect(passwords.length).toBeGreaterThan(0);
    const generated = tables("Passwords the platform generates")[0]!;
    for (const password of passwords) {
      expect(
        generated.filter((row) => names(row[2]!).includes(password)),
        password,
      ).not.toEqual([]);
      expect(rowsFor(where!, password), password).toHaveLength(1);
      expect(rowsFor(when!, password), password).toHaveLength(1);
    }
  });

  it("says where each Secret the projects write lands", () => {
    const secrets = plans.flatMap((p) =>
      ofType(p, "kubernetes:core/v1:Secret").map((r) => {
        const metadata = r.inputs.metadata as { name: string; namespace: string };
        return named(metadata.namespace, metadata.name);
      }),
    );
    expect(secrets.length).toBeGreaterThan(0);
    const all = where!.flatMap((row) => names(row[1]!));
    expect(secrets.filter((s) => !all.includes(s))).toEqual([]);
  });

  it("names every secret chart value, and the Secret key it becomes", () => {
    const values = plans.flatMap((p) =>
      ofType(p, "kubernetes:helm.sh/v3:Release").flatMap((r) =>
        leaves(r.inputs.values, (v) => v === SECRET).map((at) => at.join(".")),
      ),
    );
    // The admin passwords, the Kargo signing key, the notification tokens of both charts.
    expect(values.length).toBeGreaterThanOrEqual(6);
    for (const value of values)
      expect(
        where!.some((row) => holds(names(row[1]!), value)),
        value,
      ).toBe(true);
  });

  it("says env for every Secret our own pods take as environment variables", () => {
    // The verification Jobs (the AnalysisTemplates' job spec), and PKO's workspaces: the Stack's envRefs
    // and gitAuth, which PKO turns into env of the workspace pod (pulumi-kubernetes-operator v2.9.0
    // stack_controller.go SetEnvRefsForWorkspace, git.go, auto/workspace_controller.go).
    const env = [
      ...plans.flatMap((p) =>
        ofType(p, "kubernetes:argoproj.io/v1alpha1:AnalysisTemplate").flatMap((t) =>
          envSecretNames(t.inputs.spec).map((name) =>
            named((t.inputs.metadata as { namespace: string }).namespace, name),
          ),
        ),
      ),
      ...programStages(pipeline).flatMap((s) => {
        const manifest = stackManifest(pipeline, s);
        return envSecretNames(manifest.spec).map((name) => named(manifest.metadata.namespace, name));
      }),
    ];
    expect(new Set(env).size).toBeGreaterThanOrEqual(3);
    for (const secret of new Set(env)) {
      const rows = where!.filter((row) => names(row[1]!).includes(secret));
      expect(rows, secret).not.toEqual([]);
      for (const row of rows) expect(row[2], `${secret}: ${row[0]}`).toMatch(/\benv\b/);
    }
  });
});
