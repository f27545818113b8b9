import { describe } from "vitest";
import { findCrdsDir } from "../lib/crds/schema";
import { createValidator, type Validator } from "../lib/crds/validate";
import { repoRoot } from "../lib/plan/projects";

/** The upstream CRDs folder; CI must have it, a fork without it skips schema tests and says how to get them. */
export const crdsDir = findCrdsDir(repoRoot);
if (!crdsDir) {
  const how =
    "the upstream CRDs are missing: run `npm run crds -- --fetch` (downloads them at the pinned versions into .crds/) " +
    "or set CRDS_DIR to a folder holding them";
  if (process.env.CI) throw new Error(`CI must validate against the schemas, but ${how}`);
  console.warn(`SKIPPED schema validation: ${how}`);
}

let validator: Validator | undefined;
export const getValidator = (): Validator => (validator ??= createValidator(crdsDir!));

/** `describe` that runs only where the upstream CRDs are present. */
export const describeWithCrds = describe.skipIf(!crdsDir);
