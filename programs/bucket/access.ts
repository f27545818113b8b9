// What programs/bucket may do in AWS: its declaration's `aws` in kargo/pipeline.ts, which the kargo project
// attaches to each environment's role and to the preview role (lib/pipeline/access.ts). It lives beside the
// program so that it goes with it; the YAML runtime never reads it.
import { sameAccount, sameAccountOrNew } from "../../lib/pipeline/access";
import type { AccessScope, PolicyStatement, ProgramAccess } from "../../lib/pipeline/schema";

/**
 * The IAM actions the AWS provider calls for each resource type this program's Pulumi.yaml declares, by
 * operation. @pulumi/aws 7.48.0 wraps terraform-provider-aws v6 (internal/service/s3 bucket*.go);
 * since v6.23.0 (pulumi-aws 7.13.0, hashicorp/terraform-provider-aws#45251) buckets are tagged on create and
 * tags go through S3 Control first, falling back to the bucket tagging API when refused. Delete of a
 * sub-configuration is a Put (of none) as far as IAM goes:
 * DeleteBucketOwnershipControls needs s3:PutBucketOwnershipControls, DeletePublicAccessBlock
 * s3:PutBucketPublicAccessBlock, DeleteBucketEncryption s3:PutEncryptionConfiguration, and deleting a
 * BucketVersioning suspends versioning (PutBucketVersioning).
 */
export const bucketActions: Record<string, { read: string[]; write: string[] }> = {
  "aws:s3:Bucket": {
    // HeadBucket (existence, region) is s3:ListBucket. Refresh reads every legacy inline setting too. Tags are
    // read and written through S3 Control first (ListTagsForResource/TagResource/UntagResource), then the
    // bucket tagging API when S3 Control is refused.
    read: [
      "s3:ListBucket",
      "s3:GetBucketPolicy",
      "s3:GetBucketAcl",
      "s3:GetBucketCORS",
      "s3:GetBucketWebsite",
      "s3:GetBucketVersioning",
      "s3:GetAccelerateConfiguration",
      "s3:GetBucketRequestPayment",
      "s3:GetBucketLogging",
      "s3:GetLifecycleConfiguration",
      "s3:GetReplicationConfiguration",
      "s3:GetEncryptionConfiguration",
      "s3:GetBucketObjectLockConfiguration",
      "s3:ListTagsForResource",
      "s3:GetBucketTagging",
    ],
    write: [
      "s3:CreateBucket",
      "s3:DeleteBucket",
      "s3:TagResource",
      "s3:UntagResource",
      "s3:PutBucketTagging",
    ],
  },
  "aws:s3:BucketOwnershipControls": {
    read: ["s3:GetBucketOwnershipControls"],
    write: ["s3:PutBucketOwnershipControls"],
  },
  "aws:s3:BucketPublicAccessBlock": {
    read: ["s3:GetBucketPublicAccessBlock"],
    write: ["s3:PutBucketPublicAccessBlock"],
  },
  "aws:s3:BucketVersioning": {
    read: ["s3:GetBucketVersioning"],
    write: ["s3:PutBucketVersioning"],
  },
  "aws:s3:BucketServerSideEncryptionConfiguration": {
    read: ["s3:GetEncryptionConfiguration"],
    write: ["s3:PutEncryptionConfiguration"],
  },
};

const unique = (lists: string[][]) => [...new Set(lists.flat())].sort();
export const bucketReadActions = unique(Object.values(bucketActions).map((a) => a.read));
export const bucketWriteActions = unique(Object.values(bucketActions).map((a) => a.write));

const createActions = ["s3:CreateBucket", "s3:TagResource"];

/** Buckets of the program's stacks: `bucketPrefix: ${pulumi.project}-${pulumi.stack}-`. */
export const bucketArns = (project: string, scope: AccessScope) =>
  scope.pulumiStacks.map((stack) => `arn:${scope.partition}:s3:::${project}-${stack}-*`);

/**
 * Exactly the provider's calls for the program's resources, on the environment's buckets only: a promotion
 * into dev cannot touch qa's bucket. It can change (even remove) its buckets' public-access block, as
 * s3:PutBucketPublicAccessBlock creates, changes and deletes one and IAM has no condition key on its
 * settings; it cannot write a bucket policy or an ACL, so it cannot make a bucket public. Previews read.
 */
export const bucketAccess: ProgramAccess = {
  update: (scope): PolicyStatement[] => [
    {
      // Tags are set on create, and s3:TagResource also retags an existing bucket: the condition holds for a
      // bucket being created and keeps another account's bucket of the same name pattern out.
      Sid: "CreateProgramBuckets",
      Effect: "Allow",
      Action: createActions,
      Resource: bucketArns(scope.project, scope),
      Condition: sameAccountOrNew,
    },
    {
      Sid: "ManageProgramBuckets",
      Effect: "Allow",
      Action: unique([bucketReadActions, bucketWriteActions.filter((a) => a !== "s3:CreateBucket")]),
      Resource: bucketArns(scope.project, scope),
      Condition: sameAccount,
    },
  ],
  preview: (scope): PolicyStatement[] => [
    {
      Sid: "ReadProgramBuckets",
      Effect: "Allow",
      Action: bucketReadActions,
      Resource: bucketArns(scope.project, scope),
      Condition: sameAccount,
    },
  ],
};
