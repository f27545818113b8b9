// The pipeline library's verdicts for the differential tests (test/differential/*_test.go): reads
// {selectors, regexps, files, branches} from the JSON file it is given and writes what our checks decide.
import * as fs from "node:fs";
import { branchProblems } from "../../lib/pipeline/check-values";
import {
  compileGoRegexp,
  parsePathSelector,
  selectorMatches,
  unsupportedGlob,
} from "../../lib/pipeline/selectors";

interface Input {
  selectors: string[];
  regexps: string[];
  files: string[];
  branches: string[];
}

const input = JSON.parse(fs.readFileSync(process.argv[2]!, "utf8")) as Input;
const output = {
  selectors: input.selectors.map((selector) => {
    const parsed = parsePathSelector(selector);
    // `stricter`: a glob Kargo accepts that we refuse on purpose (its matching is doublestar's corner cases).
    if (typeof parsed === "string") return { error: parsed, stricter: parsed.includes(unsupportedGlob) };
    return { matches: input.files.map((file) => selectorMatches(parsed, file)) };
  }),
  regexps: input.regexps.map((source) => {
    const compiled = compileGoRegexp(source);
    if (typeof compiled === "string") return { error: compiled };
    return { matches: input.files.map((file) => compiled.test(file)) };
  }),
  branches: input.branches.map((branch) => ({ problems: branchProblems(branch) })),
};
process.stdout.write(JSON.stringify(output));
