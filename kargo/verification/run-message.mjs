// The verdict's reason, written where the Kargo UI shows it: the message of this Job's own measurement in the
// AnalysisRun it measures. Argo Rollouts' job provider records only the Job's phase (argo-rollouts v1.9.0
// metricproviders/job/job.go, Resume keeps the rest of the measurement as it was), and when the metric ends
// the controller copies the last measurement's message into the run's (analysis/analysis.go,
// assessRunStatus: `Metric "…" assessed Failed due to …: "Error Message: <ours>"`), which Kargo shows as the
// Stage's verification message (akuity/kargo v1.11.2 pkg/controller/stages/regular_stages.go) and its
// AnalysisRun view as the run's summary. Best effort: the verdict is the exit code, whatever happens here.
//
// The Job's ServiceAccount may read Jobs and AnalysisRuns and patch AnalysisRuns in the project namespace;
// an admission policy (lib/pipeline/verification-access.ts) lets its token change only the message of the
// measurement of the Job whose pod holds it.

import { readFile } from "node:fs/promises";
import { request } from "node:https";

/**
 * The longest message written: Kargo keeps it in the Stage's status for each verification of its history,
 * so a stop of a thousand resources is cut here, saying how many lines the Job's log has beyond it.
 */
export const MAX_MESSAGE = 4000;

/** The message cut to `max` characters at a line, naming what was left out. */
export function truncated(text, max = MAX_MESSAGE) {
  if (text.length <= max) return text;
  const lines = text.split("\n");
  const kept = [];
  let size = 0;
  const room = max - 80;
  for (const line of lines) {
    if (size + line.length + 1 > room) break;
    kept.push(line);
    size += line.length + 1;
  }
  if (kept.length === 0) return `${text.slice(0, room)}… (cut: the Job's log holds the whole reason)`;
  return `${kept.join("\n")}\n… ${lines.length - kept.length} more line(s) in the Job's log`;
}

/**
 * A stop's message's first two lines: the Freight waits for its deciders' decision (not a failure), and the
 * command one of them runs to let it through. The notifications tell a stop from a failure by this opening
 * (cluster-setup/addons/notifications.ts), and docs/security-and-approvals.md shows this form.
 */
export function decision({ project, freight, deciders, approveStage }) {
  const who = deciders.join(" or ");
  return {
    opening: `Freight ${freight} waits for a decision of ${who}, not a failure:`,
    command: `To let it through, a member of ${who} runs: kargo approve --project ${project} --freight ${freight} --stage ${approveStage}`,
  };
}

/** The Freight a Kargo AnalysisRun verifies: its owner (akuity/kargo v1.11.2 pkg/controller/stages/regular_stages.go, WithOwner). */
export const freightOf = (run) =>
  (run?.metadata?.ownerReferences ?? []).find(
    (o) => o?.kind === "Freight" && String(o?.apiVersion).startsWith("kargo.akuity.io/"),
  )?.name;

const annotations = {
  run: "analysisrun.argoproj.io/name",
  metric: "analysisrun.argoproj.io/metric-name",
};

/** A client of the API server as a pod reaches it: its ServiceAccount's token and CA, the service's address. */
async function apiClient({ dir, host, port, timeoutMs }) {
  const [token, ca, namespace] = await Promise.all(
    ["token", "ca.crt", "namespace"].map((f) => readFile(`${dir}/${f}`, "utf8")),
  );
  const call = (method, path, body, contentType) =>
    new Promise((resolve, reject) => {
      const req = request(
        {
          host,
          port,
          method,
          path,
          ca,
          headers: {
            Authorization: `Bearer ${token.trim()}`,
            Accept: "application/json",
            ...(body ? { "Content-Type": contentType } : {}),
          },
          signal: AbortSignal.timeout(timeoutMs),
        },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (chunk) => (text += chunk));
          res.on("end", () => {
            let json;
            try {
              json = JSON.parse(text);
            } catch {
              // Not the API server's JSON: the status says enough.
            }
            resolve({ status: res.statusCode, json, text });
          });
        },
      );
      req.on("error", reject);
      req.end(body);
    });
  return { call, namespace: namespace.trim() };
}

const pathOf = (ns, group, resource, name) =>
  `/apis/${group}/namespaces/${encodeURIComponent(ns)}/${resource}/${encodeURIComponent(name)}`;
const pointer = (...parts) =>
  `/${parts.map((p) => String(p).replace(/~/g, "~0").replace(/\//g, "~1")).join("/")}`;

/**
 * Writes `message` into the measurement of the Job `jobName` in its AnalysisRun; a function is given the
 * run's Freight (freightOf) first, as a stop's message names it. Returns what happened, in
 * words, for the Job's log; never throws. `tries` looks (each `intervalMs` apart) cover the moment between
 * the Job's creation and the controller recording its measurement. Once written, it waits `settleMs` so the
 * controller's watch holds the message before the Job's end reaches it: the controller writes the run's
 * measurements back whole from what its watch last saw.
 */
export async function writeRunMessage({
  jobName,
  message,
  // Where the kubelet mounts the ServiceAccount; the Go harness mounts it elsewhere.
  dir = process.env.SERVICE_ACCOUNT_DIR ?? "/var/run/secrets/kubernetes.io/serviceaccount",
  host = process.env.KUBERNETES_SERVICE_HOST,
  port = process.env.KUBERNETES_SERVICE_PORT,
  tries = 10,
  intervalMs = 1000,
  settleMs = 2000,
  timeoutMs = 10_000,
}) {
  if (!jobName || !host || !port)
    return "not written: not a pod of a Job of Argo Rollouts (no JOB_NAME or API server)";
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  try {
    const api = await apiClient({ dir, host, port, timeoutMs });
    const job = await api.call("GET", pathOf(api.namespace, "batch/v1", "jobs", jobName));
    const runName = job.json?.metadata?.annotations?.[annotations.run];
    const metric = job.json?.metadata?.annotations?.[annotations.metric];
    if (job.status !== 200 || !runName || !metric)
      return `not written: the Job ${jobName} (HTTP ${job.status}) names no AnalysisRun and metric`;
    const runPath = pathOf(api.namespace, "argoproj.io/v1alpha1", "analysisruns", runName);
    let last = "";
    for (let attempt = 1; attempt <= tries; attempt++) {
      const run = await api.call("GET", runPath);
      if (run.status !== 200) return `not written: reading the AnalysisRun ${runName}: HTTP ${run.status}`;
      const results = run.json?.status?.metricResults ?? [];
      const r = results.findIndex((x) => x?.name === metric);
      const m =
        r < 0 ? -1 : (results[r].measurements ?? []).findIndex((x) => x?.metadata?.["job-name"] === jobName);
      if (m >= 0) {
        // The tests make the patch apply to this run and this measurement only, wherever they moved since.
        const at = ["status", "metricResults", r, "measurements", m];
        const patch = [
          { op: "test", path: "/metadata/uid", value: run.json.metadata.uid },
          { op: "test", path: pointer(...at, "metadata", "job-name"), value: jobName },
          {
            op: "add",
            path: pointer(...at, "message"),
            value: truncated(
              typeof message === "function" ? message({ freight: freightOf(run.json) }) : message,
            ),
          },
        ];
        const done = await api.call("PATCH", runPath, JSON.stringify(patch), "application/json-patch+json");
        if (done.status === 200) {
          await sleep(settleMs);
          return `written into ${runName}, metric ${metric}`;
        }
        const said = `HTTP ${done.status}: ${done.json?.message ?? done.text}`;
        // 422 is a failed test (the run moved since it was read) and 409 a conflict: read it again. Anything
        // else (403: RBAC, or the admission policy) would answer the same again.
        if (done.status !== 422 && done.status !== 409) return `not written: ${said}`;
        last = said;
      } else {
        last = `the run holds no measurement of ${jobName} yet`;
      }
      await sleep(intervalMs);
    }
    return `not written after ${tries} tries: ${last}`;
  } catch (error) {
    return `not written: ${error.message}`;
  }
}
