// How much of a verdict reaches the Kargo UI: the reason the verification Job writes into its AnalysisRun
// (kargo/verification/run-message.mjs). Where it goes and who may write it run in the Go harness
// (test/analysis, test/kube TestVerificationJobWritesOnlyItsOwnMessage).
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import {
  decision,
  freightOf,
  MAX_MESSAGE,
  truncated,
  writeRunMessage,
} from "../kargo/verification/run-message.mjs";
import { MAX_STAGES } from "../lib/pipeline/schema";

const facts = {
  project: "infra",
  freight: "0123456789abcdef0123456789abcdef01234567",
  deciders: ["prod-approvers", "security-approvers"],
  approveStage: "prod-app",
};
// As verify.mjs writes a stop: who decides and the command, then what stopped.
const stop = (resources: number) => {
  const { opening, command } = decision(facts);
  return [
    opening,
    command,
    `the preview of 4f1c2b9e8d7a on org/app/prod stops on any change (STOP_ON=all): ${resources} resource(s)`,
    ...Array.from(
      { length: resources },
      (_, i) => `- bucket-${i} (aws:s3/bucketV2:BucketV2): update, tags: cost`,
    ),
    "preview: https://app.pulumi.com/org/app/prod/previews/p-1",
  ].join("\n");
};

describe("what a stop tells its deciders", () => {
  it("says the Freight waits for their decision, not that it failed, and gives the whole command", () => {
    const { opening, command } = decision(facts);
    expect(opening).toBe(
      `Freight ${facts.freight} waits for a decision of prod-approvers or security-approvers, not a failure:`,
    );
    expect(opening).not.toMatch(/fail(ed|s)\b/);
    // The command as the kargo CLI takes it: every flag `kargo approve` needs, the project among them.
    expect(command.split(": ").at(-1)).toBe(
      `kargo approve --project ${facts.project} --freight ${facts.freight} --stage ${facts.approveStage}`,
    );
    expect(command).toMatch(/^To let it through, a member of prod-approvers or security-approvers runs: /);
  });

  it("names the Freight Kargo made the run for: its owner, of Kargo's kind", () => {
    const owner = (kind: string, apiVersion: string, name: string) => ({ kind, apiVersion, name });
    const run = (...ownerReferences: unknown[]) => ({ metadata: { ownerReferences } });
    expect(freightOf(run(owner("Freight", "kargo.akuity.io/v1alpha1", facts.freight)))).toBe(facts.freight);
    expect(
      freightOf(
        run(owner("Freight", "example.com/v1", "forged"), owner("Freight", "kargo.akuity.io/v1alpha1", "f1")),
      ),
    ).toBe("f1");
    expect(freightOf(run(owner("Stage", "kargo.akuity.io/v1alpha1", "s")))).toBeUndefined();
    expect(freightOf(undefined)).toBeUndefined();
    expect(freightOf({ metadata: {} })).toBeUndefined();
  });

  it("is the form the docs show, line for line", () => {
    // The docs show it with placeholders: the code, given those, writes the same two lines.
    const { opening, command } = decision({
      project: "<project>",
      freight: "<freight>",
      deciders: ["<deciders>"],
      approveStage: "<update stage>",
    });
    for (const doc of ["security-and-approvals.md", "troubleshooting.md", "notifications-and-record.md"]) {
      const text = fs.readFileSync(path.join(__dirname, "..", "docs", doc), "utf8");
      const lines = text.split("\n").map((l) => l.trim());
      const at = lines.indexOf(opening);
      expect(at, `docs/${doc} shows the stop's opening line as the code writes it`).toBeGreaterThanOrEqual(0);
      expect(lines[at + 1], `docs/${doc}: the command follows the opening`).toBe(command);
    }
  });
});

describe("the reason written where Kargo shows it", () => {
  it("is written whole when it fits", () => {
    const reason = stop(3);
    expect(truncated(reason)).toBe(reason);
  });

  it("is cut at a line for a stop of thousands of resources, saying how many lines the Job's log has beyond it", () => {
    for (const resources of [200, 10 * MAX_STAGES, 50_000]) {
      const reason = stop(resources);
      const cut = truncated(reason);
      // Who decides and the command survive any cut.
      expect(cut.split("\n").slice(0, 2)).toEqual(Object.values(decision(facts)));
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
