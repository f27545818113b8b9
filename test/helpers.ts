import { expect } from "vitest";
import { ProgramError, type PlannedResource, type ProgramPlan } from "../lib/cli/plan/harness";
import { planChain, type ProjectName } from "../lib/cli/plan/projects";
import { planCommand } from "../lib/cli/plan/execute";

/** Plans `project` (and the projects before it, for its StackReferences) with config overrides. */
export async function planProject(
  project: ProjectName,
  overrides: Record<string, unknown> = {},
  secretKeys: string[] = [],
): Promise<ProgramPlan> {
  const plans = await planChain({ project, overrides, secretKeys });
  return plans[plans.length - 1]!;
}

/** Plans with a bad config and returns the error, asserting nothing but the root stack was registered. */
export async function planError(
  project: ProjectName,
  overrides: Record<string, unknown>,
  secretKeys: string[] = [],
): Promise<ProgramError> {
  const error = await planProject(project, overrides, secretKeys).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error, "the program should have rejected this config").toBeInstanceOf(ProgramError);
  const programError = error as ProgramError;
  if (programError.project === project) expect(programError.registered.map((r) => r.type)).toEqual([]);
  return programError;
}

export const ofType = (plan: ProgramPlan, type: string): PlannedResource[] =>
  plan.resources.filter((r) => r.type === type);

export function one(plan: ProgramPlan, type: string, name?: string): PlannedResource {
  const found = ofType(plan, type).filter((r) => name === undefined || r.name === name);
  expect(found, `exactly one ${type}${name ? ` named ${name}` : ""}`).toHaveLength(1);
  return found[0]!;
}

/** A Kubernetes RBAC rule, as our Roles hold them. */
export type RbacRule = {
  apiGroups: string[];
  resources: string[];
  resourceNames?: string[];
  verbs: string[];
};

/**
 * Kubernetes RBAC over Kargo's API group: does any rule allow `verb` on `resource` (`name` unknown = any
 * object)? The tests' reading of our Roles; test/kube asks the real authorizer the same questions.
 */
export const allowsOnKargo = (rules: RbacRule[], verb: string, resource: string, name?: string) =>
  rules.some(
    (r) =>
      r.apiGroups.includes("kargo.akuity.io") &&
      (r.verbs.includes(verb) || r.verbs.includes("*")) &&
      (r.resources.includes(resource) || r.resources.includes("*")) &&
      (!r.resourceNames?.length || (name !== undefined && r.resourceNames.includes(name))),
  );

/**
 * The trust an IRSA role must have: only `serviceAccount` (namespace:name) of the cluster's OIDC provider may
 * assume it, and only for the STS audience. Written out here, not taken from lib/irsa.ts, so a change there fails.
 */
export const irsaTrust = (clusterOutputs: Record<string, unknown>, serviceAccount: string) => {
  const issuer = String(clusterOutputs.oidcProviderUrl).replace("https://", "");
  return {
    Version: "2012-10-17",
    Statement: [
      {
        Effect: "Allow",
        Principal: { Federated: clusterOutputs.oidcProviderArn },
        Action: "sts:AssumeRoleWithWebIdentity",
        Condition: {
          StringEquals: {
            [`${issuer}:sub`]: `system:serviceaccount:${serviceAccount}`,
            [`${issuer}:aud`]: "sts.amazonaws.com",
          },
        },
      },
    ],
  };
};

/**
 * What a command printed on stderr beyond the warnings a project gives for an optional key its stack leaves
 * unset (the example stacks cannot hold the optional secrets: kargo's gitReadToken, say).
 */
export const unexpectedStderr = (stderr: string) =>
  stderr
    .split("\n")
    .filter((line) => line.trim() && !/^warning: \[runtime\] [\w-]+:\w+ is not set: /.test(line));

/**
 * `npm run plan -- ARGS` run in this process (lib/cli/plan/execute.ts, what the command runs), with what it
 * prints on each stream, each print a line as console.log ends it; the plans the worker has made are reused.
 */
export async function planInProcess(
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const printed = { stdout: "", stderr: "" };
  const code = await planCommand(args, {
    log: (text) => (printed.stdout += `${text}\n`),
    error: (text) => (printed.stderr += `${text}\n`),
  });
  return { code, ...printed };
}
