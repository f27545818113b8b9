// The programs the pipeline promotes (kargo/pipeline.ts `programs`, each a folder of programs/) as the
// definition declares them, and the policy each environment's identity gets for each (kargo/programPolicy.ts).
// Their Stack templates are promoted-program.test.ts's; what a program's own files declare, its own tests'
// beside it (programs/<name>/*.test.ts).
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { describe, expect, it } from "vitest";
import {
  bucketAccess,
  bucketLifecycleAccess,
  bucketTypes,
  lifecycleTypes,
  programActions,
  programReadActions,
  programWriteActions,
} from "../kargo/programPolicy";
import { pipeline as definition } from "../kargo/pipeline";
import { previewPolicy, updatePolicy } from "../lib/pipeline/access";
import { WORKSPACE_IMAGES } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import { repoRoot } from "../lib/cli/plan/projects";
import { declaredImage, projectFile, unusedName } from "./kargo-support";

const pipeline = validatePipeline(definition);

// The example's two programs, by their folders: the tests below that name them are about their files.
const bucketDir = "programs/bucket";
const lifecycleDir = "programs/bucket-lifecycle";
const bucketProgram = pipeline.programs.find((x) => x.dir === bucketDir)!;
const lifecycleProgram = pipeline.programs.find((x) => x.dir === lifecycleDir)!;
const readYaml = (file: string) => YAML.parse(fs.readFileSync(path.join(repoRoot, file), "utf8"));

describe("the promoted programs", () => {
  const program = readYaml(`${bucketDir}/Pulumi.yaml`);

  it("include programs/bucket-lifecycle, which runs after the bucket program and reads that program's stack", () => {
    expect(lifecycleProgram).toBeDefined();
    expect(lifecycleProgram.dependsOn).toContain(bucketProgram.name);
    expect(readYaml(`${lifecycleDir}/Pulumi.yaml`).config.bucketProject.default).toBe(bucketProgram.project);
  });

  it("are each declared with the project and runtime of their own Pulumi.yaml, and have a config file per environment", () => {
    // programs/bucket, a Pulumi YAML program (its own file's content is programs/bucket/bucket.test.ts's).
    expect(bucketProgram).toBeDefined();
    expect(bucketProgram).toMatchObject({ project: program.name, runtime: "yaml" });
    expect(new Set(pipeline.programs.map((x) => x.project)).size).toBe(pipeline.programs.length);
    for (const x of pipeline.programs) {
      const file = projectFile(repoRoot, x);
      expect(x.project, x.name).toBe(file.name);
      expect(x.runtime, x.name).toBe(file.runtimeName);
      expect(x.workspaceImage, x.name).toBe(declaredImage(x) ?? WORKSPACE_IMAGES[file.runtimeName]);
      for (const env of Object.values(pipeline.environments))
        expect(fs.existsSync(path.join(repoRoot, x.dir, `Pulumi.${env.pulumiStack}.yaml`)), x.name).toBe(
          true,
        );
    }
  });
});

describe("the promoted programs' policies", () => {
  const program = readYaml(`${bucketDir}/Pulumi.yaml`);
  const yamlTypes = [...new Set(Object.values<{ type: string }>(program.resources).map((r) => r.type))];
  // `new aws.<module>.<Type>(` in the TypeScript program is the resource type `aws:<module>:<Type>`.
  const source = fs.readFileSync(path.join(repoRoot, lifecycleDir, "index.ts"), "utf8");
  const typescriptTypes = [
    ...new Set([...source.matchAll(/new aws\.(\w+)\.(\w+)\(/g)].map((m) => `aws:${m[1]}:${m[2]}`)),
  ];
  const lifecycleActions = ["s3:GetLifecycleConfiguration", "s3:PutLifecycleConfiguration"];
  const bucketsOf = (stack: string) => `arn:aws:s3:::${bucketProgram.project}-${stack}-*`;
  const sameAccount = { StringEquals: { "aws:ResourceAccount": "${aws:PrincipalAccount}" } };
  type Statement = { Sid?: string; Action: string[]; Resource: string[]; Condition?: unknown };

  it("has the provider's action list for every resource type the programs declare, and no other", () => {
    expect([...bucketTypes].sort()).toEqual(yamlTypes.sort());
    expect(typescriptTypes.length).toBeGreaterThan(0);
    expect([...lifecycleTypes].sort()).toEqual(typescriptTypes.sort());
    expect(Object.keys(programActions).sort()).toEqual(
      [...new Set([...yamlTypes, ...typescriptTypes])].sort(),
    );
    for (const type of Object.keys(programActions)) {
      expect(programActions[type]!.read.length, type).toBeGreaterThan(0);
      expect(programActions[type]!.write.length, type).toBeGreaterThan(0);
    }
  });

  it("are declared in kargo/pipeline.ts: the bucket program's buckets, and the lifecycle program's access to the bucket program's", () => {
    expect(bucketProgram.aws).toBe(bucketAccess);
    const expected = bucketLifecycleAccess(bucketProgram.name);
    for (const env of Object.keys(pipeline.environments))
      expect(updatePolicy(pipeline, lifecycleProgram, env), env).toEqual(
        updatePolicy(pipeline, { ...lifecycleProgram, aws: expected }, env),
      );
    expect(previewPolicy(pipeline, lifecycleProgram)).toEqual(
      previewPolicy(pipeline, { ...lifecycleProgram, aws: expected }),
    );
  });

  it("lists exact actions: no wildcard, no bucket policy, ACL or object writes that could make a bucket public", () => {
    const actions = [...programReadActions, ...programWriteActions, ...lifecycleActions];
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

  it("scopes the bucket program in each environment to its own stack's buckets in the role's own account", () => {
    for (const [env, { pulumiStack }] of Object.entries(pipeline.environments)) {
      const statements = updatePolicy(pipeline, bucketProgram, env)!.Statement as Statement[];
      expect(new Set(statements.flatMap((s) => s.Action))).toEqual(
        new Set([...programReadActions, ...programWriteActions]),
      );
      for (const statement of statements) expect(statement.Resource, env).toEqual([bucketsOf(pulumiStack)]);
      expect(statements.find((s) => s.Sid === "ManageProgramBuckets")!.Condition).toEqual(sameAccount);
      expect(statements.find((s) => s.Sid === "CreateProgramBuckets")!.Action).toEqual([
        "s3:CreateBucket",
        "s3:TagResource",
      ]);
    }
    const unknown = unusedName("no-such-env", Object.keys(pipeline.environments));
    expect(() => updatePolicy(pipeline, bucketProgram, unknown)).toThrow(`no environment "${unknown}"`);
  });

  it("lets the lifecycle program in each environment only read and write the lifecycle configuration of the bucket program's buckets there", () => {
    for (const [env, { pulumiStack }] of Object.entries(pipeline.environments)) {
      const statements = updatePolicy(pipeline, lifecycleProgram, env)!.Statement as Statement[];
      expect(statements, env).toHaveLength(1);
      expect([...statements[0]!.Action].sort()).toEqual(lifecycleActions);
      expect(statements[0]!.Resource, env).toEqual([bucketsOf(pulumiStack)]);
      expect(statements[0]!.Condition).toEqual(sameAccount);
    }
    const unknown = unusedName(
      "no-such-program",
      pipeline.programs.map((x) => x.name),
    );
    const [env] = Object.keys(pipeline.environments);
    expect(() =>
      updatePolicy(pipeline, { ...lifecycleProgram, aws: bucketLifecycleAccess(unknown) }, env!),
    ).toThrow(`no program "${unknown}" in the pipeline`);
  });

  it("lets previews read every environment's buckets and change nothing", () => {
    const everyEnvironment = Object.values(pipeline.environments).map((e) => bucketsOf(e.pulumiStack));
    const writes = [...programWriteActions, "s3:PutLifecycleConfiguration"];
    for (const x of [bucketProgram, lifecycleProgram]) {
      const statements = previewPolicy(pipeline, x)!.Statement as Statement[];
      expect(statements, x.name).toHaveLength(1);
      expect(statements[0]!.Resource, x.name).toEqual(everyEnvironment);
      expect(statements[0]!.Condition, x.name).toEqual(sameAccount);
      for (const action of statements[0]!.Action) expect(writes, x.name).not.toContain(action);
    }
    expect(previewPolicy(pipeline, bucketProgram)!.Statement[0]!.Action).toEqual(programReadActions);
    expect(previewPolicy(pipeline, lifecycleProgram)!.Statement[0]!.Action).toEqual([
      "s3:GetLifecycleConfiguration",
    ]);
  });
});
