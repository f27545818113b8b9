// What programs/bucket-lifecycle may do in AWS: its declaration's `aws` in kargo/pipeline.ts, which the
// kargo project attaches to each environment's role and to the preview role (lib/pipeline/access.ts). It
// lives beside the program so that it goes with it; the program's own tsconfig compiles only index.ts.
import { projectOfProgram, sameAccount } from "../../lib/pipeline/access";
import type { AccessScope, PolicyStatement, ProgramAccess } from "../../lib/pipeline/schema";

/**
 * The calls @pulumi/aws 7.48.0 makes for aws:s3:BucketLifecycleConfiguration (terraform-provider-aws v6
 * internal/service/s3 bucket_lifecycle_configuration.go). Deleting one (DeleteBucketLifecycle) is
 * s3:PutLifecycleConfiguration to IAM.
 */
export const lifecycleActions = {
  read: ["s3:GetLifecycleConfiguration"],
  write: ["s3:PutLifecycleConfiguration"],
};

/** The buckets of the bucket program's stacks, `<its project>-<stack>-*`, which this program configures. */
const bucketArns = (project: string, scope: AccessScope) =>
  scope.pulumiStacks.map((stack) => `arn:${scope.partition}:s3:::${project}-${stack}-*`);

/**
 * The lifecycle configuration of the buckets of `bucketProgram` (the program it reads its bucket from) in
 * the environment, nothing else; previews only read it.
 */
export const bucketLifecycleAccess = (bucketProgram: string): ProgramAccess => ({
  update: (scope): PolicyStatement[] => [
    {
      Sid: "ManageBucketLifecycle",
      Effect: "Allow",
      Action: [...lifecycleActions.read, ...lifecycleActions.write].sort(),
      Resource: bucketArns(projectOfProgram(scope, bucketProgram), scope),
      Condition: sameAccount,
    },
  ],
  preview: (scope): PolicyStatement[] => [
    {
      Sid: "ReadBucketLifecycle",
      Effect: "Allow",
      Action: lifecycleActions.read,
      Resource: bucketArns(projectOfProgram(scope, bucketProgram), scope),
      Condition: sameAccount,
    },
  ],
});
