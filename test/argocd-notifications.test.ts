// A stage that fails before its verification (its Application's sync fails, its Stack goes Degraded) is
// told through Argo CD's notifications, to the destinations notify's config keys name, with the same Secret
// keys and notifiers as Argo Rollouts'; each stage's Application carries its facts and, only with a
// destination, the subscriptions cluster-setup exports. The messages themselves are sent through
// notifications-engine's controller at Argo CD's pin in the Go harness (test/argocdnotify).
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { argoCdTemplates, argoCdTriggers } from "../cluster-setup/addons/argoCdNotifications";
import { secretKeys, webhookName } from "../cluster-setup/addons/notifications";
import { pipeline as definition } from "../kargo/pipeline";
import { planProgram, type ProgramPlan } from "../lib/cli/plan/harness";
import { planChain, readStackConfig, repoRoot } from "../lib/cli/plan/projects";
import { kubernetesObjects } from "../lib/cli/plan/output";
import { programStages } from "../lib/pipeline/graph";
import { stackObjectName } from "../lib/pipeline/names";
import { applicationNotice, notifyKeys } from "../lib/pipeline/notify";
import { validatePipeline } from "../lib/pipeline/validate";

const destinations = {
  "cluster-setup:notifySlackChannel": "#infra-changes",
  "cluster-setup:notifySlackToken": "xoxb-1234567890",
  "cluster-setup:notifyWebhookUrl": "https://hooks.example.com/x?key=k",
};
const secret = ["cluster-setup:notifySlackToken", "cluster-setup:notifyWebhookUrl"];

const release = (plan: ProgramPlan, chart: string) =>
  plan.resources.find((r) => r.type === "kubernetes:helm.sh/v3:Release" && r.inputs.chart === chart)!;
type Values = {
  notifications: {
    enabled: boolean;
    secret?: { items: Record<string, unknown> };
    notifiers?: Record<string, string>;
    templates?: Record<string, string>;
    triggers?: Record<string, string>;
  };
  configs: { params?: Record<string, string> };
};

/** cluster-setup with `overrides`, and kargo planned over it, as `pulumi up` of both would run. */
async function planBoth(overrides: Record<string, unknown>, secretKeys: string[]) {
  const [, setup, kargo] = await planChain({ project: "kargo", overrides, secretKeys });
  const apps = (
    kubernetesObjects(kargo!) as { kind: string; metadata: { name: string; annotations: object } }[]
  ).filter((o) => o.kind === "Application");
  return { setup: setup!, apps };
}

describe("a stage failing before its verification (Argo CD notifications)", () => {
  const pipeline = validatePipeline(definition);

  it("runs no notification controller and subscribes nothing without a destination", async () => {
    const { setup, apps } = await planBoth({}, []);
    const values = release(setup, "argo-cd").inputs.values as Values;
    expect(values.notifications).toEqual({ enabled: false });
    expect(values.configs.params ?? {}).not.toHaveProperty("controller.resource.health.persist");
    expect(setup.outputs.argocdSubscriptions).toEqual({});
    expect(apps.length).toBe(programStages(pipeline).length);
    for (const app of apps)
      expect(
        Object.keys(app.metadata.annotations).filter((k) => k.startsWith("notifications.argoproj.io/")),
      ).toEqual([]);
  });

  it("subscribes nothing over a cluster-setup from before the subscriptions output", async () => {
    const [cluster, setup] = await planChain({ project: "cluster-setup" });
    const { argocdSubscriptions, ...older } = setup!.upstream.outputs;
    expect(argocdSubscriptions).toEqual({});
    const config = readStackConfig("kargo");
    const kargo = await planProgram({
      projectDir: path.join(repoRoot, "kargo"),
      project: "kargo",
      stack: config.stack,
      config: config.values,
      secretKeys: config.secretKeys,
      upstream: { cluster: cluster!.upstream, "cluster-setup": { ...setup!.upstream, outputs: older } },
    });
    const apps = (kubernetesObjects(kargo) as { kind: string; metadata: { annotations: object } }[]).filter(
      (o) => o.kind === "Application",
    );
    expect(apps.length).toBe(programStages(pipeline).length);
    for (const app of apps)
      expect(
        Object.keys(app.metadata.annotations).some((k) => k.startsWith("notifications.argoproj.io/")),
      ).toBe(false);
  });

  it("with destinations, configures Argo CD with the same Secret keys and notifiers, and subscribes every stage's Application", async () => {
    const { setup, apps } = await planBoth(destinations, secret);
    const values = release(setup, "argo-cd").inputs.values as Values;
    const rollouts = (release(setup, "argo-rollouts").inputs.values as Values).notifications;
    const n = values.notifications;
    expect(n.enabled).toBe(true);
    // One place: the same Secret items (each a Pulumi secret) and notifiers as Argo Rollouts' notifications.
    expect(n.secret!.items).toEqual({
      [secretKeys.slackToken]: "[secret]",
      [secretKeys.webhookUrl]: "[secret]",
    });
    expect(n.notifiers).toEqual(rollouts.notifiers);
    expect(JSON.stringify(setup.resources)).not.toContain("xoxb-1234567890");
    expect(JSON.stringify(setup.resources)).not.toContain("hooks.example.com");
    expect(Object.keys(n.templates!).sort()).toEqual(argoCdTemplates.map((t) => `template.${t}`).sort());
    expect(Object.keys(n.triggers!).sort()).toEqual(
      Object.keys(argoCdTriggers)
        .map((t) => `trigger.${t}`)
        .sort(),
    );
    // The Degraded message reads each resource's health, which Argo CD v3 keeps in the status only so.
    expect(values.configs.params).toMatchObject({ "controller.resource.health.persist": "true" });

    const subscriptions = Object.fromEntries(
      Object.keys(argoCdTriggers).flatMap((trigger) => [
        [
          `notifications.argoproj.io/subscribe.${trigger}.slack`,
          destinations["cluster-setup:notifySlackChannel"],
        ],
        [`notifications.argoproj.io/subscribe.${trigger}.${webhookName}`, ""],
      ]),
    );
    expect(setup.outputs.argocdSubscriptions).toEqual(subscriptions);
    for (const s of programStages(pipeline)) {
      const app = apps.find((a) => a.metadata.name === stackObjectName(pipeline, s.name))!;
      expect(app.metadata.annotations).toEqual({
        "kargo.akuity.io/authorized-stage": `${pipeline.project}:${s.name}`,
        ...applicationNotice(pipeline, s),
        [notifyKeys.kargoProjectUrl]: expect.stringMatching(
          new RegExp(`^https://.+/project/${pipeline.project}$`),
        ),
        ...subscriptions,
      });
      expect(app.metadata.annotations).toMatchObject({
        [notifyKeys.stage]: s.name,
        [notifyKeys.program]: s.program,
        [notifyKeys.environment]: s.environment,
      });
    }
  });
});
