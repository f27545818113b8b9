// The repository speaks only of itself: a user who clones it has neither the folders of the machine it was
// built on nor the tools that machine had, so no file may send them there. Every file git tracks (or would
// track: untracked files not ignored are read too, so the check holds before a commit) is read, this one
// included.
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { repositoryTextFiles } from "./repository-files";

/**
 * An absolute path of one machine: the build machine's work folder, root's home, the folder its tools live
 * in, or a user's home (Linux or macOS). Only where a path starts (after a space, a quote, a bracket, `=`),
 * so a URL's path or a relative one is not one. System paths
 * every machine has (`/usr/local/go`, `/etc`, `/dev/null`) are not a machine's; nor is `/tmp/...`, which the
 * tests use as hostile input (`/tmp/x`) and which no file may depend on anyway, as every test makes its own.
 */
const machinePath = /(?<![\w.~/:@$%-])\/(?:(?:work|root|farm)(?![\w.-])|(?:home|Users)\/[A-Za-z_][\w.-]*)/g;

/**
 * Words and word pairs that name tools of the build machine, not the project's: written here only as their
 * length and sha256 (lowercase, backquotes dropped), since spelling them out would be the mention this test
 * forbids; the length spares hashing every word. A word the project itself uses (`fetch`, the JavaScript
 * function and `npm run crds -- --fetch`) is not one; the pair that names the tool is.
 */
const foreignTools: [number, string][] = [
  [10, "8cf10d1b0e07c1d834fb2f8253711c3c0c46d3e8391195d08812692c1e067642"],
  [11, "0db0a08c5e0fe0227a29969c56fd1549b0eabeed6d0ed7d5fb8a14c314531bca"],
  [10, "40622135302ec6b0df6ec5a8e0c02fbf10005c12d0657ce9960b9f77190b09d2"],
  [10, "18fa0f34c2eaa6ca0e0a5bde0ec5830a92509b56af77c3a69176b1a2601ce9f4"],
  [10, "b420478a8227e27fc2a7b8beb27c1c6dd930d4c29898df482f41d31c40c70d05"],
];

const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");

/** Each machine path and each word or word pair naming a foreign tool in `text`, with its line. */
function foreignMentions(text: string, names = foreignTools): string[] {
  const lengths = new Set(names.map(([n]) => n));
  const digests = new Set(names.map(([, d]) => d));
  return text.split("\n").flatMap((line, i) => {
    const paths = [...line.matchAll(machinePath)].map((m) => `line ${i + 1}: ${m[0]}`);
    const words = line
      .toLowerCase()
      .replaceAll("`", "")
      .split(/[^a-z0-9_-]+/)
      .filter(Boolean);
    const pairs = words.slice(1).map((w, j) => `${words[j]} ${w}`);
    const tools = [...words, ...pairs]
      .filter((w) => lengths.has(w.length) && digests.has(sha256(w)))
      .map((w) => `line ${i + 1}: ${w}`);
    return [...paths, ...tools];
  });
}

describe("the repository speaks only of itself", () => {
  it("names no absolute path of a build machine and no tool that is not the project's, in any file", () => {
    const files = repositoryTextFiles();
    expect(files.map((f) => f.file)).toContain("test/speaks-of-itself.test.ts");
    const found = files.flatMap(({ file, text }) => foreignMentions(text).map((m) => `${file} ${m}`));
    expect(found).toEqual([]);
  });

  it("tells such a path from a URL's, a relative one and a system path", () => {
    const home = ["", "home", "dev"].join("/");
    const work = ["", "work", "x"].join("/");
    expect(
      foreignMentions(
        `a ${work}\n"${home}/repo" \`${["", "Users", "me"].join("/")}\` (${["", "root"].join("/")})`,
      ),
    ).toEqual([
      `line 1: ${["", "work"].join("/")}`,
      `line 2: ${home}`,
      `line 2: ${["", "Users", "me"].join("/")}`,
      `line 2: ${["", "root"].join("/")}`,
    ]);
    expect(
      foreignMentions(
        `https://example.com${work} lib${work} /usr/local/go /tmp/x /etc/hosts ${["", "working"].join("/")} ${["", "home"].join("/")}- ~/.cache $HOME/.cache`,
      ),
    ).toEqual([]);
  });

  it("finds a tool's name as a word or a pair of words, in any case, quoted or not", () => {
    const tools: [number, string][] = ["widget-maker", "make tool"].map((w) => [w.length, sha256(w)]);
    expect(foreignMentions("run `Widget-Maker` now\nthe `make` Tool; make tools", tools)).toEqual([
      "line 1: widget-maker",
      "line 2: make tool",
    ]);
  });
});
