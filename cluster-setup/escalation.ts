/**
 * What a stack's programs may be granted in the cluster (cluster-setup:stackRbacRules), and why a rule is
 * refused. Every environment's ServiceAccount lives in the one stacks namespace, so a rule that lets a
 * program start a pod, or have a controller start one, under a ServiceAccount it names lets `dev`'s program
 * run as `qa`'s identity (and its IAM role). Those rules are refused here, before anything is registered.
 */

/** The verbs Kubernetes RBAC knows for ordinary resources that a program may be granted. */
export const grantableVerbs = [
  "get",
  "list",
  "watch",
  "create",
  "update",
  "patch",
  "delete",
  "deletecollection",
];

/** The shape of one rule, as config validation has already checked it. */
export interface PolicyRuleShape {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[] | undefined;
}

const readVerbs = ["get", "list", "watch"];
/** Verbs that grant more than they say: granting permissions, acting as someone else. */
const escalatingVerbs = ["*", "bind", "escalate", "impersonate", "approve", "sign"];
/** Subresources that reach into other identities or nodes: minting tokens, running commands in pods. */
const escalatingResources = [
  "serviceaccounts/token",
  "pods/exec",
  "pods/attach",
  "pods/portforward",
  // A container added to a running pod runs as that pod's ServiceAccount, another environment's included.
  "pods/ephemeralcontainers",
  "nodes/proxy",
  "certificatesigningrequests/approval",
];
/** API groups where any write changes who may do what in the cluster. */
const privilegeApiGroups = [
  "rbac.authorization.k8s.io",
  "admissionregistration.k8s.io",
  "certificates.k8s.io",
];

/** The verbs that make or change an object, and so the pod it runs. */
export const workloadWriteVerbs = ["create", "update", "patch"];

/**
 * Resources whose objects run a pod, or make a controller run one, under a ServiceAccount the object names:
 * group → resource → the field that names it. The built-in ones are every kind of k8s.io/api v0.34.3 that
 * holds a core/v1 PodSpec (test/kube/workloads_test.go derives them by reflection and checks each is here);
 * the custom ones are every resource of the CRDs the platform installs whose schema holds a
 * `serviceAccountName` (same test), and those that run code in another object's pod.
 */
export const workloadResources: Record<string, Record<string, string>> = {
  "": {
    pods: "spec.serviceAccountName (and, on update, any container's image)",
    podtemplates: "template.spec.serviceAccountName",
    replicationcontrollers: "spec.template.spec.serviceAccountName",
  },
  apps: {
    deployments: "spec.template.spec.serviceAccountName",
    replicasets: "spec.template.spec.serviceAccountName",
    statefulsets: "spec.template.spec.serviceAccountName",
    daemonsets: "spec.template.spec.serviceAccountName",
  },
  // No longer served (Kubernetes 1.16 moved them to apps), refused all the same.
  extensions: {
    deployments: "spec.template.spec.serviceAccountName",
    replicasets: "spec.template.spec.serviceAccountName",
    daemonsets: "spec.template.spec.serviceAccountName",
  },
  batch: {
    jobs: "spec.template.spec.serviceAccountName",
    cronjobs: "spec.jobTemplate.spec.template.spec.serviceAccountName",
  },
  // PKO v2.9.0: a Stack's workspace pod runs as spec.serviceAccountName; a Workspace is that pod; an Update
  // runs `pulumi up` in the Workspace it names; a Program is code the Stacks that reference it run.
  "pulumi.com": {
    stacks: "spec.serviceAccountName",
    programs: "the program a Stack naming it in spec.programRef runs as that Stack's ServiceAccount",
  },
  "auto.pulumi.com": {
    workspaces: "spec.serviceAccountName",
    updates: "spec.workspaceName (runs in that Workspace's pod, as its ServiceAccount)",
  },
  // Argo Rollouts v1.9: a Rollout's and an Experiment's pod templates; an AnalysisRun's job metrics and the
  // templates AnalysisRuns are made from (Kargo's verification among them) hold a Job's pod template.
  "argoproj.io": {
    rollouts: "spec.template.spec.serviceAccountName",
    experiments: "spec.templates[].template.spec.serviceAccountName",
    analysisruns: "spec.metrics[].provider.job.spec.template.spec.serviceAccountName",
    analysistemplates: "spec.metrics[].provider.job.spec.template.spec.serviceAccountName",
    clusteranalysistemplates: "spec.metrics[].provider.job.spec.template.spec.serviceAccountName",
    // Argo CD applies what an Application names with its own identity, any ServiceAccount's pods included.
    applications: "spec.source (Argo CD applies its manifests as itself)",
    applicationsets: "spec.template (Applications Argo CD applies as itself)",
    appprojects: "spec.destinations (where Argo CD may apply as itself)",
  },
};

/** The (group, resource) pairs of a rule that run a pod under a chosen ServiceAccount, with the field. */
export function workloadGrants(rule: PolicyRuleShape): { group: string; resource: string; field: string }[] {
  return rule.apiGroups.flatMap((group) =>
    rule.resources.flatMap((resource) => {
      const field = workloadResources[group]?.[resource];
      return field === undefined ? [] : [{ group, resource, field }];
    }),
  );
}

/** Why a rule would let a program escalate beyond it, or undefined when it grants only what it says. */
export function escalation(rule: PolicyRuleShape, scope: "namespace" | "cluster"): string | undefined {
  const wildcard = (["apiGroups", "resources", "verbs", "resourceNames"] as const).find((field) =>
    (rule[field] ?? []).some((v) => v.includes("*")),
  );
  if (wildcard) return `has a wildcard in ${wildcard}; list exactly what your programs manage`;
  const risky = rule.verbs.filter((v) => escalatingVerbs.includes(v));
  if (risky.length > 0) return `grants ${risky.join(", ")}, which let a program give itself more permissions`;
  const unknown = rule.verbs.filter((v) => !grantableVerbs.includes(v));
  if (unknown.length > 0)
    return `has unknown verb(s) ${unknown.join(", ")}; allowed verbs are ${grantableVerbs.join(", ")}`;
  const reaching = rule.resources.filter((r) => escalatingResources.includes(r));
  if (reaching.length > 0) return `grants ${reaching.join(", ")}, which reach other identities or nodes`;
  const writes = rule.verbs.some((v) => !readVerbs.includes(v));
  const privilegeGroup = rule.apiGroups.find((g) => privilegeApiGroups.includes(g));
  if (privilegeGroup && writes)
    return `writes to ${privilegeGroup}, which changes who may do what; grant only get, list and watch there`;
  const workloadVerbs = rule.verbs.filter((v) => workloadWriteVerbs.includes(v));
  const workload = workloadVerbs.length > 0 ? workloadGrants(rule)[0] : undefined;
  if (workload) {
    const what = workload.group === "" ? workload.resource : `${workload.resource}.${workload.group}`;
    return (
      `grants ${workloadVerbs.join(", ")} on ${what}, whose ${workload.field} runs a pod as any ServiceAccount ` +
      "in the namespace, another environment's identity included; grant only get, list, watch and delete there"
    );
  }
  if (rule.apiGroups.includes("") && rule.resources.includes("secrets")) {
    if (scope === "cluster") return "grants secrets cluster-wide, every credential in the cluster";
    if (!rule.resourceNames?.length)
      return "grants every Secret in the stacks namespace, which holds the Pulumi and git tokens; name the Secrets in resourceNames";
  }
  const unnameable = rule.verbs.filter((v) => ["create", "list", "watch", "deletecollection"].includes(v));
  if (rule.resourceNames?.length && unnameable.length > 0)
    return `uses resourceNames with ${unnameable.join(", ")}, which Kubernetes cannot narrow by name; put them in a rule without resourceNames`;
  return undefined;
}
