// Lifecycle rules for the bucket the `bucket` program (programs/bucket) makes in the same environment. The
// bucket is versioned, so every overwrite and delete keeps the old version: without an expiry they are kept,
// and paid for, forever. Abandoned multipart uploads are billed too until they are aborted.
import * as pulumi from "@pulumi/pulumi";
import * as aws from "@pulumi/aws";

const config = new pulumi.Config();
// Both keys have their defaults in Pulumi.yaml, which the CLI hands to every stack: one place to change them.
const bucketProject = config.require("bucketProject");
const noncurrentDaysText = config.require("noncurrentDays");

// Refused before anything is read or registered: S3 takes whole days, and an expiry of up to ten years.
const noncurrentDays = Number(noncurrentDaysText);
if (!/^\d+$/.test(noncurrentDaysText) || noncurrentDays < 1 || noncurrentDays > 3650) {
  throw new pulumi.RunError(
    `${pulumi.getProject()}:noncurrentDays must be a whole number of days from 1 to 3650, ` +
      `not ${JSON.stringify(noncurrentDaysText)}; set it with pulumi config set noncurrentDays <days>`,
  );
}

// The bucket stack of this environment: the stacks of both programs are named after the environment, in
// the same Pulumi organization.
const bucketStack = new pulumi.StackReference(
  `${pulumi.getOrganization()}/${bucketProject}/${pulumi.getStack()}`,
);
// requireOutput: a bucket stack without the output fails the run instead of configuring no bucket.
export const bucketName = bucketStack.requireOutput("bucketName") as pulumi.Output<string>;

// One configuration per bucket: S3 keeps a single lifecycle configuration, so all rules live here.
const lifecycle = new aws.s3.BucketLifecycleConfiguration("lifecycle", {
  bucket: bucketName,
  rules: [
    {
      id: "expire-noncurrent-versions",
      status: "Enabled",
      // An empty filter applies the rule to every object in the bucket.
      filter: {},
      noncurrentVersionExpiration: { noncurrentDays },
    },
    {
      id: "abort-incomplete-multipart-uploads",
      status: "Enabled",
      filter: {},
      abortIncompleteMultipartUpload: { daysAfterInitiation: 7 },
    },
  ],
});

export const ruleIds = lifecycle.rules.apply((rules) => (rules ?? []).map((rule) => rule.id));
