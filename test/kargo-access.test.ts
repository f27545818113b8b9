// Who and what the kargo project's pipeline objects, as planned from kargo/pipeline.ts, let act: each gate's
// approver roles and Cognito groups, the Argo CD Applications that deploy each program stage, the plugin
// cache, the credentials, each program's AWS permissions in each environment's identity, and the agreement
// with cluster-setup. The Stages, Warehouse and promotion policies are kargo.test.ts's.
import { beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { checkAgainstClusterSetup, type ClusterSetup } from "../kargo/upstream";
import { policyResourceName, previewPolicy, updatePolicy } from "../lib/pipeline/access";
import { accountOf, accountRoleName, namedAccounts } from "../lib/pipeline/accounts";
import { programStages } from "../lib/pipeline/graph";
import { applicationNotice, notifyKeys } from "../lib/pipeline/notify";
import {
  driftManifestFile,
  hasDriftCheck,
  names,
  stackManifestFile,
  stackObjectName,
  stageBranch,
} from "../lib/pipeline/names";
import { pluginCacheObjects } from "../lib/pipeline/plugin-seed";
import { approverGroups } from "../lib/pipeline/rbac";
import { rollbackRequestRoles } from "../lib/pipeline/rollback-request";
import { type Pipeline } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import type { ProgramPlan } from "../lib/cli/plan/harness";
import { ofType, one } from "./helpers";
import { namedGroups, planKargo, programStageNames, type Obj } from "./kargo-support";

describe("kargo project", () => {
  const pipeline: Pipeline = validatePipeline(definition);
  let setup: ProgramPlan;
  let plan: ProgramPlan;
  let ofKind: (kind: string) => Obj[];

  beforeAll(async () => {
    ({ setup, plan, ofKind } = await planKargo());
  });

  /** The declared preview stages that take Freight from `gate` (each program's stage takes its own there). */
  const fed = (gate: string) =>
    pipeline.stages
      .filter((s) => s.kind === "preview" && s.from !== "warehouse" && s.from.includes(gate))
      .map((s) => s.name);

  it("lets each gate's Cognito groups promote into that gate and the previews it feeds through Kargo's API: promote on them, create promotions, read", () => {
    for (const gate of pipeline.stages.filter((s) => s.kind === "gate")) {
      const name = `approver-${gate.name}`;
      const account = ofKind("ServiceAccount").find((a) => a.metadata.name === name)!;
      expect(account.metadata.namespace).toBe(pipeline.project);
      expect(JSON.parse(account.metadata.annotations["rbac.kargo.akuity.io/claims"])).toEqual({
        "cognito:groups": gate.approvers,
      });
      const rules = ofKind("Role").find((r) => r.metadata.name === name)!.rules as {
        resourceNames?: string[];
      }[];
      expect(
        rules.map((r) => ({ ...r, resourceNames: r.resourceNames && [...r.resourceNames].sort() })),
      ).toEqual([
        {
          apiGroups: ["kargo.akuity.io"],
          resources: ["stages"],
          // The gate, and every program's stage of each preview stage it feeds (a rollback starts there).
          resourceNames: [
            gate.name,
            ...programStages(pipeline)
              .filter((s) => s.kind === "preview" && fed(gate.name).includes(s.declared))
              .map((s) => s.name),
          ].sort(),
          verbs: ["promote"],
        },
        {
          apiGroups: ["kargo.akuity.io"],
          resources: ["promotions"],
          verbs: ["create"],
          resourceNames: undefined,
        },
      ]);
      const bindings = ofKind("RoleBinding").filter((b) =>
        b.subjects?.some(
          (s: { kind: string; name: string }) => s.kind === "ServiceAccount" && s.name === name,
        ),
      );
      // And the rollback request of each environment whose previews it feeds (its approvers ask for it).
      const environments = new Set(
        pipeline.stages.flatMap((s) =>
          s.kind === "preview" && fed(gate.name).includes(s.name) ? [s.environment] : [],
        ),
      );
      const requests = rollbackRequestRoles(pipeline)
        .filter((r) => environments.has(r.environment))
        .map((r) => r.name);
      expect(bindings.map((b) => b.roleRef.name).sort()).toEqual([name, "kargo-viewer", ...requests].sort());
    }
    // No gate approver may approve Freight past verification (`kargo approve` patches freights/status);
    // only destructive-change approvers may, for their environment's update stage (destructive-changes.test).
    const rules = ofKind("Role")
      .filter((r) => r.metadata.name.startsWith("approver-"))
      .flatMap((r) => r.rules as { resources: string[]; verbs: string[] }[]);
    expect(rules.some((r) => r.resources.includes("freights/status"))).toBe(false);
    expect(rules.every((r) => !r.verbs.includes("*"))).toBe(true);
    // Cluster-level read (kargo-user: list projects) for exactly the approver groups.
    const oidc = (one(plan, "kubernetes:helm.sh/v3:Release").inputs.values as any).api.oidc;
    expect(oidc.users).toEqual({ claims: { "cognito:groups": namedGroups(pipeline) } });
    expect(approverGroups(pipeline)).toEqual(oidc.users.claims["cognito:groups"]);
    expect(setup.outputs.cognitoApproverGroups).toEqual(expect.arrayContaining(approverGroups(pipeline)));
  });

  it("gives Kargo's install the same approver groups whatever order the pipeline names them in, so reordering them upgrades nothing", () => {
    const groups = approverGroups(pipeline);
    const firstGate = definition.stages.find((s) => s.kind === "gate")!;
    // The first gate now names every group, last one first: the same groups, met in another order.
    const reordered = validatePipeline({
      ...definition,
      stages: definition.stages.map((s) =>
        s.name === firstGate.name ? { ...s, approvers: [...groups].reverse() } : s,
      ),
    });
    expect(approverGroups(reordered)).toEqual(groups);
  });

  it("gives each program stage an Argo CD Application tracking the stage's own branch, which never syncs or prunes on its own", () => {
    const apps = ofKind("Application");
    expect(apps.map((a) => a.metadata.name).sort()).toEqual(
      programStageNames(pipeline)
        .map((s) => stackObjectName(pipeline, s))
        .sort(),
    );
    for (const s of programStages(pipeline)) {
      const app = apps.find((a) => a.metadata.name === stackObjectName(pipeline, s.name))!;
      expect(app.metadata.namespace).toBe(setup.outputs.argocdNamespace);
      // The stage's facts for Argo CD's notifications; no subscription without a destination.
      expect(app.metadata.annotations).toEqual({
        "kargo.akuity.io/authorized-stage": `${pipeline.project}:${s.name}`,
        ...applicationNotice(pipeline, s),
        [notifyKeys.kargoProjectUrl]: expect.stringMatching(/^https:\/\/.+\/project\//),
      });
      expect(app.spec.project).toBe(setup.outputs.argocdProject);
      expect(app.spec.syncPolicy?.automated).toBeUndefined();
      expect(app.spec.destination).toEqual({
        server: "https://kubernetes.default.svc",
        namespace: pipeline.stacks.namespace,
      });
      expect(app.spec.source, s.name).toEqual({
        repoURL: pipeline.source.repoURL,
        targetRevision: stageBranch(s.name),
        path: ".",
        // An update stage's branch also holds its drift check (test/drift.test.ts).
        directory: {
          include: hasDriftCheck(pipeline, s)
            ? `{${stackManifestFile(s.name)},${driftManifestFile(s.name)}}`
            : stackManifestFile(s.name),
        },
      });
    }
    // One tracked branch and one manifest per Application: no stage of one program deploys another's.
    expect(new Set(apps.map((a) => a.spec.source.targetRevision)).size).toBe(apps.length);
    expect(new Set(apps.map((a) => a.spec.source.directory.include)).size).toBe(apps.length);
  });

  it("keeps one plugin cache for the whole pipeline, whatever its stages: a seed claim, its Job and one snapshot every workspace restores", () => {
    const claims = ofKind("PersistentVolumeClaim");
    const snapshots = ofKind("VolumeSnapshot");
    const on = pipeline.stacks.pluginCacheGiB > 0;
    expect(claims).toHaveLength(on ? 1 : 0);
    expect(snapshots).toHaveLength(on ? 1 : 0);
    if (!on) return;
    const o = pluginCacheObjects(pipeline);
    expect(claims[0]!.metadata).toMatchObject(o.claim.metadata);
    expect(claims[0]!.spec.storageClassName).toBe(setup.outputs.pluginCacheStorageClass);
    expect(snapshots[0]!.spec.source.persistentVolumeClaimName).toBe(claims[0]!.metadata.name);
    expect(ofKind("Job").map((j) => j.metadata.name)).toContain(o.job.metadata.name);
  });

  it("seeds before it snapshots, snapshots before any Stage can promote, and replaces the snapshot in place under its name", () => {
    if (pipeline.stacks.pluginCacheGiB === 0) return;
    const o = pluginCacheObjects(pipeline);
    const find = (type: string, name: string) =>
      plan.resources.find((r) => r.type === type && r.name === name)!;
    const job = find("kubernetes:batch/v1:Job", o.job.metadata.name);
    const snapshot = find("kubernetes:snapshot.storage.k8s.io/v1:VolumeSnapshot", o.snapshot.metadata.name);
    expect(snapshot.dependsOn).toContain(job.urn);
    // The engine waits for the Job as long as the Job may run, and the snapshot is taken anew in its place.
    expect(job.options.createTimeout).toBe(`${o.job.spec.activeDeadlineSeconds}s`);
    expect(snapshot.options).toMatchObject({ deleteBeforeReplace: true, replaceOnChanges: ["spec"] });
    // A dependency on the cache's component reaches the engine as one on each of its resources.
    for (const stage of plan.resources.filter(
      (r) => r.type.endsWith("Stage") && r.type.startsWith("kubernetes:kargo"),
    ))
      expect(stage.dependsOn, stage.name).toContain(snapshot.urn);
  });

  it("refuses a plugin cache on a cluster without the EBS CSI driver or the snapshot controller, naming the settings", () => {
    const on = validatePipeline({ ...definition, stacks: { ...definition.stacks, pluginCacheGiB: 4 } });
    const off = validatePipeline({ ...definition, stacks: { ...definition.stacks, pluginCacheGiB: 0 } });
    const outputs = setup.upstream.outputs as Record<string, any>;
    const upstream = (ebsCsiDriver: boolean, volumeSnapshots: boolean) =>
      ({
        ...outputs,
        network: {},
        previewIdentity: {
          serviceAccountName: outputs.previewServiceAccountName,
          roleArn: outputs.previewRoleArn,
        },
        ebsCsiDriver,
        volumeSnapshots,
      }) as unknown as ClusterSetup;
    expect(() => checkAgainstClusterSetup(on, upstream(false, false))).toThrow(
      "pipeline stacks.pluginCacheGiB is 4, but the cluster runs no EBS CSI driver to seed and restore the plugin cache; set cluster:ebsCsiDriver true and pulumi up cluster and cluster-setup first, or set stacks.pluginCacheGiB to 0",
    );
    expect(() => checkAgainstClusterSetup(on, upstream(true, false))).toThrow(
      "pipeline stacks.pluginCacheGiB is 4, but the cluster runs no CSI snapshot controller to seed and restore the plugin cache; set cluster:ebsCsiDriver true and pulumi up cluster and cluster-setup first, or set stacks.pluginCacheGiB to 0",
    );
    expect(() => checkAgainstClusterSetup(on, upstream(true, true))).not.toThrow();
    expect(() => checkAgainstClusterSetup(off, upstream(false, false))).not.toThrow();
    // The manifests name the class without reading cluster-setup: another class there is said.
    expect(() =>
      checkAgainstClusterSetup(on, { ...upstream(true, true), pluginCacheStorageClass: "other" }),
    ).toThrow(
      /pipeline stacks.pluginCacheGiB's StorageClass is "pulumi-plugin-cache" but cluster-setup's pluginCacheStorageClass is "other"/,
    );
  });

  it("labels the git credentials for Kargo and keeps every credential secret", () => {
    const secrets = ofKind("Secret");
    const git = secrets.find(
      (s) => s.metadata.namespace === pipeline.project && s.metadata.name === names.gitCredentials,
    )!;
    expect(git.metadata.labels).toEqual({ "kargo.akuity.io/cred-type": "git" });
    for (const s of secrets) expect(s.stringData, s.metadata.name).toBe("[secret]");
    expect(secrets.map((s) => `${s.metadata.namespace}/${s.metadata.name}`).sort()).toEqual(
      [
        `${setup.outputs.argocdNamespace}/${pipeline.project}-repository`,
        `${pipeline.project}/${names.gitCredentials}`,
        `${pipeline.project}/${names.webhookSecret}`,
        `${pipeline.project}/${names.verificationToken}`,
        `${pipeline.stacks.namespace}/${pipeline.stacks.gitCredentialsSecret}`,
      ].sort(),
    );
  });

  describe("each program's AWS permissions", () => {
    const policies = () => ofType(plan, "aws:iam/rolePolicy:RolePolicy");
    const policy = (name: string) => {
      const found = policies().filter((p) => p.name === name);
      expect(found, name).toHaveLength(1);
      return { role: found[0]!.inputs.role, document: JSON.parse(String(found[0]!.inputs.policy)) };
    };
    it("attaches one policy per program to each environment's role and one per program to the preview role, exactly what access.ts computes", () => {
      const identities = setup.outputs.stackIdentities as Record<string, { roleName: string }>;
      const withAccess = pipeline.programs.filter((x) => x.aws);
      const environments = Object.keys(pipeline.environments);
      // Environments naming an AWS account have their roles there, made by kargo (lib/pipeline/accounts.ts).
      const accounts = namedAccounts(pipeline.environments);
      const base = pipeline.stacks.serviceAccountName;
      const inCluster = environments.some((e) => accountOf(pipeline.environments, e) === undefined);
      expect(
        policies()
          .map((p) => p.name)
          .sort(),
      ).toEqual(
        withAccess
          .flatMap((x) => [
            ...environments.map((e) => policyResourceName(x.name, e)),
            ...(inCluster ? [policyResourceName(x.name)] : []),
            ...accounts.map((a) => policyResourceName(x.name, undefined, a)),
          ])
          .sort(),
      );
      for (const x of withAccess) {
        for (const env of environments) {
          const { role, document } = policy(policyResourceName(x.name, env));
          expect(role, `${x.name} in ${env}`).toBe(
            accountOf(pipeline.environments, env) === undefined
              ? identities[env]!.roleName
              : accountRoleName(base, env),
          );
          expect(document, `${x.name} in ${env}`).toEqual(updatePolicy(pipeline, x, env));
        }
        if (inCluster) {
          const { role, document } = policy(policyResourceName(x.name));
          expect(role, x.name).toBe(setup.outputs.previewRoleName);
          expect(document, x.name).toEqual(previewPolicy(pipeline, x));
        }
        for (const account of accounts) {
          const { role, document } = policy(policyResourceName(x.name, undefined, account));
          expect(role, `${x.name} previews in ${account}`).toBe(accountRoleName(base));
          expect(document, `${x.name} previews in ${account}`).toEqual(
            previewPolicy(pipeline, x, "aws", account),
          );
        }
      }
    });
  });

  it("rejects a pipeline that disagrees with cluster-setup, naming both sides", () => {
    const outputs = setup.upstream.outputs as Record<string, any>;
    const agreeing = {
      ...outputs,
      network: {},
      previewIdentity: {
        serviceAccountName: outputs.previewServiceAccountName,
        roleArn: outputs.previewRoleArn,
      },
    } as unknown as ClusterSetup;
    expect(() => checkAgainstClusterSetup(pipeline, agreeing)).not.toThrow();
    const gate = pipeline.stages.find((s) => s.kind === "gate")!;
    const group = gate.approvers[0]!;
    const otherNamespace = `${pipeline.stacks.namespace}-other`;
    const disagreeing = {
      ...agreeing,
      stacksNamespace: otherNamespace,
      cognitoApproverGroups: namedGroups(pipeline).filter((g) => g !== group),
    };
    expect(() => checkAgainstClusterSetup(pipeline, disagreeing)).toThrow(
      `pipeline stacks.namespace is "${pipeline.stacks.namespace}" but cluster-setup's stacksNamespace is "${otherNamespace}"`,
    );
    expect(() => checkAgainstClusterSetup(pipeline, disagreeing)).toThrow(
      `stage "${gate.name}": approver group "${group}" is not a Cognito group`,
    );
  });
});
