// The plugin cache (lib/pipeline/plugin-cache.ts, plugin-seed.ts): which providers it holds, read from each
// program's own pins whatever its runtime; what seeds it and under which identity; and that one cache serves
// every stage, so neither its cost nor stacks/ changes with the pipeline's size or its providers' versions.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import YAML from "yaml";
import { describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { programStages } from "../lib/pipeline/graph";
import { pipelinePlugins, PLUGIN_CACHE_STORAGE_CLASS } from "../lib/pipeline/plugin-cache";
import { pluginCacheObjects, pluginSeedScript } from "../lib/pipeline/plugin-seed";
import { programPlugins } from "../lib/pipeline/program-plugins";
import { MAX_STACK_NAME, WORKSPACE_IMAGES, type Pipeline } from "../lib/pipeline/schema";
import { BURST_TAINT, stackManifest, workspaceEnv } from "../lib/pipeline/stack-manifest";
import { validatePipeline } from "../lib/pipeline/validate";
import type { KubeObject } from "../lib/crds/validate";
import { getValidator } from "./crds-support";
import { SNAPSHOT_CONTROLLER_VERSION } from "../cluster/config";
import { readValidationData } from "../lib/crds/schema";
import { pinned } from "../lib/crds/sources";
import { roomFor, withMoreEnvironments, withRoomFor } from "./capacity-support";

const pipeline = validatePipeline(definition);
const cached = validatePipeline({ ...definition, stacks: { ...definition.stacks, pluginCacheGiB: 3 } });

/** A program folder holding `files`, for reading its pins. */
function folder(files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "program-plugins-"));
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
  return dir;
}

/** `p` with its programs' plugins replaced by `plugins`. */
const withPlugins = (p: Pipeline, plugins: Pipeline["programs"][number]["plugins"]): Pipeline => ({
  ...p,
  programs: p.programs.map((x) => ({ ...x, plugins })),
});

describe("the plugins a program pins", () => {
  it("reads Pulumi YAML's resource versions, npm's lock, uv's lock and go.mod, leaving out Pulumi's own SDK and policy packages", () => {
    const yaml = folder({
      "Pulumi.yaml": YAML.stringify({
        name: "p",
        runtime: "yaml",
        resources: {
          a: { type: "aws:s3:Bucket", options: { version: "7.1.0" } },
          b: { type: "aws:s3:BucketPolicy", options: { version: "7.1.0" } },
          c: { type: "random:index:RandomPet", options: { version: "4.2.0" } },
          d: { type: "tls:index:PrivateKey" },
          e: { type: "pulumi:pulumi:StackReference", options: { version: "3.0.0" } },
        },
      }),
    });
    expect(programPlugins(yaml, "yaml")).toEqual([
      { name: "aws", version: "7.1.0" },
      { name: "random", version: "4.2.0" },
    ]);
    const nodejs = folder({
      "package-lock.json": JSON.stringify({
        packages: {
          "": { dependencies: { "@pulumi/aws": "7.2.0" } },
          "node_modules/@pulumi/aws": { version: "7.2.0" },
          "node_modules/@pulumi/pulumi": { version: "3.200.0" },
          "node_modules/@pulumi/policy": { version: "1.0.0" },
          "node_modules/@pulumi/awsx/node_modules/@pulumi/aws": { version: "6.0.0" },
          "node_modules/@pulumi/awsx": { version: "3.0.0" },
        },
      }),
    });
    expect(programPlugins(nodejs, "nodejs")).toEqual([
      { name: "aws", version: "7.2.0" },
      { name: "awsx", version: "3.0.0" },
    ]);
    const python = folder({
      "uv.lock": [
        "[[package]]",
        'name = "pulumi"',
        'version = "3.200.0"',
        "",
        "[[package]]",
        'name = "pulumi-aws"',
        'version = "7.3.0"',
        'source = { registry = "https://pypi.org/simple" }',
        "",
        "[[package]]",
        'name = "pulumi-aws-native"',
        'version = "1.30.0"',
        "",
      ].join("\n"),
    });
    expect(programPlugins(python, "python")).toEqual([
      { name: "aws", version: "7.3.0" },
      { name: "aws-native", version: "1.30.0" },
    ]);
    const go = folder({
      "go.mod": [
        "module example.com/p",
        "require (",
        "\tgithub.com/pulumi/pulumi-aws/sdk/v7 v7.4.0",
        "\tgithub.com/pulumi/pulumi-random/sdk/v4 v4.18.0 // indirect",
        "\tgithub.com/pulumi/pulumi/sdk/v3 v3.200.0",
        ")",
      ].join("\n"),
    });
    expect(programPlugins(go, "go")).toEqual([
      { name: "aws", version: "7.4.0" },
      { name: "random", version: "4.18.0" },
    ]);
    // Only exact versions and plain names reach the seed's script; anything else is the workspace's to resolve.
    const odd = folder({
      "Pulumi.yaml": YAML.stringify({
        name: "p",
        runtime: "yaml",
        resources: {
          a: { type: "aws; touch /tmp/x:s3:Bucket", options: { version: "7.1.0" } },
          b: { type: "random:index:RandomPet", options: { version: "4.x" } },
          c: { type: "tls:index:PrivateKey", options: { version: "5.0.0 && true" } },
          d: { type: "command:local:Command", options: { version: "1.0.0-alpha.1+dev" } },
        },
      }),
    });
    expect(programPlugins(odd, "yaml")).toEqual([{ name: "command", version: "1.0.0-alpha.1+dev" }]);
    // A runtime or lock it cannot read leaves the workspace to install what it needs itself.
    expect(programPlugins(folder({}), "nodejs")).toEqual([]);
    expect(programPlugins(yaml, "dotnet")).toEqual([]);
  });

  it("holds, for each program of the pipeline, every plugin its own pins name", () => {
    for (const x of pipeline.programs) {
      expect(x.plugins, x.name).toEqual(programPlugins(x.dir, x.runtime));
      for (const plugin of x.plugins) expect(pipelinePlugins(pipeline), x.name).toContainEqual(plugin);
    }
    const all = pipeline.programs.flatMap((x) => x.plugins.map((y) => `${y.name}@${y.version}`));
    expect(pipelinePlugins(pipeline).map((y) => `${y.name}@${y.version}`)).toEqual([...new Set(all)].sort());
  });
});

describe("the seed", () => {
  const o = pluginCacheObjects(cached);
  const pod = o.job.spec.template.spec;

  it("installs each plugin once, with the workspaces' own CLI, into the plugins folder the workspaces mount", () => {
    const installs = pluginSeedScript(cached)
      .split("\n")
      .filter((l) => l.startsWith("pulumi plugin install"));
    expect(installs).toEqual(
      pipelinePlugins(cached).map((x) => `pulumi plugin install resource ${x.name} ${x.version}`),
    );
    const seed = pod.containers[0]!;
    expect(seed.command).toEqual(["/bin/sh", "-c", pluginSeedScript(cached)]);
    // The CLI of every workspace image is the same version (their tags).
    const tags = new Set(Object.values(WORKSPACE_IMAGES).map((image) => image.split(":")[1]));
    expect(tags).toEqual(new Set([seed.image.split(":")[1]]));
    const home = seed.env.find((e) => e.name === "PULUMI_HOME")!.value;
    for (const x of cached.programs)
      expect(workspaceEnv(x.runtime)).toContainEqual({ name: "PULUMI_HOME", value: home });
    const mounted = Object.fromEntries(seed.volumeMounts.map((m) => [m.mountPath, m.name]));
    expect(pod.volumes.find((v) => v.name === mounted[`${home}/plugins`])).toEqual({
      name: mounted[`${home}/plugins`],
      persistentVolumeClaim: { claimName: o.claim.metadata.name },
    });
    expect(o.snapshot.spec.source.persistentVolumeClaimName).toBe(o.claim.metadata.name);
    expect(o.claim.spec.resources.requests.storage).toBe(`${cached.stacks.pluginCacheGiB}Gi`);
    expect(o.claim.spec.storageClassName).toBe(PLUGIN_CACHE_STORAGE_CLASS);
  });

  it("names its Job within the 63 characters a Job may have, for the longest project a Stack name allows", () => {
    const longest = "p".repeat(MAX_STACK_NAME - 2);
    const named = pluginCacheObjects({ ...cached, project: longest });
    expect(named.job.metadata.name.length).toBeLessThanOrEqual(63);
    expect(named.job.metadata.name).toBe(named.claim.metadata.name);
  });

  it("runs as the workspaces run (uid and gid 1000), with no Kubernetes token and no cloud role, on base or burst nodes", () => {
    expect(pod.securityContext).toMatchObject({
      runAsNonRoot: true,
      runAsUser: 1000,
      runAsGroup: 1000,
      fsGroup: 1000,
    });
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(o.serviceAccount.automountServiceAccountToken).toBe(false);
    expect(pod.serviceAccountName).toBe(o.serviceAccount.metadata.name);
    // No IRSA annotation: the seed downloads public release assets and needs no AWS identity.
    expect(JSON.stringify(o.serviceAccount)).not.toMatch(/eks\.amazonaws\.com/);
    // Not any stage's identity: no stage can write what the snapshot holds.
    for (const s of programStages(cached))
      expect(stackManifest(cached, s).spec.serviceAccountName).not.toBe(pod.serviceAccountName);
    expect(pod.tolerations).toContainEqual(
      expect.objectContaining({ key: BURST_TAINT.key, effect: BURST_TAINT.effect }),
    );
  });

  it("is typed and validated against the snapshot CRDs of the snapshot-controller add-on's own version", () => {
    // The add-on installs the CRDs (EKS user guide, "Enable snapshot functionality for CSI volumes").
    expect(SNAPSHOT_CONTROLLER_VERSION.split("-eksbuild")[0]).toBe(pinned.externalSnapshotter);
  });

  it("is waited for until the CRD's boolean status.readyToUse is true, as pulumi-kubernetes compares it (fmt.Sprint)", () => {
    const [crd] =
      readValidationData().crds["external-snapshotter/snapshot.storage.k8s.io_volumesnapshots.yaml"]!;
    const status = (crd!.schema as any).properties.status.properties;
    expect(status.readyToUse.type).toBe("boolean");
    expect(o.snapshot.metadata.annotations["pulumi.com/waitFor"]).toBe("jsonpath={.status.readyToUse}=true");
  });

  it("passes the snapshot CRDs' schemas, and a misspelt field does not", () => {
    const objects = [
      { apiVersion: "snapshot.storage.k8s.io/v1", kind: "VolumeSnapshotClass", ...o.snapshotClass },
      { apiVersion: "snapshot.storage.k8s.io/v1", kind: "VolumeSnapshot", ...o.snapshot },
    ] as unknown as KubeObject[];
    expect(getValidator().validate(objects).errors).toEqual([]);
    const misspelt = structuredClone(objects[1]!) as any;
    misspelt.spec.source.pvcName = misspelt.spec.source.persistentVolumeClaimName;
    delete misspelt.spec.source.persistentVolumeClaimName;
    expect(getValidator().validate([misspelt]).errors).not.toEqual([]);
  });
});

describe("one cache for the whole pipeline", () => {
  it("is the same cache with ten more environments, and every Stack restores from its one snapshot", () => {
    // Ten more, or as many as the schema's limits leave room for (a fork at them makes room first).
    const base = withRoomFor(definition, 1);
    const more = withMoreEnvironments(base, Math.min(10, roomFor(base)));
    expect(pluginCacheObjects(more)).toEqual(pluginCacheObjects(pipeline));
    const names = new Set(
      programStages(more).map(
        (s) =>
          (stackManifest(more, s).spec.workspaceTemplate!.spec!.podTemplate!.spec as any).volumes.find(
            (v: any) => v.ephemeral,
          )?.ephemeral.volumeClaimTemplate.spec.dataSource.name,
      ),
    );
    expect(names).toEqual(
      new Set(
        pipeline.stacks.pluginCacheGiB > 0
          ? [pluginCacheObjects(pipeline).snapshot.metadata.name]
          : [undefined],
      ),
    );
  });

  it("reseeds under new names when a provider version changes, while the snapshot's name, and so stacks/, stay", () => {
    const bumped = withPlugins(cached, [{ name: "aws", version: "99.0.0" }]);
    const [before, after] = [pluginCacheObjects(cached), pluginCacheObjects(bumped)];
    expect(after.job.metadata.name).not.toBe(before.job.metadata.name);
    expect(after.claim.metadata.name).not.toBe(before.claim.metadata.name);
    expect(after.snapshot.metadata.name).toBe(before.snapshot.metadata.name);
    expect(after.snapshot.spec.source.persistentVolumeClaimName).toBe(after.claim.metadata.name);
    for (const s of programStages(cached)) expect(stackManifest(bumped, s)).toEqual(stackManifest(cached, s));
    // The same pins in another order are the same seed.
    const two = [
      { name: "aws", version: "7.0.0" },
      { name: "random", version: "4.0.0" },
    ];
    expect(pluginCacheObjects(withPlugins(cached, two))).toEqual(
      pluginCacheObjects(withPlugins(cached, [...two].reverse())),
    );
  });
});
