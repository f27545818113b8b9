// Kargo's own events (new Freight, a promotion failing before any sync, a stopped preview's approval) are
// routed by Argo Events, installed by cluster-setup only with a notification destination, with kargo's
// EventSource and Sensor over the pipeline. The shape of the plan is pinned here; Argo Events' own matcher
// and triggers run over it in the Go harness (test/argoevents).
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { argoEvents, eventBusName, eventRouterSecret } from "../cluster-setup/addons/argoEvents";
import { secretKeys } from "../cluster-setup/addons/notifications";
import { pipeline as definition } from "../kargo/pipeline";
import { parseQuantity } from "../lib/capacity";
import { plannedCapacity } from "../lib/cli/plan/capacity";
import { kubernetesObjects } from "../lib/cli/plan/output";
import { planChain, repoRoot } from "../lib/cli/plan/projects";
import {
  activeKinds,
  eventKinds,
  routedKinds,
  firstGates,
  sensorAccount,
  sensorName,
  sensorSpec,
  stopApprovalStages,
} from "../lib/pipeline/events";
import { programStages } from "../lib/pipeline/graph";
import { DRIFT_OFF, MAX_PROGRAMS } from "../lib/pipeline/schema";
import { largestPipeline } from "./largest-pipeline";
import { approvalRecorders, serviceAccountUser } from "../lib/pipeline/events-admission";
import { kargoChart } from "../kargo/kargoInstall";
import { validatePipeline } from "../lib/pipeline/validate";

const slack = {
  "cluster-setup:notifySlackChannel": "#infra-changes",
  "cluster-setup:notifySlackToken": "xoxb-1234567890",
};
const webhook = { "cluster-setup:notifyWebhookUrl": "https://hooks.example.com/x?key=k" };
const secret = ["cluster-setup:notifySlackToken", "cluster-setup:notifyWebhookUrl"];

type K8sObject = { kind: string; metadata: { name: string; namespace?: string }; [k: string]: unknown };

/** cluster-setup with `overrides`, and kargo planned over it, as `pulumi up` of both would run. */
async function planBoth(overrides: Record<string, unknown>) {
  const plans = await planChain({
    project: "kargo",
    overrides,
    secretKeys: secret.filter((k) => k in overrides),
  });
  const [, setup, kargo] = plans;
  return {
    plans,
    setup: setup!,
    setupObjects: kubernetesObjects(setup!) as K8sObject[],
    kargoObjects: kubernetesObjects(kargo!) as K8sObject[],
  };
}

const release = (plan: Awaited<ReturnType<typeof planBoth>>["setup"], chart: string) =>
  plan.resources.find((r) => r.type === "kubernetes:helm.sh/v3:Release" && r.inputs.chart === chart);

describe("Kargo's events routed by Argo Events", () => {
  const pipeline = validatePipeline(definition);
  // From the definition: every update stage has a drift check unless drift checks are off.
  const driftChecked = programStages(pipeline).filter(
    (s) => s.kind === "update" && pipeline.verification.driftInterval !== DRIFT_OFF,
  );
  const drift = driftChecked.length > 0 ? ["drift-found"] : [];
  const driftTrigger = driftChecked.length > 0 ? ["record-drift"] : [];

  it("without a destination installs the router to record stop approvals only, and the plan says so", async () => {
    const { setup, setupObjects, kargoObjects } = await planBoth({});
    expect(release(setup, argoEvents.chart)).toBeDefined();
    expect(setupObjects.filter((o) => o.kind === "EventBus").map((o) => o.metadata.name)).toEqual([
      eventBusName,
    ]);
    expect(setup.outputs.eventRouter).toEqual({
      namespace: argoEvents.namespace,
      eventBus: eventBusName,
      webhook: false,
    });
    expect(setup.outputs.eventRouterWebhookUrl).toBeNull();
    expect(setup.outputs.notifications).toMatch(/^off, nothing is sent/);
    // No Slack token Secret, no message trigger: only the record of each stopped preview's approval.
    expect(setupObjects.filter((o) => o.metadata.name === eventRouterSecret)).toEqual([]);
    const sensor = kargoObjects.find((o) => o.kind === "Sensor")!.spec as {
      dependencies: { name: string }[];
      triggers: { template: { name: string; k8s?: unknown } }[];
    };
    const records = stopApprovalStages(pipeline).length > 0;
    expect(sensor.dependencies.map((d) => d.name)).toEqual([...(records ? ["stop-approved"] : []), ...drift]);
    expect(sensor.triggers.map((t) => t.template.name)).toEqual([
      ...(records ? ["record-stop-approval"] : []),
      ...driftTrigger,
    ]);
    expect(sensor.triggers.every((t) => t.template.k8s !== undefined)).toBe(true);
    expect(kargoObjects.filter((o) => o.kind === "EventSource")).toHaveLength(1);
  });

  it("declares no EventSource or Sensor when there is nothing to route", () => {
    // A pipeline whose previews never stop, with no destination: nothing to record nor to send.
    const quiet = validatePipeline({
      ...definition,
      environments: Object.fromEntries(
        Object.entries(definition.environments).map(([name, env]) => [
          name,
          { ...env, stopOn: [], stopEveryPreview: false, deciders: undefined, protected: undefined },
        ]),
      ),
    });
    expect(stopApprovalStages(quiet)).toEqual([]);
    expect(routedKinds(quiet, { webhook: false })).toEqual([]);
    expect(routedKinds(quiet, { webhook: true })).toEqual(activeKinds(quiet));
    expect(routedKinds(pipeline, { webhook: false })).toEqual(["stop-approved"]);
  });

  it("installs the pinned chart with our defaults and the user's values merged over them", async () => {
    const { setup } = await planBoth({
      ...webhook,
      "cluster-setup:argoEventsValues": { controller: { resources: { limits: { memory: "256Mi" } } } },
    });
    const r = release(setup, argoEvents.chart)!;
    expect(r.inputs).toMatchObject({
      chart: "argo-events",
      version: "2.4.22",
      repositoryOpts: { repo: "https://argoproj.github.io/argo-helm" },
      namespace: argoEvents.namespace,
    });
    const values = r.inputs.values as { controller: { resources: Record<string, unknown> } };
    expect(values.controller.resources).toEqual({
      requests: (argoEvents.values.controller as { resources: { requests: unknown } }).resources.requests,
      limits: { memory: "256Mi" },
    });
  });

  it("keeps the Slack token in a Secret and the webhook's URL secret in the Sensor's spec", async () => {
    const both = await planBoth({ ...slack, ...webhook });
    const bus = both.setupObjects.find((o) => o.kind === "EventBus")!;
    expect(bus.metadata).toEqual({ name: eventBusName, namespace: argoEvents.namespace });
    const tokenSecret = both.setupObjects.find(
      (o) => o.kind === "Secret" && o.metadata.name === eventRouterSecret,
    )!;
    expect(tokenSecret.stringData).toBe("[secret]");
    expect(both.setup.outputs.eventRouter).toEqual({
      namespace: argoEvents.namespace,
      eventBus: eventBusName,
      slack: { channel: "#infra-changes", secret: eventRouterSecret, key: secretKeys.slackToken },
      webhook: true,
    });
    expect(both.setup.outputs.eventRouterWebhookUrl).toBe("[secret]");
    const sensor = both.kargoObjects.find((o) => o.kind === "Sensor")!;
    expect(sensor.spec).toBe("[secret]");

    // Slack alone: the spec names the Secret, never the token, and needs no secrecy of its own.
    const slackOnly = await planBoth(slack);
    const spec = slackOnly.kargoObjects.find((o) => o.kind === "Sensor")!.spec as {
      dependencies: { name: string }[];
      triggers: { template: { name: string } }[];
    };
    expect(JSON.stringify(spec)).not.toContain("xoxb-");
    expect(spec.dependencies.map((d) => d.name)).toEqual([...activeKinds(pipeline), ...drift]);
    expect(slackOnly.setup.outputs.eventRouterWebhookUrl).toBeNull();
    const names = spec.triggers.map((t) => t.template.name);
    expect(names).toEqual([
      ...activeKinds(pipeline).map((k) => (k === "stop-approved" ? "record-stop-approval" : `${k}-slack`)),
      ...driftTrigger,
    ]);
  });

  it("grants the EventSource and the Sensor only what they need, and binds the records' policy", async () => {
    const { kargoObjects } = await planBoth(webhook);
    const roles = kargoObjects.filter(
      (o) => o.kind === "Role" && o.metadata.name.startsWith("kargo-events-"),
    );
    const readEvents = [{ apiGroups: [""], resources: ["events"], verbs: ["get", "list", "watch"] }];
    // Events where Kargo and PKO record them (PKO: the drift checks' Stacks, in the stacks namespace); the
    // drift records by name alone.
    expect(
      Object.fromEntries(roles.map((r) => [`${r.metadata.namespace}/${r.metadata.name}`, r.rules])),
    ).toEqual({
      [`${pipeline.project}/kargo-events-source`]: readEvents,
      ...(driftChecked.length > 0
        ? { [`${pipeline.stacks.namespace}/kargo-events-source`]: readEvents }
        : {}),
      [`${pipeline.project}/kargo-events-sensor`]: [
        { apiGroups: [""], resources: ["configmaps"], verbs: ["create"] },
        ...(driftChecked.length > 0
          ? [
              {
                apiGroups: [""],
                resources: ["configmaps"],
                verbs: ["get", "patch"],
                resourceNames: driftChecked.map((s) => `drift-${s.name}`),
              },
            ]
          : []),
      ],
    });
    // Each drift record exists, empty, for the record's configMap() and the Sensor's patch.
    expect(
      kargoObjects
        .filter((o) => o.kind === "ConfigMap" && o.metadata.name.startsWith("drift-"))
        .map((o) => [o.metadata.namespace, o.metadata.name, o.data]),
    ).toEqual(driftChecked.map((s) => [pipeline.project, `drift-${s.name}`, undefined]));
    const policy = kargoObjects.find(
      (o) =>
        o.kind === "ValidatingAdmissionPolicy" &&
        o.metadata.name === `${pipeline.project}-stop-approval-records`,
    )!;
    expect(JSON.stringify(policy.spec)).toContain(serviceAccountUser(argoEvents.namespace, sensorAccount));
    expect(
      kargoObjects.find(
        (o) => o.kind === "ValidatingAdmissionPolicyBinding" && o.metadata.name === policy.metadata.name,
      ),
    ).toBeDefined();
    const events = kargoObjects.find(
      (o) =>
        o.kind === "ValidatingAdmissionPolicy" &&
        o.metadata.name === `${pipeline.project}-freight-approved-events`,
    )!;
    for (const user of approvalRecorders(kargoChart.namespace))
      expect(JSON.stringify(events.spec)).toContain(user);
    expect(
      kargoObjects.find(
        (o) => o.kind === "ValidatingAdmissionPolicyBinding" && o.metadata.name === events.metadata.name,
      ),
    ).toBeDefined();
  });

  it("keeps the largest pipeline's Sensor within what Argo Events can hand its pod", () => {
    // The controller passes the Sensor (name, namespace, spec) to its pod as one base64 environment variable
    // (argo-events v1.9.10 pkg/reconciler/sensor/resource.go, SENSOR_OBJECT); Linux execs none over 128 KiB
    // (MAX_ARG_STRLEN). Half of that, so a fork's longer names and more stages still fit.
    const largest = largestPipeline();
    const spec = sensorSpec(largest, `https://${"k".repeat(253)}/project/${largest.project}`, eventBusName, {
      slack: { channel: "#infra-changes", secret: eventRouterSecret, key: secretKeys.slackToken },
      webhookUrl: `https://hooks.example.com/${"x".repeat(1970)}`,
    });
    const object = JSON.stringify({ metadata: { namespace: argoEvents.namespace, name: sensorName }, spec });
    const variable = `SENSOR_OBJECT=${Buffer.from(object).toString("base64")}`;
    expect(programStages(largest).length).toBeGreaterThanOrEqual(MAX_PROGRAMS * 2);
    expect(variable.length).toBeLessThan(64 * 1024);
  });

  it("derives what it matches from the pipeline", () => {
    expect(Object.keys(eventKinds)).toEqual(["freight-created", "promotion-failed", "stop-approved"]);
    expect(firstGates(pipeline).length).toBeGreaterThan(0);
    for (const s of stopApprovalStages(pipeline)) expect(s.kind).toBe("update");
  });
});

describe("what Argo Events adds to the nodes", () => {
  it("is in the capacity figures with the default configuration: its pods and their requests, from the plan", async () => {
    const both = await planBoth({});
    const { setup, setupObjects, kargoObjects } = both;
    const requests: { cpu?: string; memory?: string }[] = [];
    const values = release(setup, argoEvents.chart)!.inputs.values as {
      controller: { replicas: number; resources: { requests: { cpu: string; memory: string } } };
    };
    for (let i = 0; i < values.controller.replicas; i++) requests.push(values.controller.resources.requests);
    const bus = setupObjects.find((o) => o.kind === "EventBus")!.spec as {
      jetstream: { replicas: number } & Record<string, { resources?: { requests: object } } | number>;
    };
    const containers = ["containerTemplate", "reloaderContainerTemplate", "metricsContainerTemplate"];
    let pods = values.controller.replicas + bus.jetstream.replicas;
    for (let i = 0; i < bus.jetstream.replicas; i++)
      for (const c of containers)
        requests.push((bus.jetstream[c] as { resources: { requests: object } }).resources.requests);
    for (const kind of ["EventSource", "Sensor"]) {
      const spec = kargoObjects.find((o) => o.kind === kind)!.spec as {
        template: { container: { resources: { requests: object } } };
      };
      requests.push(spec.template.container.resources.requests);
      pods++;
    }
    const cpu = requests.reduce((n, r) => n + parseQuantity(r.cpu, "cpu"), 0);
    const memory = requests.reduce((n, r) => n + parseQuantity(r.memory, "memory"), 0);
    const doc = fs
      .readFileSync(path.join(repoRoot, "docs", "capacity-and-cost.md"), "utf8")
      .replace(/\s+/g, " ");
    expect(doc).toContain(`Its ${pods} pods (its controller`);
    expect(doc).toContain(`requesting ${cpu}m CPU and ${memory} MiB together`);
    // The capacity table counts every one of them (test/capacity.test.ts holds the table to the figures).
    const counted = plannedCapacity(both.plans, validatePipeline(definition)).groups.filter(
      (g) => g.owner === argoEvents.name,
    );
    expect(counted.reduce((n, g) => n + g.replicas, 0)).toBe(pods);
    expect(counted.reduce((n, g) => n + g.replicas * g.requests.cpu, 0)).toBe(cpu);
    expect(counted.reduce((n, g) => n + g.replicas * g.requests.memory, 0)).toBe(memory);
    // With a webhook the Sensor's spec is a secret in the plan: its pod is still counted, at our requests.
    const hidden = await planBoth(webhook);
    const withWebhook = plannedCapacity(hidden.plans, validatePipeline(definition)).groups.filter(
      (g) => g.owner === argoEvents.name,
    );
    expect(withWebhook).toEqual(counted);
  });
});
