// `pulumi up` #3: Kargo, and the whole promotion pipeline declared in pipeline.ts.
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { clusterProvider, platformTags } from "../lib/platform";
import { validatePipeline } from "../lib/pipeline/model";
import { loadKargoConfig } from "./config";
import { KargoInstall } from "./kargoInstall";
import { pipeline as definition } from "./pipeline";
import { previewPolicy, programPolicy } from "./programPolicy";
import { PromotionPipeline } from "./promotionPipeline";
import { checkAgainstClusterSetup, readClusterSetup } from "./upstream";

export = async () => {
  const config = loadKargoConfig();
  const pipeline = validatePipeline(definition);
  const tags = platformTags();

  const setup = await readClusterSetup(config.clusterSetupStack);
  checkAgainstClusterSetup(pipeline, setup);

  const provider = clusterProvider(setup.kubeconfig);
  const awsProvider = new aws.Provider("aws", { region: setup.region as aws.Region });

  const install = new KargoInstall("kargo", {
    provider,
    awsProvider,
    hostname: config.kargoHostname,
    allowedCidrs: config.kargoAllowedCidrs,
    network: setup.network,
    cognito: {
      userPoolId: setup.cognitoUserPoolId,
      issuerUrl: setup.cognitoIssuerUrl,
      adminGroup: setup.cognitoAdminGroup,
    },
    argocdNamespace: setup.argocdNamespace,
    adminAccount: config.kargoAdminAccount,
    values: config.kargoValues,
    tags,
  });

  const promotion = new PromotionPipeline(pipeline.project, {
    provider,
    pipeline,
    kargo: install.release,
    argocdNamespace: setup.argocdNamespace,
    argocdProject: setup.argocdProject,
    git: { username: config.gitUsername, token: config.gitToken, readToken: config.gitReadToken },
    pulumiAccessToken: config.pulumiReadToken ?? setup.pulumiAccessToken,
  });
  if (!config.gitReadToken)
    pulumi.log.warn(
      "kargo:gitReadToken is not set: Argo CD and PKO get the push token (gitToken), though they only read",
    );
  if (!config.pulumiReadToken)
    pulumi.log.warn(
      "kargo:pulumiReadToken is not set: verification reads Pulumi Cloud with the operator's token",
    );

  // Each environment's role gets exactly what the promoted program needs there; previews may only read.
  for (const [environment, identity] of Object.entries(setup.stackIdentities)) {
    if (!(environment in pipeline.environments)) continue;
    new aws.iam.RolePolicy(
      `promoted-program-${environment}`,
      { role: identity.roleName, policy: JSON.stringify(programPolicy(pipeline, environment)) },
      { provider: awsProvider },
    );
  }
  new aws.iam.RolePolicy(
    "promoted-program-preview",
    { role: setup.previewIdentity.roleName, policy: JSON.stringify(previewPolicy(pipeline)) },
    { provider: awsProvider },
  );

  return {
    kargoUrl: pulumi.interpolate`https://${install.host}`,
    kargoLoadBalancerHostname: install.loadBalancerHostname,
    ...(install.adminPassword ? { kargoAdminPassword: install.adminPassword } : {}),
    kargoOidcClientId: install.oidcClientId,
    kargoProject: promotion.namespace,
    stages: promotion.stageNames,
  };
};
