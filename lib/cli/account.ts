// `npm run account -- --environment <name> --deployer <role ARN>`: the one step that prepares the AWS account
// an environment names (environments.<name>.aws.accountId) before its first promotion. Run it once per
// account with that account's administrator credentials: `pulumi up` of the account/ project
// (lib/account-bootstrap.ts), its stack named after the account, its AWS provider allowed in that account only.
import { spawnSync } from "node:child_process";
import * as path from "node:path";
import { parseArgs } from "node:util";
import { pipeline as definition } from "../../kargo/pipeline";
import { configFields } from "../config";
import { accountOf } from "../pipeline/accounts";
import { validatePipeline } from "../pipeline/validate";

const usage =
  "usage: npm run account -- --environment <environment naming an account> --deployer <ARN of the role that deploys kargo> [--dry-run]";

/** The pulumi commands that prepare the account of `environment`, or the problem that stops them. */
export function accountCommands(
  environment: string,
  deployer: string,
  input: unknown = definition,
): string[][] | string {
  const pipeline = validatePipeline(input);
  const account = accountOf(pipeline.environments, environment);
  if (!Object.hasOwn(pipeline.environments, environment))
    return `--environment: "${environment}" is not an environment of kargo/pipeline.ts (${Object.keys(pipeline.environments).join(", ")})`;
  if (account === undefined)
    return `--environment: "${environment}" names no AWS account (environments.${environment}.aws.accountId); it acts in the cluster's account, which needs nothing more`;
  const arn = configFields.iamRoleArn.safeParse(deployer);
  if (!arn.success) return `--deployer: ${arn.error.issues[0]!.message}`;
  const stack = ["--stack", `${pipeline.pulumi.organization}/platform-account/${account}`];
  return [
    ["stack", "select", "--create", ...stack],
    ["config", "set", "deployerArn", deployer, ...stack],
    ["config", "set", "--path", "aws:allowedAccountIds[0]", account, ...stack],
    ["config", "set", "aws:region", pipeline.environments[environment]!.aws!.region ?? "us-east-1", ...stack],
    ["up", ...stack],
  ];
}

if (require.main === module) {
  let args;
  try {
    args = parseArgs({
      options: {
        environment: { type: "string" },
        deployer: { type: "string" },
        "dry-run": { type: "boolean" },
      },
      strict: true,
    }).values;
  } catch (err) {
    console.error(`${(err as Error).message}\n${usage}`);
    process.exit(2);
  }
  const commands = accountCommands(args.environment ?? "", args.deployer ?? "");
  if (typeof commands === "string") {
    console.error(`${commands}\n${usage}`);
    process.exit(2);
  }
  const cwd = path.resolve(__dirname, "..", "..", "account");
  for (const command of commands) {
    console.log(`pulumi ${command.join(" ")}`);
    if (args["dry-run"]) continue;
    const { status } = spawnSync("pulumi", command, { cwd, stdio: "inherit" });
    if (status !== 0) process.exit(status ?? 1);
  }
}
