// The Stack templates in stacks/ of the programs the pipeline promotes (kargo/pipeline.ts `programs`, each a
// folder of programs/): one per program stage, what each runs and with what. The programs' declarations and
// the policy each environment's identity gets for each are kargo-programs.test.ts's.
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { accountOf, previewServiceAccount } from "../lib/pipeline/accounts";
import { programStages, type ProgramStage } from "../lib/pipeline/graph";
import { driftManifestFile, stackManifestFile, stackObjectName } from "../lib/pipeline/names";
import { driftStages } from "../lib/pipeline/drift";
import { promotionTaskSpec } from "../lib/pipeline/promotion";
import { pluginCacheObjects } from "../lib/pipeline/plugin-seed";
import { stackManifest, workspaceEnv } from "../lib/pipeline/stack-manifest";
import { MAX_STACK_NAME, WORKSPACE_IMAGES, type Pipeline } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import { renderStacks } from "../lib/pipeline/stacks";
import { repoRoot } from "../lib/cli/plan/projects";
import type { KubeObject } from "../lib/crds/validate";
import { getValidator } from "./crds-support";
import { declaredImage, projectFile, type Obj } from "./kargo-support";

const pipeline = validatePipeline(definition);
const programOf = (p: Pipeline, s: ProgramStage) => p.programs.find((x) => x.name === s.program)!;

describe("stacks/", () => {
  const dir = path.join(repoRoot, pipeline.stacks.dir);
  const yamlFiles = () =>
    fs
      .readdirSync(dir)
      .filter((f) => f.endsWith(".yaml"))
      .sort();
  const manifests = () =>
    yamlFiles().map((f) => YAML.parse(fs.readFileSync(path.join(dir, f), "utf8")) as Obj);
  const manifestOf = (stage: string) =>
    YAML.parse(fs.readFileSync(path.join(dir, stackManifestFile(stage)), "utf8")) as Obj;

  it("holds exactly the templates the pipeline generates, one per program stage and a drift check per update stage (run `npm run stacks` after editing kargo/pipeline.ts)", () => {
    const expected = renderStacks(pipeline);
    expect(yamlFiles()).toEqual([...expected.keys()].sort());
    expect(yamlFiles()).toEqual(
      [
        ...programStages(pipeline).map((s) => stackManifestFile(s.name)),
        ...driftStages(pipeline).map((s) => driftManifestFile(s.name)),
      ].sort(),
    );
    for (const [file, content] of expected) {
      expect(fs.readFileSync(path.join(dir, file), "utf8"), file).toBe(content);
    }
  });

  it("runs in each program stage that program's folder, the stack of its project in the stage's environment, in its runtime's image", () => {
    for (const s of programStages(pipeline)) {
      const m = manifestOf(s.name);
      const x = programOf(pipeline, s);
      const file = projectFile(repoRoot, x);
      expect(m.metadata.name, s.name).toBe(stackObjectName(pipeline, s.name));
      expect(m.metadata.labels, s.name).toMatchObject({
        "app.kubernetes.io/instance": s.name,
        "app.kubernetes.io/name": x.name,
      });
      expect(m.spec.projectRepo, s.name).toBe(pipeline.source.repoURL);
      expect(m.spec.repoDir, s.name).toBe(x.dir);
      expect(m.spec.stack, s.name).toBe(
        `${pipeline.pulumi.organization}/${file.name}/${pipeline.environments[s.environment]!.pulumiStack}`,
      );
      expect(m.spec.workspaceTemplate.spec.image, s.name).toBe(
        declaredImage(x) ?? WORKSPACE_IMAGES[file.runtimeName],
      );
      expect(m.spec.workspaceTemplate.spec.image, s.name).toMatch(
        /(:\d+\.\d+\.\d+[\w.-]*|@sha256:[0-9a-f]{64})$/,
      );
    }
    // No two Stacks run the same program's stack for the same declared stage.
    const runs = programStages(pipeline).map((s) => `${s.declared} ${manifestOf(s.name).spec.stack}`);
    expect(new Set(runs).size).toBe(runs.length);
  });

  it("previews refresh like their update, never destroy anything, and preview the stack their update deploys (same program, same environment)", () => {
    const stages = programStages(pipeline);
    const previews = stages.filter((s) => s.kind === "preview");
    expect(previews).toHaveLength(
      pipeline.programs.length * pipeline.stages.filter((s) => s.kind === "preview").length,
    );
    for (const s of previews) {
      const previewStack = manifestOf(s.name);
      const updates = stages.filter(
        (u) => u.kind === "update" && u.environment === s.environment && u.program === s.program,
      );
      expect(updates, s.name).toHaveLength(1);
      const updateStack = manifestOf(updates[0]!.name);
      // Never destroyed (PKO skips the destroy of a preview Stack), and written without a `false`, which
      // PKO's own updates would drop (lib/pipeline/stack-manifest.ts).
      expect(previewStack.spec.preview).toBe(true);
      expect(previewStack.spec.destroyOnFinalize).toBeUndefined();
      expect(previewStack.spec.stack).toBe(updateStack.spec.stack);
      expect(previewStack.spec.repoDir).toBe(updateStack.spec.repoDir);
      expect(previewStack.spec.workspaceTemplate.spec.image).toBe(
        updateStack.spec.workspaceTemplate.spec.image,
      );
      expect(updateStack.spec.destroyOnFinalize).toBeUndefined();
      expect(updateStack.spec.preview).toBeUndefined();
      expect(previewStack.spec.refresh).toBe(updateStack.spec.refresh);
      expect(updateStack.spec.refresh).toBe(true);
    }
  });

  it("destroys on deletion only the update Stacks of an environment marked ephemeral", () => {
    const [env, ...others] = Object.keys(definition.environments);
    const ephemeral = validatePipeline({
      ...definition,
      environments: {
        ...definition.environments,
        // An ephemeral environment stops for nothing: it has no stopOn or deciders to keep.
        [env!]: { pulumiStack: definition.environments[env!]!.pulumiStack, ephemeral: true },
      },
    });
    const stages = programStages(ephemeral);
    for (const s of stages) {
      const { destroyOnFinalize } = stackManifest(ephemeral, s).spec;
      expect(destroyOnFinalize, s.name).toBe(s.kind === "update" && s.environment === env ? true : undefined);
    }
    expect(stages.filter((s) => s.kind === "update" && s.environment === env)).toHaveLength(
      ephemeral.programs.length,
    );
    expect(stages.some((s) => s.kind === "update" && others.includes(s.environment))).toBe(others.length > 0);
  });

  it("runs every Stack under the IRSA ServiceAccount with the token Secret and a pinned image, without AWS keys", () => {
    const stages = programStages(pipeline);
    expect(manifests()).toHaveLength(stages.length + driftStages(pipeline).length);
    for (const m of manifests()) {
      // A drift check runs as the read-only identity, like a preview (test/drift.test.ts).
      const drift = m.metadata.labels["app.kubernetes.io/component"] === "drift-check";
      expect(m.metadata.name.length).toBeLessThanOrEqual(MAX_STACK_NAME);
      expect(m.metadata.namespace).toBe(pipeline.stacks.namespace);
      expect(m.metadata.annotations["argocd.argoproj.io/sync-options"]).toBe("Prune=false,Delete=false");
      // Each environment's own identity for an update, the read-only one for a preview.
      const stage = stages.find((s) => s.name === m.metadata.labels["app.kubernetes.io/instance"])!;
      expect(stage, m.metadata.name).toBeDefined();
      // A preview in a named account runs as that account's preview identity (docs/accounts.md).
      expect(m.spec.serviceAccountName).toBe(
        stage.kind === "preview" || drift
          ? previewServiceAccount(
              pipeline.stacks.serviceAccountName,
              accountOf(pipeline.environments, stage.environment),
            )
          : `${pipeline.stacks.serviceAccountName}-${stage.environment}`,
      );
      expect(m.spec.envRefs).toEqual({
        PULUMI_ACCESS_TOKEN: {
          type: "Secret",
          secret: { name: pipeline.stacks.accessTokenSecret, key: "accessToken" },
        },
      });
      expect(JSON.stringify(m)).not.toMatch(/AWS_ACCESS_KEY_ID|AWS_SECRET_ACCESS_KEY/);
      // Config comes from Pulumi.<stack>.yaml at the promoted commit, so it passes the gates with the program.
      expect(m.spec.config).toBeUndefined();
    }
  });

  it("sizes each workspace as its program asks, removes it after success, and gives uid 1000 HOME and PULUMI_HOME in the pod's volume", () => {
    for (const s of programStages(pipeline)) {
      const x = programOf(pipeline, s);
      const ws = manifestOf(s.name).spec.workspaceTemplate.spec;
      expect(ws.securityProfile).toBe("restricted");
      const declared = definition.programs.find((d) => d.name === x.name)!.resources;
      expect(ws.resources, s.name).toEqual(declared ?? pipeline.stacks.workspaceResources);
      expect(manifestOf(s.name).spec.workspaceReclaimPolicy).toBe("Delete");
      const env = Object.fromEntries(
        (ws.env as { name: string; value: string }[]).map((e) => [e.name, e.value]),
      );
      // Both in the pod's own volume: none of the language images has a home uid 1000 may write.
      const pod = ws.podTemplate.spec;
      const mount = pod.containers[0].volumeMounts.find(
        (v: { mountPath: string }) => v.mountPath === env.HOME,
      );
      expect(mount, s.name).toBeDefined();
      expect(env.PULUMI_HOME, s.name).toBe(env.HOME);
      expect(
        pod.volumes.find((v: { name: string }) => v.name === mount.name),
        s.name,
      ).toEqual({
        name: mount.name,
        emptyDir: {},
      });
      // An environment given its own region (docs/accounts.md) adds it to every runtime's.
      const region = pipeline.environments[s.environment]!.aws?.region;
      expect(ws.env, s.name).toEqual([
        ...workspaceEnv(projectFile(repoRoot, x).runtimeName),
        ...(region ? ["AWS_REGION", "AWS_DEFAULT_REGION"].map((name) => ({ name, value: region })) : []),
      ]);
    }
  });

  it("keeps PULUMI_HOME on an emptyDir of the pod; with the plugin cache, PULUMI_HOME/plugins is a volume of the run's own, restored from the one snapshot and gone with the pod, writable to uid 1000", () => {
    const on = validatePipeline({ ...definition, stacks: { ...definition.stacks, pluginCacheGiB: 4 } });
    const off = validatePipeline({ ...definition, stacks: { ...definition.stacks, pluginCacheGiB: 0 } });
    const templates = (p: typeof pipeline) =>
      programStages(p).map((s) => ({ s, ws: stackManifest(p, s).spec.workspaceTemplate!.spec! }));
    const mountsOf = (pod: any) =>
      Object.fromEntries(pod.containers[0].volumeMounts.map((v: any) => [v.mountPath, v.name])) as Record<
        string,
        string
      >;
    const volumeAt = (pod: any, mountPath: string) =>
      pod.volumes.find((v: { name: string }) => v.name === mountsOf(pod)[mountPath]);
    for (const [p, cached] of [
      [pipeline, pipeline.stacks.pluginCacheGiB > 0],
      [on, true],
      [off, false],
    ] as const) {
      for (const { ws } of templates(p)) {
        const home = ws.env!.find((e) => e.name === "PULUMI_HOME")!.value!;
        const pod = ws.podTemplate!.spec as any;
        // Merged by name into PKO's own container (containers' patch merge key).
        expect(pod.containers.map((c: { name: string }) => c.name)).toEqual(["pulumi"]);
        // PULUMI_HOME is a volume's root, so no mount point's parent is left to the runtime to create as
        // root; it dies with the pod, credentials and all.
        expect(volumeAt(pod, home)).toEqual({ name: mountsOf(pod)[home], emptyDir: {} });
        if (!cached) {
          expect(Object.keys(mountsOf(pod))).toEqual([home]);
          expect(pod.securityContext).toBeUndefined();
          continue;
        }
        // PKO's restricted profile runs as uid/gid 1000 and sets no fsGroup (v2.9.0 workspace_controller.go).
        expect(pod.securityContext).toEqual({ fsGroup: 1000, fsGroupChangePolicy: "OnRootMismatch" });
        expect(Object.keys(mountsOf(pod)).sort()).toEqual([home, `${home}/plugins`]);
        const plugins = volumeAt(pod, `${home}/plugins`);
        // An ephemeral volume, never a claim by name: no two runs (nor two stages) share what one wrote.
        expect(plugins.persistentVolumeClaim).toBeUndefined();
        expect(plugins.ephemeral.volumeClaimTemplate.spec).toEqual({
          accessModes: ["ReadWriteOnce"],
          storageClassName: pluginCacheObjects(p).claim.spec.storageClassName,
          resources: { requests: { storage: `${p.stacks.pluginCacheGiB}Gi` } },
          dataSource: {
            apiGroup: "snapshot.storage.k8s.io",
            kind: "VolumeSnapshot",
            name: pluginCacheObjects(p).snapshot.metadata.name,
          },
        });
      }
    }
    // The Stacks with a cache pass PKO's CRD schema as the ones in stacks/ do (test/kube applies those).
    const withCache = programStages(on).map((s) => stackManifest(on, s));
    expect(getValidator().validate(withCache as KubeObject[]).errors).toEqual([]);
    const misspelt = structuredClone(withCache[0]!) as any;
    misspelt.spec.workspaceTemplate.spec.podTemplate.spec.volumes[1].ephemeral.volumeClaimTemplate.claim =
      "x";
    expect(getValidator().validate([misspelt]).errors).not.toEqual([]);
  });

  it("never names a commit: only a promotion pins one, on the stage's branch, so nothing runs before it", () => {
    for (const m of manifests()) {
      // Empty: PKO refuses the template as it stands (`missing "commit" or "branch"`, v2.9.0 git.go).
      expect(m.spec.commit).toBe("");
      expect(m.spec.branch).toBeUndefined();
    }
    const everything = [...fs.readdirSync(dir).map((f) => fs.readFileSync(path.join(dir, f), "utf8"))];
    for (const text of everything) expect(text).not.toMatch(/0{40}/);
  });

  it("holds spec.commit as a scalar the promotion's yaml-update can replace", () => {
    // Kargo's yaml-update rewrites only a key path that reaches an existing scalar and fails the promotion
    // with "key path not found" otherwise (akuity/kargo v1.11.2 pkg/yaml/yaml.go, findScalarNode).
    const steps = promotionTaskSpec(pipeline, "argocd").steps.filter((s) => s.uses === "yaml-update");
    // Kargo's key syntax: `.` separates, `\.` is a dot inside a key (akuity/kargo v1.11.2 pkg/sjson/split_key.go).
    const split = (key: string) => key.split(/(?<!\\)\./).map((k) => k.replaceAll("\\.", "."));
    const stageFile = stackManifestFile("${{ ctx.stage }}");
    const driftFile = driftManifestFile("${{ ctx.stage }}");
    const updated = [
      ...programStages(pipeline).map((s) => ({ stage: s, file: stackManifestFile(s.name), as: stageFile })),
      ...driftStages(pipeline).map((s) => ({ stage: s, file: driftManifestFile(s.name), as: driftFile })),
    ];
    expect(updated.map((u) => u.file).sort()).toEqual(yamlFiles());
    for (const { file, as } of updated) {
      const mine = steps.filter((s) => path.posix.basename((s.config as any).path) === as);
      const keys = mine.flatMap((s) => (s.config as any).updates.map((u: any) => u.key as string));
      expect(keys, file).toContain("spec.commit");
      // And PKO's reconcile request, so that promoting the same Freight again runs it again.
      expect(keys, file).toContain("metadata.annotations.pulumi\\.com/reconciliation-request");
      const doc = YAML.parseDocument(fs.readFileSync(path.join(dir, file), "utf8"));
      for (const key of keys) {
        expect(YAML.isScalar(doc.getIn(split(key), true)), `${file}: ${key} is a scalar`).toBe(true);
      }
    }
  });
});
