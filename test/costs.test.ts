// The README's idle-cost table, recomputed from what the plan creates by the cost model (lib/cli/plan/costs.ts,
// also behind the cost heading of `npm run plan -- --diff`): when node sizing, log types, NAT or the load
// balancer change, this fails until the README says what the platform really costs.
import * as fs from "node:fs";
import * as path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { cents, monthlyCost, type CostItem as Item } from "../lib/cli/plan/costs";
import { planChain, repoRoot } from "../lib/cli/plan/projects";

/** The rows of the README table between the cost-table markers, as (item, amount). */
function readmeCostTable(): { rows: Item[]; total: number } {
  const readme = fs.readFileSync(path.join(repoRoot, "README.md"), "utf8");
  const match =
    /<!-- cost table: checked by test\/costs\.test\.ts -->([\s\S]*?)<!-- end of cost table -->/.exec(readme);
  expect(match, "README.md has the cost table between its markers").not.toBeNull();
  const rows = match![1]!
    .split("\n")
    .filter((line) => /^\|.*\$\d/.test(line))
    .map((line) => line.split("|").map((cell) => cell.trim()))
    .map(([, item, monthly]) => ({
      item: item!.replace(/\*\*/g, ""),
      monthly: Number(monthly!.replace(/[$*]/g, "")),
    }));
  const total = rows.find((r) => r.item === "Total");
  return { rows: rows.filter((r) => r !== total), total: total?.monthly ?? NaN };
}

describe("what the platform costs idle", () => {
  let items: Item[];
  beforeAll(async () => {
    const estimate = monthlyCost((await planChain()).flatMap((plan) => plan.resources));
    expect(estimate.unpriced, "every resource that costs money has a price").toEqual([]);
    items = estimate.items;
  });

  it("is itemized in the README exactly as the plan prices out", () => {
    expect(readmeCostTable().rows).toEqual(items);
  });

  it("adds up, and stays within $195 a month all-in by default", () => {
    const total = cents(items.reduce((sum, i) => sum + i.monthly, 0));
    expect(readmeCostTable().total).toBe(total);
    expect(total).toBeLessThanOrEqual(195);
    const readme = fs.readFileSync(path.join(repoRoot, "README.md"), "utf8");
    expect(readme).toContain(`**$${total.toFixed(2)} a month**`);
  });
});
