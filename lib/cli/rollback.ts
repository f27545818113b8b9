// `npm run rollback -- <environment> --to <freight name or alias> [--program <name>] --message "<why>"`,
// `npm run rollback -- <environment> --reconcile [--program <name>] --message "<why>"` (the Freight each update
// stage runs now, again: drift brought home), `npm run rollback -- <environment> --to <freight> --continue`
// (a decider takes a stopped rollback on), `npm run rollback -- <environment> --resume` (lifts the holds it
// left); `--dry-run` prints the plan and the commands that write, and runs none of them. lib/rollback.ts runs it
// with `kargo`, `kubectl` and `git`; exit 2 with what to install or run when one is missing or not signed in.
import { parseArgs } from "node:util";
import { pipeline as definition } from "../../kargo/pipeline";
import { resume, rollback } from "../rollback";
import { validatePipeline } from "../pipeline/validate";

const usage = [
  'usage: npm run rollback -- <environment> --to <freight name or alias> [--program <name>] --message "<why>"',
  '       npm run rollback -- <environment> --reconcile [--program <name>] --message "<why>"',
  "       npm run rollback -- <environment> --to <freight> [--program <name>] --continue",
  "       npm run rollback -- <environment> --resume",
  "       add --dry-run to print what it would run; --repository DIR names the clone (default .)",
].join("\n");

class UsageError extends Error {}

function parse() {
  let parsed;
  try {
    parsed = parseArgs({
      options: {
        to: { type: "string" },
        reconcile: { type: "boolean", default: false },
        program: { type: "string" },
        message: { type: "string" },
        continue: { type: "boolean", default: false },
        resume: { type: "boolean", default: false },
        "dry-run": { type: "boolean", default: false },
        repository: { type: "string", default: "." },
      },
      allowPositionals: true,
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values: v, positionals } = parsed;
  if (positionals.length !== 1) throw new UsageError("name one environment");
  const modes = [v.to !== undefined && "--to", v.reconcile && "--reconcile", v.resume && "--resume"].filter(
    Boolean,
  );
  if (modes.length !== 1)
    throw new UsageError(
      `give exactly one of --to, --reconcile, --resume (got ${modes.join(", ") || "none"})`,
    );
  if (v.to === "")
    throw new UsageError("--to: name the Freight (its name or alias, as kargo get freight lists it)");
  if (v.resume && (v.program || v.message || v.continue))
    throw new UsageError(
      "--resume takes no --program, --message or --continue: it lifts every hold in the environment",
    );
  if (v.continue && v.message !== undefined)
    throw new UsageError(
      "--continue takes no --message: it carries on the rollback already recorded, with its message",
    );
  if (!v.resume && !v.continue && !v.message?.trim())
    throw new UsageError('--message "<why>" is required: the record keeps it with who asked');
  if (v.reconcile && v.continue)
    throw new UsageError(
      "--continue names the Freight with --to (the one the stop printed), not --reconcile",
    );
  return { environment: positionals[0]!, ...v };
}

try {
  const a = parse();
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
