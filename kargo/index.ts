// `pulumi up` #3: Kargo, and the whole promotion pipeline declared in pipeline.ts.
import * as path from "node:path";
import * as aws from "@pulumi/aws";
import * as github from "@pulumi/github";
import * as pulumi from "@pulumi/pulumi";
import { clusterProvider, platformTags } from "../lib/platform";
import { githubRepository } from "../lib/pipeline/names";
import { policyResourceName, previewPolicy, updatePolicy } from "../lib/pipeline/access";
import { approverGroups } from "../lib/pipeline/rbac";
import { stopLine } from "../lib/pipeline/verification";
import { validatePipeline } from "../lib/pipeline/validate";
import { codeownersFile, codeownersProblem, pathPatterns } from "../lib/codeowners";
import { ConfigError } from "../lib/config";
import { ciAsCode } from "./ci";
import { githubApp, loadKargoConfig } from "./config";
import { kargoChart, KargoInstall } from "./kargoInstall";
import { pipeline as definition } from "./pipeline";
import { PromotionPipeline } from "./promotionPipeline";
import { EventRouter } from "./eventRouter";
import { recordsDrift, routedKinds } from "../lib/pipeline/events";
import { pullRequestChecks, RepositoryRules, unguardedMain, type KargoGitIdentity } from "./repositoryRules";
import { checkAgainstClusterSetup, clusterAccount, readClusterSetup } from "./upstream";
import { AccountIdentities } from "./accounts";
import { accountOf, namedAccounts } from "../lib/pipeline/accounts";
import {
  checkedHookRanges,
  GitHubWebhook,
  WEBHOOKS_LISTENER_PORT,
  WEBHOOKS_NODE_PORT,
  WebhookIngress,
} from "./warehouseWebhook";

/** Kargo's chart gives the webhooks server a self-signed certificate unless its values bring one. */
const selfSignedWebhookCertificate = (
  values: pulumi.Input<Record<string, unknown>>,
): pulumi.Output<boolean> =>
  pulumi
    .output(values)
    .apply(
      (v) =>
        (v.externalWebhooksServer as { tls?: { selfSignedCert?: boolean } } | undefined)?.tls
          ?.selfSignedCert !== false,
    );

/** GitHub's IPv4 `hooks` ranges, where webhook deliveries come from, as its meta API lists them now. */
async function githubHookRanges(provider: github.Provider): Promise<string[]> {
  return checkedHookRanges((await github.getIpRanges({ provider })).hooksIpv4s);
}

export = async () => {
  const config = loadKargoConfig();
  const pipeline = validatePipeline(definition);
  // The stage branches are created, and the Warehouse's webhook registered, through GitHub's API.
  const repository = githubRepository(pipeline.source.repoURL);
  const tags = platformTags();

  const setup = await readClusterSetup(config.clusterSetupStack);
  checkAgainstClusterSetup(pipeline, setup);

  const zones = setup.network.publicSubnetIds.length;
  if (config.kargoLoadBalancerZones !== undefined && config.kargoLoadBalancerZones > zones) {
    throw new ConfigError("kargo", [
      `kargo:kargoLoadBalancerZones: ${config.kargoLoadBalancerZones}, but the cluster has public subnets in ${zones} zone(s); allowed: 1 to ${zones}, or unset for all of them`,
    ]);
  }

  const requiredChecks = pullRequestChecks(path.join(__dirname, "..", ".github", "workflows"));
  const unguarded = config.githubRulesets && unguardedMain(config.githubRequiredReviews, requiredChecks);
  if (unguarded) throw new ConfigError("kargo", [unguarded]);
  // GitHub reads CODEOWNERS from the branch a pull request merges into: the owners in it are the ones asked.
  const repoRoot = path.join(__dirname, "..");
  const codeowners = codeownersFile(pathPatterns(repoRoot, pipeline.stacks.dir), config.githubPathOwners);
  const stale =
    config.githubRulesets &&
    config.githubPathOwners.length > 0 &&
    codeownersProblem(repoRoot, codeowners, pulumi.getStack());
  if (stale) throw new ConfigError("kargo", [`kargo:githubPathOwners: ${stale}`]);

  const githubProvider = new github.Provider("github", { owner: repository.owner, token: config.gitToken });
  const webhookAllowedCidrs = config.webhookAllowedCidrs ?? (await githubHookRanges(githubProvider));

  const provider = clusterProvider(setup.kubeconfig);
  const awsProvider = new aws.Provider("aws", { region: setup.region as aws.Region });

  const webhookIngress = new WebhookIngress(
    "kargo-webhooks",
    {
      vpcId: setup.network.vpcId,
      nodeSecurityGroupId: setup.network.nodeSecurityGroupId,
      nodeAutoScalingGroupNames: setup.network.nodeAutoScalingGroupNames,
      allowedCidrs: webhookAllowedCidrs,
      tags,
    },
    { provider: awsProvider },
  );

  const install = new KargoInstall("kargo", {
    provider,
    awsProvider,
    hostname: config.kargoHostname,
    hostedZoneId: config.kargoHostedZoneId,
    loadBalancerZones: config.kargoLoadBalancerZones,
    allowedCidrs: config.kargoAllowedCidrs,
    network: setup.network,
    cognito: {
      userPoolId: setup.cognitoUserPoolId,
      issuerUrl: setup.cognitoIssuerUrl,
      adminGroup: setup.cognitoAdminGroup,
      userGroups: approverGroups(pipeline),
    },
    argocdNamespace: setup.argocdNamespace,
    adminAccount: config.kargoAdminAccount,
    values: config.kargoValues,
    tags,
    externalWebhooks: {
      listenerPort: WEBHOOKS_LISTENER_PORT,
      nodePort: WEBHOOKS_NODE_PORT,
      securityGroupId: webhookIngress.securityGroupId,
      targetGroupArn: webhookIngress.targetGroupArn,
    },
  });

  const promotion = new PromotionPipeline(pipeline.project, {
    provider,
    pipeline,
    kargo: install.release,
    argocdNamespace: setup.argocdNamespace,
    kargoNamespace: kargoChart.namespace,
    argocdProject: setup.argocdProject,
    git: {
      username: config.gitUsername,
      token: config.gitToken,
      readToken: config.gitReadToken,
      app: githubApp(config),
    },
    pulumiAccessToken: config.pulumiReadToken ?? setup.pulumiAccessToken,
    kargoProjectUrl: pulumi.interpolate`https://${install.host}/project/${pipeline.project}`,
    argocdSubscriptions: setup.argocdSubscriptions,
  });
  // Kargo's own events (a stopped preview's approval, and with a destination new Freight and a promotion
  // failing before any sync), routed by the Argo Events cluster-setup installs; nothing to route, no router.
  if (!setup.eventRouter)
    pulumi.log.warn(
      "cluster-setup exports no eventRouter (a stack from before Argo Events was always installed): who approves a stopped preview is not recorded; run pulumi up in cluster-setup, then here",
    );
  else if (routedKinds(pipeline, setup.eventRouter).length > 0 || recordsDrift(pipeline))
    new EventRouter("kargo-events", {
      provider,
      pipeline,
      router: setup.eventRouter,
      webhookUrl: setup.eventRouterWebhookUrl,
      kargoProjectUrl: pulumi.interpolate`https://${install.host}/project/${pipeline.project}`,
      kargoNamespace: kargoChart.namespace,
      projectNamespace: promotion.namespace,
    });
  if (!config.gitReadToken)
    pulumi.log.warn(
      "kargo:gitReadToken is not set: Argo CD and PKO get the push token (gitToken), though they only read",
    );
  if (!config.pulumiReadToken)
    pulumi.log.warn(
      "kargo:pulumiReadToken is not set: verification reads Pulumi Cloud with the operator's token",
    );

  // One provider with the admin token, for the rulesets and the CI's settings, made only when one needs it.
  let adminProvider: github.Provider | undefined;
  const githubAdmin = () =>
    (adminProvider ??= new github.Provider("github-admin", {
      owner: repository.owner,
      token: config.githubAdminToken!,
    }));

  // The repository's rules as code: only a reviewed pull request changes main, only Kargo writes stage/*.
  if (config.githubRulesets) {
    const app = githubApp(config);
    const kargoIdentity: KargoGitIdentity = app
      ? { kind: "app", appId: app.id }
      : {
          kind: "user",
          userId: github.getUserOutput({ username: "" }, { provider: githubProvider }).id.apply(Number),
        };
    if (!app)
      pulumi.log.warn(
        "kargo:githubRulesets without a GitHub App: the stage branches' one writer is gitToken's user, who may push there by hand too; set kargo:githubAppId, githubAppInstallationId and githubAppPrivateKey to make it Kargo alone",
      );
    if (config.githubAdminBypass === "always")
      pulumi.log.warn(
        "kargo:githubAdminBypass is always: repository admins may push to main without a pull request; pull_request keeps them to pull requests whose checks passed",
      );
    new RepositoryRules("repository", {
      repository: repository.name,
      provider: githubAdmin(),
      kargo: kargoIdentity,
      requiredChecks,
      review: {
        requiredReviews: config.githubRequiredReviews,
        requireLastPushApproval: config.githubRequireLastPushApproval,
        adminBypass: config.githubAdminBypass,
        codeOwners: config.githubPathOwners.length > 0,
      },
    });
  }

  // The CI's GitHub environments and variables, and Pulumi Cloud's trust of its OIDC tokens (opt-in each).
  ciAsCode(config, pipeline, repository, githubAdmin, setup.region);

  // Freight in seconds: GitHub tells the Warehouse about each push (polling stays as the fallback).
  const webhookUrl = pulumi.interpolate`https://${install.host}:${WEBHOOKS_LISTENER_PORT}${promotion.webhookPath}`;
  if (config.githubWebhook) {
    new GitHubWebhook("warehouse", {
      repository,
      provider: githubProvider,
      url: webhookUrl,
      secret: promotion.webhookSecret,
      insecureSsl: selfSignedWebhookCertificate(config.kargoValues),
    });
  }

  // Each environment's role gets exactly what each promoted program needs there, one policy per program;
  // previews may only read. An environment in another account gets its roles and policies there.
  if (namedAccounts(pipeline.environments).length > 0)
    new AccountIdentities("accounts", {
      pipeline,
      cluster: {
        ...clusterAccount(setup),
        region: setup.region,
        oidcIssuerUrl: aws.eks
          .getClusterOutput({ name: setup.clusterName }, { provider: awsProvider })
          .identities.apply((ids) => ids[0]!.oidcs[0]!.issuer),
      },
      clusterProvider: awsProvider,
      tags,
    });
  for (const program of pipeline.programs) {
    for (const [environment, identity] of Object.entries(setup.stackIdentities)) {
      if (!Object.hasOwn(pipeline.environments, environment)) continue;
      if (accountOf(pipeline.environments, environment) !== undefined) continue;
      const policy = updatePolicy(pipeline, program, environment);
      if (policy)
        new aws.iam.RolePolicy(
          policyResourceName(program.name, environment),
          { role: identity.roleName, policy: JSON.stringify(policy) },
          { provider: awsProvider },
        );
    }
    const preview = previewPolicy(pipeline, program);
    if (preview)
      new aws.iam.RolePolicy(
        policyResourceName(program.name),
        { role: setup.previewIdentity.roleName, policy: JSON.stringify(preview) },
        { provider: awsProvider },
      );
  }

  return {
    kargoUrl: pulumi.interpolate`https://${install.host}`,
    kargoLoadBalancerHostname: install.loadBalancerHostname,
    ...(install.adminPassword ? { kargoAdminPassword: install.adminPassword } : {}),
    kargoOidcClientId: install.oidcClientId,
    ...(install.certificateArn ? { kargoCertificateArn: install.certificateArn } : {}),
    kargoProject: promotion.namespace,
    stages: promotion.stageNames,
    githubWebhookUrl: webhookUrl,
    githubWebhookSecret: promotion.webhookSecret,
    githubWebhookRegistered: config.githubWebhook,
    // Per environment: what stops its Freight at the preview, and who decides (`stops.<environment>`).
    ...Object.fromEntries(
      Object.keys(pipeline.environments).map((env) => [`stops.${env}`, stopLine(pipeline, env)]),
    ),
  };
};
