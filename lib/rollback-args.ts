// The arguments of `npm run rollback` (lib/cli/rollback.ts), read and checked before anything runs: a bad one
// is a UsageError, which the command prints with its usage and exits 2 for.
import { parseArgs } from "node:util";

export const usage = [
  'usage: npm run rollback -- <environment> --to <freight name or alias> [--program <name>] --message "<why>"',
  '       npm run rollback -- <environment> --reconcile [--program <name>] --message "<why>"',
  "       npm run rollback -- <environment> --to <freight> [--program <name>] --continue",
  "       npm run rollback -- <environment> --resume",
  "       add --dry-run to print what it would run; --repository DIR names the clone (default .)",
].join("\n");

export class UsageError extends Error {}

export function parseRollbackArgs(args: string[]) {
  let parsed;
  try {
    parsed = parseArgs({
      args,
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
