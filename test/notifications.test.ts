// Notification destinations are cluster-setup config, their tokens Pulumi secrets; none set means Argo Rollouts
// gets no notification configuration and the plan says so. What each event's message says is sent through
// Argo Rollouts' own recorder and notifications-engine in the Go harness (test/notifications).
import { describe, expect, it } from "vitest";
import {
  notificationTriggers,
  notificationTemplates,
  secretKeys,
  stopOpening,
} from "../cluster-setup/addons/notifications";
import { decision } from "../kargo/verification/run-message.mjs";
import { pipeline as definition } from "../kargo/pipeline";
import { programStages } from "../lib/pipeline/graph";
import { notifyKeys, verificationNotice } from "../lib/pipeline/notify";
import { stageSpec } from "../lib/pipeline/promotion";
import { isProtected, riskPolicy } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import { planError, planProject } from "./helpers";

const release = (plan: Awaited<ReturnType<typeof planProject>>, chart: string) =>
  plan.resources.find((r) => r.type === "kubernetes:helm.sh/v3:Release" && r.inputs.chart === chart)!;

const slack = {
  "cluster-setup:notifySlackChannel": "#infra-changes",
  "cluster-setup:notifySlackToken": "xoxb-1234567890",
};
// The groups that decide some environment's stops, from the definition.
const deciders = [
  ...new Set(Object.values(validatePipeline(definition).environments).flatMap((e) => riskPolicy(e).deciders)),
];
const decider = deciders[0]!;

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
      "a mention that is not one (Slack would read <!channel> as one to everybody)",
      { ...slack, "cluster-setup:notifySlackMentions": { [decider]: "<!channel>" } },
      ["cluster-setup:notifySlackToken"],
      new RegExp(`cluster-setup:notifySlackMentions \\(at ${decider}\\): must be a Slack user group mention`),
    ],
    [
      "a mention for a group that decides no stop",
      { ...slack, "cluster-setup:notifySlackMentions": { "no-such-group": "<!subteam^S0123ABCD>" } },
      ["cluster-setup:notifySlackToken"],
      new RegExp(
        `cluster-setup:notifySlackMentions \\(at no-such-group\\): "no-such-group" decides no stop in kargo/pipeline.ts; allowed: ${deciders.join(", ")}`,
      ),
    ],
    [
      "mentions that are not a map",
      { ...slack, "cluster-setup:notifySlackMentions": ["<!subteam^S0123ABCD>"] },
      ["cluster-setup:notifySlackToken"],
      /cluster-setup:notifySlackMentions: must map a group that decides stops to its Slack mention/,
    ],
    [
      "mentions without a Slack channel",
      {
        "cluster-setup:notifyWebhookUrl": "https://hooks.example.com/x",
        "cluster-setup:notifySlackMentions": { [decider]: "<!subteam^S0123ABCD>" },
      },
      ["cluster-setup:notifyWebhookUrl"],
      /cluster-setup:notifySlackChannel: must be set with cluster-setup:notifySlackMentions/,
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

describe("a stop told from a failure", () => {
  // The run's message as Argo Rollouts ends it with the Job's reason (argo-rollouts v1.9.0 analysis.go).
  const runMessage = (reason: string) =>
    `Metric "pulumi-preview" assessed Failed due to failed (1) > failureLimit (0): "Error Message: ${reason}"`;
  const isStop = (message: string) => new RegExp(stopOpening).test(message);
  const facts = {
    project: "infra",
    freight: "0123456789abcdef0123456789abcdef01234567",
    deciders: ["security-approvers"],
    approveStage: "qa-bucket",
  };

  it("by the opening the Job writes for a stop, and by nothing a failure's reason can hold", () => {
    const { opening, command } = decision(facts);
    expect(isStop(runMessage(`${opening}\n${command}\nthe preview of …`))).toBe(true);
    const forged = runMessage(`Freight ${facts.freight} waits for a decision of x`);
    for (const failure of [
      "the preview of 4f1c2b9e8d7a on org/app/qa failed",
      `Pulumi Cloud gave no usable answer 7 times in a row; last: ${forged}`,
      `no succeeded preview within 15m; ${opening}`,
    ])
      expect(isStop(runMessage(failure)), failure).toBe(false);
    // The trigger sends the stop's message only then, and a failure's otherwise (the Go harness runs it).
    const failed = notificationTriggers["on-analysis-run-failed"]!;
    expect(failed.find((c) => c.send.includes("preview-stopped"))!.when).toContain(
      `matches ${JSON.stringify(stopOpening)}`,
    );
    expect(failed.find((c) => c.send.includes("verification-failed"))!.when).toMatch(/^.+ && !\(.+\)$/);
  });
});
