// Quantities in the form Kubernetes writes them back (lib/pipeline/quantity.ts). The oracle on the Go side
// is k8s.io/apimachinery's own: test/kube/largest_test.go plans workspace resources in another form and
// checks PKO's update (through core/v1 types) leaves the planned Stack as it was.
import { describe, expect, it } from "vitest";
import { canonicalQuantity } from "../lib/pipeline/quantity";

describe("canonicalQuantity", () => {
  it.each([
    ["250m", "250m"],
    ["1000m", "1"],
    ["1500m", "1500m"],
    ["2000", "2k"],
    ["0m", "0"],
    ["0Mi", "0"],
    ["640Mi", "640Mi"],
    ["1024Mi", "1Gi"],
    ["1536Mi", "1536Mi"],
    ["2048Gi", "2Ti"],
    ["0250m", "250m"],
  ])("writes %s as Kubernetes does: %s", (written, canonical) => {
    expect(canonicalQuantity(written)).toBe(canonical);
  });
});
