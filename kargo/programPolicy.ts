import type { Pipeline } from "../lib/pipeline/model";

/**
 * Exactly what the promoted program (the root Pulumi.yaml: one private, encrypted, versioned S3 bucket per
 * stack) needs, on buckets named after its Pulumi project and nothing else.
 */
export function programPolicy(pipeline: Pipeline, partition = "aws"): object {
  return {
    Version: "2012-10-17",
    Statement: [
      {
        Sid: "ManageProgramBuckets",
        Effect: "Allow",
        Action: [
          "s3:CreateBucket",
          "s3:DeleteBucket",
          "s3:ListBucket",
          "s3:GetBucket*",
          "s3:PutBucket*",
          "s3:DeleteBucketPolicy",
          "s3:GetAccelerateConfiguration",
          "s3:GetEncryptionConfiguration",
          "s3:PutEncryptionConfiguration",
          "s3:GetLifecycleConfiguration",
          "s3:GetReplicationConfiguration",
        ],
        Resource: `arn:${partition}:s3:::${pipeline.pulumi.project}-*`,
      },
    ],
  };
}
