import type { Pipeline } from "../lib/pipeline/schema";

/**
 * The IAM actions the AWS provider calls for each resource type the promoted program (the root Pulumi.yaml)
 * declares, by operation. @pulumi/aws 7.48.0 wraps terraform-provider-aws v6 (internal/service/s3 bucket*.go);
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
};

const unique = (lists: string[][]) => [...new Set(lists.flat())].sort();
export const programReadActions = unique(Object.values(programActions).map((a) => a.read));
export const programWriteActions = unique(Object.values(programActions).map((a) => a.write));

const createActions = ["s3:CreateBucket", "s3:TagResource"];

/** Buckets of one Pulumi stack of the program: `bucketPrefix: ${pulumi.project}-${pulumi.stack}-`. */
const bucketArn = (p: Pipeline, pulumiStack: string, partition: string) =>
  `arn:${partition}:s3:::${p.pulumi.project}-${pulumiStack}-*`;

// Only buckets of the account the role lives in, whoever else shares a bucket name pattern.
const sameAccount = { StringEquals: { "aws:ResourceAccount": "${aws:PrincipalAccount}" } };

/**
 * What one environment's identity may do: exactly the provider's calls for the program's resources, on that
 * environment's buckets only. A promotion into dev cannot touch qa's bucket. It can change (even remove)
 * its buckets' public-access block, as s3:PutBucketPublicAccessBlock creates, changes and deletes one and IAM
 * has no condition key on its settings; it cannot write a bucket policy or an ACL, so it cannot make a
 * bucket public.
 */
export function programPolicy(p: Pipeline, environment: string, partition = "aws"): object {
  const env = Object.hasOwn(p.environments, environment) ? p.environments[environment] : undefined;
  if (!env) throw new Error(`programPolicy: the pipeline has no environment "${environment}"`);
  const resource = bucketArn(p, env.pulumiStack, partition);
  return {
    Version: "2012-10-17",
    Statement: [
      {
        // A bucket that does not exist yet has no owning account to compare; tags are set on create.
        Sid: "CreateProgramBuckets",
        Effect: "Allow",
        Action: createActions,
        Resource: resource,
      },
      {
        Sid: "ManageProgramBuckets",
        Effect: "Allow",
        Action: unique([programReadActions, programWriteActions.filter((a) => a !== "s3:CreateBucket")]),
        Resource: resource,
        Condition: sameAccount,
      },
    ],
  };
}

/** What the preview identity may do: read the program's buckets of every environment, change nothing. */
export function previewPolicy(p: Pipeline, partition = "aws"): object {
  return {
    Version: "2012-10-17",
    Statement: [
      {
        Sid: "ReadProgramBuckets",
        Effect: "Allow",
        Action: programReadActions,
        Resource: Object.values(p.environments).map((env) => bucketArn(p, env.pulumiStack, partition)),
        Condition: sameAccount,
      },
    ],
  };
}
