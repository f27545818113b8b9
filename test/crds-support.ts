import { findCrdsDir, readValidationData } from "../lib/crds/schema";
import { createValidator, type Validator } from "../lib/crds/validate";
import { repoRoot } from "../lib/cli/plan/projects";

/**
 * The upstream files, where this clone has them (`../shared/crds`, `CRDS_DIR` or `.crds/`). Validation never
 * needs them: it reads the committed data `npm run crds` generates from them. Where they are present, the
 * tests also prove that data current (the GitHub workflow downloads them first for that).
 */
export const upstreamCrdsDir = findCrdsDir(repoRoot);

/** The committed validation data: CRD schemas and CEL rules, Kargo's step and subscription schemas, chart defaults. */
export const validationData = readValidationData();

let validator: Validator | undefined;
export const getValidator = (): Validator => (validator ??= createValidator(validationData));
