// The project's own validation (lib/crds/validate.ts) over objects the Go tests hand over, for comparing its
// verdicts with the API server's (test/kube/corpus_test.go). Reads a JSON array of objects on stdin and
// prints a JSON array with, for each, the errors it reports (empty: accepted).
import * as fs from "node:fs";
import { createValidator, type KubeObject } from "../../lib/crds/validate";

const objects = JSON.parse(fs.readFileSync(0, "utf8")) as KubeObject[];
const validator = createValidator();
process.stdout.write(JSON.stringify(objects.map((object) => validator.validate([object]).errors)));
