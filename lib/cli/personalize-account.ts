// `npm run personalize -- --account <environment>=<account ID>[:<region>]`: points an environment at an AWS
// account of its own (environments.<name>.aws, docs/accounts.md). Checked by the pipeline's own validation
// (validatePipeline: lib/pipeline/check-accounts.ts) before anything is written, then written into that
// environment's entry in kargo/pipeline.ts, formatted by the repository's prettier config.
import * as fs from "node:fs";
import * as path from "node:path";
import * as prettier from "prettier";
import ts from "typescript";
import type { PipelineInput } from "../pipeline/schema";
import { PipelineError } from "../pipeline/schema";
import { validatePipeline } from "../pipeline/validate";

export const pipelineFile = "kargo/pipeline.ts";
/** This repository's prettier config formats what is written, wherever the copy being personalized is. */
const formatterConfigFrom = path.resolve(__dirname, "..", "..", pipelineFile);

/** One `--account` value: the environment and the account (and region) it acts in. */
export interface AccountChoice {
  environment: string;
  aws: { accountId: string; region?: string };
}

const format = "<environment>=<12-digit account ID>[:<region>]";
export const accountUsage = `--account ${format} (repeatable): the AWS account (and region) an environment acts in`;

/**
 * Parses and checks every `--account` value against `definition` with the pipeline's own validation; returns
 * the choices, or the problems (each naming the option and its value) when any is refused.
 */
export function accountChoices(
  values: string[],
  definition: PipelineInput,
  root: string,
): AccountChoice[] | string[] {
  const environments = Object.keys(definition.environments);
  const problems: string[] = [];
  const choices: (AccountChoice & { value: string })[] = [];
  for (const value of values) {
    const at = `--account ${JSON.stringify(value)}`;
    const match = /^([^=]+)=([^:]*)(?::(.*))?$/.exec(value);
    if (!match) {
      problems.push(`${at}: expected ${format}, such as ${environments.at(-1)}=210987654321:eu-west-1`);
      continue;
    }
    const [, environment, accountId, region] = match as unknown as [string, string, string, string?];
    if (!Object.hasOwn(definition.environments, environment)) {
      problems.push(
        `${at}: "${environment}" is not an environment of ${pipelineFile}; its environments: ${environments.join(", ")}`,
      );
      continue;
    }
    if (choices.some((c) => c.environment === environment)) {
      problems.push(`${at}: environment "${environment}" is given twice`);
      continue;
    }
    choices.push({ value, environment, aws: region === undefined ? { accountId } : { accountId, region } });
  }
  if (problems.length > 0) return problems;
  const wanted: PipelineInput = { ...definition, environments: { ...definition.environments } };
  for (const c of choices)
    wanted.environments[c.environment] = { ...wanted.environments[c.environment]!, aws: c.aws };
  try {
    validatePipeline(wanted, { repoRoot: root });
  } catch (err) {
    if (!(err instanceof PipelineError)) throw err;
    return err.problems.map((p) => {
      const c = choices.find((x) => p.startsWith(`environments.${x.environment}.aws`));
      return `--account${c ? ` ${JSON.stringify(c.value)}` : ""}: ${p}`;
    });
  }
  return choices.map(({ environment, aws }) => ({ environment, aws }));
}

const propertyName = (p: ts.ObjectLiteralElementLike): string | undefined =>
  p.name && (ts.isIdentifier(p.name) || ts.isStringLiteral(p.name)) ? p.name.text : undefined;

const property = (o: ts.ObjectLiteralExpression, name: string): ts.PropertyAssignment | undefined =>
  o.properties.find(
    (p): p is ts.PropertyAssignment => ts.isPropertyAssignment(p) && propertyName(p) === name,
  );

/** The literal `{ accountId, region? }` an `aws` property holds, or undefined when it is anything else. */
function literalAws(node: ts.Expression): AccountChoice["aws"] | undefined {
  if (!ts.isObjectLiteralExpression(node)) return undefined;
  const fields: Record<string, string> = {};
  for (const p of node.properties) {
    const name = propertyName(p);
    if (!ts.isPropertyAssignment(p) || !name || !ts.isStringLiteralLike(p.initializer)) return undefined;
    fields[name] = p.initializer.text;
  }
  return fields as unknown as AccountChoice["aws"];
}

const sameAws = (a: AccountChoice["aws"] | undefined, b: AccountChoice["aws"]) =>
  a !== undefined &&
  a.accountId === b.accountId &&
  a.region === b.region &&
  Object.keys(a).length === Object.keys(b).length;

/**
 * `text` (kargo/pipeline.ts) with each choice's `aws` in its environment's entry of `pipeline.environments`,
 * formatted; unchanged when each already holds it. Throws naming the environment when its entry is not an
 * object literal there (a fork that builds it otherwise edits it by hand).
 */
export async function writeAccounts(text: string, choices: AccountChoice[], file: string): Promise<string> {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  let environments: ts.ObjectLiteralExpression | undefined;
  const visit = (node: ts.Node): void => {
    if (
      ts.isVariableDeclaration(node) &&
      ts.isIdentifier(node.name) &&
      node.name.text === "pipeline" &&
      node.initializer &&
      ts.isObjectLiteralExpression(node.initializer)
    ) {
      const init = property(node.initializer, "environments")?.initializer;
      if (init && ts.isObjectLiteralExpression(init)) environments = init;
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  const edits: { start: number; end: number; text: string }[] = [];
  for (const { environment, aws } of choices) {
    const entry = environments && property(environments, environment)?.initializer;
    if (!entry || !ts.isObjectLiteralExpression(entry))
      throw new Error(
        `${file}: environments.${environment} is not an object literal in \`pipeline\`; add aws: ${JSON.stringify(aws)} to it by hand`,
      );
    const literal = `{ accountId: ${JSON.stringify(aws.accountId)}${aws.region === undefined ? "" : `, region: ${JSON.stringify(aws.region)}`} }`;
    const existing = property(entry, "aws");
    if (existing) {
      if (sameAws(literalAws(existing.initializer), aws)) continue;
      edits.push({
        start: existing.initializer.getStart(),
        end: existing.initializer.getEnd(),
        text: literal,
      });
    } else {
      // After the last property (and its trailing comma, if any), before the closing brace.
      const end = entry.getEnd() - 1;
      const comma = entry.properties.hasTrailingComma || entry.properties.length === 0 ? "" : ",";
      edits.push({ start: end, end, text: `${comma} aws: ${literal} ` });
    }
  }
  if (edits.length === 0) return text;
  let next = text;
  for (const e of edits.sort((a, b) => b.start - a.start))
    next = next.slice(0, e.start) + e.text + next.slice(e.end);
  const options = (await prettier.resolveConfig(formatterConfigFrom)) ?? {};
  return prettier.format(next, { ...options, filepath: file });
}

/** root's kargo/pipeline.ts with the choices written (throws before anything is written; see writeAccounts). */
export async function accountsWritten(
  root: string,
  choices: AccountChoice[],
): Promise<{ file: string; text: string }> {
  const file = path.join(root, pipelineFile);
  return { file, text: await writeAccounts(fs.readFileSync(file, "utf8"), choices, pipelineFile) };
}

/** What to run next for an environment now in another account (docs/accounts.md). */
export const accountNextStep = (c: AccountChoice): string =>
  `next, once per account, with account ${c.aws.accountId}'s administrator credentials: npm run account -- --environment ${c.environment} --deployer <ARN of the role that runs pulumi up of kargo>; then commit, and pulumi up in cluster-setup and kargo (docs/accounts.md)`;
