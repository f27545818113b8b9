// Kargo's own events routed by Argo Events (cluster-setup/addons/argoEvents.ts installs it): an EventSource on
// the project's Events, one Sensor that records who approved a stopped preview and, with a notification
// destination, announces new Freight and promotions failing before any sync (lib/pipeline/events.ts), and
// records the drift the drift checks find from PKO's Events in the stacks namespace (drift-record.ts); the
// least RBAC each needs, and the admission policies that keep those records the Sensor's alone.
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { driftRecordName, driftStages } from "../lib/pipeline/drift-record";
import {
  eventSourceAccount,
  eventSourceName,
  eventSourceSpec,
  sensorAccount,
  sensorName,
  sensorSpec,
} from "../lib/pipeline/events";
import {
  approvalEventAdmission,
  driftEventAdmission,
  driftRecordAdmission,
  serviceAccountUser,
  stopApprovalAdmission,
} from "../lib/pipeline/events-admission";
import type { Pipeline } from "../lib/pipeline/schema";
import type { EventRouterOutput } from "./upstream";

export interface EventRouterArgs {
  provider: k8s.Provider;
  pipeline: Pipeline;
  router: EventRouterOutput;
  /** The webhook's URL (a secret), when one is configured. */
  webhookUrl?: pulumi.Output<string>;
  kargoProjectUrl: pulumi.Input<string>;
  /** Kargo's namespace: its API and webhooks server's ServiceAccounts alone record approvals. */
  kargoNamespace: string;
  /**
   * The project's namespace, as the Kargo Project that creates it outputs it: the router's Roles wait for it
   * alone (a dependency on the whole promotion pipeline would be one on each of its thousands of resources).
   */
  projectNamespace: pulumi.Input<string>;
}

export class EventRouter extends pulumi.ComponentResource {
  constructor(name: string, args: EventRouterArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:kargo:EventRouter", name, {}, opts);
    const p = args.pipeline;
    const { namespace, eventBus } = args.router;
    const o = { parent: this, provider: args.provider };

    const account = (id: string, accountName: string) =>
      new k8s.core.v1.ServiceAccount(`${name}-${id}`, { metadata: { name: accountName, namespace } }, o);
    // Least privilege in the project's namespace: the EventSource reads Events, the Sensor creates ConfigMaps
    // (the admission policy narrows that to the approval records).
    const grant = (
      id: string,
      accountName: string,
      rules: k8s.types.input.rbac.v1.PolicyRule[],
      where: pulumi.Input<string> = args.projectNamespace,
    ) => {
      const role = new k8s.rbac.v1.Role(
        `${name}-${id}`,
        { metadata: { name: accountName, namespace: where }, rules },
        o,
      );
      new k8s.rbac.v1.RoleBinding(
        `${name}-${id}`,
        {
          metadata: { name: accountName, namespace: where },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: role.metadata.name },
          subjects: [{ kind: "ServiceAccount", name: accountName, namespace }],
        },
        o,
      );
    };
    account("source", eventSourceAccount);
    grant("source", eventSourceAccount, [
      { apiGroups: [""], resources: ["events"], verbs: ["get", "list", "watch"] },
    ]);
    // The drift checks' Events, where PKO records them: the stacks namespace (lib/pipeline/drift-record.ts).
    const drift = driftStages(p).map((s) => driftRecordName(s.name));
    if (drift.length > 0)
      grant(
        "source-drift",
        eventSourceAccount,
        [{ apiGroups: [""], resources: ["events"], verbs: ["get", "list", "watch"] }],
        p.stacks.namespace,
      );
    account("sensor", sensorAccount);
    grant("sensor", sensorAccount, [
      { apiGroups: [""], resources: ["configmaps"], verbs: ["create"] },
      // Argo Events' patch reads the drift record, then patches it (drift-record.ts): those names alone.
      ...(drift.length > 0
        ? [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get", "patch"], resourceNames: drift }]
        : []),
    ]);

    // The records are the Sensor's alone, and the Events they are made from Kargo's (approvals) and PKO's
    // (drift) alone.
    const policies = [
      stopApprovalAdmission(p, serviceAccountUser(namespace, sensorAccount)),
      approvalEventAdmission(p, args.kargoNamespace),
      ...(drift.length > 0
        ? [driftRecordAdmission(p, serviceAccountUser(namespace, sensorAccount)), driftEventAdmission(p)]
        : []),
    ].map(({ policy, binding }) => {
      const vap = new k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
        policy.metadata.name,
        { metadata: policy.metadata, spec: policy.spec },
        o,
      );
      new k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
        binding.metadata.name,
        { metadata: binding.metadata, spec: binding.spec },
        { ...o, dependsOn: [vap] },
      );
      return vap;
    });

    // Each drift record, empty until a check finds drift: the record's configMap() reads it, and the Sensor
    // patches it. Its data is the Sensor's: a deploy never resets it.
    for (const record of drift)
      new k8s.core.v1.ConfigMap(
        `${name}-${record}`,
        { metadata: { name: record, namespace: args.projectNamespace } },
        { ...o, dependsOn: policies, ignoreChanges: ["data"] },
      );

    new k8s.apiextensions.CustomResource(
      `${name}-source`,
      {
        apiVersion: "argoproj.io/v1alpha1",
        kind: "EventSource",
        metadata: { name: eventSourceName, namespace },
        spec: eventSourceSpec(p, eventBus),
      },
      o,
    );
    const slack = args.router.slack;
    // The webhook's URL is in the Sensor's spec (Argo Events' http trigger takes no URL from a Secret), so
    // the whole spec stays a Pulumi secret.
    const spec = pulumi
      .all([args.kargoProjectUrl, args.webhookUrl])
      .apply(([url, webhookUrl]) =>
        sensorSpec(p, url, eventBus, { ...(slack ? { slack } : {}), ...(webhookUrl ? { webhookUrl } : {}) }),
      );
    new k8s.apiextensions.CustomResource(
      `${name}-sensor`,
      {
        apiVersion: "argoproj.io/v1alpha1",
        kind: "Sensor",
        metadata: { name: sensorName, namespace },
        spec: args.webhookUrl ? pulumi.secret(spec) : spec,
      },
      { ...o, dependsOn: policies },
    );
    this.registerOutputs({});
  }
}
