// `npm run personalize -- --github-repo <https URL of your fork> --pulumi-org <organization>`: makes a fork its
// own. Checks the values with the rules the programs apply (lib/forkIdentity.ts), rewrites lib/fork.ts and the
// previous identity in every stack config a user copies (comments included), then regenerates stacks/ and the
// docs (`npm run stacks`, `npm run docs`) and prints every file that changed. With no option in a terminal it
// asks for each value. `--account <environment>=<account ID>[:<region>]` also points environments at AWS
// accounts of their own (lib/cli/personalize-account.ts).
import { withoutSourceMaps } from "./plan/fast-start";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import * as readline from "node:readline";
import { parseArgs } from "node:util";
import YAML from "yaml";
import { pipeline as definition } from "../../kargo/pipeline";
import { fork } from "../fork";
import { identityFields, identityProblems, renderFork, type ForkIdentity } from "../forkIdentity";
import { docPages } from "../markdown";
import { accountOf } from "../pipeline/accounts";
import { normalDir } from "../pipeline/names";
import {
  accountChoices,
  accountNextStep,
  accountsWritten,
  accountUsage,
  pipelineFile,
  type AccountChoice,
} from "./personalize-account";

export const repoRoot = path.resolve(__dirname, "..", "..");
const forkFile = "lib/fork.ts";

const usage = `usage: npm run personalize -- ${identityFields.map((f) => `--${f.option} <value>`).join(" ")}
  ${identityFields.map((f) => `--${f.option}: ${f.label}`).join("\n  ")}
  ${accountUsage}
Run in a terminal with no option, it asks for each value.`;

/** Example stack configs naming another stack of the organization: `<org>/<project>/<stack>`. */
const exampleStackRefs = [
  { file: "cluster-setup/Pulumi.example.yaml", key: "cluster-setup:clusterStack" },
  { file: "kargo/Pulumi.example.yaml", key: "kargo:clusterSetupStack" },
];

/**
 * The stack configs a user copies into their own: each project's example (`<project>/Pulumi.example.yaml`)
 * and each program's stack configs (`<program dir>/Pulumi.<stack>.yaml`), as paths relative to `root`.
 */
export function copiedConfigs(root: string): string[] {
  const configs = (dir: string, name: RegExp) =>
    fs.existsSync(path.join(root, dir))
      ? fs
          .readdirSync(path.join(root, dir))
          .filter((f) => name.test(f))
          .map((f) => path.posix.join(dir, f))
      : [];
  const projects = fs
    .readdirSync(root, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .flatMap((d) => configs(d.name, /^Pulumi\.example\.yaml$/));
  const programs = definition.programs.flatMap((p) => configs(normalDir(p.dir), /^Pulumi\..+\.yaml$/));
  return [...new Set([...projects, ...programs])].filter((f) => !f.endsWith("/Pulumi.yaml")).sort();
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * `text` with every trace of the identity `from` made `to`'s, comments included, in one pass (so a new
 * value that holds the old one is not rewritten again): the repository's URL, with or without `.git`, and
 * each stack reference `<organization>/<project>/<stack>` of the organization. A placeholder in angle
 * brackets (`<your-org>`) is left alone.
 */
export function rewriteIdentity(text: string, from: ForkIdentity, to: ForkIdentity): string {
  const bare = (url: string) => url.replace(/\.git$/, "");
  const pattern = new RegExp(
    `${escapeRegExp(bare(from.githubRepo))}(\\.git)?(?![\\w.-])|(?<![\\w.<-])${escapeRegExp(from.pulumiOrg)}(?=/[\\w.-]+/[\\w.-]+)`,
    "g",
  );
  return text.replace(pattern, (found, git?: string) =>
    found === from.pulumiOrg ? to.pulumiOrg : `${bare(to.githubRepo)}${git ? ".git" : ""}`,
  );
}

export interface PersonalizeIO {
  args: string[];
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
  errors: NodeJS.WritableStream;
  /** Whether to ask when no option is given (a terminal on both ends). */
  interactive: boolean;
  root?: string;
}

/** Asks for each value, showing the current one; an empty answer keeps it, a bad one is asked again. */
export async function askIdentity(
  io: Pick<PersonalizeIO, "input" | "output">,
  current: ForkIdentity,
): Promise<ForkIdentity | undefined> {
  const rl = readline.createInterface({ input: io.input, output: io.output, terminal: false });
  const lines = rl[Symbol.asyncIterator]();
  const answers = { ...current };
  try {
    for (const field of identityFields) {
      for (;;) {
        io.output.write(`${field.label}\n  [${current[field.key]}]: `);
        const next = await lines.next();
        if (next.done) return undefined;
        const value = next.value.trim() || current[field.key];
        const problems = field.problems(value);
        if (problems.length === 0) {
          answers[field.key] = value;
          break;
        }
        io.output.write(`  ${JSON.stringify(value)} ${problems.join("; ")}\n`);
      }
    }
  } finally {
    rl.close();
  }
  return answers;
}

/** Contents of the files personalize may change, by repository-relative path (absent files as undefined). */
function snapshot(root: string, stacksDir: string): Map<string, string | undefined> {
  // What `npm run docs` rewrites: the README's diagram and idle total, the capacity and cost tables.
  const docs = [docPages.readme, docPages.capacityAndCost].map((page) => path.relative(repoRoot, page));
  const files = [forkFile, pipelineFile, ...docs, ...copiedConfigs(root)];
  const dir = path.join(root, stacksDir);
  if (fs.existsSync(dir))
    files.push(
      ...fs
        .readdirSync(dir)
        .filter((f) => f.endsWith(".yaml"))
        .map((f) => `${stacksDir}/${f}`),
    );
  return new Map(
    files.map((f) => [
      f,
      fs.existsSync(path.join(root, f)) ? fs.readFileSync(path.join(root, f), "utf8") : undefined,
    ]),
  );
}

/**
 * Writes `identity` into lib/fork.ts and, in place of `current`'s, into every stack config a user copies
 * (copiedConfigs) under `root`; returns the files it changed (none when they already hold it). stacks/ and
 * the README are regenerated by a new process (lib/cli/regenerate.ts), which loads the rewritten lib/fork.ts.
 */
export function applyIdentity(root: string, identity: ForkIdentity, current: ForkIdentity = fork): string[] {
  const changed: string[] = [];
  const write = (file: string, text: string) => {
    const full = path.join(root, file);
    if (fs.readFileSync(full, "utf8") === text) return;
    fs.writeFileSync(full, text);
    changed.push(file);
  };
  write(forkFile, renderFork(identity));
  for (const file of copiedConfigs(root)) {
    let text = fs.readFileSync(path.join(root, file), "utf8");
    // The references the programs read, whichever organization they name now; that one line each, so the
    // file keeps its comments and layout.
    for (const { key } of exampleStackRefs.filter((r) => r.file === file)) {
      const ref: unknown = YAML.parse(text)?.config?.[key];
      if (typeof ref !== "string") continue;
      const line = new RegExp(`^(\\s*${escapeRegExp(key)}:\\s*)\\S+`, "m");
      text = text.replace(line, `$1${[identity.pulumiOrg, ...ref.split("/").slice(1)].join("/")}`);
    }
    write(file, rewriteIdentity(text, current, identity));
  }
  return changed;
}

export async function personalize(io: PersonalizeIO): Promise<number> {
  const root = io.root ?? repoRoot;
  const say = (text: string) => io.output.write(`${text}\n`);
  const fail = (text: string) => io.errors.write(`${text}\n`);
  let values: Record<string, string | undefined>;
  let accounts: string[];
  try {
    const parsed = parseArgs({
      args: io.args,
      options: {
        ...Object.fromEntries(identityFields.map((f) => [f.option, { type: "string" as const }])),
        account: { type: "string", multiple: true },
      },
      strict: true,
      allowPositionals: false,
    }).values;
    accounts = (parsed.account as string[] | undefined) ?? [];
    values = parsed as Record<string, string | undefined>;
  } catch (err) {
    fail(`${(err as Error).message}\n${usage}`);
    return 2;
  }

  const current: ForkIdentity = { ...fork };
  let wanted: ForkIdentity;
  if (identityFields.every((f) => values[f.option] === undefined) && accounts.length === 0) {
    if (!io.interactive) {
      fail(`nothing to do: give at least one option (or run it in a terminal to be asked)\n${usage}`);
      return 2;
    }
    const answered = await askIdentity(io, current);
    if (!answered) {
      fail("input ended before every value was given; nothing written");
      return 2;
    }
    wanted = answered;
  } else {
    wanted = { ...current };
    for (const f of identityFields) if (values[f.option] !== undefined) wanted[f.key] = values[f.option]!;
  }

  const choices = accountChoices(accounts, definition, root);
  const problems = [
    ...identityProblems(wanted, (f) => `--${f.option}`),
    ...choices.filter((c): c is string => typeof c === "string"),
  ];
  if (problems.length > 0) {
    fail(`${problems.join("\n")}\nnothing written\n${usage}`);
    return 2;
  }

  const stacksDir = normalDir(definition.stacks.dir ?? "stacks");
  const chosen = choices as AccountChoice[];
  let pipelineText: { file: string; text: string };
  try {
    pipelineText = await accountsWritten(root, chosen);
  } catch (err) {
    fail(`${(err as Error).message}\nnothing written`);
    return 2;
  }
  const before = snapshot(root, stacksDir);
  applyIdentity(root, wanted);
  if (before.get(pipelineFile) !== pipelineText.text) fs.writeFileSync(pipelineText.file, pipelineText.text);
  const regenerated = spawnSync(process.execPath, ["--import", "tsx", "lib/cli/regenerate.ts"], {
    cwd: root,
    encoding: "utf8",
  });
  if (regenerated.status !== 0) {
    fail(
      `lib/fork.ts written, but npm run stacks / npm run docs failed:\n${`${regenerated.stdout}${regenerated.stderr}`.trim()}`,
    );
    return 1;
  }

  const after = snapshot(root, stacksDir);
  const changed = [...new Set([...before.keys(), ...after.keys()])]
    .filter((f) => before.get(f) !== after.get(f))
    .sort();
  for (const f of identityFields) {
    if (current[f.key] !== wanted[f.key]) say(`${f.key}: ${current[f.key]} -> ${wanted[f.key]}`);
  }
  const accountText = (aws: AccountChoice["aws"] | undefined) =>
    aws ? `${aws.accountId}${aws.region ? ` (${aws.region})` : ""}` : "the cluster's account";
  const moved = chosen.filter(
    (c) => accountText(definition.environments[c.environment]!.aws) !== accountText(c.aws),
  );
  for (const c of moved)
    say(
      `environments.${c.environment}.aws: ${accountText(definition.environments[c.environment]!.aws)} -> ${accountText(c.aws)}`,
    );
  if (changed.length === 0) say("nothing changed: this fork already has these values");
  else say(`changed: ${changed.join(", ")}`);
  for (const c of moved.filter((m) => accountOf(definition.environments, m.environment) !== m.aws.accountId))
    say(accountNextStep(c));
  return 0;
}

if (require.main === module) {
  withoutSourceMaps();
  personalize({
    args: process.argv.slice(2),
    input: process.stdin,
    output: process.stdout,
    errors: process.stderr,
    interactive: Boolean(process.stdin.isTTY && process.stdout.isTTY),
  }).then((code) => {
    process.exitCode = code;
  });
}
