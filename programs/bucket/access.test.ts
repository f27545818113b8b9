// programs/bucket's AWS access (access.ts), tested beside it: exactly the provider's calls for what its
// Pulumi.yaml declares, on one environment's buckets, and reads only for previews. Goes with the program.
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { describe, expect, it } from "vitest";
import { pipeline } from "../../kargo/pipeline";
import { docPages } from "../../lib/markdown";
import { bucketAccess, bucketActions, bucketReadActions, bucketWriteActions } from "./access";

const repoRoot = path.resolve(__dirname, "..", "..");
const program = YAML.parse(fs.readFileSync(path.join(__dirname, "Pulumi.yaml"), "utf8"));
const sameAccount = { StringEquals: { "aws:ResourceAccount": "${aws:PrincipalAccount}" } };
const scope = (pulumiStacks: string[]) => ({
  partition: "aws",
  project: program.name as string,
  projects: { zz: program.name as string },
  pulumiStacks,
});
const bucketsOf = (stack: string) => `arn:aws:s3:::${program.name}-${stack}-*`;
type Statement = { Sid?: string; Action: string[]; Resource: string[]; Condition?: unknown };

describe("programs/bucket's access", () => {
  it("is what kargo/pipeline.ts declares for the program in this folder", () => {
    const declared = pipeline.programs.find((x) => path.resolve(repoRoot, x.dir) === __dirname);
    expect(declared?.aws).toBe(bucketAccess);
  });

  it("has the provider's action list for every resource type the program declares, and no other", () => {
    const types = [...new Set(Object.values<{ type: string }>(program.resources).map((r) => r.type))];
    expect(Object.keys(bucketActions).sort()).toEqual(types.sort());
    for (const type of types) {
      expect(bucketActions[type]!.read.length, type).toBeGreaterThan(0);
      expect(bucketActions[type]!.write.length, type).toBeGreaterThan(0);
    }
  });

  it("lists exact actions: no wildcard, no bucket policy, ACL or object writes that could make a bucket public", () => {
    const actions = [...bucketReadActions, ...bucketWriteActions];
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
    // The block the program declares is written with the one action that also removes it, so the docs must
    // not promise that the role cannot undo it.
    expect(actions).toContain("s3:PutBucketPublicAccessBlock");
    const readme = fs.readFileSync(docPages.securityAndApprovals, "utf8").replace(/\s+/g, " ");
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

  it("scopes an environment's role to that stack's buckets in the role's own account, creating only there", () => {
    const statements = bucketAccess.update(scope(["zz-env"])) as Statement[];
    expect(new Set(statements.flatMap((s) => s.Action))).toEqual(
      new Set([...bucketReadActions, ...bucketWriteActions]),
    );
    for (const statement of statements) expect(statement.Resource).toEqual([bucketsOf("zz-env")]);
    expect(statements.find((s) => s.Sid === "ManageProgramBuckets")!.Condition).toEqual(sameAccount);
    expect(statements.find((s) => s.Sid === "CreateProgramBuckets")!.Action).toEqual([
      "s3:CreateBucket",
      "s3:TagResource",
    ]);
    // Creating has no owning account to compare yet; s3:TagResource on an existing bucket must be the role's account's.
    expect(statements.find((s) => s.Sid === "CreateProgramBuckets")!.Condition).toEqual({
      StringEqualsIfExists: sameAccount.StringEquals,
    });
  });

  it("lets previews read every environment's buckets and change nothing", () => {
    const statements = bucketAccess.preview(scope(["zz-a", "zz-b"])) as Statement[];
    expect(statements).toHaveLength(1);
    expect(statements[0]!.Resource).toEqual([bucketsOf("zz-a"), bucketsOf("zz-b")]);
    expect(statements[0]!.Condition).toEqual(sameAccount);
    expect(statements[0]!.Action).toEqual(bucketReadActions);
    for (const action of statements[0]!.Action) expect(bucketWriteActions).not.toContain(action);
  });
});
