// The program the pipeline promotes (Pulumi.yaml at the root), its Stack templates in stacks/, and the
// policy each environment's identity gets for it.
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import {
  previewPolicy,
  programActions,
  programPolicy,
  programReadActions,
  programWriteActions,
} from "../kargo/programPolicy";
import { promotionTaskSpec } from "../lib/pipeline/promotion";
import { stackManifest } from "../lib/pipeline/stack-manifest";
import { validatePipeline } from "../lib/pipeline/validate";
import { renderStacks } from "../lib/pipeline/stacks";
import { repoRoot } from "../lib/cli/plan/projects";
import type { KubeObject } from "../lib/crds/validate";
import { getValidator } from "./crds-support";
import { Obj } from "./kargo-support";

describe("the promoted program", () => {
  const program = YAML.parse(fs.readFileSync(path.join(repoRoot, "Pulumi.yaml"), "utf8"));
  it("is a Pulumi YAML program making one private, encrypted, versioned bucket, protected, with the provider pinned", () => {
    const { bucket, publicAccessBlock, versioning, encryption, ownership } = program.resources;
    expect(bucket).toMatchObject({ type: "aws:s3:Bucket", options: { protect: true } });
    expect(publicAccessBlock.properties).toMatchObject({
      blockPublicAcls: true,
      blockPublicPolicy: true,
      ignorePublicAcls: true,
      restrictPublicBuckets: true,
    });
    expect(versioning.properties.versioningConfiguration).toEqual({ status: "Enabled" });
    expect(encryption.properties.rules[0].applyServerSideEncryptionByDefault.sseAlgorithm).toBe("AES256");
    expect(ownership.properties.rule.objectOwnership).toBe("BucketOwnerEnforced");
    for (const [name, resource] of Object.entries<any>(program.resources))
      expect(resource.options.version, name).toBe("7.48.0");
  });
});

describe("stacks/", () => {
  const pipeline = validatePipeline(definition);
  const dir = path.join(repoRoot, "stacks");

  it("holds exactly the templates the pipeline generates (run `npm run stacks` after editing kargo/pipeline.ts)", () => {
    const expected = renderStacks(pipeline);
    expect(
      fs
        .readdirSync(dir)
        .filter((f) => f.endsWith(".yaml"))
        .sort(),
    ).toEqual([...expected.keys()].sort());
    for (const [file, content] of expected) {
      expect(fs.readFileSync(path.join(dir, file), "utf8"), file).toBe(content);
    }
  });

  const manifests = () =>
    fs
      .readdirSync(dir)
      .filter((f) => f.endsWith(".yaml"))
      .map((f) => YAML.parse(fs.readFileSync(path.join(dir, f), "utf8")) as Obj);

  it("previews refresh like their update, never destroy anything, and preview the stack their update deploys", () => {
    for (const s of pipeline.stages.filter((s) => s.kind === "preview")) {
      const previewStack = manifests().find((m) => m.metadata.name === `infra-${s.name}`)!;
      const updateStage = pipeline.stages.find(
        (u) => u.kind === "update" && u.environment === s.environment,
      )!;
      const updateStack = manifests().find((m) => m.metadata.name === `infra-${updateStage.name}`)!;
      expect(previewStack.spec).toMatchObject({ preview: true, destroyOnFinalize: false });
      expect(previewStack.spec.stack).toBe(updateStack.spec.stack);
      expect(updateStack.spec).toMatchObject({ destroyOnFinalize: false });
      expect(updateStack.spec.preview).toBeUndefined();
      expect(previewStack.spec.refresh).toBe(updateStack.spec.refresh);
      expect(updateStack.spec.refresh).toBe(true);
    }
  });

  it("destroys on deletion only the update Stack of an environment marked ephemeral", () => {
    const [env, ...others] = Object.keys(definition.environments);
    const ephemeral = validatePipeline({
      ...definition,
      environments: {
        ...definition.environments,
        [env!]: { ...definition.environments[env!]!, ephemeral: true },
      },
    });
    for (const s of ephemeral.stages.filter((s) => s.kind !== "gate")) {
      const { destroyOnFinalize } = stackManifest(ephemeral, s).spec;
      expect(destroyOnFinalize, s.name).toBe(s.kind === "update" && s.environment === env);
    }
    expect(ephemeral.stages.some((s) => s.kind === "update" && s.environment === env)).toBe(true);
    expect(ephemeral.stages.some((s) => s.kind === "update" && others.includes(s.environment))).toBe(
      others.length > 0,
    );
  });

  it("runs every Stack under the IRSA ServiceAccount with the token Secret and a pinned slim image, without AWS keys", () => {
    for (const m of manifests()) {
      expect(m.metadata.name.length).toBeLessThanOrEqual(42);
      expect(m.metadata.annotations["argocd.argoproj.io/sync-options"]).toBe("Prune=false,Delete=false");
      // Each environment's own identity for an update, the read-only one for a preview.
      const stage = pipeline.stages.find((s) => s.name === m.metadata.labels["app.kubernetes.io/instance"]);
      const suffix = stage!.kind === "preview" ? "preview" : (stage as { environment: string }).environment;
      expect(m.spec.serviceAccountName).toBe(`${setupDefaults.stackServiceAccount}-${suffix}`);
      expect(Object.keys(m.spec.envRefs)).toEqual(["PULUMI_ACCESS_TOKEN"]);
      expect(JSON.stringify(m)).not.toMatch(/AWS_ACCESS_KEY_ID|AWS_SECRET_ACCESS_KEY/);
      expect(m.spec.workspaceTemplate.spec.image).toMatch(/^pulumi\/pulumi-base:\d+\.\d+\.\d+$/);
      expect(m.spec.stack).toMatch(
        new RegExp(`^${pipeline.pulumi.organization}/${pipeline.pulumi.project}/`),
      );
      // Config comes from Pulumi.<stack>.yaml at the promoted commit, so it passes the gates with the program.
      expect(m.spec.config).toBeUndefined();
    }
  });

  it("sizes each workspace for the AWS provider, removes it after success, and gives uid 1000 a writable PULUMI_HOME", () => {
    for (const m of manifests()) {
      const ws = m.spec.workspaceTemplate.spec;
      expect(ws.securityProfile).toBe("restricted");
      expect(ws.resources).toEqual({
        requests: { cpu: "250m", memory: "640Mi" },
        limits: { memory: "1536Mi" },
      });
      expect(m.spec.workspaceReclaimPolicy).toBe("Delete");
      expect(ws.env).toEqual([{ name: "PULUMI_HOME", value: "/pulumi-home" }]);
    }
  });

  it("keeps PULUMI_HOME on an emptyDir of the pod; with a plugin cache, only PULUMI_HOME/plugins outlives it, on a claim of the Stack's own stage, writable to uid 1000", () => {
    const on = validatePipeline({ ...definition, stacks: { ...definition.stacks, pluginCacheGiB: 4 } });
    const templates = (p: typeof pipeline) =>
      p.stages
        .filter((s) => s.kind !== "gate")
        .map((s) => ({ s, ws: stackManifest(p, s).spec.workspaceTemplate!.spec! }));
    const mountsOf = (pod: any) =>
      Object.fromEntries(pod.containers[0].volumeMounts.map((v: any) => [v.mountPath, v.name])) as Record<
        string,
        string
      >;
    const volumeAt = (pod: any, mountPath: string) =>
      pod.volumes.find((v: { name: string }) => v.name === mountsOf(pod)[mountPath]);
    const claims = new Set<string>();
    for (const [p, cached] of [
      [pipeline, pipeline.stacks.pluginCacheGiB > 0],
      [on, true],
    ] as const) {
      for (const { s, ws } of templates(p)) {
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
        expect(volumeAt(pod, `${home}/plugins`).persistentVolumeClaim).toEqual({
          claimName: `${p.project}-${s.name}-plugins`,
        });
        claims.add(volumeAt(pod, `${home}/plugins`).persistentVolumeClaim.claimName);
      }
    }
    // One claim per Stack: a ReadWriteOnce volume attaches to one node, and a preview and its environment's
    // update can run at once.
    expect(claims.size).toBe(templates(on).length);
    // The Stacks with a cache pass PKO's CRD schema as the ones in stacks/ do (test/kube applies those).
    const withCache = on.stages.filter((s) => s.kind !== "gate").map((s) => stackManifest(on, s));
    expect(getValidator().validate(withCache as KubeObject[]).errors).toEqual([]);
    const misspelt = structuredClone(withCache[0]!) as any;
    misspelt.spec.workspaceTemplate.spec.podTemplate.spec.volumes[1].persistentVolumeClaim.claim = "x";
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
    const steps = promotionTaskSpec(validatePipeline(definition), "argocd").steps;
    const keys = steps
      .filter((s) => s.uses === "yaml-update")
      .flatMap((s) => (s.config as any).updates.map((u: any) => u.key));
    expect(keys).toEqual(["spec.commit"]);
    for (const file of fs.readdirSync(dir).filter((f) => f.endsWith(".yaml"))) {
      const doc = YAML.parseDocument(fs.readFileSync(path.join(dir, file), "utf8"));
      for (const key of keys) {
        expect(YAML.isScalar(doc.getIn(key.split("."), true)), `${file}: ${key} is a scalar`).toBe(true);
      }
    }
  });
});

const setupDefaults = { stackServiceAccount: "pulumi-stacks" };

describe("the promoted program's policy", () => {
  const pipeline = validatePipeline(definition);
  const program = YAML.parse(fs.readFileSync(path.join(repoRoot, "Pulumi.yaml"), "utf8"));
  const declaredTypes = [...new Set(Object.values<{ type: string }>(program.resources).map((r) => r.type))];

  it("has the provider's action list for every resource type the program declares, and no other", () => {
    expect(Object.keys(programActions).sort()).toEqual(declaredTypes.sort());
    for (const type of declaredTypes) {
      expect(programActions[type]!.read.length, type).toBeGreaterThan(0);
      expect(programActions[type]!.write.length, type).toBeGreaterThan(0);
    }
  });

  it("lists exact actions: no wildcard, no bucket policy, ACL or object writes that could make a bucket public", () => {
    const actions = [...programReadActions, ...programWriteActions];
    for (const action of actions) expect(action).toMatch(/^s3:[A-Za-z]+$/);
    for (const forbidden of [
      "s3:PutBucketPolicy",
      "s3:PutBucketAcl",
      "s3:PutObjectAcl",
      "s3:PutObjectVersionAcl",
      "s3:DeleteBucketPolicy",
      "s3:PutObject",
      "s3:PutAccessPointPolicy",
    ])
      expect(actions).not.toContain(forbidden);
    // The block the program declares is written with the one action that also removes it, so the README must
    // not promise that the role cannot undo it.
    expect(actions).toContain("s3:PutBucketPublicAccessBlock");
    const readme = fs.readFileSync(path.join(repoRoot, "README.md"), "utf8").replace(/\s+/g, " ");
    expect(readme).toContain("The role can change its buckets' public-access block, even turn it off");
    expect(readme).not.toContain("cannot undo its own public-access block");
    // The S3 Control tagging calls the provider tries first, and the bucket tagging API it falls back to.
    expect(actions).toEqual(
      expect.arrayContaining([
        "s3:ListTagsForResource",
        "s3:TagResource",
        "s3:UntagResource",
        "s3:PutBucketTagging",
      ]),
    );
  });

  it("scopes each environment to its own stack's buckets in the role's own account", () => {
    const [env, { pulumiStack }] = Object.entries(pipeline.environments)[0]!;
    const dev = programPolicy(pipeline, env) as { Statement: any[] };
    const all = dev.Statement.flatMap((s) => s.Action);
    expect(new Set(all)).toEqual(new Set([...programReadActions, ...programWriteActions]));
    for (const statement of dev.Statement)
      expect(statement.Resource).toBe(`arn:aws:s3:::${pipeline.pulumi.project}-${pulumiStack}-*`);
    const managed = dev.Statement.find((s) => s.Sid === "ManageProgramBuckets");
    expect(managed.Condition).toEqual({ StringEquals: { "aws:ResourceAccount": "${aws:PrincipalAccount}" } });
    expect(dev.Statement.find((s) => s.Sid === "CreateProgramBuckets").Action).toEqual([
      "s3:CreateBucket",
      "s3:TagResource",
    ]);
    expect(() => programPolicy(pipeline, "no-such-env")).toThrow(/no environment "no-such-env"/);
  });

  it("lets previews read every environment's buckets and change nothing", () => {
    const preview = previewPolicy(pipeline) as { Statement: any[] };
    expect(preview.Statement).toHaveLength(1);
    expect(preview.Statement[0].Resource).toEqual(
      Object.values(pipeline.environments).map(
        (e) => `arn:aws:s3:::${pipeline.pulumi.project}-${e.pulumiStack}-*`,
      ),
    );
    for (const action of preview.Statement[0].Action) expect(programWriteActions).not.toContain(action);
  });
});
