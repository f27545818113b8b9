// `npm run rollback -- <environment> --to <freight name or alias> [--program <name>] --message "<why>"`,
// `npm run rollback -- <environment> --reconcile [--program <name>] --message "<why>"` (the Freight each update
// stage runs now, again: drift brought home), `npm run rollback -- <environment> --to <freight> --continue`
// (a decider takes a stopped rollback on), `npm run rollback -- <environment> --resume` (lifts the holds it
// left); `--dry-run` prints the plan and the commands that write, and runs none of them. lib/rollback.ts runs it
// with `kargo` and `git` alone; exit 2 with what to install or run when one is missing or not signed in.
import { withoutSourceMaps } from "./plan/fast-start";
import { pipeline as definition } from "../../kargo/pipeline";
import { resume, rollback } from "../rollback";
import { parseRollbackArgs, usage, UsageError } from "../rollback-args";
import { validatePipeline } from "../pipeline/validate";

withoutSourceMaps();

try {
  const a = parseRollbackArgs(process.argv.slice(2));
  const pipeline = validatePipeline(definition);
  const io = { out: (line: string) => console.log(line) };
  const pollMs = Number(process.env.ROLLBACK_POLL_MS ?? 10_000);
  process.exitCode = a.resume
    ? resume(pipeline, a.environment, pollMs, io, a["dry-run"])
    : rollback(
        pipeline,
        {
          environment: a.environment,
          program: a.program,
          to: a.to,
          kind: a.reconcile ? "reconcile" : "rollback",
          message: a.message,
          resume: a.continue,
          dryRun: a["dry-run"],
          repository: a.repository,
          pollMs,
        },
        io,
      );
} catch (err) {
  console.error(`rollback: ${(err as Error).message}${err instanceof UsageError ? `\n${usage}` : ""}`);
  // Bad arguments, what to set up first, a call that failed: 2. A refusal or a stop it explains: 1 (above).
  process.exitCode = 2;
}
