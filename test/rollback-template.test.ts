// The rollback's up-front check on a real git repository: a stage's Stack template at the older commit is
// compared with today's (as `npm run stacks` renders it) on what the API server holds a Stack to, the name and
// the spec, leaving out the commit a promotion sets.
import * as fs from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { driftManifestFile, stackManifestFile } from "../lib/pipeline/names";
import { rollbackPlan } from "../lib/pipeline/rollback";
import { renderStacks } from "../lib/pipeline/stacks";
import { validatePipeline } from "../lib/pipeline/validate";
import { refusalText, templateAt, templateRefusals } from "../lib/rollback-template";
import { changedTemplate, templateRepo, todaysTemplates } from "./rollback-support";

const p = validatePipeline(definition);
const repo = templateRepo();
afterAll(() => fs.rmSync(repo.root, { recursive: true, force: true }));
const environment = Object.keys(p.environments)[0]!;
const plan = rollbackPlan(p, environment);
const stages = plan.steps.flatMap((s) => [s.preview, s.update]);
const [changed, untouched] = [plan.steps[0]!.update, plan.steps[0]!.preview];

describe("the rollback's template check", () => {
  it("passes an older commit whose templates are today's, whatever commit a promotion set there", () => {
    const same = repo.commit(todaysTemplates(p), "today's templates");
    expect(templateRefusals(repo.root, p, same, stages)).toEqual([]);
    const pinned = repo.commit(
      changedTemplate(p, changed, (t) => t.replace('commit: ""', "commit: 0123456789abcdef")),
      "a commit value",
    );
    expect(templateAt(repo.root, p, pinned, changed)).toContain("0123456789abcdef");
    expect(templateRefusals(repo.root, p, pinned, stages)).toEqual([]);
  });

  it("refuses, naming the stage and each field, a template that differs in what the API server admits", () => {
    const image = p.programs.find((x) => x.name === plan.steps[0]!.program)!.workspaceImage;
    const older = repo.commit(
      changedTemplate(p, changed, (t) =>
        t.replace(`image: ${image}`, "image: an/older-image:1").replace("\n  refresh: true\n", "\n"),
      ),
      "an older image, no refresh",
    );
    const refusals = templateRefusals(repo.root, p, older, stages);
    expect(refusals).toEqual([
      {
        stage: changed,
        file: stackManifestFile(changed),
        fields: ["spec.refresh", "spec.workspaceTemplate.spec.image"],
      },
    ]);
    expect(refusals.map((r) => r.stage)).not.toContain(untouched);
    const text = refusalText(p, older, refusals);
    expect(text).toContain("Revert on main instead");
    expect(text).toContain(
      `${p.stacks.dir}/${changed}.yaml (stage ${changed}): spec.refresh, spec.workspaceTemplate.spec.image`,
    );
  });

  it("refuses a stage that had no template at the older commit, and a commit the clone lacks", () => {
    const files = todaysTemplates(p);
    fs.rmSync(`${repo.root}/${p.stacks.dir}`, { recursive: true });
    files.delete(`${p.stacks.dir}/${changed}.yaml`);
    const without = repo.commit(files, "no template of one stage");
    expect(templateRefusals(repo.root, p, without, stages)).toEqual([
      {
        stage: changed,
        file: stackManifestFile(changed),
        fields: ["the whole file: the stage had no template at that commit"],
      },
    ]);
    expect(() => templateRefusals(repo.root, p, "f".repeat(40), stages)).toThrow(
      /is not in the clone at .*fetch origin/,
    );
  });

  it("refuses an older commit without an update stage's drift check, which its promotion copies from there", () => {
    const today = renderStacks(p);
    const updates = plan.steps.map((s) => s.update).filter((u) => today.has(driftManifestFile(u)));
    if (updates.length === 0) return; // drift checks off (verification.driftInterval: off): nothing to copy
    const files = todaysTemplates(p);
    fs.rmSync(`${repo.root}/${p.stacks.dir}`, { recursive: true });
    for (const u of updates) files.delete(`${p.stacks.dir}/${driftManifestFile(u)}`);
    const before = repo.commit(files, "before drift checks");
    const refusals = templateRefusals(repo.root, p, before, stages);
    expect(refusals.map((r) => r.file).sort()).toEqual(updates.map(driftManifestFile).sort());
    expect(refusalText(p, before, refusals)).toContain(`${p.stacks.dir}/${driftManifestFile(updates[0]!)}`);
  });
});
