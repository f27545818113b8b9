import { beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { fork } from "../lib/fork";
import { accountOf, accountRoleName, namedAccounts, roleArn } from "../lib/pipeline/accounts";
import { validatePipeline } from "../lib/pipeline/validate";
import type { ProgramPlan } from "../lib/cli/plan/harness";
import { kubernetesObjects } from "../lib/cli/plan/output";
import { planChain, readStackConfig } from "../lib/cli/plan/projects";
import { irsaTrust, ofType, one, planProject } from "./helpers";

type Values = Record<string, Record<string, unknown>>;
const pipeline = validatePipeline(definition);
/** The approver groups of the example stack config the plan runs with. */
const approverGroups = readStackConfig("cluster-setup").values[
  "cluster-setup:cognitoApproverGroups"
] as string[];
const releaseNamed = (plan: ProgramPlan, name: string) => one(plan, "kubernetes:helm.sh/v3:Release", name);

describe("cluster-setup project", () => {
  let cluster: ProgramPlan;
  let plan: ProgramPlan;
  beforeAll(async () => {
    [cluster, plan] = (await planChain({ project: "cluster-setup" })) as [ProgramPlan, ProgramPlan];
  });

  it("installs the six add-ons from pinned charts at the versions we pin", () => {
    const releases = Object.fromEntries(
      ofType(plan, "kubernetes:helm.sh/v3:Release").map((r) => [
        r.name,
        {
          chart: r.inputs.chart,
          version: r.inputs.version,
          repo: (r.inputs.repositoryOpts as { repo?: string })?.repo,
        },
      ]),
    );
    expect(releases).toEqual({
      "cert-manager": { chart: "cert-manager", version: "v1.21.1", repo: "https://charts.jetstack.io" },
      argocd: { chart: "argo-cd", version: "10.1.1", repo: "https://argoproj.github.io/argo-helm" },
      "argo-rollouts": {
        chart: "argo-rollouts",
        version: "2.41.0",
        repo: "https://argoproj.github.io/argo-helm",
      },
      "pulumi-kubernetes-operator": {
        chart: "oci://ghcr.io/pulumi/helm-charts/pulumi-kubernetes-operator",
        version: "2.9.0",
        repo: undefined,
      },
      karpenter: { chart: "oci://public.ecr.aws/karpenter/karpenter", version: "1.15.1", repo: undefined },
      // Always, without a notification destination too: it records who approves each stopped preview.
      "argo-events": {
        chart: "argo-events",
        version: "2.4.22",
        repo: "https://argoproj.github.io/argo-helm",
      },
    });
  });

  it("installs every add-on's CRDs", () => {
    const values = (name: string) => releaseNamed(plan, name).inputs.values as Values;
    expect(values("cert-manager").crds).toEqual({ enabled: true, keep: true });
    expect(values("argo-rollouts")).toMatchObject({ installCRDs: true, keepCRDs: true });
    expect(values("argocd").crds?.install).not.toBe(false);
    for (const release of ofType(plan, "kubernetes:helm.sh/v3:Release"))
      expect(release.inputs.skipCrds).not.toBe(true);
  });

  it("orders the add-ons: PKO after cert-manager, the AppProject after Argo CD, the rest in parallel", () => {
    const urn = (name: string) => releaseNamed(plan, name).urn;
    // Depending on the cert-manager component means depending on its release.
    expect(releaseNamed(plan, "pulumi-kubernetes-operator").dependsOn).toContain(urn("cert-manager"));
    expect(one(plan, "kubernetes:argoproj.io/v1alpha1:AppProject").dependsOn).toContain(urn("argocd"));
    for (const name of ["cert-manager", "argocd", "argo-rollouts"]) {
      expect(
        releaseNamed(plan, name).dependsOn.filter((d) => d.includes("Release") || d.includes("HelmAddon")),
      ).toEqual([]);
    }
  });

  it("deploys every in-cluster object through the provider built from the cluster's kubeconfig", () => {
    const provider = one(plan, "pulumi:providers:kubernetes");
    expect(provider.inputs.kubeconfig).toBe("[secret]");
    for (const r of plan.resources.filter((r) => r.type.startsWith("kubernetes:"))) {
      expect(r.provider, r.name).toBe(provider.urn);
    }
  });

  it("turns Dex off and sets the admin password from a generated secret", () => {
    const values = releaseNamed(plan, "argocd").inputs.values as Values;
    expect(values.dex).toEqual({ enabled: false });
    expect((values.configs!.secret as Record<string, unknown>).argocdServerAdminPassword).toBe("[secret]");
    // The example's values merged over ours, key by key.
    expect(values.controller).toEqual({
      resources: { requests: { cpu: "100m", memory: "256Mi" }, limits: { memory: "1Gi" } },
    });
  });

  it("confines the stacks AppProject to the fork's repository (lib/fork.ts) and the stacks namespace", () => {
    const project = one(plan, "kubernetes:argoproj.io/v1alpha1:AppProject").inputs;
    expect(project.metadata).toEqual({ name: "pulumi-stacks", namespace: "argocd" });
    expect(project.spec).toEqual({
      description: expect.any(String),
      sourceRepos: [fork.githubRepo],
      destinations: [{ server: "https://kubernetes.default.svc", namespace: "pulumi-stacks" }],
      clusterResourceWhitelist: [],
      namespaceResourceWhitelist: [{ group: "pulumi.com", kind: "Stack" }],
    });
  });

  it("creates a Cognito pool with deletion protection, email usernames, MFA and role groups", () => {
    const pool = one(plan, "aws:cognito/userPool:UserPool");
    expect(pool.options.protect).toBe(true);
    expect(pool.inputs).toMatchObject({
      deletionProtection: "ACTIVE",
      usernameAttributes: ["email"],
      mfaConfiguration: "ON",
      softwareTokenMfaConfiguration: { enabled: true },
      adminCreateUserConfig: { allowAdminCreateUserOnly: true },
    });
    expect((pool.inputs.passwordPolicy as { minimumLength: number }).minimumLength).toBeGreaterThanOrEqual(
      14,
    );
    expect(ofType(plan, "aws:cognito/userGroup:UserGroup").map((g) => g.inputs.name)).toEqual([
      "platform-admins",
      ...approverGroups,
    ]);
    expect(one(plan, "aws:cognito/userPoolDomain:UserPoolDomain").inputs.domain).toBe(
      "platform-example-123456789012",
    );
    expect(plan.outputs.cognitoIssuerUrl).toBe(
      `https://cognito-idp.us-west-2.amazonaws.com/${plan.outputs.cognitoUserPoolId}`,
    );
  });

  // Environments naming an AWS account get their role there from kargo (lib/pipeline/accounts.ts); here only
  // their ServiceAccounts, and one preview ServiceAccount per such account.
  const named = namedAccounts(pipeline.environments);
  const remote = Object.keys(pipeline.environments).filter((e) => accountOf(pipeline.environments, e));
  const local = Object.keys(pipeline.environments).filter((e) => !remote.includes(e));
  const identities = [...Object.keys(pipeline.environments), "preview", ...named.map((a) => `preview-${a}`)];

  it("annotates each environment in another account, and its previews, with the role kargo makes there", () => {
    const annotated = (name: string) =>
      one(plan, "kubernetes:core/v1:ServiceAccount", `stacks-${name}`).inputs.metadata as Record<string, any>;
    for (const env of remote) {
      const account = accountOf(pipeline.environments, env)!;
      expect(
        ofType(plan, "aws:iam/role:Role").filter((r) => r.name === `stacks-${env}`),
        env,
      ).toEqual([]);
      expect(annotated(env).annotations["eks.amazonaws.com/role-arn"]).toBe(
        roleArn("aws", account, accountRoleName("pulumi-stacks", env)),
      );
    }
    for (const account of named)
      expect(annotated(`preview-${account}`).annotations["eks.amazonaws.com/role-arn"]).toBe(
        roleArn("aws", account, accountRoleName("pulumi-stacks")),
      );
    expect(ofType(plan, "aws:iam/role:Role").filter((r) => r.name.startsWith("stacks-")).length).toBe(
      local.length + 1,
    );
  });

  it.each([...local, "preview"])(
    "lets exactly ServiceAccount pulumi-stacks-%s assume its own role, for the STS audience only",
    (suffix) => {
      const role = one(plan, "aws:iam/role:Role", `stacks-${suffix}`);
      expect(JSON.parse(String(role.inputs.assumeRolePolicy))).toEqual(
        irsaTrust(cluster.outputs, `pulumi-stacks:pulumi-stacks-${suffix}`),
      );
      const sa = one(plan, "kubernetes:core/v1:ServiceAccount", `stacks-${suffix}`).inputs;
      const roleArn =
        suffix === "preview"
          ? plan.outputs.previewRoleArn
          : (plan.outputs.stackIdentities as Record<string, { roleArn: string }>)[suffix]!.roleArn;
      expect(sa.metadata).toMatchObject({
        name: `pulumi-stacks-${suffix}`,
        namespace: "pulumi-stacks",
        annotations: { "eks.amazonaws.com/role-arn": roleArn },
      });
    },
  );

  it("exports one identity per environment of kargo/pipeline.ts (stackEnvironments left empty), and the preview identity, for kargo", () => {
    const exported = plan.outputs.stackIdentities as Record<string, Record<string, string>>;
    expect(Object.keys(exported).sort()).toEqual(Object.keys(pipeline.environments).sort());
    for (const [env, identity] of Object.entries(exported)) {
      expect(identity.serviceAccountName).toBe(`pulumi-stacks-${env}`);
      expect(identity.roleArn).toMatch(new RegExp(`^arn:aws:iam::\\d{12}:role/${identity.roleName}$`));
    }
    expect(plan.outputs.previewServiceAccountName).toBe("pulumi-stacks-preview");
    expect(new Set(Object.values(exported).map((i) => i.roleName)).size).toBe(
      Object.keys(pipeline.environments).length,
    );
    expect(ofType(plan, "aws:iam/rolePolicyAttachment:RolePolicyAttachment")).toEqual([]);
  });

  it("binds every identity to system:auth-delegator, and the program rules in the stacks namespace only", () => {
    const clusterBindings = ofType(plan, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding").map(
      (b) => b.inputs,
    );
    expect(clusterBindings.map((b) => (b.roleRef as { name: string }).name)).toEqual(
      identities.map(() => "system:auth-delegator"),
    );
    expect(clusterBindings.map((b) => (b.subjects as { name: string }[])[0]!.name)).toEqual(
      identities.map((s) => `pulumi-stacks-${s}`),
    );
    expect(ofType(plan, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")).toEqual([]);

    const role = (name: string) => one(plan, "kubernetes:rbac.authorization.k8s.io/v1:Role", name).inputs;
    const binding = (name: string) =>
      one(plan, "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", name).inputs;
    expect(role("stacks-programs").metadata).toMatchObject({ namespace: "pulumi-stacks" });
    expect(role("stacks-programs").rules).toEqual([
      {
        apiGroups: [""],
        resources: ["configmaps"],
        verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
      },
    ]);
    expect((binding("stacks-programs").subjects as { name: string }[]).map((s) => s.name)).toEqual(
      Object.keys(pipeline.environments).map((e) => `pulumi-stacks-${e}`),
    );
    // Previews read what programs manage, and change nothing.
    expect(role("stacks-previews").rules).toEqual([
      { apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "watch"] },
    ]);
    expect(binding("stacks-previews").subjects).toEqual(
      ["preview", ...named.map((a) => `preview-${a}`)].map((s) => ({
        kind: "ServiceAccount",
        name: `pulumi-stacks-${s}`,
        namespace: "pulumi-stacks",
      })),
    );
  });

  it("grants the program rules cluster-wide only when stackRbacScope is cluster", async () => {
    const clusterWide = await planProject("cluster-setup", { "cluster-setup:stackRbacScope": "cluster" });
    expect(ofType(clusterWide, "kubernetes:rbac.authorization.k8s.io/v1:Role")).toEqual([]);
    expect(
      ofType(clusterWide, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole").map((r) => r.name),
    ).toEqual(expect.arrayContaining(["stacks-programs", "stacks-previews"]));
  });

  it("holds no AWS keys anywhere: the Pulumi token is the only Secret, and it is secret", () => {
    const secrets = kubernetesObjects(plan).filter((o) => o.kind === "Secret");
    expect(secrets).toEqual([
      {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "pulumi-access-token", namespace: "pulumi-stacks" },
        type: "Opaque",
        stringData: "[secret]",
      },
    ]);
    const everything = JSON.stringify([cluster.resources, plan.resources]);
    expect(everything).not.toMatch(
      /AWS_ACCESS_KEY_ID|AWS_SECRET_ACCESS_KEY|aws_secret_access_key|AKIA[0-9A-Z]{16}/,
    );
    expect(everything).not.toContain("aws:iam/accessKey:AccessKey");
  });

  it("offers encrypted gp3 volumes from the EBS CSI driver, created in the zone of their first pod, gone with their claim, and exports their class for the plugin cache", () => {
    const classes = ofType(plan, "kubernetes:storage.k8s.io/v1:StorageClass").map((r) => r.inputs);
    expect(classes).toEqual([
      {
        apiVersion: "storage.k8s.io/v1",
        kind: "StorageClass",
        metadata: { name: plan.outputs.pluginCacheStorageClass },
        provisioner: "ebs.csi.aws.com",
        parameters: { type: "gp3", encrypted: "true", "csi.storage.k8s.io/fstype": "ext4" },
        reclaimPolicy: "Delete",
        volumeBindingMode: "WaitForFirstConsumer",
        allowVolumeExpansion: true,
      },
    ]);
    // Not the cluster's default class: only the claims that name it get it.
    expect(JSON.stringify(classes)).not.toContain("is-default-class");
  });

  it("exports what kargo needs, secret where it should be", () => {
    expect(plan.upstream.secretOutputNames.sort()).toEqual([
      "argocdAdminPassword",
      "kubeconfig",
      "pulumiAccessToken",
    ]);
    expect(plan.outputs).toMatchObject({
      stacksNamespace: "pulumi-stacks",
      stackServiceAccountName: "pulumi-stacks",
      pulumiAccessTokenSecretName: "pulumi-access-token",
      cognitoAdminGroup: "platform-admins",
      cognitoApproverGroups: approverGroups,
      argocdNamespace: "argocd",
      argocdProject: "pulumi-stacks",
      region: "us-west-2",
      // Passed through from cluster, where the example leaves the driver off.
      ebsCsiDriver: cluster.outputs.ebsCsiDriver,
    });
    expect(typeof plan.outputs.ebsCsiDriver).toBe("boolean");
    expect(plan.upstream.outputs.kubeconfig).toBe(cluster.upstream.outputs.kubeconfig);
  });
});
