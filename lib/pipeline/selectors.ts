// Kargo's include/exclude path selectors (globs, Go regexps, base directories), parsed and matched as Kargo
// does, so a definition whose selectors Kargo would refuse, or whose excludes would hide a file a stage runs,
// is refused here. Apart from the checks because it is a small matching engine of its own
// (test/differential compares it with doublestar and Go's regexp).
import * as path from "node:path";
import { RE2JS } from "re2js";

type PathSelector =
  | { kind: "glob"; regexp: PathMatcher }
  | { kind: "regexp"; regexp: PathMatcher }
  | { kind: "baseDir"; base: string };

/**
 * Parses an include/exclude path selector as Kargo does (akuity/kargo pkg/pattern/matcher.go,
 * ParsePathPattern, v1.11.2): `glob:` (doublestar), `regex:`/`regexp:` (Go RE2), else a base directory.
 * Returns the reason Kargo would refuse it, as Kargo's Warehouse then fails on every discovery.
 */
export function parsePathSelector(selector: string): PathSelector | string {
  if (selector.startsWith("glob:")) {
    const matcher = globMatcher(selector.slice("glob:".length));
    return typeof matcher === "string" ? `"${selector}" ${matcher}` : { kind: "glob", regexp: matcher };
  }
  for (const prefix of ["regex:", "regexp:"]) {
    if (selector.startsWith(prefix)) {
      const source = selector.slice(prefix.length);
      const compiled = compileGoRegexp(source);
      return typeof compiled === "string"
        ? `"${selector}" ${compiled}`
        : { kind: "regexp", regexp: compiled };
    }
  }
  if (
    path.posix.isAbsolute(selector) ||
    path.win32.isAbsolute(selector) ||
    selector.split("/").includes("..")
  ) {
    return `"${selector}" must be a path relative to the repository root without ".."`;
  }
  return { kind: "baseDir", base: selector };
}

/** Whether a parsed selector matches a repository path, with Kargo's semantics. */
export function selectorMatches(selector: PathSelector, file: string): boolean {
  if (selector.kind !== "baseDir") return selector.regexp.test(file);
  // Kargo: filepath.Rel(base, path) must not contain ".."; relative() cleans both paths as Rel does.
  return !path.posix.relative(selector.base, file).includes("..");
}

/** In a refusal of a glob Kargo would accept but whose matching this platform does not reproduce exactly. */
export const unsupportedGlob = "uses glob syntax this platform does not check";

const unsupported = (what: string) =>
  `${unsupportedGlob} (${what}); write it with "**" only as a whole path component, or as a regexp: selector`;

/**
 * Kargo's globs are doublestar's (bmatcuk/doublestar v4.9.2, which akuity/kargo v1.11.2 pkg/pattern uses):
 * a pattern is valid when every "\\" escapes a character, every "[...]" class is closed and not empty, and
 * braces balance outside classes (validate.go). Matching expands "{a,b}" alternatives in place (match.go), so
 * each alternative is matched as a glob of its own here too; within one, `*` and `?` stay inside a path
 * component, a class matches one character ("/" included), and `**` as a whole component spans any number of
 * components. Corner cases doublestar resolves in its own way (`**` glued to other characters, a trailing "/",
 * more than 2000 alternatives) are refused rather than guessed; test/differential checks the rest against
 * doublestar itself.
 */
function globMatcher(glob: string): PathMatcher | string {
  const invalid = `is not a valid glob (unclosed "[" or "{", an empty "[]", or a trailing "\\")`;
  if (!validGlob(glob)) return invalid;
  const alternatives = expandAlternatives(glob);
  if (typeof alternatives === "string") return alternatives;
  const compiled: RegExp[] = [];
  for (const alternative of [glob, ...alternatives]) {
    const tail = emptyTail(alternative);
    if (tail) return unsupported(`"${tail}" at the end, which can match nothing in more than one way`);
  }
  for (const alternative of alternatives) {
    const regexp = globToRegExp(alternative);
    if (typeof regexp === "string") return regexp;
    compiled.push(regexp);
  }
  return { test: (file) => compiled.some((r) => r.test(file)) };
}

function validGlob(glob: string): boolean {
  let depth = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === "\\") {
      if (++i >= glob.length) return false;
    } else if (c === "[") {
      const first = glob[i + 1] === "!" || glob[i + 1] === "^" ? i + 2 : i + 1;
      if (glob[first] === "]") return false;
      i = classEnd(glob, i);
      if (i >= glob.length) return false;
    } else if (c === "{") depth++;
    else if (c === "}" && depth-- === 0) return false;
  }
  return depth === 0;
}

const escapedAt = (glob: string, i: number) => {
  let backslashes = 0;
  while (i - backslashes - 1 >= 0 && glob[i - backslashes - 1] === "\\") backslashes++;
  return backslashes % 2 === 1;
};

/**
 * When a path runs out before its glob does, doublestar accepts only a rest that is one of "", "*", "**",
 * "/**" (or an alternative group leading to one), without trying other ways to match nothing (match.go,
 * isZeroLengthPattern). A glob ending in two or more parts that can each match nothing ("*\/**", "*{,a}")
 * would be decided by that order, so it is refused: returns that ending, or "" when the glob is fine.
 */
function emptyTail(glob: string): string {
  let rest = glob;
  let parts = 0;
  let group = false;
  for (;;) {
    if (rest.endsWith("/**") && !escapedAt(rest, rest.length - 3)) rest = rest.slice(0, -3);
    else if (rest.endsWith("*") && !escapedAt(rest, rest.length - 1)) rest = rest.replace(/\*+$/, "");
    else if (rest.endsWith("}") && !escapedAt(rest, rest.length - 1)) {
      let open = rest.lastIndexOf("{");
      while (escapedAt(rest, open)) open = rest.lastIndexOf("{", open - 1);
      // Braces balance (validGlob), so an unescaped "}" at the end has its "{".
      if (!/(^|,)[*{},/]*(,|$)/.test(rest.slice(open + 1, -1))) break;
      rest = rest.slice(0, open);
      group = true;
    } else break;
    parts++;
  }
  return parts > 1 || group ? glob.slice(rest.length) : "";
}

/**
 * Index of the "]" closing the class opened at `open`, or of its end. A class is never empty (validGlob), so a
 * "]" right after a "!" or "^" never closes one and the negation needs no skipping.
 */
function classEnd(glob: string, open: number): number {
  let i = open + 1;
  for (; i < glob.length && glob[i] !== "]"; i++) if (glob[i] === "\\") i++;
  return i;
}

/** Every brace-free glob the alternatives of `glob` stand for, in no particular order. */
function expandAlternatives(glob: string): string[] | string {
  const done: string[] = [];
  const pending = [glob];
  while (pending.length) {
    const current = pending.pop()!;
    let open = -1;
    for (let i = 0; i < current.length && open < 0; i++) {
      if (current[i] === "\\") i++;
      else if (current[i] === "[") {
        const end = classEnd(current, i);
        if (/[{},]/.test(current.slice(i, end))) return unsupported(`"{", "}" or "," inside "[...]"`);
        i = end;
      } else if (current[i] === "{") open = i;
    }
    if (open < 0) {
      done.push(current);
      if (done.length > 2000) return unsupported("more than 2000 alternatives");
      continue;
    }
    const parts: string[] = [];
    let depth = 0;
    let from = open + 1;
    let close = -1;
    for (let i = open + 1; i < current.length && close < 0; i++) {
      if (current[i] === "\\") i++;
      else if (current[i] === "{") depth++;
      else if (current[i] === "}" && depth-- === 0) close = i;
      else if (current[i] === "," && depth === 0) {
        parts.push(current.slice(from, i));
        from = i + 1;
      }
    }
    parts.push(current.slice(from, close));
    for (const part of parts) pending.push(current.slice(0, open) + part + current.slice(close + 1));
  }
  return done;
}

/** A brace-free glob as an anchored RegExp, or why it is refused. */
function globToRegExp(glob: string): RegExp | string {
  if (glob.endsWith("/")) return unsupported('a trailing "/"');
  let out = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === "\\") {
      out += escapeRegExp(glob[++i]!);
    } else if (c === "*") {
      let run = 1;
      for (; glob[i + 1] === "*"; i++) run++;
      if (run === 1) {
        out += "[^/]*";
        continue;
      }
      const atStart = i - run < 0 || glob[i - run] === "/";
      const atEnd = i + 1 === glob.length || glob[i + 1] === "/";
      if (run > 2 || !atStart || !atEnd) return unsupported(`"${"*".repeat(run)}" inside a path component`);
      if (glob[i + 1] === "/") {
        out += "(?:[^/]*/)*";
        i++;
      } else if (glob[i - 2] === "/" && !escapedAt(glob, i - 2)) {
        // A trailing "/**" matches the folder itself too.
        out = `${out.slice(0, -2)}(?:/.*)?`;
      } else out += ".*";
    } else if (c === "?") out += "[^/]";
    else if (c === "[") {
      const end = classEnd(glob, i);
      let j = i + 1;
      const negate = glob[j] === "!" || glob[j] === "^";
      if (negate) j++;
      let body = "";
      for (; j < end; j++) {
        // An escaped "-" is itself, not a range (doublestar's matchClass); a bare "-" first or last is too.
        if (glob[j] === "\\") body += escapeRegExp(glob[++j]!);
        else body += glob[j] === "-" && body && j + 1 < end ? "-" : escapeRegExp(glob[j]!);
      }
      out += negate ? `[^${body}]` : `[${body}]`;
      i = end;
    } else out += escapeRegExp(c);
  }
  try {
    return new RegExp(`^${out}$`);
  } catch {
    return unsupported("a character range whose ends are reversed");
  }
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");

/** A compiled pattern: whether it finds a match in a path, as Go's `Regexp.MatchString` does. */
export interface PathMatcher {
  test(file: string): boolean;
}

/**
 * Compiles a Go regular expression with Go's own syntax and semantics, or says why Go's regexp.Compile
 * refuses it. re2js is a port of RE2/J, itself a port of Go's regexp package: no lookaround or backreferences,
 * repeats up to 1000, `(?P<name>)`, `\Q...\E`, `[[:alpha:]]`, Unicode classes, as Go (test/differential).
 */
export function compileGoRegexp(source: string): PathMatcher | string {
  try {
    const compiled = RE2JS.compile(source);
    return { test: (file) => compiled.matcher(file).find() };
  } catch (err) {
    return `is not a regular expression Go accepts: ${(err as Error).message}`;
  }
}
