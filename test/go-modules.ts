// The Go modules of the harness: test/go.mod and each module nested under test/ (a folder with its own go.mod,
// for upstream code whose pins test/go.mod cannot hold beside the others: test/go-harness.ts says which).
import * as fs from "node:fs";
import * as path from "node:path";

const root = path.resolve(__dirname, "..");

function nested(dir: string): string[] {
  return fs
    .readdirSync(path.join(root, dir), { withFileTypes: true })
    .filter((e) => e.isDirectory() && !["node_modules", "testdata"].includes(e.name))
    .flatMap((e) => {
      const sub = `${dir}/${e.name}`;
      return fs.existsSync(path.join(root, sub, "go.mod")) ? [sub, ...nested(sub)] : nested(sub);
    });
}

/** Folders relative to the repository root, test/ first. */
export const goModuleDirs = ["test", ...nested("test")];
