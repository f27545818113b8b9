// The tests of programs/bucket, beside it (removing the program removes them): what its Pulumi.yaml declares,
// read from this folder alone. How the pipeline declares and promotes the program is tested under test/.
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { describe, expect, it } from "vitest";

const program = YAML.parse(fs.readFileSync(path.join(__dirname, "Pulumi.yaml"), "utf8"));

describe("programs/bucket", () => {
  it("is a Pulumi YAML program making one private, encrypted, versioned bucket, protected, with the provider pinned", () => {
    expect(program.runtime).toBe("yaml");
    const { bucket, publicAccessBlock, versioning, encryption, ownership } = program.resources;
    expect(bucket).toMatchObject({ type: "aws:s3:Bucket", options: { protect: true } });
    // Named after its stack: each environment's role may manage only buckets with that prefix.
    expect(bucket.properties.bucketPrefix).toBe("${pulumi.project}-${pulumi.stack}-");
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
