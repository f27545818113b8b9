// docs/rotating-secrets.md names what the programs hold: every key a project takes as a secret, every password
// it generates, every Kubernetes Secret and every secret chart value it writes (each with every option that
// adds one switched on), and says "env" wherever one of our own pods takes a Secret as an environment variable
// (so a running pod keeps the old value). What reads each value upstream is read at the pinned tags and named
// on the page; it cannot run here.
import * as fs from "node:fs";
import * as path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { SECRET, type ProgramPlan } from "../lib/cli/plan/harness";
import { planChain, readStackConfig, repoRoot, type ProjectName } from "../lib/cli/plan/projects";
import { programStages } from "../lib/pipeline/graph";
import { stackManifest } from "../lib/pipeline/stack-manifest";
import { validatePipeline } from "../lib/pipeline/validate";
import { ofType, planError } from "./helpers";

const page = fs.readFileSync(path.join(repoRoot, "docs", "rotating-secrets.md"), "utf8");
const pipeline = validatePipeline(definition);
const projects = ["cluster-setup", "kargo"] as const satisfies readonly ProjectName[];

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

/** Whether `project:key` is one the project declares secret: set in the clear, it is refused as such. */
async function declaredSecret(project: string, key: string): Promise<boolean> {
  const full = `${project}:${key}`;
  return planChain({ project: project as ProjectName, overrides: { [full]: "in-the-clear" } }).then(
    () => false,
    (error: Error) => error.message.includes(`${full}: must be encrypted as it's secret`),
  );
}

/** A planned name as the page writes it: the pipeline's project as a placeholder. */
const asWritten = (name: string) =>
  name.startsWith(`${pipeline.project}-`) ? `<project>${name.slice(pipeline.project.length)}` : name;

/** A planned `namespace/name` as the page writes it: the project and the stacks namespace as placeholders. */
const placeholders = (stacksNamespace: string) => (namespace: string, name: string) => {
  const ns =
    namespace === pipeline.project
      ? "<project>"
      : namespace === stacksNamespace
        ? "<stacksNamespace>"
        : namespace;
  return `${ns}/${asWritten(name)}`;
};

/** The dotted paths of every secret leaf of a chart's values. */
function secretLeaves(value: unknown, at: string[] = []): string[][] {
  if (value === SECRET) return [at];
  if (value && typeof value === "object")
    return Object.entries(value).flatMap(([k, v]) => secretLeaves(v, [...at, k]));
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

describe("docs/rotating-secrets.md", () => {
  let plans: ProgramPlan[];
  let named: (namespace: string, name: string) => string;

  beforeAll(async () => {
    // Every option that adds a secret, on: notifications to both destinations, the Kargo admin account, the
    // read tokens, a GitHub App, the admin tokens.
    const [, setup] = await planChain({
      project: "cluster-setup",
      overrides: {
        "cluster-setup:notifySlackChannel": "#infra-changes",
        "cluster-setup:notifySlackToken": "xoxb-1234567890",
        "cluster-setup:notifyWebhookUrl": "https://hooks.example.com/x?key=k",
      },
      secretKeys: ["cluster-setup:notifySlackToken", "cluster-setup:notifyWebhookUrl"],
    });
    const kargoSecrets = {
      "kargo:gitReadToken": "ghp_read",
      "kargo:pulumiReadToken": "pul-read",
      "kargo:githubAppPrivateKey":
        "-----BEGIN RSA PRIVATE KEY-----\nMIIplan\n-----END RSA PRIVATE KEY-----\n",
      "kargo:githubAdminToken": "ghp_admin",
      "kargo:pulumiAdminToken": "pul-admin",
    };
    const kargo = (
      await planChain({
        project: "kargo",
        overrides: {
          ...kargoSecrets,
          "kargo:kargoAdminAccount": true,
          "kargo:githubAppId": 1,
          "kargo:githubAppInstallationId": 2,
        },
        secretKeys: Object.keys(kargoSecrets),
      })
    ).at(-1)!;
    plans = [setup!, kargo];
    named = placeholders(String(setup!.outputs.stacksNamespace));
  });

  it("has a row in both tables for the same values", () => {
    expect(where!.length).toBeGreaterThan(0);
    expect(when!.map((row) => row[0])).toEqual(where!.map((row) => row[0]));
  });

  it.each(projects)(
    "names every key %s takes as a secret, and says what picks each declared one up",
    async (project) => {
      const keys = await secretCapableKeys(project);
      let declared = 0;
      for (const key of keys) {
        expect(page, `${project}:${key}`).toMatch(new RegExp(`\`(${project}:)?${key}\``));
        if (!(await declaredSecret(project, key))) continue;
        declared++;
        expect(rowsFor(where!, key), `${project}:${key}`).not.toEqual([]);
        expect(rowsFor(when!, key), `${project}:${key}`).not.toEqual([]);
      }
      // Both kinds exist in each project: the tokens it declares secret, and chart values a user may set so.
      expect(declared).toBeGreaterThan(0);
      expect(declared).toBeLessThan(keys.length);
    },
  );

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
      expect(rowsFor(where!, password), password).not.toEqual([]);
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
    const landsIn = where!.flatMap((row) => names(row[1]!));
    expect(secrets.filter((s) => !landsIn.includes(s))).toEqual([]);
  });

  it("names every secret chart value, and the Secret key it becomes", () => {
    const leaves = plans.flatMap((p) =>
      ofType(p, "kubernetes:helm.sh/v3:Release").flatMap((r) => secretLeaves(r.inputs.values)),
    );
    // The admin passwords, the Kargo signing key, the notification tokens of both charts.
    expect(leaves.length).toBeGreaterThanOrEqual(6);
    for (const leaf of leaves) {
      const cells = where!.map((row) => names(row[1]!));
      const whole = leaf.join(".");
      const parent = leaf.slice(0, -1).join(".");
      expect(
        cells.some((n) => n.includes(whole) || (n.includes(parent) && n.includes(leaf.at(-1)!))),
        whole,
      ).toBe(true);
    }
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
