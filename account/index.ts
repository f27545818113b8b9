// `pulumi up` once per AWS account an environment names (npm run account): the role kargo's deploy assumes.
import * as pulumi from "@pulumi/pulumi";
import { pipeline } from "../kargo/pipeline";
import { AccountBootstrap } from "../lib/account-bootstrap";
import { ConfigError, configFields } from "../lib/config";
import { platformTags } from "../lib/platform";

const deployerArn = configFields.iamRoleArn.safeParse(new pulumi.Config().get("deployerArn") ?? "");
if (!deployerArn.success)
  throw new ConfigError("platform-account", [
    `platform-account:deployerArn: ${deployerArn.error.issues[0]!.message}: the role that runs pulumi up of the kargo project`,
  ]);
const bootstrap = new AccountBootstrap("platform-account", {
  deployerArn: deployerArn.data,
  rolePrefix: pipeline.stacks.serviceAccountName,
  tags: platformTags(),
});

export const deployRoleArn = bootstrap.roleArn;
