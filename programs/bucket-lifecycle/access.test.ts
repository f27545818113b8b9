// programs/bucket-lifecycle's AWS access (access.ts), tested beside it: only the lifecycle configuration of
// the buckets of the program it depends on, in one environment; reads only for previews. Goes with the program.
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { describe, expect, it } from "vitest";
import { pipeline } from "../../kargo/pipeline";
import { validatePipeline } from "../../lib/pipeline/validate";
import { updatePolicy, previewPolicy } from "../../lib/pipeline/access";
import { bucketLifecycleAccess, lifecycleActions } from "./access";

const repoRoot = path.resolve(__dirname, "..", "..");
const project = YAML.parse(fs.readFileSync(path.join(__dirname, "Pulumi.yaml"), "utf8"));
const sameAccount = { StringEquals: { "aws:ResourceAccount": "${aws:PrincipalAccount}" } };
const scope = (pulumiStacks: string[]) => ({
  partition: "aws",
  project: project.name as string,
  projects: { "zz-buckets": "zz-bucket-project", "zz-self": project.name as string },
  pulumiStacks,
});
type Statement = { Action: string[]; Resource: string[]; Condition?: unknown };

describe("programs/bucket-lifecycle's access", () => {
  it("has the provider's actions for every resource type index.ts creates, and no other", () => {
    // `new aws.<module>.<Type>(` in the program is the resource type `aws:<module>:<Type>`.
    const source = fs.readFileSync(path.join(__dirname, "index.ts"), "utf8");
    const types = [
      ...new Set([...source.matchAll(/new aws\.(\w+)\.(\w+)\(/g)].map((m) => `${m[1]}:${m[2]}`)),
    ];
    expect(types).toEqual(["s3:BucketLifecycleConfiguration"]);
    expect(lifecycleActions).toEqual({
      read: ["s3:GetLifecycleConfiguration"],
      write: ["s3:PutLifecycleConfiguration"],
    });
  });

  it("lets an environment's role only read and write the lifecycle configuration of that stack's buckets of the program named", () => {
    const statements = bucketLifecycleAccess("zz-buckets").update(scope(["zz-env"])) as Statement[];
    expect(statements).toHaveLength(1);
    expect(statements[0]!.Action).toEqual(["s3:GetLifecycleConfiguration", "s3:PutLifecycleConfiguration"]);
    expect(statements[0]!.Resource).toEqual(["arn:aws:s3:::zz-bucket-project-zz-env-*"]);
    expect(statements[0]!.Condition).toEqual(sameAccount);
  });

  it("lets previews only read it, in every environment", () => {
    const statements = bucketLifecycleAccess("zz-buckets").preview(scope(["zz-a", "zz-b"])) as Statement[];
    expect(statements).toHaveLength(1);
    expect(statements[0]!.Action).toEqual(["s3:GetLifecycleConfiguration"]);
    expect(statements[0]!.Resource).toEqual([
      "arn:aws:s3:::zz-bucket-project-zz-a-*",
      "arn:aws:s3:::zz-bucket-project-zz-b-*",
    ]);
  });

  it("refuses to name a program the pipeline does not have", () => {
    expect(() => bucketLifecycleAccess("zz-nowhere").update(scope(["zz-env"]))).toThrow(
      'no program "zz-nowhere" in the pipeline (programs: zz-buckets, zz-self)',
    );
  });

  it("is declared in kargo/pipeline.ts for the program in this folder, on the program it depends on and reads", () => {
    const validated = validatePipeline(pipeline);
    const self = validated.programs.find((x) => path.resolve(repoRoot, x.dir) === __dirname)!;
    expect(self).toBeDefined();
    // It reads the stack of the program whose project its bucketProject config defaults to, and runs after
    // it (among whatever else it depends on).
    const other = validated.programs.find((x) => x.project === project.config.bucketProject.default);
    expect(other, "the program bucketProject names").toBeDefined();
    expect(self.dependsOn).toContain(other!.name);
    const expected = bucketLifecycleAccess(other!.name);
    for (const env of Object.keys(validated.environments))
      expect(updatePolicy(validated, self, env)).toEqual(
        updatePolicy(validated, { ...self, aws: expected }, env),
      );
    expect(previewPolicy(validated, self)).toEqual(previewPolicy(validated, { ...self, aws: expected }));
  });
});
