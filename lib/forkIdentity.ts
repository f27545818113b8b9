// The rules a fork's identity (lib/fork.ts) must follow, taken from the programs that use each value, and the
// file itself rendered from values: `npm run personalize` checks with these and nothing else.
import { fork } from "./fork";
import { githubRepository } from "./pipeline/names";
import { pipelineSchema } from "./pipeline/schema";

export type ForkIdentity = typeof fork;

export interface IdentityField {
  key: keyof ForkIdentity;
  /** The personalize option that sets it. */
  option: string;
  /** What to ask for. */
  label: string;
  /** Why a value cannot work, in the words of the programs that would refuse it; empty when it can. */
  problems(value: string): string[];
}

const zodProblems = (
  schema: { safeParse(v: unknown): { success: boolean; error?: { issues: { message: string }[] } } },
  value: string,
) => {
  const parsed = schema.safeParse(value);
  return parsed.success ? [] : parsed.error!.issues.map((i) => i.message);
};

export const identityFields: IdentityField[] = [
  {
    key: "githubRepo",
    option: "github-repo",
    label: "GitHub repository of your fork (https://github.com/<owner>/<name>.git)",
    problems: (value) => {
      // kargo/pipeline.ts source.repoURL, then kargo's GitHub API use (stage branches, webhook).
      const schema = zodProblems(pipelineSchema.shape.source.shape.repoURL, value);
      if (schema.length > 0) return schema;
      try {
        githubRepository(value);
        return [];
      } catch {
        return ["is not a GitHub repository; allowed: https://github.com/<owner>/<name>.git"];
      }
    },
  },
  {
    key: "pulumiOrg",
    option: "pulumi-org",
    label: "Pulumi Cloud organization of the promoted program's stacks",
    problems: (value) => zodProblems(pipelineSchema.shape.pulumi.shape.organization, value),
  },
];

/** Every problem of an identity, as `<key>: "<value>" <problem>`. */
export function identityProblems(
  identity: ForkIdentity,
  name = (f: IdentityField) => f.key as string,
): string[] {
  return identityFields.flatMap((f) =>
    f.problems(identity[f.key]).map((p) => `${name(f)}: ${JSON.stringify(identity[f.key])} ${p}`),
  );
}

/** lib/fork.ts holding `identity`. */
export function renderFork(identity: ForkIdentity): string {
  return `// Who this fork is: its GitHub repository and its Pulumi Cloud organization. The one place a fork's identity
// lives; kargo/pipeline.ts (Warehouse, Stack manifests, Pulumi Cloud links, stage branches) and cluster-setup
// (what Argo CD may sync) read it. \`npm run personalize\` rewrites this file and what is generated from it.
export const fork = {
  githubRepo: ${JSON.stringify(identity.githubRepo)},
  pulumiOrg: ${JSON.stringify(identity.pulumiOrg)},
};
`;
}
