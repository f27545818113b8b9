import type { AccessScope, PolicyStatement, ProgramAccess } from "../lib/pipeline/schema";

/**
 * The IAM actions the AWS provider calls for each resource type the promoted programs declare, by
 * operation. @pulumi/aws 7.48.0 wraps terraform-provider-aws v6 (internal/service/s3 bucket*.go);
 * since v6.23.0 (pulumi-aws 7.13.0, hashicorp/terraform-provider-aws#45251) buckets are tagged on create and
 * tags go through S3 Control first, falling back to the bucket tagging API when refused. Delete of a sub-configuration is a Put (of none) as far as IAM goes:
 * DeleteBucketOwnershipControls needs s3:PutBucketOwnershipControls, DeletePublicAccessBlock
 * s3:PutBucketPublicAccessBlock, DeleteBucketEncryption s3:PutEncryptionConfiguration, and deleting a
 * BucketVersioning suspends versioning (PutBucketVersioning).
 */
export const programActions: Record<string, { read: string[]; write: string[] }> = {
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
  // programs/bucket-lifecycle. Deleting one (DeleteBucketLifecycle) is s3:PutLifecycleConfiguration to IAM.
  "aws:s3:BucketLifecycleConfiguration": {
    read: ["s3:GetLifecycleConfiguration"],
    write: ["s3:PutLifecycleConfiguration"],
  },
};

/** The resource types of programs/bucket (Pulumi.yaml) and of programs/bucket-lifecycle (index.ts). */
export const bucketTypes = [
  "aws:s3:Bucket",
  "aws:s3:BucketOwnershipControls",
  "aws:s3:BucketPublicAccessBlock",
  "aws:s3:BucketVersioning",
  "aws:s3:BucketServerSideEncryptionConfiguration",
];
export const lifecycleTypes = ["aws:s3:BucketLifecycleConfiguration"];

const unique = (lists: string[][]) => [...new Set(lists.flat())].sort();
const actionsOf = (types: string[], op: "read" | "write") => unique(types.map((t) => programActions[t]![op]));
export const programReadActions = actionsOf(bucketTypes, "read");
export const programWriteActions = actionsOf(bucketTypes, "write");

const createActions = ["s3:CreateBucket", "s3:TagResource"];

/** Buckets of one Pulumi stack of programs/bucket: `bucketPrefix: ${pulumi.project}-${pulumi.stack}-`. */
const bucketArns = (project: string, scope: AccessScope) =>
  scope.pulumiStacks.map((stack) => `arn:${scope.partition}:s3:::${project}-${stack}-*`);

// Only buckets of the account the role lives in, whoever else shares a bucket name pattern.
const sameAccount = { StringEquals: { "aws:ResourceAccount": "${aws:PrincipalAccount}" } };

/**
 * programs/bucket: exactly the provider's calls for its resources, on the environment's buckets only. A
 * promotion into dev cannot touch qa's bucket. It can change (even remove) its buckets' public-access block,
 * as s3:PutBucketPublicAccessBlock creates, changes and deletes one and IAM has no condition key on its
 * settings; it cannot write a bucket policy or an ACL, so it cannot make a bucket public. Previews read.
 */
export const bucketAccess: ProgramAccess = {
  update: (scope): PolicyStatement[] => [
    {
      // A bucket that does not exist yet has no owning account to compare; tags are set on create.
      Sid: "CreateProgramBuckets",
      Effect: "Allow",
      Action: createActions,
      Resource: bucketArns(scope.project, scope),
    },
    {
      Sid: "ManageProgramBuckets",
      Effect: "Allow",
      Action: unique([programReadActions, programWriteActions.filter((a) => a !== "s3:CreateBucket")]),
      Resource: bucketArns(scope.project, scope),
      Condition: sameAccount,
    },
  ],
  preview: (scope): PolicyStatement[] => [
    {
      Sid: "ReadProgramBuckets",
      Effect: "Allow",
      Action: programReadActions,
      Resource: bucketArns(scope.project, scope),
      Condition: sameAccount,
    },
  ],
};

/** The Pulumi project of the program named `program`, which another program's permissions refer to. */
function projectOf(scope: AccessScope, program: string): string {
  const project = Object.hasOwn(scope.projects, program) ? scope.projects[program] : undefined;
  if (!project)
    throw new Error(
      `programPolicy: no program "${program}" in the pipeline (programs: ${Object.keys(scope.projects).join(", ")})`,
    );
  return project;
}

/**
 * programs/bucket-lifecycle: the lifecycle configuration of the buckets of `bucketProgram` (the program it
 * reads its bucket from), nothing else.
 */
export const bucketLifecycleAccess = (bucketProgram: string): ProgramAccess => ({
  update: (scope): PolicyStatement[] => [
    {
      Sid: "ManageBucketLifecycle",
      Effect: "Allow",
      Action: unique([actionsOf(lifecycleTypes, "read"), actionsOf(lifecycleTypes, "write")]),
      Resource: bucketArns(projectOf(scope, bucketProgram), scope),
      Condition: sameAccount,
    },
  ],
  preview: (scope): PolicyStatement[] => [
    {
      Sid: "ReadBucketLifecycle",
      Effect: "Allow",
      Action: actionsOf(lifecycleTypes, "read"),
      Resource: bucketArns(projectOf(scope, bucketProgram), scope),
      Condition: sameAccount,
    },
  ],
});
