// What the verification templates are made of. What they decide is run for real: test/analysis drives every
// AnalysisTemplate of the plan through Argo Rollouts v1.9.0's analysis controller and job metric provider,
// running each Job's script (kargo/verification/verify.mjs) with node against a Pulumi Cloud stand-in
// (`npm run test:engines`).
import { expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { programStages } from "../lib/pipeline/graph";
import { names } from "../lib/pipeline/names";
import { verificationServiceAccount } from "../lib/pipeline/verification-access";
import { stageSpec } from "../lib/pipeline/promotion";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { repoRoot } from "../lib/cli/plan/projects";
import {
  analysisTemplateSpec,
  pulumiApiUrl,
  verificationBackoffLimit,
  verificationContainerName,
  verificationScriptKey,
  verificationScripts,
  verificationVerdictExitCodes,
  type AnalysisTemplateKind,
} from "../lib/pipeline/verification";
import { PULUMI_CLOUD_API, RISK_CLASSES, VERIFICATION_IMAGE, type Pipeline } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import { withExtraProgram } from "./kargo-support";

const pipeline = validatePipeline(definition);
const kinds: AnalysisTemplateKind[] = ["update", "preview"];
const metricsOf = (kind: AnalysisTemplateKind, p: Pipeline = pipeline) =>
  analysisTemplateSpec(p, kind).metrics!;
const metrics = (p: Pipeline = pipeline) => kinds.flatMap((k) => metricsOf(k, p));
const jobOf = (m: ReturnType<typeof metrics>[number]) => m.provider.job!.spec;
const containerOf = (m: ReturnType<typeof metrics>[number]) => jobOf(m).template.spec!.containers[0]!;
const envOf = (m: ReturnType<typeof metrics>[number]) =>
  Object.fromEntries(containerOf(m).env!.map((e) => [e.name, e.value ?? e.valueFrom]));
const seconds = (d: string) =>
  Number(d.slice(0, -1)) * { s: 1, m: 60, h: 3600 }[d.slice(-1) as "s" | "m" | "h"];

it("passes the promoted commit to every verification as a quoted string, so an all-digit ID stays a string", () => {
  // Kargo parses an unquoted expression result that looks like a number into a number, and then refuses it
  // as an AnalysisRun argument (akuity/kargo v1.11.2 pkg/rollouts/analysis_run_builder.go).
  const args = programStages(pipeline).flatMap((s) => stageSpec(pipeline, s).verification!.args!);
  const commits = args.filter((a) => a.name === "commit").map((a) => a.value);
  expect(commits).toHaveLength(programStages(pipeline).length);
  for (const value of commits)
    expect(value).toBe(`\${{ quote(commitFrom("${pipeline.source.repoURL}").ID) }}`);
  for (const m of metrics()) expect(envOf(m).COMMIT).toBe("{{args.commit}}");
});

it("has each program stage look for its own program's operation on its environment's stack, whatever the number of programs", () => {
  for (const p of [pipeline, withExtraProgram(pipeline)]) {
    for (const s of programStages(p)) {
      const args = Object.fromEntries(stageSpec(p, s).verification!.args!.map((a) => [a.name, a.value]));
      expect(args.project, s.name).toBe(p.programs.find((x) => x.name === s.program)!.project);
      expect(args.stack, s.name).toBe(p.environments[s.environment]!.pulumiStack);
    }
    // No two programs' stages of one declared stage look at the same stack.
    const looked = programStages(p).map((s) => {
      const args = stageSpec(p, s).verification!.args!;
      return `${s.declared} ${args.find((a) => a.name === "project")!.value}/${args.find((a) => a.name === "stack")!.value}`;
    });
    expect(new Set(looked).size).toBe(looked.length);
  }
  // The templates leave the project to the stage: every one declares it without a value.
  for (const kind of kinds)
    expect(analysisTemplateSpec(pipeline, kind).args!.find((a) => a.name === "project")).toEqual({
      name: "project",
    });
});

it("verifies with one Job per template: the operation, and for a preview what its stage says stops it", () => {
  expect(metricsOf("update").map((m) => m.name)).toEqual(["pulumi-update"]);
  expect(metricsOf("preview").map((m) => m.name)).toEqual(["pulumi-preview"]);
  for (const kind of kinds) for (const m of metricsOf(kind)) expect(envOf(m).OPERATION).toBe(kind);
});

it("runs the committed script from the verification ConfigMap with node, in the pinned image", () => {
  expect(pipeline.verification.image).toBe(VERIFICATION_IMAGE);
  expect(VERIFICATION_IMAGE).toMatch(/^node:\d+\.\d+\.\d+-/);
  const custom = validatePipeline({
    ...definition,
    verification: { image: "registry.example.com/node:22.20.0" },
  });
  for (const m of metrics(custom)) expect(containerOf(m).image).toBe("registry.example.com/node:22.20.0");
  for (const m of metrics()) {
    const pod = jobOf(m).template.spec!;
    const [mount] = containerOf(m).volumeMounts!;
    expect(pod.volumes).toEqual([{ name: mount!.name, configMap: { name: names.verificationScript } }]);
    expect(mount!.readOnly).toBe(true);
    expect(containerOf(m).command).toEqual(["node", `${mount!.mountPath}/${verificationScriptKey}`]);
  }
});

it("polls every verification.interval until the stage's timeout, one page of verification.pageSize per request", () => {
  for (const kind of kinds) {
    const timeout =
      kind === "update" ? pipeline.verification.updateTimeout : pipeline.verification.previewTimeout;
    for (const m of metricsOf(kind)) {
      expect(envOf(m)).toMatchObject({
        INTERVAL: pipeline.verification.interval,
        TIMEOUT: timeout,
        PAGE_SIZE: String(pipeline.verification.pageSize),
      });
      expect(m.initialDelay).toBe(pipeline.verification.initialDelay);
      // The Job outlives the script's own timeout only by the time a pod takes to start, so the script's
      // reason (not a bare DeadlineExceeded) is what a user reads.
      const deadline = jobOf(m).activeDeadlineSeconds!;
      expect(deadline).toBeGreaterThan(seconds(timeout));
      expect(deadline).toBeLessThanOrEqual(seconds(timeout) + 600);
    }
  }
  const slow = validatePipeline({ ...definition, verification: { interval: "30s", previewTimeout: "1h" } });
  const [m] = metricsOf("preview", slow);
  expect(envOf(m!)).toMatchObject({ INTERVAL: "30s", TIMEOUT: "1h" });
});

it("takes one measurement per metric, so Rollouts never garbage-collects another metric's running Job", () => {
  // job.go GarbageCollect deletes the run's oldest Jobs whatever their metric once a metric holds more
  // measurements than its limit (10 by default, analysis.go DefaultMeasurementHistoryLimit); erroring
  // creations add one each before the run ends in Error.
  for (const m of metrics()) {
    expect(m.count).toBe(1);
    expect(m.failureLimit).toBe(0);
    expect(1 + Number(m.consecutiveErrorLimit) + 1).toBeLessThanOrEqual(10);
  }
  for (const kind of kinds) expect(analysisTemplateSpec(pipeline, kind).measurementRetention).toBeUndefined();
});

it("hands each Job the stage's stack and the pipeline's settings in its env, and nothing else", () => {
  for (const kind of kinds) {
    const timeout =
      kind === "update" ? pipeline.verification.updateTimeout : pipeline.verification.previewTimeout;
    for (const m of metricsOf(kind))
      expect(envOf(m)).toEqual({
        PULUMI_API_URL: "{{args.api-url}}",
        PULUMI_ORGANIZATION: "{{args.organization}}",
        PULUMI_PROJECT: "{{args.project}}",
        PULUMI_STACK: "{{args.stack}}",
        COMMIT: "{{args.commit}}",
        OPERATION: kind,
        PULUMI_CONSOLE_URL: "{{args.console-url}}",
        // The project a stop's `kargo approve` names: the pipeline's, whose namespace holds the Freight.
        KARGO_PROJECT: pipeline.project,
        // A preview's stop: its stage's policy (test/risk-stops.test.ts).
        ...(kind === "preview"
          ? {
              STOP_ON: "{{args.stop-on}}",
              DECIDERS: "{{args.deciders}}",
              APPROVE_STAGE: "{{args.approve-stage}}",
            }
          : {}),
        INTERVAL: pipeline.verification.interval,
        TIMEOUT: timeout,
        PAGE_SIZE: String(pipeline.verification.pageSize),
        // The seventh error in a row fails the Job (test/analysis: "gave no usable answer 7 times in a row").
        ERROR_LIMIT: "6",
        PULUMI_ACCESS_TOKEN: { secretKeyRef: { name: names.verificationToken, key: "accessToken" } },
        // Its own Job, whose measurement it writes its reason into (kargo/verification/run-message.mjs).
        JOB_NAME: { fieldRef: { fieldPath: "metadata.labels['batch.kubernetes.io/job-name']" } },
      });
  }
  // No Service's address in the env either (enableServiceLinks), so the script reads only what it is given.
  for (const m of metrics()) expect(jobOf(m).template.spec!.enableServiceLinks).toBe(false);
});

it("labels every Job, and keeps it and its log a day after it ends, as docs/troubleshooting.md says", () => {
  for (const m of metrics()) {
    expect(m.provider.job!.metadata).toEqual({ labels: { "app.kubernetes.io/name": "pulumi-verification" } });
    expect(jobOf(m).ttlSecondsAfterFinished).toBe(24 * 60 * 60);
  }
});

it("runs each Job as a non-root user without privileges or a writable root, with the token of its own ServiceAccount", () => {
  for (const m of metrics()) {
    const job = jobOf(m);
    const pod = job.template.spec!;
    expect(job.backoffLimit).toBe(verificationBackoffLimit);
    expect(job.ttlSecondsAfterFinished).toBeGreaterThan(0);
    expect(pod.restartPolicy).toBe("Never");
    // Not the namespace's default account: one whose Role and admission policy hold it to its own run's
    // message (test/kube TestVerificationJobWritesOnlyItsOwnMessage runs them on the real API server).
    expect(pod.serviceAccountName).toBe(verificationServiceAccount);
    expect(pod.automountServiceAccountToken).toBe(true);
    expect(pod.securityContext).toMatchObject({
      runAsNonRoot: true,
      runAsUser: 1000,
      seccompProfile: { type: "RuntimeDefault" },
    });
    expect(pod.containers).toHaveLength(1);
    expect(containerOf(m).securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"] },
    });
    expect(containerOf(m).resources).toEqual({
      requests: { cpu: "10m", memory: "64Mi" },
      limits: { memory: "128Mi" },
    });
  }
});

it("reads the token from the verification Secret in the Job's env, never as an AnalysisRun argument", () => {
  for (const kind of kinds) {
    const spec = analysisTemplateSpec(pipeline, kind);
    expect(spec.args!.map((a) => a.name)).not.toContain("token");
    expect(spec.args!.every((a) => a.valueFrom === undefined)).toBe(true);
    for (const m of spec.metrics!)
      expect(envOf(m).PULUMI_ACCESS_TOKEN).toEqual({
        secretKeyRef: { name: names.verificationToken, key: "accessToken" },
      });
  }
});

it("sends the token to Pulumi Cloud's API, or to the self-hosted one pulumi.selfHostedApiUrl names", () => {
  const apiUrl = (p = pipeline) =>
    analysisTemplateSpec(p, "update").args!.find((a) => a.name === "api-url")!.value;
  expect(apiUrl()).toBe(PULUMI_CLOUD_API);
  for (const m of metrics()) expect(envOf(m).PULUMI_API_URL).toBe("{{args.api-url}}");
  const selfHosted = validatePipeline({
    ...definition,
    pulumi: { ...definition.pulumi, selfHostedApiUrl: "https://pulumi-api.example.com" },
  });
  expect(apiUrl(selfHosted)).toBe("https://pulumi-api.example.com");
  expect(pulumiApiUrl(selfHosted)).toBe("https://pulumi-api.example.com");
});

it("exits with the verdict codes the Jobs' pod failure policy names, and with no other non-zero code", () => {
  const script = readFileSync(path.join(repoRoot, "kargo/verification/verify.mjs"), "utf8");
  const codes = [...script.matchAll(/process\.exit(?:Code\s*=\s*|\()\s*(\w+)/g)].map((m) => m[1]);
  expect(codes.length).toBeGreaterThan(0);
  // Every exit names a literal code: a computed one would escape the policy.
  expect(codes.every((c) => /^\d+$/.test(c!))).toBe(true);
  expect(new Set(codes.map(Number).filter((c) => c !== 0))).toEqual(new Set(verificationVerdictExitCodes));
  expect(verificationVerdictExitCodes).not.toContain(0);
});

it("fails a Job at once on a verdict, retries a disrupted pod without counting it, and anything else backoffLimit times", () => {
  expect(verificationBackoffLimit).toBe(2);
  for (const m of metrics()) {
    const job = jobOf(m);
    // The pod failure policy requires restartPolicy Never (batch/v1 validation).
    expect(job.template.spec!.restartPolicy).toBe("Never");
    expect(containerOf(m).name).toBe(verificationContainerName);
    expect(job.activeDeadlineSeconds).toBeGreaterThan(0);
    const rules = job.podFailurePolicy!.rules;
    // The kube Job controller takes the first matching rule: a disruption is ignored whatever the pod exited with.
    const disruption = rules.findIndex((r) =>
      r.onPodConditions?.some((c) => c.type === "DisruptionTarget" && c.status === "True"),
    );
    expect(disruption).toBeGreaterThanOrEqual(0);
    expect(rules[disruption]!.action).toBe("Ignore");
    const verdicts = rules.filter((r) => r.onExitCodes);
    expect(verdicts).toEqual([
      {
        action: "FailJob",
        onExitCodes: {
          containerName: verificationContainerName,
          operator: "In",
          values: verificationVerdictExitCodes,
        },
      },
    ]);
    expect(rules.indexOf(verdicts[0]!)).toBeGreaterThan(disruption);
    // Nothing else is named: an OOM kill (137) or a crash matches no rule and counts toward backoffLimit.
    expect(rules.every((r) => r.action === "Ignore" || r.action === "FailJob")).toBe(true);
    expect(rules.flatMap((r) => r.onExitCodes?.values ?? [])).not.toContain(137);
  }
});

it("ships every module the Job imports, and reads the same risk classes the pipeline's policies name", async () => {
  const dir = path.join(repoRoot, "kargo/verification");
  // Every relative import of every shipped module is shipped: the Job's node resolves them beside it.
  for (const f of verificationScripts) {
    const source = readFileSync(path.join(dir, f), "utf8");
    for (const [, imported] of source.matchAll(/from\s+"\.\/([^"]+)"/g))
      expect(verificationScripts, `${f} imports ${imported}`).toContain(imported);
  }
  const { RISK_CLASSES: classified } = await import("../kargo/verification/classify.mjs");
  expect([...RISK_CLASSES]).toEqual([...classified]);
});
