// What each environment's identity and the preview identity may do in AWS: per program, the IAM policy its
// declaration's `aws` computes for the environment's stack (or, for previews, every environment's). The
// kargo project attaches one inline policy per program to each role (kargo/index.ts).
import type { AccessScope, Pipeline, PolicyStatement, Program } from "./schema";

export interface PolicyDocument {
  Version: "2012-10-17";
  Statement: PolicyStatement[];
}

const scopeOf = (p: Pipeline, x: Program, pulumiStacks: string[], partition: string): AccessScope => ({
  partition,
  project: x.project,
  projects: Object.fromEntries(p.programs.map((y) => [y.name, y.project])),
  pulumiStacks,
});

/** A program's policy in one environment, or undefined for a program that needs no AWS access. */
export function updatePolicy(
  p: Pipeline,
  x: Program,
  environment: string,
  partition = "aws",
): PolicyDocument | undefined {
  const env = Object.hasOwn(p.environments, environment) ? p.environments[environment] : undefined;
  if (!env) throw new Error(`updatePolicy: the pipeline has no environment "${environment}"`);
  if (!x.aws) return undefined;
  return { Version: "2012-10-17", Statement: x.aws.update(scopeOf(p, x, [env.pulumiStack], partition)) };
}

/**
 * What a preview identity may do for a program: read, in every environment of its account, and change
 * nothing. `account`: a named account's preview identity; without it, the cluster's account's, which reads
 * the environments that name no account (lib/pipeline/accounts.ts).
 */
export function previewPolicy(
  p: Pipeline,
  x: Program,
  partition = "aws",
  account?: string,
): PolicyDocument | undefined {
  if (!x.aws) return undefined;
  const stacks = Object.values(p.environments)
    .filter((env) => env.aws?.accountId === account)
    .map((env) => env.pulumiStack);
  if (stacks.length === 0) return undefined;
  return { Version: "2012-10-17", Statement: x.aws.preview(scopeOf(p, x, stacks, partition)) };
}

/**
 * The name of a program's policy resource on an environment's role, or on a preview role (no
 * environment; a named account's with `previewAccount`). Program and environment names are DNS labels, which hold no ".": no two names collide,
 * whatever "-" the names hold and whatever an environment is called.
 */
export const policyResourceName = (program: string, environment?: string, previewAccount?: string) =>
  environment !== undefined
    ? `program.${program}.environment.${environment}`
    : previewAccount === undefined
      ? `program.${program}.preview`
      : `program.${program}.preview.${previewAccount}`;

/** Only resources of the account the role lives in, whoever else shares a name pattern. */
export const sameAccount = { StringEquals: { "aws:ResourceAccount": "${aws:PrincipalAccount}" } };

/**
 * The same for an action that also creates its resource: a resource being created may have no owning
 * account in the request yet (the key absent: allowed), one that exists must be in the role's account.
 */
export const sameAccountOrNew = {
  StringEqualsIfExists: { "aws:ResourceAccount": "${aws:PrincipalAccount}" },
};

/** The Pulumi project of the program named `program`, which another program's permissions refer to. */
export function projectOfProgram(scope: AccessScope, program: string): string {
  const project = Object.hasOwn(scope.projects, program) ? scope.projects[program] : undefined;
  if (!project)
    throw new Error(
      `no program "${program}" in the pipeline (programs: ${Object.keys(scope.projects).join(", ")}); a program's aws access names it`,
    );
  return project;
}
