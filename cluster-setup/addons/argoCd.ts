import * as fs from "node:fs";
import * as path from "node:path";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { argocd } from "../../lib/crds";
import { HelmAddon, type AddonSpec, type Values } from "../../lib/helmAddon";
import { platformNamespaces } from "../../lib/namespaces";

/**
 * Health of `pulumi.com/Stack` for Argo CD, which bundles none before v3.6. Kept as a Lua file so tests run
 * the very script the chart gets.
 */
export const stackHealthCheck = fs.readFileSync(path.join(__dirname, "stack-health.lua"), "utf8");

export const argoCdChart = {
  // Release "argocd" with the chart's nameOverride gives the usual names: argocd-server, argocd-repo-server.
  name: "argocd",
  chart: "argo-cd",
  repository: "https://argoproj.github.io/argo-helm",
  version: "10.1.1",
  namespace: platformNamespaces.argoCd,
} as const;

export interface ArgoCdArgs {
  provider: k8s.Provider;
  /** bcrypt hash of the `admin` password. */
  adminPasswordHash: pulumi.Input<string>;
  /** The one repository Applications of the stacks project may sync from (the one holding `stacks/`). */
  stacksRepoURL: string;
  /** The one namespace they may deploy to. */
  stacksNamespace: string;
  /** Name of that AppProject. */
  projectName: string;
  /**
   * The chart's `notifications` values (argoCdNotifications.ts): `{ enabled: false }` without a destination.
   * With one, Argo CD also keeps each resource's health in the Application's status, where the Degraded
   * message reads the Stack's health message from (argo-cd v3.4.4 controller.resource.health.persist).
   */
  notifications: Values;
  values?: pulumi.Input<Values>;
}

/** Argo CD with a Stack health check, and an AppProject confined to the stacks repository and namespace. */
export class ArgoCd extends pulumi.ComponentResource {
  readonly namespace: string = argoCdChart.namespace;
  readonly projectName: pulumi.Output<string>;

  constructor(name: string, args: ArgoCdArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:cluster-setup:ArgoCd", name, {}, opts);
    const spec: AddonSpec = {
      ...argoCdChart,
      values: {
        // Kargo and the CLI are the way in; no SSO broker is needed inside Argo CD.
        dex: { enabled: false },
        // Two t4g.medium nodes hold the platform and six workspaces (test/capacity.test.ts): no pods for
        // what the platform never uses (ApplicationSets), and requests that say what each
        // component needs, so the scheduler does not pack workspaces onto memory that is already in use.
        // Notifications run only when a destination is configured (a stage failing before its verification).
        applicationSet: { replicas: 0 },
        notifications: args.notifications,
        controller: { resources: { requests: { cpu: "100m", memory: "256Mi" } } },
        repoServer: { resources: { requests: { cpu: "50m", memory: "128Mi" } } },
        server: { resources: { requests: { cpu: "50m", memory: "128Mi" } } },
        redis: { resources: { requests: { cpu: "20m", memory: "64Mi" } } },
        configs: {
          cm: {
            "admin.enabled": true,
            // Said, not left to the default: the Stack admission policy (lib/pipeline/admission.ts) reads the
            // Application from the tracking annotation Argo CD writes on every object it applies.
            "application.resourceTrackingMethod": "annotation",
            "resource.customizations.health.pulumi.com_Stack": stackHealthCheck,
          },
          ...(args.notifications.enabled ? { params: { "controller.resource.health.persist": "true" } } : {}),
          secret: {
            argocdServerAdminPassword: pulumi.secret(args.adminPasswordHash),
            argocdServerAdminPasswordMtime: "2026-01-01T00:00:00Z",
          },
        },
      },
    };
    const addon = new HelmAddon(spec, { provider: args.provider, values: args.values }, { parent: this });

    const project = new argocd.AppProject(
      `${name}-${args.projectName}`,
      {
        metadata: { name: args.projectName, namespace: argoCdChart.namespace },
        spec: {
          description: "PKO Stacks promoted by Kargo, one Application per pipeline stage",
          sourceRepos: [args.stacksRepoURL],
          destinations: [{ server: "https://kubernetes.default.svc", namespace: args.stacksNamespace }],
          // Applications of this project may create Stacks and nothing else, and nothing cluster-scoped.
          clusterResourceWhitelist: [],
          namespaceResourceWhitelist: [{ group: "pulumi.com", kind: "Stack" }],
        },
      },
      { parent: this, provider: args.provider, dependsOn: [addon.release] },
    );
    this.projectName = project.metadata.name;
    this.registerOutputs({ projectName: this.projectName });
  }
}
