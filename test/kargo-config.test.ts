// The kargo project's config as a user sets it: what each key accepts beside what it refuses
// (hostile-config.test.ts refuses the rest), and how an optional key left empty reads.
import { describe, expect, it } from "vitest";
import { kargoConfigSchema } from "../kargo/config";
import { one, planError, planProject } from "./helpers";

const shape = kargoConfigSchema.shape;

describe("kargo config", () => {
  it("reads an optional read-only token left empty (as pulumi new leaves a skipped prompt) as not set, and keeps one that is set", () => {
    for (const key of ["gitReadToken", "pulumiReadToken"] as const) {
      expect(shape[key].parse(""), key).toBeUndefined();
      expect(shape[key].parse(undefined), key).toBeUndefined();
      expect(shape[key].parse("ghp_readonly0123"), key).toBe("ghp_readonly0123");
    }
  });

  it("takes a Route 53 hosted zone ID as Route 53 issues it, and not with the /hostedzone/ prefix or in lower case", async () => {
    for (const id of ["Z0123456789ABCDEFGHIJ", "Z1", `Z${"A".repeat(31)}`])
      expect(shape.kargoHostedZoneId.safeParse(id).success, id).toBe(true);
    for (const id of ["/hostedzone/Z0123456789ABCDEFGHIJ", "Z0123456789abcdefghij", `Z${"A".repeat(32)}`]) {
      const error = await planError("kargo", {
        "kargo:kargoHostname": "kargo.example.com",
        "kargo:kargoHostedZoneId": id,
      });
      expect(error.message, id).toMatch(
        /kargo:kargoHostedZoneId: must be a Route 53 hosted zone ID such as Z0123456789ABCDEFGHIJ/,
      );
    }
  });

  it("refuses a hosted zone without a hostname to certify in it", async () => {
    const error = await planError("kargo", { "kargo:kargoHostedZoneId": "Z0123456789ABCDEFGHIJ" });
    expect(error.message).toMatch(
      /kargo:kargoHostedZoneId: needs kargo:kargoHostname, the name in that zone to give Kargo a certificate for/,
    );
  });

  it("lets the load balancer span any number of zones from 1 to 6", () => {
    for (const zones of [1, 2, 6])
      expect(shape.kargoLoadBalancerZones.safeParse(zones).success, String(zones)).toBe(true);
    for (const zones of [0, 7, 1.5])
      expect(shape.kargoLoadBalancerZones.safeParse(zones).success, String(zones)).toBe(false);
  });

  it("accepts Kargo's chart values set as a secret, and keeps them one", async () => {
    const plan = await planProject(
      "kargo",
      { "kargo:kargoValues": { api: { oidc: { dex: { enabled: false } } } } },
      ["kargo:kargoValues"],
    );
    expect(one(plan, "kubernetes:helm.sh/v3:Release").inputs.values).toBe("[secret]");
  });
});
