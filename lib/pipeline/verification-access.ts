// What a verification Job may do in the cluster: write why it did not pass into its own AnalysisRun, where the
// Kargo UI shows it on the stage (kargo/verification/run-message.mjs), and nothing else. Its ServiceAccount may
// read Jobs and AnalysisRuns and patch AnalysisRuns in the project namespace (RBAC cannot name one object of
// many it does not know yet); the admission policy then holds each of its requests to the message of the
// measurement of the Job whose pod holds the token, in the run that created that Job.
import { admissionLabels, denyBinding, denyPolicy, forbidden, inNamespace } from "./admission-objects";
import type { Pipeline } from "./schema";

/** Who the verification Job runs as, in the Kargo project namespace. */
export const verificationServiceAccount = "pulumi-verification";

/**
 * The AnalysisRun's status fields (argo-rollouts v1.9.0 pkg/apis/rollouts/v1alpha1/analysis_types.go,
 * AnalysisRunStatus, MetricResult, Measurement; test/verification-access.test.ts compares them with the CRD
 * when ../shared holds it). Every one but a measurement's `message` must stay as it was.
 */
export const runStatusFields = [
  "phase",
  "message",
  "startedAt",
  "completedAt",
  "runSummary",
  "dryRunSummary",
];
export const metricResultFields = [
  "name",
  "phase",
  "message",
  "count",
  "successful",
  "failed",
  "inconclusive",
  "error",
  "consecutiveError",
  "consecutiveSuccess",
  "dryRun",
  "metadata",
];
export const measurementFields = ["phase", "startedAt", "finishedAt", "value", "metadata", "resumeAt"];
export const metadataFields = ["labels", "annotations", "finalizers", "ownerReferences"];

/** The key under which the API server names the pod a bound ServiceAccount token was issued for. */
export const podNameKey = "authentication.kubernetes.io/pod-name";

/**
 * Every field of a run's status but its measurements' messages, as one CEL value to compare: each field an
 * optional (absent stays absent), the lists wrapped as optionals of dyn too, since the API server's CEL
 * wants every element of a list literal to have one type.
 */
const statusShape = (root: string) => {
  const opt = (of: string, fields: string[]) => fields.map((f) => `${of}.?${f}`).join(", ");
  const measurements = `optional.of(dyn(r.?measurements.orValue([]).map(m, [${opt("m", measurementFields)}])))`;
  const results = `optional.of(dyn(${root}.?status.?metricResults.orValue([]).map(r, [${opt("r", metricResultFields)}, ${measurements}])))`;
  return `[${opt(`${root}.?status`, runStatusFields)}, ${results}]`;
};

export const verificationMessagePolicyName = (p: Pick<Pipeline, "project">) =>
  `${p.project}-verification-message`;

/** The ServiceAccount, its Role and binding in the project namespace, and the admission policy and binding. */
export function verificationAccess(p: Pick<Pipeline, "project">) {
  const ns = p.project;
  const labels = admissionLabels(p);
  const account = `system:serviceaccount:${ns}:${verificationServiceAccount}`;
  const name = verificationMessagePolicyName(p);
  const own = `variables.pod.startsWith(m.?metadata[?'job-name'].orValue('/') + '-')`;
  const unchanged = `oldObject.?status.?metricResults.orValue([]).exists(o, o.?name == r.?name && o.?measurements.orValue([]).exists(om, om.?metadata == m.?metadata && om.?message == m.?message))`;
  return [
    {
      apiVersion: "v1",
      kind: "ServiceAccount" as const,
      metadata: { name: verificationServiceAccount, namespace: ns, labels },
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role" as const,
      metadata: { name: verificationServiceAccount, namespace: ns, labels },
      rules: [
        // Its Job's annotations name the run and the metric (argo-rollouts v1.9.0 job.go, newMetricJob).
        { apiGroups: ["batch"], resources: ["jobs"], verbs: ["get"] },
        // No status subresource on AnalysisRuns (argo-rollouts v1.9.0 manifests/crds): the run is patched whole.
        { apiGroups: ["argoproj.io"], resources: ["analysisruns"], verbs: ["get", "patch"] },
      ],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding" as const,
      metadata: { name: verificationServiceAccount, namespace: ns, labels },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: verificationServiceAccount },
      subjects: [{ kind: "ServiceAccount", name: verificationServiceAccount, namespace: ns }],
    },
    denyPolicy(
      p,
      name,
      [
        {
          apiGroups: ["argoproj.io"],
          apiVersions: ["*"],
          operations: ["CREATE", "UPDATE", "DELETE"],
          resources: ["analysisruns", "analysisruns/*"],
        },
      ],
      {
        matchConditions: [
          { name: "verification-job", expression: `request.userInfo.username == '${account}'` },
        ],
        variables: [
          {
            name: "pod",
            expression: `'${podNameKey}' in request.userInfo.extra && size(request.userInfo.extra['${podNameKey}']) == 1 ? request.userInfo.extra['${podNameKey}'][0] : ''`,
          },
        ],
        validations: [
          forbidden(
            `request.operation == 'UPDATE' && variables.pod != '' && variables.pod.startsWith(string(oldObject.metadata.uid) + '.')`,
            `${account} may only change the AnalysisRun whose Job runs it, with the token of that Job's pod`,
          ),
          forbidden(
            `object.spec == oldObject.spec && ${metadataFields.map((f) => `object.metadata.?${f} == oldObject.metadata.?${f}`).join(" && ")}`,
            `${account} may not change an AnalysisRun's spec, labels, annotations, finalizers or owners`,
          ),
          forbidden(
            `${statusShape("object")} == ${statusShape("oldObject")}`,
            `${account} may change only a measurement's message in an AnalysisRun's status`,
          ),
          forbidden(
            `object.?status.?metricResults.orValue([]).all(r, r.?measurements.orValue([]).all(m, ${own} || ${unchanged}))`,
            `${account} may change only the message of its own Job's measurement`,
          ),
        ],
      },
    ),
    denyBinding(p, name, inNamespace(ns)),
  ];
}

/** The env the Job's script reads to find its own Job (the label the Job controller sets on each pod). */
export const jobNameEnv = {
  name: "JOB_NAME",
  valueFrom: { fieldRef: { fieldPath: "metadata.labels['batch.kubernetes.io/job-name']" } },
};
