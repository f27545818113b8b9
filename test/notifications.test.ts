// Notification destinations are cluster-setup config, their tokens Pulumi secrets; none set means Argo Rollouts
// gets no notification configuration and the plan says so. What each event's message says is sent through
// Argo Rollouts' own recorder and notifications-engine in the Go harness (test/notifications).
import { describe, expect, it } from "vitest";
import {
  notificationTriggers,
  notificationTemplates,
  secretKeys,
} from "../cluster-setup/addons/notifications";
import { pipeline as definition } from "../kargo/pipeline";
import { programStages } from "../lib/pipeline/graph";
import { notifyKeys, verificationNotice } from "../lib/pipeline/notify";
import { stageSpec } from "../lib/pipeline/promotion";
import { isProtected, riskPolicy } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import { planError, planProject } from "./helpers";

const release = (plan: Awaited<ReturnType<typeof planProject>>, chart: string) =>
  plan.resources.find((r) => r.type === "kubernetes:helm.sh/v3:Release" && r.inputs.chart === chart)!;

describe("notification destinations (cluster-setup)", () => {
  it.each([
    [
      "a channel without a token",
      { "cluster-setup:notifySlackChannel": "#infra" },
      [],
      /cluster-setup:notifySlackToken: must be set with cluster-setup:notifySlackChannel/,
    ],
    [
      "a token without a channel",
      { "cluster-setup:notifySlackToken": "xoxb-1234567890" },
      ["cluster-setup:notifySlackToken"],
      /cluster-setup:notifySlackChannel: must be set with cluster-setup:notifySlackToken/,
    ],
    [
      "a channel that is not a Slack channel",
      {
        "cluster-setup:notifySlackChannel": "#Infra Changes",
        "cluster-setup:notifySlackToken": "xoxb-1234567890",
      },
      ["cluster-setup:notifySlackToken"],
      /cluster-setup:notifySlackChannel: must be a Slack channel name/,
    ],
    [
      "a webhook that is not https",
      { "cluster-setup:notifyWebhookUrl": "http://hooks.example.com/x" },
      ["cluster-setup:notifyWebhookUrl"],
      /cluster-setup:notifyWebhookUrl: must be an https:\/\/ URL/,
    ],
    [
      "a webhook URL set in the clear",
      { "cluster-setup:notifyWebhookUrl": "https://hooks.example.com/x" },
      [],
      /cluster-setup:notifyWebhookUrl: must be encrypted as it's secret/,
    ],
  ])("refuses %s, naming the key", async (_, overrides, secrets, message) => {
    const error = await planError("cluster-setup", overrides, secrets);
    expect(error.message).toMatch(message);
    expect(error.message).not.toContain("hooks.example.com");
  });

  it("configures nothing and says so when no destination is set", async () => {
    const plan = await planProject("cluster-setup", {});
    expect(release(plan, "argo-rollouts").inputs.values).not.toHaveProperty("notifications");
    expect(String(plan.outputs.notifications)).toMatch(/^off, nothing is sent/);
  });

  it("subscribes every destination to every trigger, each token a secret of the notification Secret", async () => {
    const plan = await planProject(
      "cluster-setup",
      {
        "cluster-setup:notifySlackChannel": "#infra-changes",
        "cluster-setup:notifySlackToken": "xoxb-1234567890",
        "cluster-setup:notifyWebhookUrl": "https://hooks.example.com/x?key=k",
      },
      ["cluster-setup:notifySlackToken", "cluster-setup:notifyWebhookUrl"],
    );
    const values = release(plan, "argo-rollouts").inputs.values as {
      notifications: {
        secret: { items: unknown };
        subscriptions: unknown;
        templates: Record<string, string>;
      };
    };
    const n = values.notifications;
    expect(n.secret.items).toEqual({
      [secretKeys.slackToken]: "[secret]",
      [secretKeys.webhookUrl]: "[secret]",
    });
    expect(JSON.stringify(plan.resources)).not.toContain("hooks.example.com");
    expect(JSON.stringify(plan.resources)).not.toContain("xoxb-1234567890");
    expect(n.subscriptions).toEqual([
      {
        recipients: ["slack:#infra-changes", "pipeline-webhook"],
        triggers: Object.keys(notificationTriggers),
      },
    ]);
    expect(Object.keys(n.templates).sort()).toEqual(notificationTemplates.map((t) => `template.${t}`).sort());
    expect(String(plan.outputs.notifications)).toBe("to Slack channel #infra-changes and the webhook");
  });
});

describe("what each stage's verification runs carry for the messages", () => {
  const pipeline = validatePipeline(definition);

  it("names the stage, and for a protected preview who may approve and where", () => {
    for (const s of programStages(pipeline)) {
      const notice = verificationNotice(pipeline, s);
      expect(stageSpec(pipeline, s).verification?.analysisRunMetadata?.annotations).toEqual(notice);
      expect(notice[notifyKeys.stage]).toBe(s.name);
      const env = pipeline.environments[s.environment]!;
      if (s.kind === "preview" && isProtected(env)) {
        // The environment's deciders (its old destructiveChangeApprovers included), never none.
        expect(notice[notifyKeys.approvers]).toBe(riskPolicy(env).deciders.join(", "));
        expect(notice[notifyKeys.approvers]).not.toBe("");
        const update = programStages(pipeline).find((u) => u.name === notice[notifyKeys.approveStage]);
        expect(update).toMatchObject({ kind: "update", program: s.program, environment: s.environment });
      } else expect(notice).not.toHaveProperty(notifyKeys.approvers);
    }
  });

  it("names the gates Freight reaches after an environment, with their approvers", () => {
    const gates = pipeline.stages.filter((g) => g.kind === "gate" && g.from !== "warehouse");
    for (const g of gates) {
      const feeding = programStages(pipeline).filter(
        (s) => s.kind === "update" && g.from !== "warehouse" && g.from.includes(s.declared),
      );
      // Announced by the programs nothing depends on (the last to pass), not by the ones before them.
      const last = feeding.filter((s) => !pipeline.programs.some((x) => x.dependsOn.includes(s.program)));
      expect(last.length).toBeGreaterThan(0);
      for (const s of feeding.filter((x) => !last.includes(x)))
        expect(verificationNotice(pipeline, s)).not.toHaveProperty(notifyKeys.nextGates);
      for (const s of last)
        expect(verificationNotice(pipeline, s)[notifyKeys.nextGates]).toContain(
          `${g.name} (${g.kind === "gate" ? g.approvers.join(", ") : ""})`,
        );
    }
  });
});
