// Hostile and careless pipeline definitions, as pipeline-hostile.test.ts, of where things are: the branch
// the Warehouse watches, the paths it includes and excludes, the stacks directory and the programs' folders.
// Each is refused with a message naming the field and what is allowed, before any resource is registered.
import { describe, expect, it } from "vitest";
import { type PipelineInput } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import {
  basePipeline,
  stackFiles,
  lastStack,
  escaped,
  anyOf,
  expectRefused,
  ofFirstProgram,
  withFirstProgram,
  withSource,
  withStacks,
} from "./pipeline-support";

describe("hostile pipeline definitions", () => {
  // A folder of this repository that holds no Pulumi project: the generated Stack manifests'.
  const stacksDir = basePipeline.stacks.dir;
  const cases: [string, PipelineInput, RegExp][] = [
    // The Warehouse's branch.
    [
      "a branch Kargo's schema rejects",
      withSource({ branch: "-main" }),
      /source\.branch: "-main" is not a branch name Kargo's Warehouse accepts; allowed: letters, digits/,
    ],
    [
      "a branch with a space",
      withSource({ branch: "my branch" }),
      /source\.branch: "my branch" is not a branch name Kargo's Warehouse accepts/,
    ],
    [
      "a branch git refuses (..)",
      withSource({ branch: "release..1" }),
      /source\.branch: "release\.\.1" is not a valid git branch name \(no "\.\."/,
    ],
    [
      "a branch git refuses (.lock)",
      withSource({ branch: "main.lock" }),
      /source\.branch: "main\.lock" is not a valid git branch name/,
    ],
    [
      "a branch of 256 characters",
      withSource({ branch: "b".repeat(256) }),
      /source\.branch: "b+" is not a branch name Kargo's Warehouse accepts; .*at most 255 characters/,
    ],
    [
      "an empty branch",
      withSource({ branch: "" }),
      /source\.branch: must name the branch people merge to, such as "main"/,
    ],
    [
      "a branch promotions write to",
      withSource({ branch: "stage/dev" }),
      /source\.branch: "stage\/dev" is a branch promotions push to \(stage\/<stage>\); the Warehouse must watch the branch people merge to/,
    ],
    // Include and exclude paths.
    [
      "an exclude that hides the stages' Stack templates",
      withSource({ excludePaths: ["glob:stacks/**"] }),
      new RegExp(
        `source\\.excludePaths\\[0\\]: "glob:stacks\\/\\*\\*" excludes stacks\\/${anyOf(stackFiles)}, which a stage runs: a change to it would reach the stages without passing the gates`,
      ),
    ],
    [
      "an exclude regex that hides an environment's config",
      withSource({ excludePaths: [`regexp:(^|/)Pulumi\\.${escaped(lastStack)}\\.yaml$`] }),
      new RegExp(
        `excludes ${anyOf(basePipeline.programs.map((x) => `${x.dir}/Pulumi.${lastStack}.yaml`))}, which a stage runs`,
      ),
    ],
    [
      "an exclude glob that hides a program",
      withSource({ excludePaths: ["glob:**/Pulumi.yaml"] }),
      new RegExp(
        `source\\.excludePaths\\[0\\]: "glob:\\*\\*/Pulumi\\.yaml" excludes ${anyOf(basePipeline.programs.map((x) => `${x.dir}/Pulumi.yaml`))}, which a stage runs`,
      ),
    ],
    [
      "a regex that does not compile",
      withFirstProgram({ includePaths: ["regex:Pulumi.(yaml"] }),
      ofFirstProgram(
        "includePaths\\[0\\]",
        /"regex:Pulumi\.\(yaml" is not a regular expression Go accepts: error parsing regexp: missing closing \).*; allowed: a path .*"glob:<doublestar glob>" or "regex:<Go regular expression>"/,
      ),
    ],
    [
      "a regex with a lookahead (not RE2)",
      withSource({ excludePaths: ["regex:^(?!Pulumi).*"] }),
      /source\.excludePaths\[0\]: "regex:\^\(\?!Pulumi\)\.\*" is not a regular expression Go accepts: error parsing regexp: invalid or unsupported Perl syntax: `\(\?!`/,
    ],
    [
      "a glob doublestar refuses",
      withSource({ excludePaths: ["glob:stacks/[*.yaml"] }),
      /source\.excludePaths\[0\]: "glob:stacks\/\[\*\.yaml" is not a valid glob \(unclosed "\[" or "\{"/,
    ],
    [
      "an include path leaving the repository",
      withFirstProgram({ includePaths: ["../other/Pulumi.yaml"] }),
      ofFirstProgram(
        "includePaths\\[0\\]",
        /"\.\.\/other\/Pulumi\.yaml" must be a path relative to the repository root without "\.\."/,
      ),
    ],
    [
      "an absolute include path",
      withFirstProgram({ includePaths: ["Pulumi.yaml", "/srv/repo/stacks"] }),
      ofFirstProgram(
        "includePaths\\[1\\]",
        /"\/srv\/repo\/stacks" must be a path relative to the repository root without "\.\."/,
      ),
    ],
    [
      "a Windows drive path as an exclude",
      withSource({ excludePaths: ["C:\\repo\\docs"] }),
      /source\.excludePaths\[0\]: "C:\\repo\\docs" must be a path relative to the repository root without "\.\."/,
    ],
    [
      "a second exclude that hides the stages' Stack templates",
      withSource({ excludePaths: ["docs", "stacks"] }),
      new RegExp(
        `source\\.excludePaths\\[1\\]: "stacks" excludes stacks\\/${anyOf(stackFiles)}, which a stage runs`,
      ),
    ],
    // Where the generator writes and the program lives.
    [
      "an absolute stacks directory",
      withStacks({ dir: "/etc" }),
      /stacks\.dir: "\/etc" is not a relative path; allowed: a folder of the repository such as "stacks"/,
    ],
    [
      "a stacks directory above the repository",
      withStacks({ dir: "../stacks" }),
      /stacks\.dir: "\.\.\/stacks" leaves the repository; allowed: a folder of the repository without "\.\."/,
    ],
    [
      "a project folder as the stacks directory",
      withStacks({ dir: "cluster" }),
      /stacks\.dir: "cluster" is the repository's cluster\/ folder; allowed: a folder of its own such as "stacks" \(not cluster, cluster-setup, kargo, lib, test, \.github/,
    ],
    [
      "a stacks directory inside a project folder",
      withStacks({ dir: "kargo/stacks" }),
      /stacks\.dir: "kargo\/stacks" is inside the repository's kargo\/ folder/,
    ],
    [
      "node_modules as the stacks directory",
      withStacks({ dir: "node_modules/x" }),
      /stacks\.dir: "node_modules\/x" is inside the repository's node_modules\/ folder/,
    ],
    [
      "a stacks directory with Kargo expression syntax",
      withStacks({ dir: "stacks${{ vars.repoURL }}" }),
      /stacks\.dir: "stacks\$\{\{ vars\.repoURL \}\}" has characters other than letters, digits, "\.", "_", "-" and "\/"/,
    ],
    [
      "the repository root as the stacks directory",
      withStacks({ dir: "." }),
      /stacks\.dir: must be a folder of its own, not the repository root/,
    ],
    [
      "an absolute program folder",
      withFirstProgram({ dir: "/srv/program" }),
      ofFirstProgram("dir", /"\/srv\/program" is not a relative path; allowed: a folder of the repository/),
    ],
    [
      "a program folder above the repository",
      withFirstProgram({ dir: ".." }),
      ofFirstProgram(
        "dir",
        /"\.\." leaves the repository; allowed: a folder of the repository without "\.\."/,
      ),
    ],
    [
      "a program folder without a Pulumi.yaml",
      withFirstProgram({ dir: stacksDir }),
      ofFirstProgram(
        "dir",
        new RegExp(
          `"${escaped(stacksDir)}" holds no Pulumi\\.yaml; allowed: the folder holding the program's Pulumi\\.yaml`,
        ),
      ),
    ],
  ];

  it.each(cases)("rejects %s, naming the field or stage and what is allowed", (_, input, message) => {
    expectRefused(input, message);
  });

  const valid: [string, PipelineInput][] = [
    ["a release branch", withSource({ branch: "release/2026.11_x" })],
    ["Go-only regex syntax", withFirstProgram({ includePaths: ["regex:^(?P<file>Pulumi)\\.ya?ml\\z"] })],
    ["a glob of files outside the program", withFirstProgram({ includePaths: ["glob:{lib,shared}/*.yaml"] })],
    ["an include of the whole repository", withFirstProgram({ includePaths: ["."] })],
    ["an exclude of files no stage uses", withSource({ excludePaths: ["glob:docs/**", "README.md"] })],
    ["a nested stacks directory", withStacks({ dir: "deploy/stacks" })],
  ];
  it.each(valid)("accepts %s", (_, input) => {
    expect(() => validatePipeline(input)).not.toThrow();
  });
});
