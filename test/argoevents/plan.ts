// What test/argoevents (Go) runs Argo Events over: cluster-setup planned with a Slack channel and a webhook
// (the given secrets, as `pulumi config set --secret` would hand them over), kargo planned over it, and the
// pipeline facts the messages must name, derived from the definition. Prints one JSON document on stdout.
import { pipeline as definition } from "../../kargo/pipeline";
import { kubernetesObjects } from "../../lib/cli/plan/output";
import { planChain } from "../../lib/cli/plan/projects";
import { driftStackManifest, driftStages } from "../../lib/pipeline/drift";
import { programStages, runStages } from "../../lib/pipeline/graph";
import { notifyKeys } from "../../lib/pipeline/notify";
import { stackManifest } from "../../lib/pipeline/stack-manifest";
import { validatePipeline } from "../../lib/pipeline/validate";

async function main() {
  const [slackChannel, slackToken, webhookUrl] = process.argv.slice(2);
  const overrides: Record<string, unknown> = {
    ...(slackChannel ? { "cluster-setup:notifySlackChannel": slackChannel } : {}),
    ...(slackToken ? { "cluster-setup:notifySlackToken": slackToken } : {}),
    ...(webhookUrl ? { "cluster-setup:notifyWebhookUrl": webhookUrl } : {}),
  };
  const secretKeys = ["cluster-setup:notifySlackToken", "cluster-setup:notifyWebhookUrl"].filter(
    (k) => k in overrides,
  );
  const [, setup, kargo] = await planChain({ project: "kargo", overrides, secretKeys, revealSecrets: true });
  const p = validatePipeline(definition);
  process.stdout.write(
    JSON.stringify({
      setup: kubernetesObjects(setup!),
      kargo: kubernetesObjects(kargo!),
      project: p.project,
      // From the definition and the plan, not from lib/pipeline/events.ts, which is under test: the gates the
      // Warehouse feeds as declared, and the update stage each stopping preview names to its deciders.
      firstGates: p.stages.flatMap((s) =>
        s.kind === "gate" && s.from === "warehouse" ? [{ gate: s.name, approvers: s.approvers }] : [],
      ),
      stopApprovalStages: [
        ...new Set(
          kubernetesObjects(kargo).flatMap((o) => {
            const stage = o as {
              kind: string;
              spec?: { verification?: { analysisRunMetadata?: { annotations?: Record<string, string> } } };
            };
            const to =
              stage.kind === "Stage"
                ? stage.spec?.verification?.analysisRunMetadata?.annotations?.[notifyKeys.approveStage]
                : undefined;
            return to ? [to] : [];
          }),
        ),
      ],
      programStages: programStages(p).map((s) => ({
        name: s.name,
        program: s.program,
        environment: s.environment,
      })),
      gates: runStages(p).flatMap((s) => (s.kind === "gate" ? [s.name] : [])),
      // The Stacks PKO records Events on, as the stage branches hold them: each drift check's, with its
      // update stage and that stage's own Stack beside it.
      driftChecks: driftStages(p).map((s) => {
        const drift = driftStackManifest(p, s).metadata;
        return {
          stage: s.name,
          stack: drift.name,
          namespace: drift.namespace,
          own: stackManifest(p, s).metadata.name,
        };
      }),
    }),
  );
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
