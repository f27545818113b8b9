// Environments whose resources another environment's identity would reach by name. A program's `aws`
// access scopes each environment's identity to its stacks' resources by name, `<project>-<pulumiStack>-*`
// (programs/*/access.ts, as docs/make-it-yours.md asks of a program of one's own); an environment whose
// stack name is another's followed by "-" (`dev-x` beside `dev`) names its resources inside that pattern
// (`infra-bucket-dev-x-…` is `infra-bucket-dev-*`), so dev's identity could create, change and delete them.
// Refused rather than named otherwise: another naming would replace every existing resource of a fork.
// Access that follows no such pattern is proved by the plan's IAM policy engine (lib/cli/plan/reach-check.ts).
import type { ParsedPipeline, Program } from "./schema";

/** `environments.<name>.pulumiStack` problems: one per environment another's name patterns reach. */
export function resourceNameProblems(
  p: ParsedPipeline,
  programs: Pick<Program, "name" | "project">[],
): string[] {
  const problems: string[] = [];
  const envs = Object.entries(p.environments);
  const reported = new Set<string>();
  for (const [reached, env] of envs)
    for (const [reacher, other] of envs) {
      if (reacher === reached || env.pulumiStack === other.pulumiStack) continue;
      if (reported.has([reacher, reached].sort().join(" "))) continue;
      // Any program's project, as a program's access may name another's (programs/bucket-lifecycle).
      const found = programs
        .flatMap((mine) => programs.map((theirs) => ({ mine, theirs })))
        .find(({ mine, theirs }) =>
          `${theirs.project}-${env.pulumiStack}-`.startsWith(`${mine.project}-${other.pulumiStack}-`),
        );
      if (!found) continue;
      reported.add([reacher, reached].sort().join(" "));
      const plain = env.pulumiStack.replace(/-/g, "");
      const instead =
        plain !== env.pulumiStack && !envs.some(([, e]) => plain.startsWith(`${e.pulumiStack}-`))
          ? `, such as "${plain}" (with its Pulumi.${plain}.yaml files)`
          : "";
      problems.push(
        `environments.${reached}.pulumiStack: "${env.pulumiStack}" names its resources ${found.theirs.project}-${env.pulumiStack}-… (program "${found.theirs.name}"), inside ${found.mine.project}-${other.pulumiStack}-*, the pattern environment "${reacher}"'s identity is allowed (pulumiStack "${other.pulumiStack}"), so ${reacher} could change and delete ${reached}'s resources; allowed: a pulumiStack that no other environment's pattern covers, here one that does not start with "${other.pulumiStack}-"${instead}`,
      );
    }
  return problems;
}
