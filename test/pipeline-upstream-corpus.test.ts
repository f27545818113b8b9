// Our re-implementations of upstream rules, held to what upstream itself decided over thousands of generated
// inputs: which paths Kargo v1.11.2's Warehouse include/exclude selectors select (pkg/pattern: doublestar
// globs, Go regexps, base directories), what Go's regexp accepts and matches, and which branch names Kargo's
// git subscription schema and git accept. The verdicts are in test/differential/testdata/corpus.json, written
// by the Go harness from the upstream code (UPDATE_CORPUS=1) and checked there against it on every run, so
// they cannot drift; so are the image references the container runtime parses (distribution/reference).
// Here they run in-process, where `npm run test:mutation` sees them.
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { branchProblems, workspaceImageProblems } from "../lib/pipeline/check-values";
import { stageBranchPrefix } from "../lib/pipeline/names";
import {
  compileGoRegexp,
  parsePathSelector,
  selectorMatches,
  unsupportedGlob,
} from "../lib/pipeline/selectors";

interface Verdict {
  refused: boolean;
  matches?: string[];
}
interface Corpus {
  files: string[];
  selectors: (Verdict & { selector: string })[];
  regexps: (Verdict & { source: string })[];
  branches: { branch: string; kargo: boolean; git: boolean }[];
  images: { image: string; parses: boolean; tag?: string; digest?: string }[];
}

const corpus = JSON.parse(
  fs.readFileSync(path.join(__dirname, "differential", "testdata", "corpus.json"), "utf8"),
) as Corpus;

/** Where ours selects differently from upstream: the first file it gets wrong, or "" when they agree. */
function difference(upstream: Verdict, matches: (file: string) => boolean): string {
  const selected = new Set(upstream.matches);
  const wrong = corpus.files.find((f) => matches(f) !== selected.has(f));
  if (wrong === undefined) return "";
  return `${selected.has(wrong) ? "ours does not select" : "ours also selects"} ${JSON.stringify(wrong)}`;
}

// Refusals of ours that Kargo does not make, on purpose: base directories that are absolute or climb with
// "..", and globs whose outcome hinges on doublestar's corner cases (the message says so and offers a regexp).
// Those are spotted here coarsely, on the glob's text, so that a glob people write (stacks/**, **/*.yaml,
// {a,b}/*) refused as a corner case is a disagreement.
const stricterBaseDir = (selector: string) =>
  !/^(glob|regexp?):/.test(selector) &&
  (path.posix.isAbsolute(selector) || path.win32.isAbsolute(selector) || selector.split("/").includes(".."));

function cornerCase(glob: string): boolean {
  const doubleStars = glob.replaceAll("**", "D");
  const reversedRange = [...glob.matchAll(/\[[!^]?\]?[^\]]*/g)].some(([body]) =>
    [...body.matchAll(/(?<!\\)(.)-([^\]])/g)].some(([, lo, hi]) => lo! > hi!),
  );
  return (
    // "**" glued to other characters, or a run of three
    /[^/]\*\*|\*\*[^/]/.test(glob) ||
    // a "/" that ends the glob or one of its alternatives
    /\/($|[},])/.test(glob) ||
    // braces or commas inside a class
    /\[[^\]]*[{},]/.test(glob) ||
    // more than 2000 alternatives take at least 11 commas
    (glob.match(/,/g)?.length ?? 0) >= 11 ||
    // an ending of two parts that can each match nothing: "*", "**", "/**", an alternative group
    /[*}D][^/]*[*}D]$|[*}D]\/D$/.test(doubleStars) ||
    reversedRange
  );
}

describe("our rules decide as upstream did over the generated corpus", () => {
  it("Warehouse include/exclude selectors: refused and matched as Kargo's pkg/pattern does", () => {
    const disagreements: string[] = [];
    for (const upstream of corpus.selectors) {
      const { selector } = upstream;
      const ours = parsePathSelector(selector);
      if (typeof ours === "string") {
        const onPurpose =
          (selector.startsWith("glob:") &&
            ours.includes(unsupportedGlob) &&
            cornerCase(selector.slice("glob:".length))) ||
          stricterBaseDir(selector);
        if (!upstream.refused && !onPurpose)
          disagreements.push(`${selector}: Kargo accepts it, ours: ${ours}`);
      } else if (upstream.refused) disagreements.push(`${selector}: Kargo refuses it, ours accepts it`);
      else {
        const differs = difference(upstream, (file) => selectorMatches(ours, file));
        if (differs) disagreements.push(`${selector}: ${differs}`);
      }
    }
    expect(disagreements).toEqual([]);
  });

  it("Go regular expressions: accepted and matched as Go's regexp does", () => {
    const disagreements: string[] = [];
    for (const upstream of corpus.regexps) {
      const ours = compileGoRegexp(upstream.source);
      if (typeof ours === "string") {
        if (!upstream.refused) disagreements.push(`${upstream.source}: Go accepts it, ours: ${ours}`);
      } else if (upstream.refused) disagreements.push(`${upstream.source}: Go refuses it, ours accepts it`);
      else {
        const differs = difference(upstream, (file) => ours.test(file));
        if (differs) disagreements.push(`${upstream.source}: ${differs}`);
      }
    }
    expect(disagreements).toEqual([]);
  });

  it("source.branch: accepted when Kargo's schema and git both accept it and promotions do not push to it", () => {
    const disagreements = corpus.branches.flatMap(({ branch, kargo, git }) => {
      const accepted = kargo && git && !branch.startsWith(stageBranchPrefix);
      const ours = branchProblems(branch);
      return (ours.length === 0) === accepted
        ? []
        : [`${branch}: Kargo ${kargo}, git ${git}; ours: ${ours.join("; ") || "accepted"}`];
    });
    expect(disagreements).toEqual([]);
  });

  it("programs.<name>.workspaceImage: accepted when the runtime parses it with a digest, or a tag other than latest", () => {
    const disagreements = corpus.images.flatMap(({ image, parses, tag, digest }) => {
      const pinned =
        parses && (digest !== undefined || (tag !== undefined && tag.toLowerCase() !== "latest"));
      // Stricter on purpose: a digest other than sha256, or a registry given as an IPv6 address.
      const onPurpose = (digest !== undefined && !digest.startsWith("sha256:")) || image.startsWith("[");
      const ours = workspaceImageProblems(image, "programs.zz-test-program.workspaceImage");
      if (ours.length === 0 ? pinned : !pinned || onPurpose) return [];
      return [
        `${image}: parses ${parses}, tag ${tag}, digest ${digest}; ours: ${ours.join("; ") || "accepted"}`,
      ];
    });
    expect(disagreements).toEqual([]);
  });
});
