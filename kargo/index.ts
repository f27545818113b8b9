// `pulumi up` #3: Kargo, and the whole promotion pipeline declared in pipeline.ts.
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { clusterProvider, platformTags } from "../lib/platform";
import { approverGroups, githubRepository } from "../lib/pipeline/derive";
import { validatePipeline } from "../lib/pipeline/model";
import { loadKargoConfig } from "./config";
import { KargoInstall } from "./kargoInstall";
import { pipeline as definition } from "./pipeline";
import { programPolicy } from "./programPolicy";
import { PromotionPipeline } from "./promotionPipeline";
import { checkAgainstClusterSetup, readClusterSetup } from "./upstream";

export = async () => {
  const config = loadKargoConfig();
  const pipeline = validatePipeline(definition);
  githubRepository(pipeline.source.repoURL); // the stage branches are created through GitHub's API
  const tags = platformTags();

  const setup = await readClusterSetup(config.clusterSetupStack);
  checkAgainstClusterSetup(pipeline, setup);

  const provider = clusterProvider(setup.kubeconfig);
  const awsProvider = new aws.Provider("aws", { region: setup.region as aws.Region });

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
    values: config.kargoValues,
    tags,
  });

  const promotion = new PromotionPipeline(pipeline.project, {
    provider,
    pipeline,
    kargo: install.release,
    argocdNamespace: setup.argocdNamespace,
    argocdProject: setup.argocdProject,
    git: { username: config.gitUsername, token: config.gitToken },
    pulumiAccessToken: setup.pulumiAccessToken,
  });

  // The stacks' IRSA role gets exactly what the promoted program needs.
  new aws.iam.RolePolicy(
    "promoted-program",
    { role: setup.stackRoleName, policy: JSON.stringify(programPolicy(pipeline)) },
    { provider: awsProvider },
  );

  return {
    kargoUrl: pulumi.interpolate`https://${install.host}`,
    kargoLoadBalancerHostname: install.loadBalancerHostname,
    kargoAdminPassword: install.adminPassword,
    kargoOidcClientId: install.oidcClientId,
    ...(install.certificateArn ? { kargoCertificateArn: install.certificateArn } : {}),
    kargoProject: promotion.namespace,
    stages: promotion.stageNames,
  };
};
