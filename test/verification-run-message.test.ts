// How much of a verdict reaches the Kargo UI: the reason the verification Job writes into its AnalysisRun
// (kargo/verification/run-message.mjs). Where it goes and who may write it run in the Go harness
// (test/analysis, test/kube TestVerificationJobWritesOnlyItsOwnMessage).
import { describe, expect, it } from "vitest";
import { MAX_MESSAGE, truncated, writeRunMessage } from "../kargo/verification/run-message.mjs";
import { MAX_STAGES } from "../lib/pipeline/schema";

const stop = (resources: number) =>
  [
    `the preview of 4f1c2b9e8d7a on org/app/prod stops on any change (STOP_ON=all): ${resources} resource(s)`,
    ...Array.from(
      { length: resources },
      (_, i) => `- bucket-${i} (aws:s3/bucketV2:BucketV2): update, tags: cost`,
    ),
    "preview: https://app.pulumi.com/org/app/prod/previews/p-1",
    "A member of prod-approvers may let it through by approving this Freight for stage prod-app: kargo approve --stage prod-app --freight <this Freight>.",
  ].join("\n");

describe("the reason written where Kargo shows it", () => {
  it("is written whole when it fits", () => {
    const reason = stop(3);
    expect(truncated(reason)).toBe(reason);
  });

  it("is cut at a line for a stop of thousands of resources, saying how many lines the Job's log has beyond it", () => {
    for (const resources of [200, 10 * MAX_STAGES, 50_000]) {
      const reason = stop(resources);
      const cut = truncated(reason);
      expect(cut.length).toBeLessThanOrEqual(MAX_MESSAGE);
      const kept = cut.split("\n").slice(0, -1);
      expect(reason.startsWith(kept.join("\n"))).toBe(true);
      const more = reason.split("\n").length - kept.length;
      expect(cut.split("\n").at(-1)).toBe(`… ${more} more line(s) in the Job's log`);
    }
  });

  it("cuts a single line longer than the limit too", () => {
    const cut = truncated("x".repeat(3 * MAX_MESSAGE));
    expect(cut.length).toBeLessThanOrEqual(MAX_MESSAGE);
    expect(cut).toMatch(/the Job's log holds the whole reason\)$/);
  });

  it("is not attempted outside a Job's pod, and the verdict stands", async () => {
    expect(await writeRunMessage({ jobName: undefined, message: "m", host: "127.0.0.1", port: "1" })).toMatch(
      /^not written: not a pod of a Job/,
    );
    expect(await writeRunMessage({ jobName: "j", message: "m", host: undefined, port: undefined })).toMatch(
      /^not written: not a pod of a Job/,
    );
  });

  it("never throws when the pod has no ServiceAccount files", async () => {
    const said = await writeRunMessage({
      jobName: "j",
      message: "m",
      dir: "/nonexistent",
      host: "127.0.0.1",
      port: "1",
    });
    expect(said).toMatch(/^not written: .*ENOENT/);
  });
});
