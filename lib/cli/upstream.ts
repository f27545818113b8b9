// `npm run upstream`: fetches the upstream files the tripwires read (test/internal/upstream, test/health) at
// the tags test/upstream-mirrors.json pins, over git, into $UPSTREAM_MIRROR_DIR or the user's cache folder
// (lib/cli/upstream/mirror.ts). Run it again after a pin changes.
import * as path from "node:path";
import { mirrorAll, mirrorDir, readManifest } from "./upstream/mirror";

const repoRoot = path.resolve(__dirname, "..", "..");

try {
  const base = mirrorDir();
  for (const m of mirrorAll(readManifest(path.join(repoRoot, "test", "upstream-mirrors.json")), base)) {
    console.log(`${m.repo} ${m.tag}: ${m.files} files in ${m.dir}`);
    for (const file of m.missing) console.log(`  not at ${m.tag}: ${file} (its check will say so)`);
  }
  console.log(`the tripwires read these snapshots from ${base} (npm run test:engines)`);
} catch (err) {
  console.error(`upstream: ${(err as Error).message}`);
  process.exit(1);
}
