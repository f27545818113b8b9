// `npm run crds [-- --fetch] [--out DIR]`: regenerates lib/crds/generated (lib/crds/generate.ts). Reads
// ../shared/crds (or CRDS_DIR); --fetch first downloads the same files at the pinned upstream tags into .crds/
// and reads those; with neither, regenerates the types from the schemas committed in lib/crds/generated.
import * as path from "node:path";
import { parseArgs } from "node:util";
import { defaultOut, extractValidationData, fetchUpstream, generate } from "../crds/generate";
import { findCrdsDir, readValidationData } from "../crds/schema";

const repoRoot = path.resolve(__dirname, "..", "..");

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { fetch: { type: "boolean" }, out: { type: "string" } } });
  let crdsDir = findCrdsDir(repoRoot);
  if (values.fetch) {
    crdsDir = path.join(repoRoot, ".crds");
    console.log(`downloaded ${await fetchUpstream(crdsDir)} upstream files into ${crdsDir}`);
  }
  const out = values.out ? path.resolve(values.out) : defaultOut;
  const data = crdsDir ? extractValidationData(crdsDir) : readValidationData();
  const written = await generate(data, out);
  console.log(
    crdsDir
      ? `generated from ${crdsDir}:`
      : "no upstream files (../shared/crds, CRDS_DIR or `--fetch`): regenerated the types from the committed schemas:",
  );
  console.log(`  ${written.map((f) => path.relative(repoRoot, path.join(out, f))).join("\n  ")}`);
}

main().catch((err: unknown) => {
  console.error(`crds: ${(err as Error).message}`);
  process.exit(1);
});
