// Argo Events routes what Kargo's open-source edition only records as Kubernetes Events (new Freight, a
// promotion failing before any sync, the approval of a stopped preview) to the notification destinations.
// Installed only when a destination is configured (notifications.ts); the kargo project declares the
// EventSource and Sensor over its pipeline in this namespace (kargo/eventRouter.ts), reading `eventRouter`.
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { HelmAddon, type AddonSpec, type Values } from "../../lib/helmAddon";
import { platformNamespaces } from "../../lib/namespaces";
import { secretKeys, type NotificationDestinations } from "./notifications";

/**
 * The Argo Events release the chart runs (its appVersion), and the module test/argoevents runs its Sensor
 * code at (test/pins-agree.test.ts keeps the three one version).
 */
export const argoEventsVersion = "v1.9.10";

/** The NATS server of the EventBus: one of the versions the chart's controller config offers. */
export const jetStreamVersion = "2.10.10";

/**
 * argo-helm argo-events 2.4.22 (Argo Events v1.9.10). One controller; no admission webhook (the chart enables
 * it only for cluster-wide installs that ask, and nothing but Pulumi writes these objects).
 */
export const argoEvents: AddonSpec = {
  name: "argo-events",
  chart: "argo-events",
  repository: "https://argoproj.github.io/argo-helm",
  version: "2.4.22",
  namespace: platformNamespaces.argoEvents,
  values: {
    crds: { install: true, keep: true },
    controller: { replicas: 1, resources: { requests: { cpu: "10m", memory: "64Mi" } } },
    webhook: { enabled: false },
  },
};

/**
 * The EventBus every EventSource and Sensor of the namespace uses when it names none ("default"). JetStream
 * with one server: Argo Events clusters it only above two replicas (argo-events v1.9.10
 * pkg/reconciler/eventbus/installer/jetstream.go), and its streams default to three replicas (the chart's
 * configs.jetstream.streamConfig), which one server cannot hold, so the stream asks for one. No volume: the
 * server keeps the stream in an emptyDir, so a restart loses only events not yet handed to the Sensor.
 */
export const eventBusSpec = {
  jetstream: {
    version: jetStreamVersion,
    replicas: 1,
    streamConfig: "replicas: 1\nmaxAge: 24h\nmaxBytes: 64MB\n",
    containerTemplate: { resources: { requests: { cpu: "10m", memory: "64Mi" } } },
    reloaderContainerTemplate: { resources: { requests: { cpu: "5m", memory: "16Mi" } } },
    metricsContainerTemplate: { resources: { requests: { cpu: "5m", memory: "16Mi" } } },
  },
};

export const eventBusName = "default";
/** The Secret the Sensor reads the Slack token from (mounted by Argo Events, argo-events pkg/shared/util). */
export const eventRouterSecret = "kargo-events-destinations";

/** What the kargo project reads (the `eventRouter` output): where to declare its EventSource and Sensor. */
export interface EventRouter {
  namespace: string;
  eventBus: string;
  /** The Slack channel and the Secret key of its bot token; absent without Slack. */
  slack?: { channel: string; secret: string; key: string };
  /** Whether a webhook is configured: its URL is the secret output `eventRouterWebhookUrl`. */
  webhook: boolean;
}

export interface ArgoEventsArgs {
  provider: k8s.Provider;
  destinations: NotificationDestinations;
  values?: pulumi.Input<Values>;
}

/** Argo Events, its EventBus, and the Secret of the Slack token, for the configured destinations. */
export class ArgoEvents extends pulumi.ComponentResource {
  readonly router: EventRouter;

  constructor(name: string, args: ArgoEventsArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:cluster-setup:ArgoEvents", name, {}, opts);
    const addon = new HelmAddon(
      argoEvents,
      { provider: args.provider, values: args.values },
      { parent: this },
    );
    const namespace = argoEvents.namespace;
    const after = { parent: this, provider: args.provider, dependsOn: [addon.release] };
    new k8s.apiextensions.CustomResource(
      `${name}-bus`,
      {
        apiVersion: "argoproj.io/v1alpha1",
        kind: "EventBus",
        metadata: { name: eventBusName, namespace },
        spec: eventBusSpec,
      },
      after,
    );
    const slack = args.destinations.slack;
    if (slack)
      new k8s.core.v1.Secret(
        `${name}-destinations`,
        {
          metadata: { name: eventRouterSecret, namespace },
          stringData: { [secretKeys.slackToken]: pulumi.secret(slack.token) },
        },
        after,
      );
    this.router = {
      namespace,
      eventBus: eventBusName,
      ...(slack
        ? { slack: { channel: slack.channel, secret: eventRouterSecret, key: secretKeys.slackToken } }
        : {}),
      webhook: args.destinations.webhook !== undefined,
    };
    this.registerOutputs({});
  }
}
